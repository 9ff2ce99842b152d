package org.sharp4j.coll;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.shm.Flags;
import org.sharp4j.shm.Waiter;

/**
 * The split cma Reduce and Allreduce (the tuning table's {@code cma_split}), one socket of one node:
 * every rank folds a slice of the message from every member's input, read where it lies in the
 * member's process, and writes its slice of the result where it belongs in the other processes.
 *
 * <h2>The math</h2>
 * N elements, q members, L elements per cache line: member m owns {@code [m S, (m+1) S)} (clamped to
 * N) with {@code S = ceil(ceil(N/q) / L) L}. For every element i of its slice it computes
 * {@code ((x0[i] op x1[i]) op x2[i]) ... op x(q-1)[i]}, left to right over members
 * ({@link Reductions#combineAll}): the bits of the direct and tiled algorithms, whichever rank
 * folds. A step of its slice ({@link DirectReduceAlgorithm#stageBytes}: up to 256 KiB) reads the
 * q-1 other inputs' parts ({@code process_vm_readv}, the kernel's copy) into its stage, its own
 * input in place, and folds them into its own output (Allreduce, or the Reduce's root) or into its
 * own block of the stage (a Reduce's other members); then it writes the folded step into every other
 * member's output (Allreduce) or the root's ({@code process_vm_writev}). Per member and call:
 * (q-1) N/q bytes read and, Allreduce, (q-1) N/q written by the kernel (Reduce: N/q, off the root),
 * one fold of N/q over q inputs, and one flag from every other member at the end; the pipelined
 * Allreduce copies N into shared memory, folds N/q, copies N/q into the result and N out.
 *
 * <h2>Who decides, on which words</h2>
 * At the call's first sequence number s every member writes, before its {@code (s, ARRIVED)}
 * (release; plain stores before it): its input's address in its process ({@link #ADDRESS}, element
 * 0; 0 when the input is not a direct buffer) and, where it gets a result (every member of an
 * Allreduce, a Reduce's root), its output's ({@link #OUT_ADDRESS}; 0 when not a direct buffer, or
 * overlapping the input other than exactly in place). After the verdict (every member's ARRIVED of
 * s acquired, the descriptors compared) every member reads the same words and decides alike: split
 * when none is 0. Otherwise an Allreduce runs the pipelined algorithm from s+1 (s was a round in
 * which every member arrived and read nothing of the others but those words: what the engine's reuse
 * rule asks of a finished call), and a Reduce goes on as the cma Reduce ({@link DirectReduceAlgorithm}).
 *
 * <h2>Who may touch what, when</h2>
 * Member j reads member m's input only within j's slice and writes m's output only within j's
 * slice, each step read before it is written; so exactly in place is safe: the only operand that
 * could be overwritten before it is read is a member's own in its own slice, when the fold's passes
 * before its own write the output (m >= 2), and that member copies its own step into its stage block
 * first. When a member has folded, read and written all of its slice it publishes {@code (s, TILED)},
 * then acquires every other member's TILED of s before it returns: after that nobody reads its input
 * or writes its output, which the caller may then reuse. Every member waits for all (the call
 * synchronises). A read or write that fails names the peer ({@link Engine#readPeer}: its process gone,
 * it died), a peer that stops is found by the flags' wait.
 *
 * <h2>Measured</h2>
 * Intel VM, 2 vCPUs, OSU port, same processes (blocks alternating), against the pipelined Allreduce:
 * 2 ranks 1.6-2.6x as fast at 32 KiB-4 MiB, 1.16-1.54x at 8-16 MiB (3 runs); 3 and 4 ranks on the 2
 * cores 1.04-1.57x from 128 KiB (3 ranks) and 256 KiB (4), 0.55-1.08x below (2 runs each). Against
 * Open MPI with the built-in table (2 ranks, P50, 3 rounds) 0.33-0.85x its Java bindings' time and
 * 0.29-0.85x OMB C's at 64 KiB-16 MiB. The Reduce: see {@link DirectReduceAlgorithm}.
 */
