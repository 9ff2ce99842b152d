package org.sharp4j.coll;

import java.nio.ByteBuffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import org.sharp4j.ArgumentMismatchException;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.Sharp4jException;
import org.sharp4j.shm.Flags;
import org.sharp4j.shm.Segment;
import org.sharp4j.shm.Waiter;

/**
 * One level of the hierarchy in one shared-memory segment: the ranks of a socket (phases 1 and
 * 5), the socket leaders of a node (phases 2 and 4), or the node leaders of simulated nodes on
 * one host (phase 3 in shared memory). Member 0 is the level's root.
 *
 * <h2>Layout</h2>
 * <pre>
 *   [0, 4096)          header: magic, members, slot bytes, shared bytes, progress lines; abort word;
 *                      from +128 one verdict record per set (member 0's mismatches, see writeVerdict)
 *   ctl[set][m]        128 B control block per member and set (set = seq mod SETS):
 *                        line 0: +0 state  +8 desc  +16 status  +24..64 inline data (40 B)
 *                        line 1: +64 mismatch desc A  +72 mismatch desc B (error path only)
 *                                +80..120 released data (40 B): member 0's result when it releases
 *                                a call whose input still sits in line 0 (the exchange)
 *   bar[m]             128 B per member: +0 the sequence number of its latest Barrier on the flat exchange,
 *                      +8 the first of the run of such Barriers that ends there (ExchangeAlgorithm, "The
 *                      Barrier's own line")
 *   progress[j]        128 B per local rank (slow path and diagnostics, but +40): +0 pid, +8 last collective
 *                      entered, +16 global rank it waits for (-1: none), +24 heartbeat (nanoTime of its
 *                      latest failure probe while waiting), +32 last call finished (flat member 0),
 *                      +40 last chunk whose phase-3 part completed (node leader; TiledAlgorithm.P_PARTS)
 *   xdata[set][m]      EXCHANGE_STRIDE per member and set, page aligned: the exchange's data from 41 B
 *                      to EXCHANGE_BYTES (half of the stride)
 *   xresult[set]       EXCHANGE_STRIDE per set: the exchange's released result in that range
 *   slot[s][m]         slotBytes per member and slot set (s = seq mod SLOT_SETS), page aligned
 *   result[s]          slotBytes per slot set: the tiled algorithm's reduce-scatter output, the exchange's
 *                      released result above EXCHANGE_BYTES
 *   shared[m]          sharedBytes per member: users' zero-copy buffers
 * </pre>
 *
 * <h2>Protocol</h2>
 * Every word has one writer: a member writes only its own control blocks, slot and tile of the
 * result. {@code state = seq << 2 | stage} only grows (stages ARRIVED &lt; TILED &lt; RELEASED), so a
 * reader waits for {@code state >= target} and never needs a reset. A control block is 128 B
 * so that adjacent-line prefetch never pairs two writers' lines; data up to 40 B travels inline,
 * in the same line as the flag: one cache-line transfer per step.
 *
 * <h2>Reuse</h2>
 * Sets rotate with the sequence number: {@link #SETS} of control blocks, verdict records and
 * exchange areas, {@link #SLOT_SETS} of slots and results (the slot set of call n is n mod
 * SLOT_SETS, which {@link #slot} and {@link #result} take from the set). For a call that writes
 * only control blocks and exchange areas (the exchange up to {@link #EXCHANGE_BYTES}, the
 * Barrier) read SETS below; for any other call, SLOT_SETS. A member arrives at call n+1 only
 * after finishing its part of call n (its reads of others' data, its writes of results others
 * read). Before a member writes anything of set n mod SETS (its input, its tile of the result, a
 * release) every member has arrived at call n - SETS + 1, as it observed directly or through a
 * release that implies it, so every reader of call n - SETS is done. That is why no algorithm
 * needs an acknowledgment round: later arrivals are the acknowledgment. Most calls observe every
 * member's arrival at their own last sequence number, which gives the rule for the next SETS - 1
 * calls; a flat Reduce's members that return without observing anyone (see {@link
 * ExchangeAlgorithm}, "Who returns when") get it from the engine's guard before their next
 * writes, and so run at most SETS - 1 calls ahead.
 */
