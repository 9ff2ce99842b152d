package org.sharp4j.fallback;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.PeerFailureException;
import org.sharp4j.Sharp4jException;
import org.sharp4j.coll.CallStatus;
import org.sharp4j.fallback.algo.Exchange;
import org.sharp4j.fallback.algo.KnomialAllreduce;
import org.sharp4j.fallback.algo.KnomialBarrier;
import org.sharp4j.fallback.algo.KnomialPattern;
import org.sharp4j.fallback.algo.KnomialReduce;
import org.sharp4j.fallback.algo.PostedRounds;
import org.sharp4j.fallback.algo.RoundSink;
import org.sharp4j.fallback.algo.Schedule;
import org.sharp4j.fallback.algo.SraAllreduce;
import org.sharp4j.fallback.algo.SraReduce;
import org.sharp4j.fallback.transport.Transport;
import org.sharp4j.shm.Waiter;
import org.sharp4j.spi.RecoverableStep;
import org.sharp4j.tuning.Algorithm;
import org.sharp4j.tuning.Collective;
import org.sharp4j.tuning.CompiledTable;

/**
 * Phase 3 on the host: the k-nomial algorithms of {@code org.sharp4j.fallback.algo} over a
 * {@link Transport} among the node leaders ({@code transport.peer()} is this node's index).
 *
 * <h2>Per call</h2>
 * The algorithm and radix come from the {@link CompiledTable} for {@code (collective,
 * count * type size)}: KNOMIAL (recursive k-ing) or SRA for allreduce, KNOMIAL (tree) or SRA
 * (scatter-reduce-gather: {@link SraReduce}) for reduce; SHARP, which reaches the host path only when the offload fell back, runs KNOMIAL with
 * {@link CompiledTable#DEFAULT_KNOMIAL_RADIX}. The radix is clamped to [2, min(8, n)]. The choice
 * depends only on the arguments, so leaders that agree on the call agree on the algorithm.
 *
 * <h2>Argument checking without hangs: the spine</h2>
 * Leaders that disagree on the call may choose different algorithms, radices, roots or fragment
 * counts, i.e. different communication patterns, and would wait for each other forever. So every
 * call starts on the <em>spine</em>: the recursive k-nomial pattern of one job-wide radix
 * {@code kc} (the table's radix for a 0-byte allreduce, clamped), whose messages carry each
 * node's 48-byte header (call descriptor and status, see {@link Exchange}) and whose receives
 * always take a whole slot. Every leader runs the same spine rounds whatever it was called with,
 * so the headers are allreduced and every leader ends with the same {@link CallStatus}, ok only
 * if all descriptors agree (this holds for reduce too, on every node). Data moves
 * <ul>
 *   <li><b>merged</b> with the headers when the message fits one fragment and the chosen radix is
 *       kc (with the built-in table: every call up to {@link #DEFAULT_FRAG_BYTES}, as the engine
 *       hands phase 3 at most a slot): recursive k-ing, or SRA whose allgather then runs only if
 *       the status is ok; a small reduce runs the tree to its root inside the spine's rounds
 *       ({@link KnomialReduce#runMerged}: each node's data goes one way, the other messages are
 *       headers); no extra message or round;</li>
 *   <li><b>after</b> a header-only spine (a barrier) otherwise: the pipelined data algorithm runs
 *       only when the spine ended ok, so data rounds never see a disagreement, and a mismatch
 *       leaves no message behind.</li>
 * </ul>
 *
 * <h2>Parts of a long call</h2>
 * The engine hands a long call to phase 3 in parts (the first chunk, then units of
 * {@code sharp4j.internode.pipeline} slots), the same parts on every node; with one rank per node
 * an allreduce that runs merged hands it whole up to a fragment ({@link #mergedAllreduceBytes}). The first part runs as
 * above: its spine compares the descriptor of the <em>call</em> (count, type, op, root of the
 * whole call), and every leader ends it with the same status. Only if that status is ok does any
 * leader reach a later part (otherwise every rank throws), so a later part ({@code more = true})
 * runs its data rounds only, with no spine: a long call pays one spine, not one per slot. A
 * reduce's later parts take the tree (or SRA's reduce) at every size: only its first part, which
 * carries the check, runs merged, as the tree inside the spine's rounds (and the engine makes that
 * part a single line for a reduce of more than one chunk); so the elements of that part fold in
 * recursive k-ing's bracket and the others in the tree's (the same at 2 nodes, and for a root at
 * node 0 when n is a power of the radix). The
 * parts' sizes follow from the call's count, which the first spine compared, so the leaders run
 * the same data rounds. Failures in a later part are caught as in any call (the waiter's probe,
 * the transport's peer failure, aborts).
 *
 * <h2>Merged reduce</h2>
 * A reduce by the tree at the spine's radix, where no node is an extra of the spine's pattern
 * ({@code n} is {@code n_full} times a power of the radix), runs merged up to the spine's slot, which is a posted
 * part's fragment ({@link #partFragBytes}: 512 KiB at 2-3 nodes, 144 KiB from 8; the scratch stays
 * within what a part in flight has), not only up to a blocking fragment: each node's vector goes up
 * the tree inside the spine's rounds once, with the check, where a first part and a later one
 * would pay the spine's round trip before any data moved. The engine hands such a call over whole
 * ({@link #mergedReduceBytes}) where it owns the node's data at once (one rank per node). Payloads
 * longer than a fragment travel split ({@code Exchange}: the header, then the payload straight from the
 * caller's memory, which {@link #run(Collective, ByteBuffer, int, ByteBuffer, int, int, DataType, Op, int, long, CallStatus)}
 * may name apart from the result's buffer), so the merging costs no copy. The elements fold in
 * recursive k-ing's bracket, as every merged reduce's do. With extras the merged tree sends an
 * extra's vector to its proxy before the iterations, one hop more than the tree, where every
 * child sends at once: between 3 rig hosts a 128-256 KiB Reduce took 1.2-1.6x the time of a line
 * on the spine followed by the tree, so there a reduce merges up to a fragment only, as before.
 * Measured between 2 rig hosts (1 rank each, built-in rules, alternating with the build before,
 * P50): 64 KiB 0.91-0.95x, 128 KiB 0.93-0.99x, 256 KiB 0.92-1.02x, 512 KiB 0.99-1.01x the time of the
 * line and a part; against the same run's Open MPI C, 0.79-0.84x, 0.91-0.94x, 0.96-1.01x and
 * 1.06-1.10x.
 *
 * <h2>Parts in flight</h2>
 * A later part may also be <em>posted</em> ({@link #post}): its data rounds are recorded into a
 * {@link org.sharp4j.fallback.algo.Schedule} by the same algorithm, radix and form the blocking part
 * would run (the merged forms' data forms: the same groups, the same bracket, so the same bits), and
 * run by a {@link PostedRounds} of its own (scratch, requests, a call sequence number of its own in
 * the tags, so parts never match each other's messages) as {@link #progress}, {@link #test} and
 * {@link #await} drive them. Up to {@link #partsInFlight()} parts are in flight (the engine's
 * {@code sharp4j.internode.pipeline}); they complete in posting order; a blocking call first awaits
 * any left. Costs per part in flight: {@code 2 (k-1)} fragments of scratch, allocated at
 * construction; per leader O(k log n) requests, as for a blocking part. A part's failure (a peer
 * gone, a transport error, an abort from another thread) fails every part and the step, and is
 * told to the other leaders as a blocking call's would be.
 *
 * <h2>Large fragments</h2>
 * A posted part sends its data in fragments of up to {@value #MAX_PART_FRAG_BYTES}
 * ({@link #partFragBytes}), four times the blocking rounds' {@value #DEFAULT_FRAG_BYTES}: over TCP
 * the cost of a message is mostly per system call and per socket buffer, not per byte. A C
 * exchange of 4 MiB each way between two hosts of the netns rig took 807-822 us in 128 KiB sends,
 * 598-602 us in 512 KiB sends and 547-560 us in 2 MiB sends; sharp4j's 2-host Allreduce, best of
 * two alternating runs against Open MPI's C library under cubic: 1.20-1.48x its time at 1-16 MiB
 * with 128 KiB fragments, 0.94-1.28x with 512 KiB fragments (and parts of 1 MiB). The transport
 * keeps such messages eager and in one piece (UCX's receive segment and rendezvous threshold,
 * {@code UcxTransport}). Scratch per part: {@code 2 (k-1)} of them, at most
 * {@value #PART_SCRATCH_BYTES} bytes. Under a TCP that paces long back-to-back flows at their
 * measured delivery rate (bbr on a 2-vCPU VM that also carries the network) the larger messages
 * took 1.4-2.1x the time of 128 KiB ones: {@code sharp4j.internode.fragment} sets the size
 * (job-wide; the README's "UCX host path").
 *
 * <p>A barrier is the header-only spine itself (radix kc: the table's barrier radix is not used).
 * After a mismatch the step stays usable (every message of the call was matched). A receive
 * truncated by a peer (impossible between leaders running this class) is recorded as a mismatch
 * blaming that peer; then the leaders fail with a mismatch but may name different pairs.
 *
 * <h2>Failures</h2>
 * Every wait goes through the {@link Waiter} (spin, yield, park, failure probe, timeout) polling
 * one request. When a call fails (a dead peer reported by the transport, the probe's timeout or
 * abort, a transport error) the step tells the other leaders through {@link #abort} unless one of
 * them already gave up, and refuses later calls. Abort messages use tag kind 3 and are received
 * by one any-source receive posted at construction, polled only by {@link #abortWord()}, and
 * spread by dissemination (see {@link #abort}).
 *
 * <p>Single-threaded (one node leader thread); {@link #abort} from another thread while a call
 * runs is handed to the calling thread, which stops waiting and sends it. No allocation per call.
 */