final class CmaSplitAlgorithm {
    /** {@code root} of an Allreduce: every member gets the result. */
    static final int ALL = -1;
    /** A member's input address word (shared with the cma Reduce): {@link DirectReduceAlgorithm#ADDRESS}. */
    static final int ADDRESS = DirectReduceAlgorithm.ADDRESS;
    /** A member's output address word: {@link DirectReduceAlgorithm#OUT_ADDRESS}. */
    static final int OUT_ADDRESS = DirectReduceAlgorithm.OUT_ADDRESS;

    private final Engine e;
    /** The operands of the current step, and the members' addresses (grown once to the member count). */
    private ByteBuffer[] xBuf = new ByteBuffer[0];
    private int[] xOff = new int[0];
    private long[] in = new long[0];
    private long[] out = new long[0];
    /** One block per member of {@link DirectReduceAlgorithm#stageBytes}: the others' parts, and this member's own. */
    private ByteBuffer stage;
    /** Calls this rank ran split (tests and diagnostics: {@link Engine#cmaSplitCalls}). */
    long splitCalls;

    CmaSplitAlgorithm(Engine e) {
        this.e = e;
    }

    /**
     * An Allreduce: the decision round at a new sequence number, then the split. Returns false when
     * the call does not split (a buffer not in its process), the same on every rank: the caller then
     * runs the pipelined algorithm, from the next sequence number.
     */
    boolean allreduce(DataType t, Op op, int count, long desc) {
        final Engine e = this.e;
        final ShmLevel sock = e.sock;
        final CallStatus st = e.st;
        final Waiter w = e.waiter;
        final int me = sock.me;
        final long s = e.nextSeq();
        final int set = ShmLevel.set(s);
        st.reset();
        DirectReduceAlgorithm.gate(sock, s, w);
        final long myIn = inputAddress(e.src, t);
        final long myOut = myIn == 0 ? 0 : outputAddress(e.dst, t, count, myIn);
        Flags.put(sock.buf, sock.ctl(set, me) + ADDRESS, myIn);
        Flags.put(sock.buf, sock.ctl(set, me) + OUT_ADDRESS, myOut);
        sock.publish(set, ShmLevel.ARRIVED, s, desc, st);
        sock.awaitArrivedAndCompare(set, s, w, st); // the verdict, the same on every rank
        if (!st.ok()) {
            throw sock.verdictFailed(set, s, desc, st);
        }
        if (!splits(sock, set, ALL)) {
            return false;
        }
        run(t, op, ALL, count, s, set, desc);
        return true;
    }