public final class ShmLevel {
    static final int MAGIC = 0x53344A4E; // "S4JN" (32 sets; "S4JM" 8 sets; "S4JL" before the exchange areas)
    static final int HEADER = 4096;
    static final int H_MAGIC = 0;
    static final int H_MEMBERS = 4;
    static final int H_SLOT = 8;
    static final int H_SHARED = 12;
    static final int H_PROGRESS = 16;
    /** Abort word: {@code (blamed+1) << 32 | (giver+1)} from the first rank that gave up (slow path only). */
    static final int H_ABORT = 64;
    /**
     * Verdict records, one per set (32 bytes each: SETS of them fit in the HEADER), written by member 0 only, and only when a call ended with an
     * argument mismatch: {@code +0} the call's first sequence number, {@code +8} status code,
     * {@code +16, +24} the two descriptors. Read by members that returned from a Reduce before
     * its signatures were compared (see {@link ExchangeAlgorithm}: "Who returns when").
     */
    static final int H_VERDICTS = 128;

    public static final int CTL = 128;
    /**
     * Sets of control blocks, verdict records and exchange areas in rotation (a power of two): a
     * Reduce's leaf on the exchange runs up to SETS - 1 calls ahead of its root.
     *
     * <p>Why 8 and not the slots' 4: calls back to back (OSU's Java {@code OSUReduce}, or any loop
     * of Reduces) in which the leaves run ahead move each call's data in its own transfer when the
     * root keeps up, and the root then reads a line its writer has just written once per call. With
     * more calls in flight a leaf's writes of several calls meet the root's reads in fewer
     * exchanges of ownership. Measured (mpiapps.BackToBack reduce 64, 2 ranks, ratio to Open MPI
     * Java per block pair, builds alternating): an experiment build of 8 sets for everything, 7 runs
     * each: the VM's slow phase 0.76-0.77x against 0.97-0.99x with 4, the fast phase 0.55x against
     * 0.68x (16 sets: 0.64x and 0.54x); this layout, 12 runs each (720 block pairs), by Open MPI's
     * block time: under 0.20 us 0.57x against 0.84x, 0.26-0.32 us 0.77x both, 0.32 and more 0.80x
     * against 0.96x. The control blocks and exchange areas are small ({@code SETS (members + 1)
     * (128 + EXCHANGE_STRIDE)} bytes at most: 56 KiB for 2 members, 1.3 MiB for 64); the slots, sized for
     * long calls, keep {@link #SLOT_SETS}.
     *
     * <p>Why 32 and not 8: with more ranks than CPUs, a leaf runs until the gate stops it and then
     * yields its CPU; the more calls it may make before that, the fewer context switches per call.
     * OSU's Java {@code OSUReduce} through the agent, 4 ranks on 2 CPUs, 3 triples against Open MPI
     * alone (2026-12-03, same minutes): 8 sets 1.01-3.22x Open MPI at 4-256 B (1.6-3.2x at 8-64 B),
     * 32 sets 0.31-1.04x, 32 over 8 sets 0.30-0.57; mpiapps.BackToBack reduce 4 there: 16 sets
     * 1.04-2.05x Open MPI, 32 sets 0.68-0.86x, 8 sets 1.75-2.94x (Open MPI's leaves run ahead without
     * bound: their eager sends queue). With 2 ranks on their own CPUs, back to back, 32 sets are
     * better still (BackToBack reduce 64, 4 runs each, 2026-12-04: 0.67-0.70x Open MPI Java against
     * 0.79-0.82 with 8); the areas a rank cycles through, {@code 32 2 256} bytes of data for two ranks,
     * fit the L1 with the control lines.
     *
     * <p>The price, and why the sets stay in address order: one call at a time (the OSU port, a
     * barrier between calls), 2 ranks, a Reduce of 4-64 B takes 0.27-0.30 us against 0.24-0.27 with
     * 8 sets (5 alternating runs, 2026-12-04: 0.53-0.56x Open MPI Java against 0.48-0.51); Allreduce
     * alike in a slow phase (0.35-0.36 us against 0.33), within the runs' spread in a fast one. A
     * reading: the reader's poll walks the control lines at a constant stride for 32 calls instead
     * of 8, so the hardware's stride prefetcher pulls the writer's next lines before they are
     * written, and each such line then moves twice. Placing the sets in bit-reversed order (no
     * constant stride) won most of it back for the single call (Reduce 0.25 us, 0.49-0.54x) and
     * lost the back-to-back gain (0.95-0.98x Open MPI Java against 0.67-0.70, same runs): there the
     * same prefetch fetches lines the leaf has already written. Back to back is how programs reduce
     * in loops, and where more ranks than CPUs made 8 sets 1.6-3.2x slower than Open MPI, so the
     * address order stays.
     */
    public static final int SETS = 32;
    /**
     * Sets of slots and results in rotation (a power of two, at most {@link #SETS}): the long
     * algorithms' depth (the pipelined tail, the tiled path's parts in flight) and a segment's
     * memory, {@code SLOT_SETS (members + 1) slotBytes}.
     */
    public static final int SLOT_SETS = 4;
    /**
     * The exchange's data of more than {@link #INLINE_BYTES} and up to this goes in the exchange
     * area (rotating over SETS); above it, in the slots (over SLOT_SETS). Why not more: the areas
     * a rank cycles through grow with the sets, {@code SETS members EXCHANGE_BYTES}, and with 2 KiB
     * (32 KiB for two ranks: the L1 of this VM's cores) the OSU port's 1-2 KiB Allreduce took
     * 0.50-0.58x Open MPI Java against 0.45-0.46 with the slots (2 ranks, 3-4 alternating runs);
     * what more sets are for, a Reduce's leaf running further ahead, was measured at 64 B.
     */
    public static final int EXCHANGE_BYTES = 256;
    /**
     * Distance between two exchange areas: twice the data, so that a prefetcher running past the
     * end of one member's data meets padding, not the next member's (or set's) area, which its
     * owner may be writing. Measured against 256 (adjacent) and 4096 (a page each), 2 ranks, OSU
     * port, 3 alternating runs: 64-256 B Allreduce 0.58-0.59x Open MPI Java against 0.60-0.68 and
     * 0.61-0.66 (0.66-0.69 with the slots), Reduce alike within the runs' spread.
     */
    static final int EXCHANGE_STRIDE = 2 * EXCHANGE_BYTES;
    static final int STATE = 0;
    static final int DESC = 8;
    static final int STATUS = 16;
    public static final int INLINE = 24;
    /**
     * Data up to this travels in the flag's line; above it, in the exchange area, one transfer
     * after the flag. Tried and dropped (2026-12-04, experiment build, 2 ranks, OSU port, 3-4
     * alternating runs): data of 41-80 B running on from line 0 into line 1 of the same 128 B
     * block, in case the pair's adjacent-line prefetch brought the second line with the first: 64 B
     * Allreduce 0.455 us against 0.405, Reduce 0.36 against 0.31.
     *
     * <p>Tried and reverted (2026-12-04, commit cf9f7bc and its revert): with two members, 41-96 B
     * running into line 1 as above, line 1 closed by a stamp ({@code enc(seq, ARRIVED)} at +120,
     * stored with release after the data) that the reader loaded in every poll of the state, and
     * the lines filled with a bulk copy (word by word the polling peer took line 1 away between two
     * stores). A C model (two threads on the two CPUs, 64 B per call over 32 sets, PAUSE in the
     * spin, 10-12 alternating runs) said it pays: flag line plus an exchange-area line 258-315 ns,
     * this layout 216-259, line 1 unstamped and unpolled 251-315, one line (8 B) 166-304. In Java
     * the gain depended on the code's shape more than on the lines: with the stamp's wait inside
     * {@code fold} and {@code runPair}, the OSU port's 64 B Allreduce took 0.57x Open MPI Java
     * against 0.61 (medians of 6 rounds alternating with the build before) and
     * {@code mpiapps.BackToBack allreduce 64} 0.59-0.61 against 0.67-0.78, but 16-32 B lost
     * 0.01-0.03 and 128-256 B, run after the 64 B rows, 0.03-0.05; moved into methods of its own
     * (128-256 B even again), 64 B was even too (0.61 against 0.61; BackToBack 0.67-0.68 against
     * 0.67-0.71).
     */
    public static final int INLINE_BYTES = 40;
    static final int ERR_A = 64;
    static final int ERR_B = 72;
    /** Released data in line 1 of member 0's block (see the layout). */
    static final int REL_DATA = 80;