public final class HostStep implements RecoverableStep {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(HostStep.class);
    /** The descriptor of the barrier {@link #close} runs: a plain barrier's. */
    private static final long CLOSE_DESC = org.sharp4j.coll.Desc.make(Collective.BARRIER, DataType.INT, Op.SUM, 0, 0);
    /** Payload bytes per fragment: the scratch is two fragments (plus a 48-byte header each) per peer of a group. */
    public static final int DEFAULT_FRAG_BYTES = 128 * 1024;
    /**
     * The largest payload per fragment of a posted part ({@link #post}; see "Large fragments" in the
     * class comment): the step takes {@link #partFragBytes(int, int)} of it.
     */
    public static final int MAX_PART_FRAG_BYTES = org.sharp4j.Config.MAX_INTER_FRAGMENT;
    /** Scratch bytes per posted part that {@link #partFragBytes(int, int)} keeps to: {@code 2 (k-1)} fragments. */
    static final int PART_SCRATCH_BYTES = 2 * 1024 * 1024;
    /** Parts of long calls in flight at once ({@link #post}), unless told otherwise. */
    public static final int DEFAULT_PARTS = 4;
    /** The most parts in flight a step takes (each has its own scratch of 2 (k-1) fragments). */
    public static final int MAX_PARTS = 8;

    private static final long ABORT_TAG = Exchange.tag(Exchange.KIND_ABORT, 0, 0, 0);
    private static final long ABORT_FLUSH_NANOS = 200_000_000L;

    /** The thread inside a call (null between calls), for aborts from other threads. */
    private volatile Thread caller;
    private volatile boolean deferredAbort;
    private volatile int deferredRank;
    private volatile int deferredBlamed;

    private final Transport tr;
    private final Waiter waiter;
    private final CompiledTable table;
    private final String name;
    private final int n;
    private final int me;
    private final int myRank;
    private final int maxRadix;
    private final int spineRadix;
    private final int frag;
    private final KnomialPattern[] patterns;
    private final Exchange x;
    /** The calls' runner, and a second one for an offload's recoveries (own scratch, requests and tags). */
    private final Runner main;
    private final Runner recovery;
    private long seq;
    private RuntimeException broken;
    private boolean closed;

    /** Parts of long calls in flight (see "Parts in flight"), each with its own rounds and scratch; empty: none. */
    private final PostedRounds[] parts;
    /** Parts posted and completed so far (handles are the low 32 bits of the posting count). */
    private long posted;
    private long completed;
    private final PartsDone partsDone = new PartsDone();