    /**
     * The split itself, every member, in sequence number {@code s} whose ARRIVEDs (with the address
     * words) this rank acquired: folds its slice, writes it where it belongs, publishes TILED and
     * waits for every other member's. {@code r}: a Reduce's root (socket member), or {@link #ALL}.
     */
    void run(DataType t, Op op, int r, int count, long s, int set, long desc) {
        final Engine e = this.e;
        final ShmLevel sock = e.sock;
        final Waiter w = e.waiter;
        final Payload src = e.src;
        final Payload dst = e.dst;
        final int q = sock.members;
        final int me = sock.me;
        final int size = t.size;
        final int block = DirectReduceAlgorithm.stageBytes(q);
        if (xBuf.length < q) {
            xBuf = new ByteBuffer[q];
            xOff = new int[q];
            in = new long[q];
            out = new long[q];
        }
        if (stage == null || stage.capacity() < q * block) {
            stage = ByteBuffer.allocateDirect(q * block).order(ByteOrder.nativeOrder());
        }
        for (int m = 0; m < q; m++) { // ordered by the ARRIVEDs (the verdict)
            in[m] = Flags.plain(sock.buf, sock.ctl(set, m) + ADDRESS);
            out[m] = r == ALL || m == r ? Flags.plain(sock.buf, sock.ctl(set, m) + OUT_ADDRESS) : 0;
        }
        final boolean getsResult = r == ALL || me == r;
        // its own operand copied first where its output is its input and passes before its own write the output
        final boolean stageOwn = getsResult && out[me] == in[me] && me >= 2;
        final int line = Math.max(1, 64 / size);
        final long slice = (((long) count + q - 1) / q + line - 1) / line * line; // whole lines
        final int lo = (int) Math.min(count, (long) me * slice);
        final int hi = (int) Math.min(count, (long) lo + slice);
        final int stepElems = block / size;
        for (int p = lo; p < hi; p += stepElems) {
            final int len = Math.min(stepElems, hi - p);
            final int bytes = len * size;
            for (int m = 0; m < q; m++) {
                if (m != me) {
                    e.readPeer(m, in[m] + (long) p * size, stage, m * block, bytes);
                    xBuf[m] = stage;
                    xOff[m] = m * block;
                } else if (stageOwn) {
                    ShmLevel.copy(stage, me * block, src.memory(), src.byteOffset(t, p), bytes);
                    xBuf[m] = stage;
                    xOff[m] = me * block;
                } else {
                    xBuf[m] = src.memory();
                    xOff[m] = src.byteOffset(t, p);
                }
            }
            final ByteBuffer acc = getsResult ? dst.memory() : stage; // a Reduce's member: its own block of the stage
            final int accOff = getsResult ? dst.byteOffset(t, p) : me * block;
            if (q == 1) {
                ShmLevel.copy(acc, accOff, xBuf[0], xOff[0], bytes);
            } else {
                Reductions.combineAll(t, op, acc, accOff, null, 0, xBuf, xOff, q, len);
            }
            for (int m = 0; m < q; m++) {
                if (m != me && out[m] != 0) {
                    e.writePeer(m, out[m] + (long) p * size, acc, accOff, bytes);
                }
            }
        }
        sock.publish(set, ShmLevel.TILED, s, desc, e.st);
        for (int m = 0; m < q; m++) {
            if (m != me) {
                w.await(sock.buf, sock.ctl(set, m) + ShmLevel.STATE, ShmLevel.enc(s, ShmLevel.TILED), sock.ranks[m]);
            }
        }
        splitCalls++;
    }

    /**
     * Whether the call splits: every member's input address and the output address of every member
     * that gets a result ({@code r}: a Reduce's root, or {@link #ALL}) are set. Every rank, having
     * acquired every member's ARRIVED of the call's first sequence number, reads the same words.
     */
    static boolean splits(ShmLevel sock, int set, int r) {
        for (int m = 0; m < sock.members; m++) {
            if (Flags.plain(sock.buf, sock.ctl(set, m) + ADDRESS) == 0
                    || (r == ALL || m == r) && Flags.plain(sock.buf, sock.ctl(set, m) + OUT_ADDRESS) == 0) {
                return false;
            }
        }
        return true;
    }

    /** Where an input lies in this process (element 0): a direct buffer's address, else 0. */
    static long inputAddress(Payload src, DataType t) {
        return src.kind == Payload.BUFFER && src.buffer.isDirect() ? PeerReads.address(src.buffer) + src.byteOffset(t, 0) : 0;
    }

    /**
     * Where an output lies in this process (element 0), or 0 where the others may not write there:
     * not a direct buffer, or overlapping the input {@code in} other than exactly in place.
     */
    static long outputAddress(Payload dst, DataType t, int count, long in) {
        if (dst.kind != Payload.BUFFER || !dst.buffer.isDirect()) {
            return 0;
        }
        long o = PeerReads.address(dst.buffer) + dst.byteOffset(t, 0);
        long len = (long) count * t.size;
        return o == in || o >= in + len || in >= o + len ? o : 0;
    }
}