    static final int ARRIVED = 1;
    static final int TILED = 2;
    static final int RELEASED = 3;

    static final int PAGE = 4096;

    final Segment segment;
    final ByteBuffer buf;
    final IntBuffer ints;
    final LongBuffer longs;
    final FloatBuffer floats;
    final DoubleBuffer doubles;
    /** Number of members; member 0 is the root. */
    final int members;
    /** This rank's member index, or -1 when it only maps the level (to read results). */
    final int me;
    /** Global rank of every member, for error messages and failure probes. */
    final int[] ranks;
    /** The level's default children (radix given at creation), and by radix for per-call choices. */
    final int[] children;
    private final int[][] childrenByRadix;
    final int slotBytes;
    final int sharedBytes;
    final int progressLines;
    private final int ctlBase;
    private final int barBase;
    private final int progressBase;
    private final int xdataBase;
    private final int xresultBase;
    private final int slotBase;
    private final int resultBase;
    private final int sharedBase;

    ShmLevel(Segment segment, int members, int me, int[] ranks, int radix, int slotBytes, int sharedBytes, int progressLines) {
        this.segment = segment;
        this.buf = segment.buffer();
        this.members = members;
        this.me = me;
        this.ranks = ranks.clone();
        // Every radix up to the member count, precomputed so a call can pick its own without
        // allocating; any radix >= members is the flat tree. The root is member 0 for all of them.
        this.childrenByRadix = new int[Math.max(2, members) + 1][];
        for (int k = 2; k < childrenByRadix.length; k++) {
            childrenByRadix[k] = me >= 0 ? KnomialTree.children(me, members, k) : new int[0];
        }
        this.children = childrenFor(radix);
        this.slotBytes = slotBytes;
        this.sharedBytes = sharedBytes;
        this.progressLines = progressLines;
        this.ctlBase = HEADER;
        this.barBase = ctlBase + SETS * members * CTL;
        this.progressBase = barBase + members * CTL;
        this.xdataBase = roundUp(progressBase + progressLines * CTL, PAGE);
        this.xresultBase = xdataBase + SETS * members * EXCHANGE_STRIDE;
        this.slotBase = roundUp(xresultBase + SETS * EXCHANGE_STRIDE, PAGE);
        this.resultBase = slotBase + SLOT_SETS * members * slotBytes;
        this.sharedBase = resultBase + SLOT_SETS * slotBytes;
        long need = size(members, slotBytes, sharedBytes, progressLines);
        if (segment.size() != need) {
            throw new Sharp4jException("segment " + segment.path() + " has " + segment.size() + " bytes, layout needs " + need);
        }
        ByteBuffer b = buf.duplicate().order(buf.order());
        ints = b.asIntBuffer();
        longs = b.asLongBuffer();
        floats = b.asFloatBuffer();
        doubles = b.asDoubleBuffer();
    }