    private final ByteBuffer abortIn;
    private final ByteBuffer abortOut;
    /** The one abort receive (any peer), or -1 once it completed. */
    private int abortRecv;
    /** Abort sends to {@code me + 2^i}, -1 when none. */
    private final int[] abortSend = new int[32];
    private boolean abortSent;
    private long abortWord;

    public HostStep(Transport transport, CompiledTable table, Waiter waiter, String name) {
        this(transport, table, waiter, name, DEFAULT_FRAG_BYTES, DEFAULT_PARTS);
    }

    /** With another fragment size (a multiple of 8, at least 64): tests use small ones to pipeline small vectors. */
    HostStep(Transport transport, CompiledTable table, Waiter waiter, String name, int fragBytes) {
        this(transport, table, waiter, name, fragBytes, DEFAULT_PARTS);
    }

    /**
     * With another fragment size (a multiple of 8, at least 64; tests use small ones to pipeline
     * small vectors), also for the posted parts, and another number of parts in flight (0:
     * {@link #post} runs a part at once).
     */
    public HostStep(Transport transport, CompiledTable table, Waiter waiter, String name, int fragBytes, int partsInFlight) {
        this(transport, table, waiter, name, fragBytes, partsInFlight, fragBytes);
    }

    /**
     * Fragments of {@code fragBytes} for the blocking rounds and of {@code partFragBytes} (a multiple
     * of 8, at least 64; {@link #partFragBytes(int, int)} for a transport over TCP) for the posted
     * parts. Every leader must pass the same sizes (they decide the messages).
     */
    public HostStep(Transport transport, CompiledTable table, Waiter waiter, String name, int fragBytes, int partsInFlight,
            int partFragBytes) {
        this.tr = transport;
        this.table = table;
        this.name = name;
        this.n = transport.peers();
        this.me = transport.peer();
        this.myRank = transport.globalRank(me);
        this.frag = fragBytes;
        this.maxRadix = Math.max(2, Math.min(Exchange.MAX_RADIX, n));
        this.patterns = new KnomialPattern[maxRadix + 1];
        for (int k = 2; k <= maxRadix; k++) {
            patterns[k] = new KnomialPattern(n, k, me);
        }
        this.spineRadix = radix(Collective.ALLREDUCE, 0);
        this.waiter = waiter;
        // The calls' spine takes a posted part's fragment as well where a reduce may merge that much ("Merged
        // reduce" in the class comment: no extras in the spine's pattern): 2 (k-1) such slots, the scratch a
        // posted part has. Payloads longer than a fragment (only a merged reduce's) travel split, so that the
        // merging costs no copy.
        final int spineBytes = patterns[spineRadix].nExtra == 0 ? Math.max(fragBytes, partFragBytes) : fragBytes;
        this.x = new Exchange(transport, waiter, maxRadix, fragBytes, spineBytes, fragBytes);
        this.main = new Runner(x);
        this.recovery = new Runner(new Exchange(transport, waiter, maxRadix, fragBytes));
        if (partFragBytes < 64 || partFragBytes % 8 != 0) {
            throw new IllegalArgumentException("part fragment must be a multiple of 8 bytes, at least 64: " + partFragBytes);
        }
        if (partsInFlight < 0 || partsInFlight > MAX_PARTS) {
            throw new IllegalArgumentException("parts in flight must be 0.." + MAX_PARTS + ": " + partsInFlight);
        }
        this.parts = new PostedRounds[n > 1 ? partsInFlight : 0];
        for (int i = 0; i < parts.length; i++) {
            parts[i] = new PostedRounds(transport, maxRadix - 1, partFragBytes, Exchange.KIND_DATA);
        }
        this.abortIn = ByteBuffer.allocateDirect(8).order(ByteOrder.nativeOrder());
        this.abortOut = ByteBuffer.allocateDirect(8).order(ByteOrder.nativeOrder());
        this.abortRecv = n > 1 ? transport.recvAny(ABORT_TAG, abortIn, 0, 8) : -1;
        java.util.Arrays.fill(abortSend, -1);
    }

    @Override
    public String name() {
        return name;
    }

    /** The transport (diagnostics: its endpoints, its messages). */
    public Transport transport() {
        return tr;
    }

    /** The job-wide radix of the spine (for diagnostics). */
    public int spineRadix() {
        return spineRadix;
    }

    /**
     * Bytes of the user's call a phase-3 part belongs to (its count is in the call's descriptor):
     * the size the table's rules are keyed by, the same on every leader for every part.
     */
    static long callBytes(long desc, int count, DataType t) {
        return org.sharp4j.coll.Desc.callBytes(desc, count, t);
    }

    private Algorithm algorithm(Collective c, long bytes) {
        Algorithm a = table.interAlgorithm(c, bytes);
        return a == Algorithm.SRA ? Algorithm.SRA : Algorithm.KNOMIAL;
    }

    private int radix(Collective c, long bytes) {
        int k = table.interAlgorithm(c, bytes) == Algorithm.SHARP ? 0 : table.interRadix(c, bytes);
        if (k <= 0) {
            k = CompiledTable.DEFAULT_KNOMIAL_RADIX;
        }
        return Math.max(2, Math.min(k, maxRadix));
    }

    @Override
    public void allreduce(ByteBuffer buf, int off, int count, DataType type, Op op, long desc, CallStatus status) {
        run(Collective.ALLREDUCE, buf, off, count, type, op, 0, desc, status, false);
    }

    @Override
    public void reduce(ByteBuffer buf, int off, int count, DataType type, Op op, int rootNode, long desc, CallStatus status) {
        run(Collective.REDUCE, buf, off, count, type, op, rootNode, desc, status, false);
    }

    /** A later part of a long call: data rounds only (class comment, "Parts of a long call"). */
    @Override
    public void allreduce(ByteBuffer buf, int off, int count, DataType type, Op op, long desc, CallStatus status, boolean more) {
        run(Collective.ALLREDUCE, buf, off, count, type, op, 0, desc, status, more);
    }

