package org.sharp4j.sharp;

import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One node leader's SHARP context and communicator (the node leaders' team): init, caps, comm init,
 * memory registrations, the nonblocking Allreduce and Barrier (post, test, status, abandon), and
 * teardown. Returns the library's codes; the policy (completion, recovery) is {@link SharpStep}'s.
 *
 * <p>Hot path: the {@code sharp_coll_reduce_spec} lives in native memory allocated once; a call
 * writes its nine varying fields through a ByteBuffer view at the offsets JNA computed for
 * {@link SharpAbi.ReduceSpec} (the layout checked at load) and calls the direct-mapped function
 * with raw addresses.
 *
 * <p><b>Registrations</b> (a cache, as UCC keeps one): SHARP touches only the regions an operation
 * hands it, so the first operation that touches a region registers the 1 MiB-aligned windows
 * around it, clipped to the buffer it lies in (pages outside a mapping cannot be registered), and
 * every later operation inside a registered region reuses it. An operation is at most 1 MiB
 * ({@link SharpStep} cuts calls so), so it spans at most two windows and one lookup finds it. A
 * leader keeps a handful of regions (the engine's phase-3 buffer, this step's two result
 * buffers), never every rank's whole segment; a lookup checks the last hit of its side (source,
 * result) first, so the hot path compares two numbers.
 *
 * <p>Not thread-safe: one thread drives a node leader.
 */