    /** This member's children in the k-nomial tree of radix {@code k} (k >= members: flat). */
    int[] childrenFor(int k) {
        return childrenByRadix[Math.min(Math.max(k, 2), childrenByRadix.length - 1)];
    }

    static int roundUp(int v, int a) {
        return (v + a - 1) / a * a;
    }

    /** Bytes of a segment for this layout; slot and shared sizes must be page multiples. */
    static long size(int members, int slotBytes, int sharedBytes, int progressLines) {
        long progressBase = HEADER + (long) SETS * members * CTL + (long) members * CTL;
        long xresultBase = (progressBase + (long) progressLines * CTL + PAGE - 1) / PAGE * PAGE + (long) SETS * members * EXCHANGE_STRIDE;
        long slotBase = (xresultBase + (long) SETS * EXCHANGE_STRIDE + PAGE - 1) / PAGE * PAGE;
        return slotBase + (long) SLOT_SETS * members * slotBytes + (long) SLOT_SETS * slotBytes + (long) members * sharedBytes;
    }

    void writeHeader() {
        buf.putInt(H_MEMBERS, members);
        buf.putInt(H_SLOT, slotBytes);
        buf.putInt(H_SHARED, sharedBytes);
        buf.putInt(H_PROGRESS, progressLines);
        Flags.volatileSet(buf, H_ABORT, 0);
        buf.putInt(H_MAGIC, MAGIC);
    }

    void checkHeader() {
        if (buf.getInt(H_MAGIC) != MAGIC || buf.getInt(H_MEMBERS) != members || buf.getInt(H_SLOT) != slotBytes
                || buf.getInt(H_SHARED) != sharedBytes || buf.getInt(H_PROGRESS) != progressLines) {
            throw new Sharp4jException("segment " + segment.path() + " does not match this rank's layout (members "
                    + members + ", slot " + slotBytes + " B, shared " + sharedBytes
                    + " B): ranks were started with different sharp4j settings");
        }
    }

    int ctl(int set, int m) {
        return ctlBase + (set * members + m) * CTL;
    }