    @Override
    public void reduce(ByteBuffer buf, int off, int count, DataType type, Op op, int rootNode, long desc, CallStatus status,
            boolean more) {
        run(Collective.REDUCE, buf, off, count, type, op, rootNode, desc, status, more);
    }

    @Override
    public void barrier(long desc, CallStatus status) {
        run(Collective.BARRIER, null, 0, 0, null, null, 0, desc, status, false);
    }

    private void usable() {
        if (broken != null) {
            throw new Sharp4jException(name + ": unusable after an earlier failure: " + broken.getMessage(), broken);
        }
        if (closed) {
            throw new IllegalStateException(name + " is closed");
        }
    }

    private void run(Collective c, ByteBuffer buf, int off, int count, DataType t, Op op, int rootNode, long desc,
            CallStatus status, boolean more) {
        run(c, null, 0, buf, off, count, t, op, rootNode, desc, status, more);
    }

    /**
     * A call's first part (or a whole call), blocking, with this node's data read from {@code src}
     * where the call runs on the spine's rounds ({@code Exchange.source}: no copy into {@code buf});
     * otherwise copied into {@code buf} first.
     */
    @Override
    public void run(Collective c, ByteBuffer src, int srcOff, ByteBuffer buf, int off, int count, DataType t, Op op, int rootNode,
            long desc, CallStatus status) {
        run(c, src == buf && srcOff == off ? null : src, srcOff, buf, off, count, t, op, rootNode, desc, status, false);
    }

    private void run(Collective c, ByteBuffer src, int srcOff, ByteBuffer buf, int off, int count, DataType t, Op op, int rootNode,
            long desc, CallStatus status, boolean more) {
        usable();
        if (n == 1) {
            if (src != null && count > 0) {
                buf.put(off, src, srcOff, count * t.size);
            }
            return;
        }
        if (posted != completed) { // the engine awaits a call's parts before the next call; never leave any behind
            await((int) (posted - 1));
        }
        // The table's rules are keyed by the size of the user's call, which a long call's phase 3
        // sees in parts (a slot, or a unit of slots): take the algorithm and radix of the whole
        // call (its count is in desc) for every part, as sharp4j tune measured them.
        final long callBytes = callBytes(desc, count, t);
        x.begin(++seq, desc, status);
        caller = Thread.currentThread();
        try {
            if (more) {
                main.data(c, buf, off, count, t, op, rootNode, callBytes);
            } else {
                main.collective(c, src, srcOff, buf, off, count, t, op, rootNode, callBytes);
            }
        } catch (RuntimeException e) {
            RuntimeException reported = blameFromAbort(e);
            fail(reported);
            throw reported;
        } finally {
            caller = null;
        }
        x.end(status);
    }

    /** An Exchange with the algorithms over it: one call at a time (see run). */
    private final class Runner {
        final Exchange x;
        final KnomialAllreduce knomial;
        final SraAllreduce sra;
        final KnomialReduce tree;
        final SraReduce sraReduce;
        final KnomialBarrier barrier;

        Runner(Exchange x) {
            this.x = x;
            this.knomial = new KnomialAllreduce(x);
            this.sra = new SraAllreduce(x);
            this.tree = new KnomialReduce(x);
            this.sraReduce = new SraReduce();
            this.barrier = new KnomialBarrier(x);
        }

        /** The call's spine and data rounds (class comment), after {@code x.begin}. */
        void collective(Collective c, ByteBuffer buf, int off, int count, DataType t, Op op, int rootNode, long callBytes) {
            collective(c, null, 0, buf, off, count, t, op, rootNode, callBytes);
        }

        /** {@link #collective} with this node's data in {@code src} (null: in {@code buf}): read in place where merged, else copied. */
        void collective(Collective c, ByteBuffer src, int srcOff, ByteBuffer buf, int off, int count, DataType t, Op op, int rootNode,
                long callBytes) {
            if (c == Collective.BARRIER) {
                barrier.run(patterns[spineRadix]);
                return;
            }
            final Algorithm a = algorithm(c, callBytes);
            final int k = radix(c, callBytes);
            final boolean merged = (long) count * t.size <= mergedBytes(c, a, k);
            if (src != null) {
                if (merged) {
                    x.source(src, srcOff); // the spine's first round that reads this node's data reads it there
                } else {
                    buf.put(off, src, srcOff, count * t.size);
                }
            }
            if (!merged) {
                barrier.run(patterns[spineRadix]); // merged rounds carry the spine's check themselves
                if (!x.ok()) {
                    return;
                }
            }
            rounds(c, a, k, buf, off, count, t, op, rootNode);
        }

        /**
         * A later part of a call whose first part ended ok: its data rounds alone. An allreduce part
         * of one fragment runs the merged rounds (as the whole call of its size would); a reduce part
         * runs {@link #dataRounds}, the tree (or SRA's reduce), whatever its size: it needs no
         * argument check, so it need not send every node's vector to every node as the merged
         * allreduce does (twice the traffic, and a fold on every node).
         */
        void data(Collective c, ByteBuffer buf, int off, int count, DataType t, Op op, int rootNode, long callBytes) {
            if (c == Collective.REDUCE) {
                dataRounds(x, c, algorithm(c, callBytes), radix(c, callBytes), buf, off, count, t, op, rootNode);
            } else {
                rounds(c, algorithm(c, callBytes), radix(c, callBytes), buf, off, count, t, op, rootNode);
            }
        }

        /**
         * The longest call of algorithm {@code a} and radix {@code k} whose data rounds are the
         * spine's rounds with the data merged in: none unless k is the spine's radix; a reduce by
         * the tree where no node is an extra up to the spine's slot ("Merged reduce" in the class
         * comment); else a fragment.
         * The same on every node for a call they agree on; nodes that do not agree exchange the
         * same spine messages all the same (whole-slot receives), so a mismatch ends the call.
         */
        long mergedBytes(Collective c, Algorithm a, int k) {
            if (k != spineRadix) {
                return 0;
            }
            return c == Collective.REDUCE && a == Algorithm.KNOMIAL && patterns[k].nExtra == 0 ? x.spineBytes() : frag;
        }