final class SharpTeam implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(SharpTeam.class);
    private static final int O_ROOT;
    private static final int O_S_TYPE;
    private static final int O_S_MEM;
    private static final int O_S_PTR;
    private static final int O_S_LEN;
    private static final int O_S_MR;
    private static final int O_R_TYPE;
    private static final int O_R_MEM;
    private static final int O_R_PTR;
    private static final int O_R_LEN;
    private static final int O_R_MR;
    private static final int O_DTYPE;
    private static final int O_LENGTH;
    private static final int O_OP;
    private static final int O_AGGR;
    private static final int SPEC_SIZE;

    static {
        SharpAbi.ReduceSpec rs = new SharpAbi.ReduceSpec();
        SharpAbi.DataDesc d = new SharpAbi.DataDesc();
        SharpAbi.DescUnion u = new SharpAbi.DescUnion();
        SharpAbi.BufferPart b = new SharpAbi.BufferPart();
        int buf = d.offsetOf("u") + u.offsetOf("buffer");
        int s = rs.offsetOf("sbuf_desc");
        int r = rs.offsetOf("rbuf_desc");
        O_ROOT = rs.offsetOf("root");
        O_S_TYPE = s + d.offsetOf("type");
        O_S_MEM = s + d.offsetOf("mem_type");
        O_S_PTR = s + buf + b.offsetOf("ptr");
        O_S_LEN = s + buf + b.offsetOf("length");
        O_S_MR = s + buf + b.offsetOf("mem_handle");
        O_R_TYPE = r + d.offsetOf("type");
        O_R_MEM = r + d.offsetOf("mem_type");
        O_R_PTR = r + buf + b.offsetOf("ptr");
        O_R_LEN = r + buf + b.offsetOf("length");
        O_R_MR = r + buf + b.offsetOf("mem_handle");
        O_DTYPE = rs.offsetOf("dtype");
        O_LENGTH = rs.offsetOf("length");
        O_OP = rs.offsetOf("op");
        O_AGGR = rs.offsetOf("aggr_mode");
        SPEC_SIZE = rs.size();
    }

    /** Successful sharp_coll_reg_mr calls in this process (tests: one per base buffer and node leader). */
    static final java.util.concurrent.atomic.AtomicLong REGISTRATIONS = new java.util.concurrent.atomic.AtomicLong();

    final SharpLibrary lib;
    final OobChannel oob;
    /** Keeps the callbacks (and the spec that points at them) reachable until after finalize. */
    private SharpAbi.InitSpec initSpec;
    private final Memory out = new Memory(8);
    private final Memory specMem;
    private final ByteBuffer spec;
    private final long specAddr;
    private long ctx;
    private long comm;
    /** The window size of the registration cache; also the largest operation {@link SharpStep} posts. */
    static final long WINDOW = 1L << 20;
    /** Registered regions [regStart, regEnd) and their handles (0: the library refused, NULL is accepted). */
    private long[] regStart = new long[4];
    private long[] regEnd = new long[4];
    private long[] regMr = new long[4];
    private int regCount;
    /** Index of the last region found per side (0: source, 1: result). */
    private final int[] lastHit = {-1, -1};
    /** Where the library writes a request handle (one word). */
    private final Memory handleOut = new Memory(8);
    private final long handleOutAddr = Pointer.nativeValue(handleOut);

    long dtypes;
    long tagDtypes;
    long reduceOps;
    long featureMask;
    long payload;
    int pktVersion;

    SharpTeam(SharpLibrary lib, OobChannel oob) {
        this.lib = lib;
        this.oob = oob;
        this.specMem = new Memory(SPEC_SIZE);
        specMem.clear();
        this.spec = specMem.getByteBuffer(0, SPEC_SIZE).order(ByteOrder.nativeOrder());
        this.specAddr = Pointer.nativeValue(specMem);
        spec.putInt(O_ROOT, 0);
        spec.putInt(O_S_TYPE, SharpAbi.DATA_BUFFER);
        spec.putInt(O_S_MEM, SharpAbi.MEM_TYPE_HOST);
        spec.putInt(O_R_TYPE, SharpAbi.DATA_BUFFER);
        spec.putInt(O_R_MEM, SharpAbi.MEM_TYPE_HOST);
        spec.putInt(O_AGGR, SharpAbi.AGGREGATION_NONE);
    }

    /**
     * {@code sharp_coll_init} for SHARP rank {@link OobChannel#rank()} of {@link OobChannel#size()}:
     * the library's default config, the OOB callbacks, node-local rank 0, channel 0. Collective over
     * the node leaders.
     */
    int init(long jobId, int collTimeoutMillis) {
        SharpAbi.InitSpec s = new SharpAbi.InitSpec();
        s.clear();
        s.job_id = jobId;
        s.world_rank = oob.rank();
        s.world_size = oob.size();
        s.progress_func = null;
        s.group_channel_idx = 0;
        SharpAbi.CollConfig def = lib.defaultConfig();
        s.config.ib_dev_list = def.ib_dev_list;
        s.config.user_progress_num_polls = def.user_progress_num_polls;
        s.config.coll_timeout = collTimeoutMillis; // sharp4j.timeout: a stuck operation completes with an error
        s.config.flags = def.flags;
        System.arraycopy(def.reserved, 0, s.config.reserved, 0, s.config.reserved.length);
        s.oob_colls.bcast = oob.bcast;
        s.oob_colls.barrier = oob.barrier;
        s.oob_colls.gather = oob.gather;
        s.world_local_rank = 0;
        s.enable_thread_support = 0;
        s.oob_ctx = Pointer.createConstant(oob.rank() + 1L);
        s.write();
        this.initSpec = s;
        out.setLong(0, 0);
        int rc = SharpNative.sharp_coll_init(Pointer.nativeValue(s.getPointer()), Pointer.nativeValue(out));
        oob.rethrow();
        if (rc == 0) {
            ctx = out.getLong(0);
            if (ctx == 0) {
                rc = SharpAbi.ERROR;
            }
        }
        return rc;
    }

    /** {@code sharp_coll_caps_query}; keeps the masks and max_osts x user_data_per_ost. Local. */
    int queryCaps() {
        SharpAbi.Caps caps = new SharpAbi.Caps();
        caps.clear();
        int rc = SharpNative.sharp_coll_caps_query(ctx, Pointer.nativeValue(caps.getPointer()));
        if (rc == 0) {
            caps.read();
            pktVersion = caps.sharp_pkt_version;
            dtypes = caps.support_mask.dtypes;
            tagDtypes = caps.support_mask.tag_dtypes;
            reduceOps = caps.support_mask.reduce_ops;
            featureMask = caps.support_mask.feature_mask;
            payload = (long) caps.resources.max_osts * caps.resources.user_data_per_ost;
        }
        return rc;
    }

    /** {@code sharp_coll_comm_init} of all node leaders. Collective over the node leaders. */
    int commInit() {
        SharpAbi.CommInitSpec s = new SharpAbi.CommInitSpec();
        s.clear();
        s.rank = oob.rank();
        s.size = oob.size();
        s.oob_ctx = Pointer.createConstant(oob.rank() + 1L);
        s.group_world_ranks = null;
        s.write();
        out.setLong(0, 0);
        int rc = SharpNative.sharp_coll_comm_init(ctx, Pointer.nativeValue(s.getPointer()), Pointer.nativeValue(out));
        oob.rethrow();
        if (rc == 0) {
            comm = out.getLong(0);
            if (comm == 0) {
                rc = SharpAbi.ERROR;
            }
        }
        return rc;
    }

    /** Native address of a direct buffer (JNA; a call per new buffer object, cached by SharpStep). */
    static long address(ByteBuffer buf) {
        return Pointer.nativeValue(Native.getDirectBufferPointer(buf));
    }

    /**
     * The registration covering {@code [addr, addr + len)} ({@code len <= WINDOW}) inside the buffer
     * {@code [base, limit)}: a cached region, or the windows around the range clipped to the buffer,
     * registered now. {@code side} 0 for a source, 1 for a result. 0 when the library refused (a
     * NULL mem_handle is accepted).
     */
    long mr(int side, long addr, long len, long base, long limit) {
        long end = addr + len;
        int h = lastHit[side];
        if (h >= 0 && regStart[h] <= addr && end <= regEnd[h]) {
            return regMr[h];
        }
        for (int i = 0; i < regCount; i++) {
            if (regStart[i] <= addr && end <= regEnd[i]) {
                lastHit[side] = i;
                return regMr[i];
            }
        }
        long start = Math.max(base, addr & -WINDOW);
        long stop = Math.min(limit, ((end - 1) & -WINDOW) + WINDOW);
        out.setLong(0, 0);
        int rc = SharpNative.sharp_coll_reg_mr(ctx, start, stop - start, Pointer.nativeValue(out));
        long mr = rc == 0 ? out.getLong(0) : 0L;
        if (rc == 0) {
            REGISTRATIONS.incrementAndGet();
        }
        if (LOG.isDebugEnabled()) { // once per region, never per call: the cache above returned before this
            LOG.debug("{} [0x{}, 0x{}) ({} bytes, {} of buffer [0x{}, 0x{})) for {} bytes at 0x{}: region {} of this leader",
                    rc == 0 ? "registered" : "registration refused (rc " + rc + ")", Long.toHexString(start), Long.toHexString(stop),
                    stop - start, side == 0 ? "source" : "result", Long.toHexString(base), Long.toHexString(limit), len,
                    Long.toHexString(addr), regCount + 1);
        }
        if (regCount == regStart.length) {
            regStart = java.util.Arrays.copyOf(regStart, regCount * 2);
            regEnd = java.util.Arrays.copyOf(regEnd, regCount * 2);
            regMr = java.util.Arrays.copyOf(regMr, regCount * 2);
        }
        regStart[regCount] = start;
        regEnd[regCount] = stop;
        regMr[regCount] = mr;
        lastHit[side] = regCount++;
        return mr;
    }

    int registrations() {
        return regCount;
    }

    /**
     * Posts an Allreduce of {@code count} elements ({@code bytes} bytes) from {@code src} into
     * {@code dst} (out of place: the input stays for a redo) with the registrations
     * {@link #mr} gave and an aggregation mode (NONE, or STREAMING where the capabilities report
     * SAT). Returns the library's code; on success {@link #handle()} is the request.
     */
    int allreduceNb(long src, long srcMr, long dst, long dstMr, long bytes, long count, int dtype, int op, int aggrMode) {
        ByteBuffer s = spec;
        s.putLong(O_S_PTR, src);
        s.putLong(O_S_LEN, bytes);
        s.putLong(O_S_MR, srcMr);
        s.putLong(O_R_PTR, dst);
        s.putLong(O_R_LEN, bytes);
        s.putLong(O_R_MR, dstMr);
        s.putInt(O_DTYPE, dtype);
        s.putLong(O_LENGTH, count);
        s.putInt(O_OP, op);
        s.putInt(O_AGGR, aggrMode);
        handleOut.setLong(0, 0);
        return SharpNative.sharp_coll_do_allreduce_nb(comm, specAddr, handleOutAddr);
    }

    int barrierNb() {
        handleOut.setLong(0, 0);
        return SharpNative.sharp_coll_do_barrier_nb(comm, handleOutAddr);
    }

    /** The request handle of the last successful post. */
    long handle() {
        return handleOut.getLong(0);
    }

    /** Whether request {@code h} completed; also drives the library's progress. */
    boolean test(long h) {
        return SharpNative.sharp_coll_req_test(h) != 0;
    }

    void progress() {
        SharpNative.sharp_coll_progress(ctx);
    }

    /** The status of a completed request, releasing it. */
    int status(long h) {
        return SharpNative.sharp_coll_req_wait(h);
    }

    /** Abandons a request that did not complete. */
    void abandon(long h) {
        SharpNative.sharp_coll_req_free(h);
    }

    /** Blocking Allreduce (the benchmark's C-loop comparison). */
    int allreduce(long src, long dst, long bytes, long count, int dtype, int op) {
        int rc = allreduceNb(src, mr(0, src, bytes, src, src + bytes), dst, mr(1, dst, bytes, dst, dst + bytes), bytes, count,
                dtype, op, SharpAbi.AGGREGATION_NONE);
        if (rc != 0) {
            return rc;
        }
        long h = handle();
        while (!test(h)) {
            Thread.onSpinWait();
        }
        return status(h);
    }

    boolean hasComm() {
        return comm != 0;
    }

    /** Deregisters, destroys the communicator, finalizes the context (local calls); then drops the callbacks. */
    @Override
    public void close() {
        oob.close(); // a late callback returns an error instead of waiting for peers that are leaving
        if (ctx != 0) {
            for (int i = 0; i < regCount; i++) {
                if (regMr[i] != 0) {
                    SharpNative.sharp_coll_dereg_mr(ctx, regMr[i]);
                }
            }
        }
        regCount = 0;
        lastHit[0] = -1;
        lastHit[1] = -1;
        if (comm != 0) {
            SharpNative.sharp_coll_comm_destroy(comm);
            comm = 0;
        }
        if (ctx != 0) {
            SharpNative.sharp_coll_finalize(ctx);
            ctx = 0;
        }
        initSpec = null;
    }
}