    /** Member {@code m}'s Barrier word: the sequence number of its latest Barrier on the flat exchange (one writer, m). */
    int barrierWord(int m) {
        return barBase + m * CTL;
    }

    /** Beside it ({@code barrierWord(m) + BAR_RUN}): the first sequence number of the run of such Barriers that ends there. */
    static final int BAR_RUN = 8;

    /** The set of call {@code seq}. */
    static int set(long seq) {
        return (int) seq & (SETS - 1);
    }

    /** Member {@code m}'s slot of call set {@code set}: slot set {@code set mod SLOT_SETS}. */
    int slot(int set, int m) {
        return slotBase + ((set & (SLOT_SETS - 1)) * members + m) * slotBytes;
    }

    /** The result of call set {@code set}: slot set {@code set mod SLOT_SETS}. */
    int result(int set) {
        return resultBase + (set & (SLOT_SETS - 1)) * slotBytes;
    }

    int shared(int m) {
        return sharedBase + m * sharedBytes;
    }

    int progress(int localIndex) {
        return progressBase + localIndex * CTL;
    }

    static long enc(long seq, int stage) {
        return seq << 2 | stage;
    }

    /** Where member {@code m}'s data of {@code bytes} lives in {@code set} (inline or slot): the tree and phase 3 in shared memory. */
    int dataOff(int set, int m, int bytes) {
        return bytes <= INLINE_BYTES ? ctl(set, m) + INLINE : slot(set, m);
    }

    /** Where member {@code m}'s data of {@code bytes} lives in {@code set} for the exchange (inline, exchange area or slot). */
    int exchangeOff(int set, int m, int bytes) {
        return bytes <= INLINE_BYTES ? ctl(set, m) + INLINE
                : bytes <= EXCHANGE_BYTES ? xdataBase + (set * members + m) * EXCHANGE_STRIDE : slot(set, m);
    }

    /** Where member 0 releases the exchange's result of {@code bytes} in {@code set} (line 1 of its block, the exchange area or the result). */
    int exchangeReleased(int set, int bytes) {
        return bytes <= INLINE_BYTES ? ctl(set, 0) + REL_DATA : bytes <= EXCHANGE_BYTES ? xresultBase + set * EXCHANGE_STRIDE : result(set);
    }

    /**
     * Waits for each child's arrival in fold order, checks its call signature and folds its data
     * into {@code acc}: {@code acc = acc op child} (acc is the left operand). Children's statuses are
     * merged into {@code st}; after a mismatch no more data is folded (it would be garbage).
     */
    void foldChildren(int set, long seq, long desc, ByteBuffer acc, int accOff, int count, DataType t, Op op, Waiter w,
            CallStatus st, int myRank) {
        foldChildren(children, set, seq, desc, acc, accOff, count, t, op, w, st, myRank);
    }

    /** {@link #foldChildren} over the tree given by {@code kids} (from {@link #childrenFor}). */
    void foldChildren(int[] kids, int set, long seq, long desc, ByteBuffer acc, int accOff, int count, DataType t, Op op,
            Waiter w, CallStatus st, int myRank) {
        final int bytes = count * (t == null ? 0 : t.size);
        final long target = enc(seq, ARRIVED);
        for (int c : kids) {
            int ctl = ctl(set, c);
            w.await(buf, ctl + STATE, target, ranks[c]);
            long cd = Flags.plain(buf, ctl + DESC);
            st.mergeFrom(buf, ctl);
            if (Desc.differs(cd, desc)) {
                st.mismatch(ranks[c], cd, myRank, desc);
            } else if (bytes > 0 && st.ok()) {
                int src = bytes <= INLINE_BYTES ? ctl + INLINE : Desc.shared(cd) && sharedBytes > 0 ? shared(c) : slot(set, c);
                Reductions.combine(t, op, acc, accOff, buf, src, count);
            }
        }
    }