        private void rounds(Collective c, Algorithm a, int k, ByteBuffer buf, int off, int count, DataType t, Op op, int rootNode) {
            final KnomialPattern p = patterns[k];
            if ((long) count * t.size <= mergedBytes(c, a, k)) {
                // As a whole call of this size would run (merged rounds cost no extra round), so a
                // part folds in the same bracket as the call's first part. A reduce sends its data
                // up the tree inside those rounds (the same bits at the root as recursive k-ing and
                // SRA give).
                if (c == Collective.REDUCE) {
                    tree.runMerged(p, rootNode, buf, off, count, t, op);
                } else if (a == Algorithm.SRA) {
                    sra.runMerged(p, buf, off, count, t, op);
                } else {
                    knomial.runMerged(p, buf, off, count, t, op);
                }
            } else {
                dataRounds(x, c, a, k, buf, off, count, t, op, rootNode);
            }
        }

        /**
         * The rounds of a part on data rounds only, into {@code s}: for an allreduce what
         * {@link #rounds} runs, with the merged forms replaced by their data forms (the same groups
         * and bracket); for a reduce the tree (or SRA's reduce) at every size. So a posted part folds
         * exactly as the blocking later part ({@link #data}) would.
         */
        void dataRounds(RoundSink s, Collective c, Algorithm a, int k, ByteBuffer buf, int off, int count, DataType t, Op op,
                int rootNode) {
            final KnomialPattern p = patterns[k];
            if (a == Algorithm.SRA && c == Collective.REDUCE) {
                sraReduce.run(s, p, rootNode, buf, off, count, t, op); // the allreduce's bits at the root
            } else if (a == Algorithm.SRA) {
                sra.run(s, p, buf, off, count, t, op);
            } else if (c == Collective.REDUCE) {
                tree.run(s, n, k, me, rootNode, buf, off, count, t, op);
            } else {
                knomial.run(s, p, buf, off, count, t, op);
            }
        }
    }

    // ---------------------------------------------------------------- parts in flight

    /**
     * The fragment of a posted part for {@code peers} node leaders (the same on every leader):
     * {@value #PART_SCRATCH_BYTES} bytes of scratch per part over the {@code 2 (k-1)} fragments of
     * the largest radix the step can run ({@code min(8, peers)}), at most {@value
     * #MAX_PART_FRAG_BYTES} and at least {@code fragBytes}, in whole pages: 512 KiB at 2 and 3
     * nodes, 340 KiB at 4, 144 KiB from 8. See "Large fragments" in the class comment.
     */
    public static int partFragBytes(int peers, int fragBytes) {
        int others = Math.max(1, Math.min(Exchange.MAX_RADIX, peers) - 1);
        int f = Math.min(MAX_PART_FRAG_BYTES, PART_SCRATCH_BYTES / (2 * others)) & -4096;
        return Math.max(fragBytes, f);
    }

    /**
     * A blocking fragment ({@code frag}) when an allreduce of {@code callBytes} runs the merged rounds
     * (the spine's radix, "Argument checking without hangs" in the class comment): a call of up to
     * that many bytes then costs the spine's rounds alone, where a first part and a later one would
     * run the rounds twice. 0 otherwise.
     */
    @Override
    public long mergedAllreduceBytes(long callBytes) {
        return radix(Collective.ALLREDUCE, callBytes) == spineRadix ? frag : 0;
    }

    /**
     * The spine's slot (a posted part's fragment: 512 KiB at 2 nodes with the defaults) where a
     * reduce of {@code callBytes} goes up the tree at the spine's radix and no node is an extra,
     * else 0: see "Merged reduce" in the class comment.
     */
    @Override
    public long mergedReduceBytes(long callBytes) {
        long m = main.mergedBytes(Collective.REDUCE, algorithm(Collective.REDUCE, callBytes), radix(Collective.REDUCE, callBytes));
        return m > frag ? m : 0; // with extras a line on the spine, then the tree, is faster (class comment)
    }

    @Override
    public int partsInFlight() {
        return parts.length;
    }

    /**
     * A later part of a long call, posted (class comment, "Parts in flight"): its data rounds are
     * recorded as the blocking part would run them and started; {@link #progress}, {@link #test}
     * and {@link #await} drive them. Without parts in flight (or alone) it runs the part now.
     */
    @Override
    public int post(Collective c, ByteBuffer buf, int off, int count, DataType t, Op op, int rootNode, long desc,
            CallStatus status) {
        return post(c, buf, off, buf, off, count, t, op, rootNode, desc, status);
    }

    /**
     * A posted part whose own data is read from {@code src} ({@link Schedule#source}: in its first
     * round that reads it, its sends and its fold's own operand; the result goes to {@code buf}):
     * the same messages and the same bits as the part copied into {@code buf} first.
     */
    @Override
    public int post(Collective c, ByteBuffer src, int srcOff, ByteBuffer buf, int off, int count, DataType t, Op op, int rootNode,
            long desc, CallStatus status) {
        if (parts.length == 0) {
            if (src != buf || srcOff != off) {
                buf.put(off, src, srcOff, count * t.size); // the blocking rounds read the buffer
            }
            run(c, buf, off, count, t, op, rootNode, desc, status, true);
            return (int) posted;
        }
        usable();
        if (posted - completed == parts.length) {
            throw new IllegalStateException(name + ": " + parts.length + " parts already in flight");
        }
        final long callBytes = callBytes(desc, count, t);
        PostedRounds pr = parts[(int) (posted % parts.length)];
        Schedule sch = pr.schedule();
        sch.source(src != buf || srcOff != off ? src : null, srcOff);
        main.dataRounds(sch, c, algorithm(c, callBytes), radix(c, callBytes), buf, off, count, t, op, rootNode);
        pr.start(++seq);
        final int h = (int) posted++;
        caller = Thread.currentThread();
        try {
            pr.advance(); // posts its first fragments
        } catch (RuntimeException e) {
            throw partFailed(e);
        } finally {
            caller = null;
        }
        return h;
    }

    @Override
    public void progress() {
        if (posted == completed || broken != null || closed) {
            return;
        }
        caller = Thread.currentThread();
        try {
            drive();
        } catch (RuntimeException e) {
            throw partFailed(e);
        } finally {
            caller = null;
        }
    }

