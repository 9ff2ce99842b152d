package org.sharp4j.sharp;

import com.sun.jna.Native;
import com.sun.jna.Pointer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.coll.CallStatus;
import org.sharp4j.coll.Desc;
import org.sharp4j.spi.InterNodeStep;
import org.sharp4j.tuning.Collective;

/**
 * The out-of-band collectives libsharp_coll needs among the node leaders (its "world": SHARP rank =
 * node index), built on the host path, which stays usable after setup (the bootstrap does not):
 *
 * <ul>
 *   <li>gather(root, len): each leader writes its {@code len} bytes at {@code rank * pad8(len)} of a
 *       zeroed buffer of {@code size * pad8(len)} bytes, then one host-path Allreduce (LONG, BOR)
 *       assembles it; the root copies the blocks out in rank order. An Allreduce and not a Reduce,
 *       so that every leader ends with the same status even on host paths whose Reduce reports
 *       it only at the root;</li>
 *   <li>bcast(root, len): the root's bytes in a zeroed buffer of {@code pad8(len)} bytes, one Allreduce (LONG, BOR);</li>
 *   <li>barrier: the host path's Barrier.</li>
 * </ul>
 *
 * Every exchange carries a call descriptor: during setup a fixed one; during a collective the
 * user call's descriptor ({@link #begin}), so that node leaders that disagree on the call are caught
 * by the host path's comparison at the first exchange, on every leader at once. A disagreement or an
 * exception (peer failure, timeout) makes the callback return -1, so the library returns an error
 * and the exception is rethrown by {@link #rethrow()} after the native call: JNA callbacks must
 * never throw.
 *
 * <p>One channel per node leader and SHARP context. The callback objects are fields of the
 * channel, which its {@link SharpTeam} keeps until after {@code sharp_coll_finalize}.
 */
final class OobChannel {
    /** Descriptor of setup exchanges (init, comm init and the agreements around them). */
    static final long SETUP_DESC = Desc.make(Collective.ALLREDUCE, DataType.LONG, Op.BOR, 0, 0x5348);

    private final InterNodeStep host;
    private final int me;
    private final int size;
    private final CallStatus st = new CallStatus();
    private long desc = SETUP_DESC;
    private CallStatus sink;
    private Throwable failure;
    private volatile boolean closed;
    private ByteBuffer scratch;
    private Pointer scratchPtr;
    private final ByteBuffer word = ByteBuffer.allocateDirect(8).order(ByteOrder.nativeOrder());
    /** Exchanges done (statistics, tests). */
    long exchanges;

    final SharpAbi.OobBcast bcast = new SharpAbi.OobBcast() {
        @Override
        public int invoke(long ctx, long buf, int len, int root) {
            return bcast(buf, len, root);
        }
    };
    final SharpAbi.OobBarrier barrier = new SharpAbi.OobBarrier() {
        @Override
        public int invoke(long ctx) {
            return barrier();
        }
    };
    final SharpAbi.OobGather gather = new SharpAbi.OobGather() {
        @Override
        public int invoke(long ctx, int root, long sbuf, long rbuf, int len) {
            return gather(root, sbuf, rbuf, len);
        }
    };

    OobChannel(InterNodeStep host, int me, int size) {
        this.host = host;
        this.me = me;
        this.size = size;
        grow(4096);
    }

    int rank() {
        return me;
    }

    int size() {
        return size;
    }

    /** Exchanges from here on belong to the user call {@code desc}; disagreements are merged into {@code status}. */
    void begin(long callDesc, CallStatus status) {
        desc = callDesc;
        sink = status;
        failure = null;
    }

    /** Back to setup exchanges. */
    void end() {
        desc = SETUP_DESC;
        sink = null;
    }

    /** Rethrows an exception caught in a callback since {@link #begin} (or setup), if any. */
    void rethrow() {
        Throwable t = failure;
        if (t != null) {
            failure = null;
            if (t instanceof RuntimeException) {
                throw (RuntimeException) t;
            }
            if (t instanceof Error) {
                throw (Error) t;
            }
            throw new org.sharp4j.Sharp4jException("SHARP OOB callback failed: " + t, t);
        }
    }

    void close() {
        closed = true;
    }

    // ---------------------------------------------------------------- callbacks