    /**
     * Up to this many bytes, a two-rank exchange loads one word of every line of the peer's data
     * before it folds ({@link #touch}). A fold kernel's loop over a few hundred bytes keeps only
     * one or two of those lines in flight (its loads wait behind the loop's stores in the core's
     * window), so lines the peer has just written, which come from its cache, arrive one after
     * another: in this VM's slow phase about 30 ns each. Loaded up front, they are in flight
     * together. Measured (OSU port, 2 ranks, Allreduce, jars with and without alternating, the
     * Reduce of the same runs, which does not touch, as the control; slow phase, 4 pairs): 128 B
     * 0.38-0.45 us to 0.35-0.39, 256 B 0.54-0.59 to 0.42-0.46, 512 B 0.66-0.73 to 0.46-0.49, 1 KiB
     * 0.76-0.86 to 0.58-0.64; the fast phase equal within its noise. At 2 KiB (3 pairs touching it)
     * 1.21-1.30 to 1.12-1.15 in the slow phase but 0.33-0.35 to 0.32-0.36 in the fast one, and no
     * gain from 4 KiB: hence the bound. The tree's fold (a Reduce's root) touching up to 2 KiB
     * gained as much at 256 B-1 KiB but its runs lost 10-30% at 2-8 KiB in both phases: it does
     * not touch.
     */
    static final int TOUCH_MAX_BYTES = 1024;
    /** Where {@link #touch} leaves its sum, so that the JIT keeps its loads (written by this rank's thread only). */
    private long touched;

    /** Loads one word of every line of {@code [off, off + bytes)} in {@link #buf} when that is at most {@link #TOUCH_MAX_BYTES}. */
    void touch(int off, int bytes) {
        if (bytes > INLINE_BYTES && bytes <= TOUCH_MAX_BYTES) {
            final int last = off + bytes - 8; // the last word: never past the data (it may end the segment)
            long sum = 0;
            for (int o = off; o < last; o += 64) {
                sum += buf.getLong(o);
            }
            touched = sum + buf.getLong(last); // the last line too when the data does not start a line
        }
    }

    /**
     * Publishes this member's {@code stage} for {@code seq}: descriptor and status first, flag last (release).
     *
     * <p>Tried and dropped (2026-12-07): storing the descriptor and the status only where they differ
     * from what the line holds (this member's own stores of SETS calls before, which every reader saw
     * through the acquires since; in a loop of one call they never differ), so that the flag would be
     * the only store into a line the peer polls. In the C model ({@code shm-small-floor.c barrier}, slow
     * phase) the two stores seemed to cost 0.39-0.44 us P50 against 0.31-0.32 without them and 0.33 with the
     * comparison; here the OSU port's 2-rank Barrier stayed at 0.34 us either way (4 alternating runs,
     * 0.57-0.58x Open MPI Java both), so the stores stay unconditional. The model's cost was its check, not
     * the stores: it read its own signature back from its published line (a transfer once the peer fetched
     * the line), which this class never does; with the stores and without the read-back the model took
     * 0.30-0.31 us (2026-12-07, README "Where the floor is").
     */
    void publish(int set, int stage, long seq, long desc, CallStatus st) {
        int ctl = ctl(set, me);
        Flags.put(buf, ctl + DESC, desc);
        st.writeTo(buf, ctl);
        Flags.release(buf, ctl + STATE, enc(seq, stage));
    }

    /**
     * A call whose verdict failed at {@code seq} (set {@code set}): member 0 publishes RELEASED carrying the
     * status, for members that took the tree or the exchange (they wait for a release), and every member
     * throws what this returns. Off the fast path (after {@code !st.ok()}).
     */
    ArgumentMismatchException verdictFailed(int set, long seq, long desc, CallStatus st) {
        if (me == 0) {
            publish(set, RELEASED, seq, desc, st);
        }
        return st.toException();
    }

    /** Waits until member {@code m} reached {@code stage} of {@code seq}; merges its status. */
    void await(int set, int m, int stage, long seq, Waiter w, CallStatus st) {
        int ctl = ctl(set, m);
        w.await(buf, ctl + STATE, enc(seq, stage), ranks[m]);
        st.mergeFrom(buf, ctl);
    }

    /** Like {@link #await} and also checks the member's call signature against ours. */
    void awaitChecked(int set, int m, int stage, long seq, long desc, Waiter w, CallStatus st, int myRank) {
        int ctl = ctl(set, m);
        w.await(buf, ctl + STATE, enc(seq, stage), ranks[m]);
        st.mergeFrom(buf, ctl);
        long d = Flags.plain(buf, ctl + DESC);
        if (Desc.differs(d, desc)) {
            st.mismatch(ranks[m], d, myRank, desc);
        }
    }