    @Override
    public boolean test(int handle) {
        if ((int) completed - handle > 0) {
            return true;
        }
        progress();
        return (int) completed - handle > 0;
    }

    @Override
    public void await(int handle) {
        if ((++heatTick & heatMask) == 1) { // heating: one await in eight finds its part complete (see heating)
            awaitParts(handle);
        }
        if ((int) completed - handle > 0) {
            return;
        }
        awaitParts(handle);
    }

    /**
     * While the engine heats ({@link org.sharp4j.spi.InterNodeStep#heating}): the transport reports some completed
     * sends as still in flight ({@link Transport#heating}), and one {@link #await} in eight first
     * waits for its part, then finds it complete, as a program's awaits do when an earlier wait
     * drove the later parts of a long call to completion. Heated in lockstep, no await found its
     * part complete (LogCompilation: taken 4,051, not taken 0), and C2 compiled that return as a
     * trap that the OSU port's first long calls took on the netns rig (JFR: unstable_if in
     * {@code await}, then the tiled algorithm recompiled). One branch decides it, taken both ways
     * in the heating and never outside. The calling thread only.
     */
    @Override
    public void heating(boolean on) {
        heatMask = on ? 7 : 0;
        tr.heating(on);
    }

    /** {@link #heating}: 7 while heating, else 0. The calling thread only. */
    private int heatMask;
    private int heatTick;

    /** {@link #await} past its check: waits until part {@code handle} (and every part before it) is complete. */
    private void awaitParts(int handle) {
        usable();
        caller = Thread.currentThread();
        try {
            partsDone.target = handle;
            int blame = parts[(int) (completed % parts.length)].waitingFor();
            waiter.await(partsDone, blame >= 0 ? blame : tr.globalRank((me + 1) % n));
        } catch (RuntimeException e) {
            throw partFailed(e);
        } finally {
            caller = null;
        }
    }

    /** Advances every part in flight once, oldest first, and counts the completed ones (in posting order). */
    private void drive() {
        for (long i = completed; i < posted; i++) {
            parts[(int) (i % parts.length)].advance();
        }
        while (completed < posted && parts[(int) (completed % parts.length)].done()) {
            completed++;
        }
    }

    /** What {@link #await} polls: every part driven once, done when the awaited one (and those before it) completed. */
    private final class PartsDone implements Waiter.Condition {
        int target;

        @Override
        public boolean done() {
            if (deferredAbort) { // Communicator.abort from another thread: end the wait on this one
                throw new Sharp4jException("rank " + deferredRank + " aborted the job (from another thread) during a call");
            }
            drive();
            return (int) completed - target > 0;
        }

        @Override
        public long activity() {
            return HostStep.this.activity();
        }
    }

    /** The transport's progress events: the parts' messages moving, so waits for them take no naps (Waiter.Condition#activity). */
    @Override
    public long activity() {
        return tr.progressEvents();
    }

    /** A part failed: every part is dead, the step broken and the other leaders told, as for a blocking call. */
    private RuntimeException partFailed(RuntimeException e) {
        for (PostedRounds pr : parts) {
            pr.abandon();
        }
        completed = posted;
        RuntimeException reported = blameFromAbort(e);
        fail(reported);
        return reported;
    }

    // ---------------------------------------------------------------- an offload's recovery

    private Listener listener;
    private static final long RECOVERY_KIND_MASK = 0xFL << 44;
    /** The wake-ups of a recovery: to and from {@code me +- 2^i mod n}, i < ceil(log2 n). */
    private final int[] wakeSend = new int[32];
    private final int[] wakeRecv = new int[32];
    private final ByteBuffer wakeBuf = ByteBuffer.allocateDirect(8);
    private final Pending wakePending = new Pending();

    /** One request waited for through the waiter (the recovery's wake-ups). */
    private final class Pending implements Waiter.Condition {
        int req;

        @Override
        public boolean done() {
            return tr.test(req) >= 0;
        }
    }
    /** Operations (low 24 bits) whose recovery collective runs on this thread now, innermost last. */
    private final int[] active = new int[8];
    private int depth;

    /** Installs the offload's listener (null: none); from then on every wait also looks for recovery triggers (every 64 polls). */
    @Override
    public void recoveryListener(Listener l) {
        this.listener = l;
        Runnable side = l == null ? null : this::pollRecovery;
        x.sideWork(side);
        recovery.x.sideWork(side);
    }

    /**
     * One probe of the transport for the first message of a recovery (phase 0): tells the listener
     * about it. Slow path: an offload calls it from its own waits every so often. Returns whether
     * there was one.
     */
    @Override
    public boolean pollRecovery() {
        if (listener == null || closed || n == 1) {
            return false;
        }
        long t = tr.probe(Exchange.tag(Exchange.KIND_RECOVERY_WAKE, 0, 0, 0), RECOVERY_KIND_MASK);
        if (t < 0) {
            return false;
        }
        int op = (int) ((t >>> 20) & 0xFFFFFF);
        for (int i = 0; i < depth; i++) {
            if (active[i] == op) {
                return false; // a message of a recovery this leader is running: its own rounds take it
            }
        }
        listener.recoveryPending(op);
        return true;
    }