    private int bcast(long buf, int len, int root) {
        if (closed || failure != null || len < 0 || root < 0 || root >= size || (buf == 0 && len > 0)) {
            return -1;
        }
        try {
            if (len == 0) {
                return 0;
            }
            int padded = pad8(len);
            grow(padded);
            scratchPtr.setMemory(0, padded, (byte) 0);
            if (me == root) {
                scratch.put(0, new Pointer(buf).getByteBuffer(0, len), 0, len);
            }
            if (!exchange(padded)) {
                return -1;
            }
            if (me != root) {
                new Pointer(buf).getByteBuffer(0, len).put(0, scratch, 0, len);
            }
            return 0;
        } catch (Throwable t) {
            failure = t;
            return -1;
        }
    }

    private int gather(int root, long sbuf, long rbuf, int len) {
        if (closed || failure != null || len < 0 || root < 0 || root >= size || (sbuf == 0 && len > 0)
                || (me == root && rbuf == 0 && len > 0)) {
            return -1;
        }
        try {
            if (len == 0) {
                return 0;
            }
            int padded = pad8(len);
            long total = (long) padded * size;
            if (total > Integer.MAX_VALUE - 8) {
                return -1;
            }
            grow((int) total);
            scratchPtr.setMemory(0, total, (byte) 0);
            scratch.put(me * padded, new Pointer(sbuf).getByteBuffer(0, len), 0, len);
            if (!exchange((int) total)) {
                return -1;
            }
            if (me == root) {
                ByteBuffer out = new Pointer(rbuf).getByteBuffer(0, (long) len * size);
                for (int r = 0; r < size; r++) {
                    out.put(r * len, scratch, r * padded, len);
                }
            }
            return 0;
        } catch (Throwable t) {
            failure = t;
            return -1;
        }
    }

    private int barrier() {
        if (closed || failure != null) {
            return -1;
        }
        try {
            st.reset();
            exchanges++;
            host.barrier(desc, st);
            return settle() ? 0 : -1;
        } catch (Throwable t) {
            failure = t;
            return -1;
        }
    }

    /** Allreduce (LONG, BOR) of scratch[0, bytes) over the host path. */
    private boolean exchange(int bytes) {
        st.reset();
        exchanges++;
        host.allreduce(scratch, 0, bytes / 8, DataType.LONG, Op.BOR, desc, st);
        return settle();
    }

    private boolean settle() {
        if (st.ok()) {
            return true;
        }
        if (sink != null) {
            sink.merge(st);
        }
        return false;
    }

    // ---------------------------------------------------------------- agreement

    /** Outcome meaning "succeeded everywhere". */
    static final long ALL_OK = Long.MAX_VALUE;

    /** This leader's outcome for {@link #agree}: {@link #ALL_OK}, or its node and (negative) code. */
    long outcome(int code) {
        return code == 0 ? ALL_OK : ((long) me << 32) | (code & 0xFFFFFFFFL);
    }

    /**
     * Agreement of all node leaders over the host path (Allreduce MIN of {@link #outcome}): returns
     * {@link #ALL_OK} or the lowest failing node and its code ({@link #failedNode}, {@link #failedCode}).
     * Carries {@code callDesc}, so it also compares the call between nodes and merges the statuses into
     * {@code status} (null during setup: a disagreement then counts as an OOB failure).
     */
    long agree(int code, long callDesc, CallStatus status) {
        word.putLong(0, outcome(code));
        if (status != null) {
            host.allreduce(word, 0, 1, DataType.LONG, Op.MIN, callDesc, status);
            return word.getLong(0);
        }
        st.reset();
        host.allreduce(word, 0, 1, DataType.LONG, Op.MIN, callDesc, st);
        return st.ok() ? word.getLong(0) : outcome(SharpAbi.EOOB);
    }

    static int failedNode(long outcome) {
        return (int) (outcome >>> 32);
    }

    static int failedCode(long outcome) {
        return (int) outcome;
    }

    // ---------------------------------------------------------------- helpers

    private void grow(int bytes) {
        if (scratch == null || scratch.capacity() < bytes) {
            long doubled = scratch == null ? 0 : Math.min(Integer.MAX_VALUE - 8L, 2L * scratch.capacity());
            int cap = (int) Math.max(bytes, doubled);
            scratch = ByteBuffer.allocateDirect(cap).order(ByteOrder.nativeOrder());
            scratchPtr = Native.getDirectBufferPointer(scratch);
        }
    }

    private static int pad8(int len) {
        return (len + 7) & ~7;
    }
}