    /**
     * Waits for member {@code m}'s TILED of {@code seq}, unless the call signature it published
     * with its ARRIVED (already acquired by the caller) differs from ours: a member that called
     * something else may be on the tree algorithm, which never publishes TILED, so waiting for it
     * would hang. Its ARRIVED (or a RELEASED, for a level's root) already told us about the
     * mismatch, which the release carries to every rank; whatever it is still doing with this set,
     * it finishes before it arrives at the next call, which every rank then waits for.
     */
    void awaitTiled(int set, int m, long seq, long desc, Waiter w, CallStatus st) {
        if (Desc.differs(descOf(set, m), desc)) {
            return;
        }
        await(set, m, TILED, seq, w, st);
    }

    /**
     * Member 0 records that call {@code seq} (its first sequence number) ended with the mismatch in
     * {@code st}. Plain stores: what publishes them is member 0's next release (its
     * {@code P_DONE} or its next arrival), which every reader acquires first.
     */
    void writeVerdict(long seq, CallStatus st) {
        int at = H_VERDICTS + set(seq) * 32;
        Flags.put(buf, at + 8, st.code);
        Flags.put(buf, at + 16, st.descA);
        Flags.put(buf, at + 24, st.descB);
        Flags.put(buf, at, seq);
    }

    /**
     * Whether member 0 recorded a mismatch for call {@code seq}; if so, {@code out} gets it. Only
     * meaningful once member 0 is known to have finished that call and before this rank arrives
     * at {@code seq + SETS} (member 0 may record the next call of this set after that).
     */
    boolean verdictOf(long seq, CallStatus out) {
        int at = H_VERDICTS + set(seq) * 32;
        if (Flags.plain(buf, at) != seq) {
            return false;
        }
        out.code = Flags.plain(buf, at + 8);
        out.descA = Flags.plain(buf, at + 16);
        out.descB = Flags.plain(buf, at + 24);
        return out.code != 0;
    }

    long abortWord() {
        return Flags.volatileGet(buf, H_ABORT);
    }

    /**
     * Slow path: tells every rank waiting on this level that {@code rank} gave up, blaming
     * {@code blamed} (or -1). The word has many possible writers (any rank of the level, from any
     * thread): the first compare-and-set wins and later ones keep its blame, so every rank reports
     * the same culprit. Returns whether this call set it.
     */
    boolean abort(int rank, int blamed) {
        return Flags.cas(buf, H_ABORT, 0, ((long) (blamed + 1) << 32) | ((rank + 1) & 0xFFFFFFFFL));
    }

    /** Descriptor member {@code m} published (read after its flag was acquired). */
    /**
     * Waits for every member's ARRIVED of {@code seq} (acquire) and records in {@code st} the
     * verdict: the first member, in member order, whose descriptor differs from member 0's. The
     * same on every member, so no release is needed to agree on it (tiled and direct algorithms).
     */
    void awaitArrivedAndCompare(int set, long seq, Waiter w, CallStatus st) {
        final long arrived = enc(seq, ARRIVED);
        long d0 = 0;
        for (int m = 0; m < members; m++) {
            w.await(buf, ctl(set, m) + STATE, arrived, ranks[m]);
            long d = descOf(set, m);
            if (m == 0) {
                d0 = d;
            } else if (Desc.differs(d, d0)) {
                st.mismatch(ranks[0], d0, ranks[m], d); // the first one recorded stays
            }
        }
    }

    long descOf(int set, int m) {
        return Flags.plain(buf, ctl(set, m) + DESC);
    }

    /** Copies {@code bytes} inside or between segments (absolute bulk put: a memcpy, no allocation). */
    static void copy(ByteBuffer dst, int dOff, ByteBuffer src, int sOff, int bytes) {
        if (bytes <= SMALL_COPY && ((bytes | dOff | sOff) & 3) == 0) {
            // Up to a line, word by word: a bulk put costs its checks and a copyMemory call
            // (~10-20 ns) for what two to eight plain loads and stores do. Every type is 4 or 8
            // bytes, so a 4-byte tail is all there can be; the copy keeps the bytes as they are.
            int i = 0;
            for (; i + 8 <= bytes; i += 8) {
                Flags.put(dst, dOff + i, Flags.plain(src, sOff + i));
            }
            if (i < bytes) {
                Flags.putInt(dst, dOff + i, Flags.plainInt(src, sOff + i));
            }
        } else if (bytes > 0) {
            dst.put(dOff, src, sOff, bytes);
        }
    }

    /** Copies of at most this many bytes go word by word ({@link #copy}). */
    static final int SMALL_COPY = 64;
}