    /**
     * A collective among all node leaders for an offload's operation {@code opSeq}, in the
     * recovery tag space, with the spine's argument check (desc) and status merge: phase 0 (its
     * messages are the trigger other leaders probe for) or phase 1 (the call redone on the host
     * path). Every leader must run the same phases for the same operation; they may do so nested
     * inside a wait of a later call (it has its own scratch, requests and tags). Throws like a call.
     */
    @Override
    public void recoveryCollective(long opSeq, int phase, Collective c, ByteBuffer buf, int off, int count, DataType t, Op op,
            int rootNode, long desc, CallStatus status) {
        if (broken != null) {
            throw new Sharp4jException(name + ": unusable after an earlier failure: " + broken.getMessage(), broken);
        }
        if (closed) {
            throw new IllegalStateException(name + " is closed");
        }
        if (n == 1) {
            return;
        }
        Exchange rx = recovery.x;
        if (phase == 0) {
            rx.kinds(Exchange.KIND_RECOVERY, Exchange.KIND_RECOVERY_DATA);
        } else {
            rx.kinds(Exchange.KIND_REDO_SPINE, Exchange.KIND_REDO_DATA);
        }
        if (depth == active.length) {
            throw new Sharp4jException(name + ": recoveries nested " + depth + " deep");
        }
        rx.begin(opSeq, desc, status);
        Thread outer = caller;
        caller = Thread.currentThread();
        active[depth++] = (int) (opSeq & 0xFFFFFF);
        try {
            int wakes = phase == 0 ? wakeUp(opSeq) : 0;
            recovery.collective(c, buf, off, count, t, op, rootNode, callBytes(desc, count, t));
            for (int i = 0; i < wakes; i++) { // they all come: every leader joins and sends its own
                wakePending.req = wakeRecv[i];
                waiter.await(wakePending, tr.globalRank(Math.floorMod(me - (1 << i), n)));
                wakePending.req = wakeSend[i];
                waiter.await(wakePending, tr.globalRank((me + (1 << i)) % n));
            }
        } catch (RuntimeException e) {
            RuntimeException reported = blameFromAbort(e);
            fail(reported);
            throw reported;
        } finally {
            depth--;
            caller = outer;
        }
        rx.end(status);
    }

    /**
     * Dissemination of a recovery: a leader that joins it (the first, or one woken) wakes
     * {@code me + 2^i mod n} for every {@code 2^i < n} and expects a wake-up from each
     * {@code me - 2^i}, so every leader is woken within ceil(log2 n) hops whatever the recovery's
     * own pattern (whose first message may go the other way, e.g. from an extra to its proxy), and
     * every wake-up sent is received: 2 ceil(log2 n) messages per leader, on the failure path only.
     * The probe of {@link #pollRecovery} looks for these messages. Returns how many of each were posted.
     */
    private int wakeUp(long opSeq) {
        int k = 0;
        for (int d = 1; d < n; d <<= 1) {
            long tg = Exchange.tag(Exchange.KIND_RECOVERY_WAKE, opSeq, k, 0);
            wakeRecv[k] = tr.recv(Math.floorMod(me - d, n), tg, wakeBuf, 0, 0);
            wakeSend[k] = tr.send((me + d) % n, tg, wakeBuf, 0, 0);
            k++;
        }
        return k;
    }

    // ---------------------------------------------------------------- liveness queries

    /*
     * Who may touch what: only the node leader's thread (the transport's one thread), from the
     * engine's failure probe inside a wait. A leader that times out waiting for leader X asks X
     * (KIND_QUERY, 0 bytes, tag seq = the asker's peer index) and gives it a grace to answer
     * (KIND_QUERY_REPLY, tag seq = X's index). X answers from its own waits' probes, so an answer
     * means X is alive and waiting for someone else: the asker keeps waiting, and the leader at the
     * end of the chain, whose peer does not answer, names the culprit; its abort reaches everyone.
     * One query outstanding per leader; at most REPLIES answers in flight. Failure path only.
     */
    private static final long KIND_MASK = 0xFL << 44;
    private static final int REPLIES = 8;
    private final ByteBuffer queryBuf = ByteBuffer.allocateDirect(8);
    private int queriedNode = -1;
    private long queryAt;
    private int queryRecv = -1;
    private int querySend = -1;
    private boolean queryAnswered;
    private final int[] replySends = new int[REPLIES];
    private int replies;

    @Override
    public int askAlive(int node, long waitStartNanos, long graceNanos) {
        if (closed || broken != null || n == 1 || node == me || node < 0 || node >= n) {
            return PEER_SILENT;
        }
        long now = System.nanoTime();
        try {
            if (querySend >= 0 && tr.test(querySend) >= 0) {
                querySend = -1;
            }
            if (queryRecv >= 0 && tr.test(queryRecv) >= 0) {
                queryRecv = -1;
                queryAnswered = true;
            }
            if (node != queriedNode || queryAt - waitStartNanos < 0) { // another peer, or a new wait: ask (again)
                queriedNode = node;
                queryAt = now;
                queryAnswered = false;
                if (queryRecv < 0) { // else the earlier question's answer, still to come, is as good
                    queryRecv = tr.recv(node, Exchange.tag(Exchange.KIND_QUERY_REPLY, node, 0, 0), queryBuf, 0, 0);
                }
                if (querySend < 0) {
                    querySend = tr.send(node, Exchange.tag(Exchange.KIND_QUERY, me, 0, 0), queryBuf, 0, 0);
                }
                return PEER_PENDING;
            }
            if (queryAnswered) {
                return PEER_ANSWERED;
            }
            return now - queryAt - graceNanos > 0 ? PEER_SILENT : PEER_PENDING;
        } catch (RuntimeException e) {
            return PEER_SILENT; // the transport says the peer failed: it is the culprit
        }
    }

    @Override
    public void answerQueries() {
        if (closed || broken != null || n == 1) {
            return;
        }
        try {
            for (int i = 0; i < replies; ) { // release the answers that left
                if (tr.test(replySends[i]) >= 0) {
                    replySends[i] = replySends[--replies];
                } else {
                    i++;
                }
            }
            while (replies < REPLIES) {
                long t = tr.probe(Exchange.tag(Exchange.KIND_QUERY, 0, 0, 0), KIND_MASK);
                if (t < 0) {
                    return;
                }
                int asker = (int) ((t >>> 20) & 0xFFFFFF);
                if (asker < 0 || asker >= n) {
                    return;
                }
                int r = tr.recv(asker, t, queryBuf, 0, 0);
                for (int spin = 0; tr.test(r) < 0; spin++) { // it has arrived: matched at once
                    if (spin > 1000) {
                        return; // leave it pending; cancelled at close
                    }
                }
                replySends[replies++] = tr.send(asker, Exchange.tag(Exchange.KIND_QUERY_REPLY, me, 0, 0), queryBuf, 0, 0);
            }
        } catch (RuntimeException e) {
            // the asker failed meanwhile: nobody to answer
        }
    }

    /** Messages this leader has sent on the host path (tests: a successful offloaded call sends none). */
    @Override
    public long messagesSent() {
        return tr.sendCount();
    }

    /**
     * A leader that gives up sends its abort, then usually exits: its peers may see it disconnect
     * (and blame it) before they look at the abort. Its message came first on the same connection,
     * so after a peer failure the abort receives are polled once more and, if one arrived, the
     * rank it blames is reported, as the engine's probe does for aborts.
     */
    private RuntimeException blameFromAbort(RuntimeException e) {
        if (!(e instanceof PeerFailureException)) {
            return e;
        }
        long w = 0;
        for (int i = 0; i < 16 && w == 0; i++) { // a few progress rounds: the message may still be in the worker
            w = abortWord();
        }
        if (w == 0) {
            return e;
        }
        int giver = (int) w - 1;
        int blamed = (int) (w >>> 32) - 1;
        if (blamed < 0 || blamed == giver) {
            return e;
        }
        return new PeerFailureException("rank " + myRank + ": rank " + giver + " gave up on the job because of rank " + blamed
                + " (then: " + e.getMessage() + ")", new int[] {blamed});
    }

    private void fail(RuntimeException e) {
        broken = e;
        if (abortWord() != 0) {
            return; // another leader gave up first and told everyone
        }
        if (deferredAbort) { // Communicator.abort from another thread, handed over to this one
            abort(deferredRank, deferredBlamed);
            return;
        }
        int blamed = -1;
        if (e instanceof PeerFailureException) {
            int[] r = ((PeerFailureException) e).ranks();
            blamed = r.length > 0 ? r[0] : -1;
        }
        abort(myRank, blamed);
    }

    /**
     * Best effort: tells every other leader that {@code rank} gave up, blaming {@code blamed}, by
     * dissemination: this leader sends to {@code me + 2^i mod n} for every {@code 2^i < n}, and
     * each leader forwards the first abort it receives the same way ({@link #abortWord}), so all
     * have it within ceil(log2 n) hops with O(log n) messages and endpoints per leader (sending
     * to all n-1 would open an endpoint to every leader at the worst moment). Drives the transport
     * for at most 200 ms so the messages leave. Only the first call sends.
     */
    @Override
    public void abort(int rank, int blamed) {
        if (abortSent || closed) {
            return;
        }
        Thread c = caller;
        if (c != null && c != Thread.currentThread()) {
            // The transport is single-threaded and a call is driving it: hand the abort to that
            // thread, which stops waiting, sends it to the peers and fails the call.
            deferredRank = rank;
            deferredBlamed = blamed;
            deferredAbort = true;
            x.requestAbort("rank " + rank + " aborted the job (from another thread) during a call");
            return;
        }
        abortSent = true;
        abortOut.putInt(0, rank);
        abortOut.putInt(4, blamed);
        int k = 0;
        for (int d = 1; d < n; d <<= 1, k++) {
            try {
                abortSend[k] = tr.send((me + d) % n, ABORT_TAG, abortOut, 0, 8);
            } catch (RuntimeException e) {
                abortSend[k] = -1; // that peer is gone: the others forward around it
            }
        }
        long deadline = System.nanoTime() + ABORT_FLUSH_NANOS;
        boolean pendingAny = true;
        while (pendingAny && System.nanoTime() - deadline < 0) {
            pendingAny = false;
            for (int i = 0; i < k; i++) {
                if (abortSend[i] >= 0) {
                    try {
                        if (tr.test(abortSend[i]) >= 0) {
                            abortSend[i] = -1;
                        } else {
                            pendingAny = true;
                        }
                    } catch (RuntimeException e) {
                        abortSend[i] = -1;
                    }
                }
            }
            if (pendingAny) {
                Thread.yield();
            }
        }
    }

    /**
     * {@code (blamed+1) << 32 | (giver+1)} of the first abort received, else 0. Polls the one abort
     * receive; the first abort received is forwarded (dissemination, see {@link #abort}).
     * On the leader thread only (the engine's failure probe runs there).
     */
    @Override
    public long abortWord() {
        // A leader that gave an abort (abortSent, no word received) reports none: every leader
        // forwards an abort to its dissemination peers, the giver among them, so its own can come back.
        if (abortWord != 0 || abortSent || closed || abortRecv < 0) {
            return abortWord;
        }
        int r;
        try {
            r = tr.test(abortRecv);
        } catch (RuntimeException e) {
            abortRecv = -1;
            return 0;
        }
        if (r < 0) {
            return 0;
        }
        abortRecv = -1;
        if (r == 8) {
            int giver = abortIn.getInt(0);
            int blamed = abortIn.getInt(4);
            abortWord = ((long) (blamed + 1) << 32) | ((giver + 1) & 0xFFFFFFFFL);
            abort(giver, blamed); // forward, as the giver said it
        }
        return abortWord;
    }

    /**
     * Meets the other node leaders, then closes the transport. Why the meeting: a Reduce's non-root
     * leaders return once their parts are handed over, while the root may still be reading them;
     * closing their endpoints under it failed the root ("node leader ... disconnected: Endpoint
     * timeout": 3 hosts, 16 MiB Reduce then close, and the tuner's sweep between its communicators).
     * So a healthy step first finishes its parts in flight and runs one more barrier, as MPI's
     * {@code MPI_Comm_free} and {@code MPI_Finalize} are collective: every leader closes after the
     * same calls, so the barrier takes the same sequence number everywhere. A step that failed or
     * aborted, or that another thread closes while a call is inside it, closes at once; a failure
     * in the meeting (a leader that died, or never closes within the timeout) ends the meeting,
     * not the close.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        if (broken == null && !abortSent && n > 1 && caller == null) {
            try {
                barrier(CLOSE_DESC, new CallStatus());
            } catch (RuntimeException e) {
                // WARN: the close still goes ahead and leaves nothing behind, but a leader that died after
                // the last call or never closed is something the user should hear about, by name.
                LOG.warn("sharp4j: {}: the node leaders' meeting before close ended early (closing anyway): {}",
                        name, e.getMessage());
            }
        }
        closed = true;
        try {
            tr.cancelAll();
        } finally {
            if (broken != null || abortSent) {
                tr.closeAfterFailure(); // the culprit may never answer: do not make the error wait for it
            } else {
                tr.close();
            }
        }
    }
}
