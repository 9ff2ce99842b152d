package org.sharp4j;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.sharp4j.bootstrap.Bootstrap;
import org.sharp4j.coll.Engine;
import org.sharp4j.coll.Payload;
import org.sharp4j.topology.Topology;
import org.sharp4j.tuning.Collective;

/**
 * A group of ranks that run Allreduce, Reduce and Barrier together: sharp4j's counterpart of an
 * MPI intra-communicator. Create one with {@link Sharp4j#init()} (or {@link Sharp4j#create}); every
 * rank must call the same collectives in the same order, as in MPI.
 *
 * <p>Data: Java arrays ({@code int[]}, {@code long[]}, {@code float[]}, {@code double[]}) with element
 * offsets, direct ByteBuffers with element offsets (absolute: position and limit are ignored, data
 * is read in native byte order), or the rank's {@link SharedBuffer} (zero copy-in). In-place
 * variants take one buffer. Every argument is checked before any shared state is touched; a bad
 * one throws {@link IllegalArgumentException} (or {@link NullPointerException} for a null
 * buffer) naming it. Ranks that disagree on count, type, op or root get an
 * {@link ArgumentMismatchException} on every rank; a dead or stuck peer a
 * {@link PeerFailureException} after {@code sharp4j.timeout}.
 *
 * <p>One thread at a time may call a communicator. Closing it releases its shared memory.
 */
public final class Communicator implements AutoCloseable {
    private final Engine engine;
    private final Bootstrap bootstrap;
    private final boolean ownsBootstrap;
    private final Payload src;
    private final Payload dst;
    private SharedBuffer shared;
    private boolean closed;

    Communicator(Engine engine, Bootstrap bootstrap, boolean ownsBootstrap) {
        this.engine = engine;
        this.bootstrap = bootstrap;
        this.ownsBootstrap = ownsBootstrap;
        this.src = engine.src;
        this.dst = engine.dst;
        if (engine.heatPending()) {
            try {
                long t0 = System.nanoTime();
                int calls;
                engine.heating(true); // yield to this JVM's compiler threads rather than spin against them, and more
                try {
                    calls = heat();
                } finally {
                    engine.heating(false);
                }
                engine.heated(calls, longHeatCalls, t0);
                bootstrap.barrier();
            } catch (RuntimeException | Error e) {
                engine.close(); // nothing of a failed creation outlives it; the caller closes the bootstrap
                throw e;
            }
        }
    }

    /**
     * Sizes up to 4 KiB past the inline area that every fifth heating round visits in turn (the
     * tree's and the kernels' paths): compiled later, from a profile of the program's own first
     * sizes, a kernel's branch the program had not taken yet became a trap (LogCompilation:
     * unstable_if in {@code Staging.pays} at an OSU table's 2 KiB row, which then averaged 7x its P50).
     */
    static final int[] HEAT_MID_BYTES = {64, 128, 256, 512, 1024, 2048, 4096};

    /**
     * Small calls per collective in a phase of the heating, which runs in phases until the hot path is
     * compiled by C2. Its thresholds count about
     * 5,000 invocations of each method after C1's profiling version is in (Tier4InvocationThreshold),
     * and every path needs them: the exchange past the inline area and the tree (the mid sizes, half
     * of the calls) too. With 6,000 calls, a fifth of them mid sizes, the tree, the exchange's
     * general path and the kernels stayed in C1 code and C2 compiled them during the program's first
     * rows, on the core its rank runs on: 4 ms per call while it did, for 40-150 ms (PrintCompilation
     * against OsuDirect's timed start: 13-15 C2 compiles of sharp4j methods after it, TreeAlgorithm.run
     * at the 512 B row).
     */
    static final int HEAT_PHASE_CALLS = 4_000;
    /**
     * Every eighth heating round adds a run of {@code REDUCE_RUN + 1} Reduces to one root, every
     * rank in turn, with nothing between them. Why: a rank that is not
     * the root returns from a Reduce without learning whether the others arrived, so from a
     * program's {@code ShmLevel.SETS}-th Reduce in a row on it waits at the reuse gate before every
     * call (the reuse gate in {@code Engine.run}), a branch that the heating's Allreduce, Reduce and Barrier
     * in turn never took (each Allreduce and Barrier tells every rank that all arrived). So the gate
     * ran interpreted, then in C1 code, and C2 compiled it during the program's first Reduce row,
     * on the non-root's core (PrintCompilation against {@code OsuDirect reduce}'s timed start: the
     * tier-3 and tier-4 compiles of the gate, then a method of its own, 27-33 and 48 ms after it, the only sharp4j
     * methods compiled there). Each such run makes every non-root wait at the gate at least twice.
     */
    static final int REDUCE_RUN = org.sharp4j.coll.ShmLevel.SETS - 1;
    /** Phases at most: another runs only while the last one still made this JVM's JIT compile (on any rank). */
    static final int HEAT_PHASES = 3;
    /** Rounds of {@link org.sharp4j.coll.Reductions#heatKernels} at the start and after each phase. */
    static final int HEAT_KERNEL_ROUNDS = 40;
    /**
     * Rank 0 stops the heating after this long (oversubscribed ranks pay microseconds per call).
     * C2's thresholds count calls, not time: at 300 ms the heating stopped after 2,000-2,500 of
     * its 6,000 rounds even on a quiet machine (the compiler threads share each bound rank's CPU),
     * and under load after 1,000-2,000, so the exchange was compiled (with a profile skewed to the
     * program's first calls) during the program (LogCompilation: profile_predicate traps in the
     * inline fold at an OSU table's second row, 2 ms calls). The JIT settles between phases do not
     * count. Measured on this 2-core VM, 2 ranks: phase 1 (4,000 calls) 1.4 s with 0.7-0.8 s of
     * compilation, phases 2 and 3 0.35-0.45 s each (0.2-0.3 s of compilation), a fourth compiled
     * 5-9 ms: 3 phases, 1.4-1.5 s once per JVM (2 ranks), where one phase cut at 1 s left the tree and the
     * kernels to the program's first rows.
     */
    private static final long HEAT_BUDGET_NANOS = 2_500_000_000L;

    /**
     * After the engine's warm-up profiled every path, runs the small-message path (Allreduce,
     * Reduce, Barrier) through this class's public methods until C2 has compiled it, so that a
     * program's first thousand calls do not run in the interpreter or in C1's profiling code
     * (measured: the first 300 calls of a fresh job took 20-140 us each, then two plateaus
     * before the steady state; heated through the engine only, the first 400 calls still took
     * 3-11 us each while these methods were interpreted and compiled). Collective, in blocks of
     * 500; whether to go on is agreed after each block (rank 0's clock against the budget), and
     * whether to heat at all is agreed first: any rank whose JVM has not heated yet makes every
     * rank heat, so ranks never disagree on the number of calls. Returns the calls per collective.
     *
     * <p>The calls cycle through every valid type x op; arrays, in-place arrays, direct buffers
     * (two pairs in turn: {@link HeatBuffers}) and in-place direct buffers; 1 element, the inline area's last element count and the first count past it, and
     * half of the time one of {@link #HEAT_MID_BYTES}; every eighth round a run of Reduces to one root
     * ({@link #REDUCE_RUN}). C2
     * compiles from the profile these calls leave, and a branch never taken in it is compiled as
     * a trap: heated with DOUBLE SUM only, the first DOUBLE MAX of a program (the OSU harness's
     * statistics) threw the compiled collective, its fold and the kernels away mid-benchmark
     * (LogCompilation: unstable_if in {@code Reductions.rawDouble}), and with mpirun binding each
     * rank to one core the recompiling threads took that core from the rank for milliseconds:
     * 32 B averaged 20-30 us against a P50 of 0.3, P99 2 ms.
     */
    private int heat() {
        // whether to heat at all, and whether to run the long paths too (Config.longWarmup: a rank whose node is
        // oversubscribed asks for them, and then every rank runs them, so that all make the same calls)
        long[] flag = {Engine.heatedInThisJvm() ? 0 : 1,
                engine.config().longWarmup(topology().nodeCount(), engine.oversubscribed()) ? 1 : 0};
        long[] agreed = new long[2];
        allreduce(flag, 0, agreed, 0, 2, Op.MAX);
        if (agreed[0] == 0) {
            return 0;
        }
        final boolean heatLongPaths = agreed[1] != 0;
        long t0 = System.nanoTime();
        long slept = 0; // in the JIT settles between phases: not counted against the budget
        int phase = 0;
        org.sharp4j.coll.Reductions.heatKernels(HEAT_KERNEL_ROUNDS);
        long compiledAtPhaseStart = org.sharp4j.coll.JitIdle.compiledMillis();
        DataType[] types = DataType.values();
        Op[] ops = Op.values();
        int maxCount = HEAT_MID_BYTES[HEAT_MID_BYTES.length - 1] / 4; // the largest mid-size call, in 4-byte elements
        Object[] ins = {new int[maxCount], new long[maxCount], new float[maxCount], new double[maxCount]};
        Object[] outs = {new int[maxCount], new long[maxCount], new float[maxCount], new double[maxCount]};
        HeatBuffers hb = new HeatBuffers(maxCount * 8);
        PathProbes probes = new PathProbes();
        int combos = types.length * ops.length;
        int size = size();
        int calls = 0;
        int k = 0;
        while (true) {
            probes.run(k);
            for (int i = 0; i < 500; i++, k++) {
                DataType t = types[k % types.length];
                Op op = ops[(k / types.length) % ops.length];
                if (!op.validFor(t)) {
                    op = Op.SUM;
                }
                // 0, 1: one element; 2: the inline area full; 3: just past it; 4-7: the mid sizes in turn
                int shape = (k / combos) % 8;
                int n = shape < 2 ? 1 : shape < 4 ? org.sharp4j.coll.ShmLevel.INLINE_BYTES / t.size + (shape - 2)
                        : HEAT_MID_BYTES[((k / (combos * 8)) * 4 + shape - 4) % HEAT_MID_BYTES.length] / t.size;
                int form = (k + k / combos) % HEAT_FORMS;
                int root = k % size;
                heatCall(Collective.ALLREDUCE, n, t, op, 0, form, ins, outs, hb);
                heatCall(Collective.REDUCE, n, t, op, root, form, ins, outs, hb);
                if ((k & 7) == 7) {
                    int runRoot = (k >> 3) % size; // every rank in turn (root, k % size, is the same for all these k when size divides 8)
                    for (int j = 0; j <= REDUCE_RUN; j++) {
                        heatCall(Collective.REDUCE, n, t, op, runRoot, form, ins, outs, hb);
                    }
                }
                barrier();
            }
            calls += 500;
            if (calls % 1500 == 1000) {
                // by now the wait's slow path has a profile; take its rare branches (local, ~1 ms), at 1,000,
                // 2,500, 4,000 and 5,500 calls: if a pass threw a compiled version away, the blocks after the
                // next recompile it. Twice was not enough: a run whose awaitSlow was compiled after the second
                // pass, from a profile without the failure probe, trapped at the program's first 20 ms wait
                // (LogCompilation: unstable_if at awaitSlow's probe test during an OSU table).
                engine.waiter().exerciseSlowPath(rank());
            }
            boolean phaseEnds = calls % HEAT_PHASE_CALLS == 0;
            flag[1] = 0;
            if (phaseEnds) {
                // Let the JIT work off its queue (sleeping: its threads share this rank's core), then heat
                // again if this phase still made it compile: C2 raises its thresholds while its queue is long,
                // so the paths a phase ran may pass them only in the next (measured: the routed path and the
                // tree were compiled at the program's first rows after one long phase).
                org.sharp4j.coll.Reductions.heatKernels(HEAT_KERNEL_ROUNDS);
                long s0 = System.nanoTime();
                org.sharp4j.coll.JitIdle.await(1_000, 30);
                slept += System.nanoTime() - s0;
                long compiled = org.sharp4j.coll.JitIdle.compiledMillis();
                flag[1] = ++phase < HEAT_PHASES && compiled != compiledAtPhaseStart ? 1 : 0;
                compiledAtPhaseStart = compiled;
            }
            flag[0] = rank() == 0 && System.nanoTime() - t0 - slept > HEAT_BUDGET_NANOS ? 1 : 0;
            allreduce(flag, 0, agreed, 0, 2, Op.MAX); // the same outcome on every rank
            if (agreed[0] != 0 || phaseEnds && agreed[1] == 0) {
                break;
            }
        }
        if (heatLongPaths) {
            longHeatCalls = heatLong(flag, agreed);
        }
        return calls;
    }

    /**
     * One call per long-message path ({@link org.sharp4j.coll.Engine#longPathBytes}: the smallest
     * size of each, rank 0's list on every rank) and collective, at the start of every block of the
     * small heating: a handful among its thousands of calls, so that the dispatch the small calls
     * share with the long ones ({@code Engine.run}'s switch over the algorithms, the table's
     * {@code Algorithm.toIntra}) has seen every algorithm this job's table uses when C2 compiles it.
     * Why: C2 compiles a switch case or branch that the profile never saw as a trap. With two ranks
     * on one node every heated size ran the exchange, and the program's first call of another
     * algorithm threw the compiled {@code Engine.run} back to the interpreter (LogCompilation:
     * unstable_if at its switch and in {@code toIntra}) and recompiled it during the next row, on
     * the core its rank runs on: an OSU table's 8 B row averaged 1.2-4.8 us against a P50 of 0.14
     * (Allreduce, {@code -m 8:65536}). Not the long heating ({@link #heatLong}): a few calls give the
     * branches counts without making the small calls' profile a long one.
     */
    private final class PathProbes {
        private final long[] arBytes = rankZeroSizes(engine.longPathBytes(Collective.ALLREDUCE, 0));
        private final long[] rdBytes = rankZeroSizes(engine.longPathBytes(Collective.REDUCE, 0));
        private final ByteBuffer in;
        private final ByteBuffer out;

        PathProbes() {
            long max = 8;
            for (long b : arBytes) {
                max = Math.max(max, Engine.heatPathBytes(b));
            }
            for (long b : rdBytes) {
                max = Math.max(max, Engine.heatPathBytes(b));
            }
            in = ByteBuffer.allocateDirect((int) max).order(ByteOrder.nativeOrder());
            out = ByteBuffer.allocateDirect((int) max).order(ByteOrder.nativeOrder());
        }

        /** One Allreduce and one Reduce (root rotating with {@code k}) of DOUBLE SUM per path; the same calls on every rank. */
        void run(int k) {
            for (long b : arBytes) {
                call(Collective.ALLREDUCE, b, 0);
            }
            for (long b : rdBytes) {
                call(Collective.REDUCE, b, k % size());
            }
        }

        /** One call on {@code path} (its size, and the table segment and chunk it forces), the engine's forcing undone after it. */
        private void call(Collective c, long path, int root) {
            engine.heatPath(path);
            try {
                int n = (int) (Engine.heatPathBytes(path) / 8);
                if (c == Collective.ALLREDUCE) {
                    allreduce(in, 0, out, 0, n, DataType.DOUBLE, Op.SUM);
                } else {
                    reduce(in, 0, out, 0, n, DataType.DOUBLE, Op.SUM, root);
                }
            } finally {
                engine.heatPath(0);
            }
        }
    }

    /** Long calls per collective the heating ran ({@link #heatLong}); set once, in the constructor. */
    private int longHeatCalls;

    /** Long calls per collective in a block of {@link #heatLong}. */
    static final int HEAT_LONG_BLOCK = 250;
    /** Blocks of {@link #heatLong} at most. */
    static final int HEAT_LONG_BLOCKS = 24;
    /** Long calls per collective {@link #heatLong} runs at least (budget permitting): C2's thresholds count about 5,000 invocations. */
    static final int HEAT_LONG_CALLS = 2_500;
    /** Long calls per collective {@link #heatLong} runs at least across nodes, where most are cheap ({@link Engine#cheapLongPath}). */
    static final int HEAT_LONG_CALLS_CHEAP = 5_500;
    /**
     * Across nodes, {@link #heatLong} takes the real long paths once in {@code 2^HEAT_CHEAP_SHIFT}
     * calls (the cheap one otherwise). With one in four, the real paths' 128 KiB-2 MiB calls took most
     * of the 1.5 s budget: 2,000 calls per collective, and {@code TiledAlgorithm.solo},
     * {@code HostStep.post}, {@code HostStep.await} and {@code soloRetire} reached C2
     * ({@code -XX:+LogCompilation}) 0.9-1.9 s into the program (2 hosts, 256 KiB Reduce). With one in
     * sixteen: 2,250-2,500 calls and all of them compiled before the program's first call; the real
     * paths still take about 140 calls per collective between them, which profiles their branches.
     */
    static final int HEAT_CHEAP_SHIFT = 4;
    /**
     * Across nodes, {@link #heatLong} makes one call pair in this many on {@link Engine#manyPartsPath}
     * (more later parts than phase 3 keeps in flight), instead of the path of its turn: about one
     * per block, each about 800 KB; as one of the longest paths, every other of the real paths'
     * turns, it halved the long calls the budget ran (2,250 against 4,500, 2 rig hosts).
     */
    static final int HEAT_MANY_PARTS_EVERY = 256;

    /** Rank 0 stops {@link #heatLong} after this long in calls (the JIT settles between blocks do not count). */
    static final long HEAT_LONG_BUDGET_NANOS = 1_500_000_000L;

    /**
     * The long-message paths until C2 compiled them: the tree above the mid sizes, the tiled,
     * pipelined and direct algorithms with their chunk loops and, across nodes, phase 3's data
     * rounds, their pipelined parts and the transport ({@link org.sharp4j.coll.Engine#longPathBytes}:
     * the smallest size of each path above the mid sizes, rank 0's list on every rank; every other
     * call the one of several chunks). Every type, op and form in turn, Allreduce and Reduce, in
     * blocks of {@value #HEAT_LONG_BLOCK} calls per collective; after each block the JIT settles.
     * It runs at least {@value #HEAT_LONG_CALLS} calls, then on while a block still made the JIT
     * compile, at most {@value #HEAT_LONG_BLOCKS} blocks, and rank 0 stops it after 1.5 s of calls
     * (the settles do not count); the decisions are agreed, so every rank runs the same calls.
     * Across nodes fifteen calls of sixteen ({@link #HEAT_CHEAP_SHIFT}) take the cheap path ({@link Engine#cheapLongPath}: the same
     * methods with 41 KB per call instead of 128 KiB-2 MiB) and the minimum is {@value #HEAT_LONG_CALLS_CHEAP}
     * calls: the network made each long call cost about 0.3 ms on the netns rig, the budget ran
     * about 1,750, and C2 compiled the long path during the program's first 3,000-5,000 long calls
     * (2 hosts, 1 MiB Allreduce, {@code -x 100 -i 1000}, 3 rounds alternating with the build
     * before: average 0.53-1.45 ms against 2.7-3.6, P90 0.74-1.6 ms against 8.8-10.0).
     * Runs where {@code sharp4j.warmup.long} says so ({@link Config#longWarmup}: by default when the
     * job spans several nodes or a node has more ranks than CPUs). Returns the long calls per collective.
     *
     * <p>Why: heated with small calls only, C2 compiled these paths (about 40 methods:
     * {@code TiledAlgorithm.run}, {@code HostStep.post}, {@code Exchange.dataRound}, the UCX
     * transport's send and receive, the staged kernels) during a program's first 3,000 long calls,
     * on the core mpirun binds its rank to, which its compiler threads share: calls of 4, 8 and
     * 12 ms (scheduler ticks). Measured on this 2-core VM, OSU ports {@code -i 100} against Open MPI
     * Java in the same processes, 64 KiB-16 MiB, 2 rounds: one node, 2 ranks (set on), rows whose P99 exceeds
     * 3x their P50 went from 12 of 36 to 5 of 36; 2 network-namespace hosts, the largest average /
     * P50 from 8.3 to 1.7 and the median average ratio against Open MPI from 1.23 to 1.02. A run of
     * 5,000 long calls left no compilation for the program (2 hosts, 256 KiB: P99 650 us against
     * 4.5-8 ms), but took 4.3 s there; the budget keeps the heating at about 3 s per JVM on this
     * machine (small and long), far less where calls are fast. Not by default on one node: see
     * {@link Config#longWarmup} for what it costs the small calls there.
     */
    private int heatLong(long[] flag, long[] agreed) {
        long[] arBytes = rankZeroSizes(engine.longPathBytes(Collective.ALLREDUCE, HEAT_MID_BYTES[HEAT_MID_BYTES.length - 1]));
        long[] rdBytes = rankZeroSizes(engine.longPathBytes(Collective.REDUCE, HEAT_MID_BYTES[HEAT_MID_BYTES.length - 1]));
        int maxBytes = 0;
        for (long b : arBytes) {
            maxBytes = (int) Math.max(maxBytes, Engine.heatPathBytes(b));
        }
        for (long b : rdBytes) {
            maxBytes = (int) Math.max(maxBytes, Engine.heatPathBytes(b));
        }
        if (maxBytes == 0) {
            return 0;
        }
        // every other call one of the several-chunk paths (e.g. the 4-rank direct Reduce and the pipelined one,
        // its segment forced), in turn
        long[] arLong = longest(arBytes);
        long[] rdLong = longest(rdBytes);
        // across nodes, fifteen calls of sixteen on the cheap several-chunk path (Engine.cheapLongPath), the
        // sixteenth on the paths above in their turns
        long[] cheap = rankZeroSizes(new long[] {engine.cheapLongPath(Collective.ALLREDUCE), engine.cheapLongPath(Collective.REDUCE)});
        final boolean cheapTurns = cheap.length == 2 && cheap[0] != 0 && cheap[1] != 0;
        long[] many = rankZeroSizes(new long[] {engine.manyPartsPath(Collective.ALLREDUCE), engine.manyPartsPath(Collective.REDUCE)});
        final boolean manyTurns = many.length == 2 && many[0] != 0 && many[1] != 0;
        if (manyTurns) {
            maxBytes = (int) Math.max(maxBytes, Math.max(Engine.heatPathBytes(many[0]), Engine.heatPathBytes(many[1])));
        }
        if (cheapTurns) { // five chunks and a line: longer than every path when the paths end at five chunks
            maxBytes = (int) Math.max(maxBytes, Math.max(Engine.heatPathBytes(cheap[0]), Engine.heatPathBytes(cheap[1])));
        }
        // C2 compiles a method after about 5,000 invocations: the cheap calls let the budget reach that
        final int minCalls = cheapTurns ? HEAT_LONG_CALLS_CHEAP : HEAT_LONG_CALLS;
        DataType[] types = DataType.values();
        Op[] ops = Op.values();
        Object[] ins = {new int[maxBytes / 4], new long[maxBytes / 8], new float[maxBytes / 4], new double[maxBytes / 8]};
        Object[] outs = {new int[maxBytes / 4], new long[maxBytes / 8], new float[maxBytes / 4], new double[maxBytes / 8]};
        HeatBuffers hb = new HeatBuffers(maxBytes);
        int size = size();
        long t0 = System.nanoTime();
        long slept = 0;
        long compiledBefore = org.sharp4j.coll.JitIdle.compiledMillis();
        int k = 0;
        for (int block = 1; ; block++) {
            for (int i = 0; i < HEAT_LONG_BLOCK; i++, k++) {
                // with the cheap turns every sixteenth call is on the other paths: m, not k, turns the types, so
                // that both kinds of call see every type (k alone would give those calls, every k % 16 == 0, one type)
                int m = cheapTurns ? k + (k >> HEAT_CHEAP_SHIFT) : k;
                DataType t = types[m % types.length];
                Op op = ops[(m / types.length) % ops.length];
                if (!op.validFor(t)) {
                    op = Op.SUM;
                }
                int form = (m / (types.length * ops.length)) % HEAT_FORMS;
                boolean onCheap = cheapTurns && (k & ((1 << HEAT_CHEAP_SHIFT) - 1)) != 0;
                int j = cheapTurns ? k >> HEAT_CHEAP_SHIFT : k; // the turns of the paths below
                // j >> 1, not j: the longest path is every odd j, and j % size put all its Reduces on one root
                // (2 ranks: rank 1), so the other roles in its parts' rounds were never heated
                int root = onCheap ? k % size : (j >> 1) % size;
                // every other call a path at the longest size (several chunks: the chunk loops and phase 3's pipelined
                // parts), each for a whole turn of the roots before the next
                int longTurn = (j >> 1) / size;
                long ab = onCheap ? cheap[0] : (j & 1) == 1 ? arLong[longTurn % arLong.length] : arBytes[(j >> 1) % arBytes.length];
                // k % EVERY == 16: a call off the cheap path (k % 16 == 0), in place of a longest one (j = k / 16 odd)
                final boolean onMany = manyTurns && k % HEAT_MANY_PARTS_EVERY == 16;
                heatPathCall(Collective.ALLREDUCE, onMany ? many[0] : ab, t, op, 0, form, ins, outs, hb);
                if (rdBytes.length > 0) {
                    long rb = onCheap ? cheap[1] : (j & 1) == 1 ? rdLong[longTurn % rdLong.length] : rdBytes[(j >> 1) % rdBytes.length];
                    // its own turn of the roots (the longest paths' turn, (j >> 1) % size, has one root at every k % 256 == 16)
                    heatPathCall(Collective.REDUCE, onMany ? many[1] : rb, t, op, onMany ? (k / HEAT_MANY_PARTS_EVERY) % size : root, form,
                            ins, outs, hb);
                }
            }
            long s0 = System.nanoTime();
            org.sharp4j.coll.JitIdle.await(1_000, 30);
            slept += System.nanoTime() - s0;
            long compiled = org.sharp4j.coll.JitIdle.compiledMillis();
            flag[0] = rank() == 0 && System.nanoTime() - t0 - slept > HEAT_LONG_BUDGET_NANOS ? 1 : 0;
            flag[1] = block < HEAT_LONG_BLOCKS && (block * HEAT_LONG_BLOCK < minCalls || compiled != compiledBefore) ? 1 : 0;
            compiledBefore = compiled;
            allreduce(flag, 0, agreed, 0, 2, Op.MAX); // the same outcome on every rank
            if (agreed[0] != 0 || agreed[1] == 0) {
                return block * HEAT_LONG_BLOCK;
            }
        }
    }

    /** The paths of {@code paths} ({@link Engine#longPathBytes}) of several chunks. */
    private long[] longest(long[] paths) {
        return java.util.Arrays.stream(paths).filter(engine::heatPathSeveralChunks).toArray();
    }

    /** {@link #heatCall} on a path of {@link Engine#longPathBytes}: its size, and the table segment and chunk it forces if any. */
    private void heatPathCall(Collective c, long path, DataType t, Op op, int root, int form, Object[] ins, Object[] outs, HeatBuffers hb) {
        engine.heatPath(path);
        try {
            heatCall(c, (int) (Engine.heatPathBytes(path) / t.size), t, op, root, form, ins, outs, hb);
        } finally {
            engine.heatPath(0);
        }
    }

    /**
     * Rank 0's {@code sizes} on every rank (collective; at most 15 sizes): every rank must run the
     * same calls, and a rank's own list depends on its node (sockets, the direct Reduce).
     */
    private long[] rankZeroSizes(long[] sizes) {
        long[] mine = new long[16];
        if (rank() == 0) {
            mine[0] = sizes.length;
            System.arraycopy(sizes, 0, mine, 1, Math.min(15, sizes.length));
        }
        long[] all = new long[16];
        allreduce(mine, 0, all, 0, 16, Op.MAX); // the other ranks contribute zeros
        return java.util.Arrays.copyOfRange(all, 1, 1 + (int) Math.min(15, all[0]));
    }

    /** Forms of a heating call ({@link #heatCall}): arrays, in-place arrays, direct buffers, an in-place direct buffer. */
    private static final int HEAT_FORMS = 4;

    /**
     * The heating's direct buffers: two pairs, each taken for two calls in turn. Why: {@code
     * Payload.buffer} stores a reference only when it changes, and heated with one pair C2 compiled
     * the change as a trap; a program's first call with its own buffers then threw {@code
     * Communicator.buffers} back to the interpreter and recompiled it during its first calls
     * (LogCompilation: unstable_if in {@code Payload.buffer}, at the first call of an OSU-style
     * program on direct buffers). In turn, the profile sees both a change and a repeat.
     */
    private static final class HeatBuffers {
        private final ByteBuffer[] in = new ByteBuffer[2];
        private final ByteBuffer[] out = new ByteBuffer[2];
        private int turn;

        HeatBuffers(int bytes) {
            for (int i = 0; i < 2; i++) {
                in[i] = ByteBuffer.allocateDirect(bytes).order(ByteOrder.nativeOrder());
                out[i] = ByteBuffer.allocateDirect(bytes).order(ByteOrder.nativeOrder());
            }
        }

        /** The pair of this call: the same for two calls, then the other. */
        int next() {
            return (turn++ >> 1) & 1;
        }
    }

    /**
     * One heating call ({@link #heat}, {@link #heatLong}) of {@code n} elements in {@code form}: 0
     * arrays, 1 an in-place array, 2 direct buffers, 3 an in-place direct buffer; the arrays are
     * {@code ins[t.ordinal()]} and {@code outs[t.ordinal()]}.
     */
    private void heatCall(Collective c, int n, DataType t, Op op, int root, int form, Object[] ins, Object[] outs, HeatBuffers hb) {
        boolean all = c == Collective.ALLREDUCE;
        if (form >= 2) {
            // through the public methods, as a program calls them (their own profiles and compilations)
            int p = hb.next();
            ByteBuffer in = hb.in[p];
            if (form == 3) {
                if (all) {
                    allreduce(in, 0, n, t, op);
                } else {
                    reduce(in, 0, n, t, op, root);
                }
            } else if (all) {
                allreduce(in, 0, hb.out[p], 0, n, t, op);
            } else {
                reduce(in, 0, hb.out[p], 0, n, t, op, root);
            }
            return;
        }
        boolean inPlace = form == 1;
        Object in = ins[t.ordinal()];
        Object out = outs[t.ordinal()];
        switch (t) {
            case INT: {
                int[] a = (int[]) in;
                if (all) {
                    if (inPlace) {
                        allreduce(a, 0, n, op);
                    } else {
                        allreduce(a, 0, (int[]) out, 0, n, op);
                    }
                } else if (inPlace) {
                    reduce(a, 0, n, op, root);
                } else {
                    reduce(a, 0, (int[]) out, 0, n, op, root);
                }
                break;
            }
            case LONG: {
                long[] a = (long[]) in;
                if (all) {
                    if (inPlace) {
                        allreduce(a, 0, n, op);
                    } else {
                        allreduce(a, 0, (long[]) out, 0, n, op);
                    }
                } else if (inPlace) {
                    reduce(a, 0, n, op, root);
                } else {
                    reduce(a, 0, (long[]) out, 0, n, op, root);
                }
                break;
            }
            case FLOAT: {
                float[] a = (float[]) in;
                if (all) {
                    if (inPlace) {
                        allreduce(a, 0, n, op);
                    } else {
                        allreduce(a, 0, (float[]) out, 0, n, op);
                    }
                } else if (inPlace) {
                    reduce(a, 0, n, op, root);
                } else {
                    reduce(a, 0, (float[]) out, 0, n, op, root);
                }
                break;
            }
            default: {
                double[] a = (double[]) in;
                if (all) {
                    if (inPlace) {
                        allreduce(a, 0, n, op);
                    } else {
                        allreduce(a, 0, (double[]) out, 0, n, op);
                    }
                } else if (inPlace) {
                    reduce(a, 0, n, op, root);
                } else {
                    reduce(a, 0, (double[]) out, 0, n, op, root);
                }
            }
        }
    }

    public int rank() {
        return engine.rank();
    }

    public int size() {
        return engine.size();
    }

    /** Nodes, sockets and leaders as this communicator sees them. */
    public Topology topology() {
        return engine.topology();
    }

    /** Name of the inter-node step in use ("none (one node)" for a single node). */
    public String interNode() {
        return engine.interNodeName();
    }

    /** The underlying engine (algorithm selection and diagnostics; not a stable API). */
    public Engine engine() {
        return engine;
    }

    /** Returns once every rank has called it (paper 004 IV-D: gather flags up, release flags down). */
    public void barrier() {
        checkOpen();
        src.none();
        dst.none();
        engine.run(Collective.BARRIER, null, null, 0, 0);
    }

    /** Allreduce of {@code count} ints: {@code recv[recvOff..]} = op over all ranks of {@code send[sendOff..]}. */
    public void allreduce(int[] send, int sendOff, int[] recv, int recvOff, int count, Op op) {
        arrays(Collective.ALLREDUCE, send, sendOff, recv, recvOff, count, DataType.INT, op, 0, false);
    }

    /** Allreduce of all of {@code send} into {@code recv}. */
    public void allreduce(int[] send, int[] recv, Op op) {
        arrays(Collective.ALLREDUCE, send, 0, recv, 0, send == null ? 0 : send.length, DataType.INT, op, 0, false);
    }

    /** In-place allreduce of {@code buf[off, off+count)}. */
    public void allreduce(int[] buf, int off, int count, Op op) {
        arrays(Collective.ALLREDUCE, buf, off, buf, off, count, DataType.INT, op, 0, true);
    }

    /** Reduce to {@code root}; {@code recv} is used only on the root (may be null elsewhere). */
    public void reduce(int[] send, int sendOff, int[] recv, int recvOff, int count, Op op, int root) {
        arrays(Collective.REDUCE, send, sendOff, recv, recvOff, count, DataType.INT, op, root, false);
    }

    /** In-place reduce: the root's {@code buf[off, off+count)} gets the result; other ranks' data is unchanged. */
    public void reduce(int[] buf, int off, int count, Op op, int root) {
        arrays(Collective.REDUCE, buf, off, buf, off, count, DataType.INT, op, root, true);
    }

    /** Allreduce of {@code count} longs: {@code recv[recvOff..]} = op over all ranks of {@code send[sendOff..]}. */
    public void allreduce(long[] send, int sendOff, long[] recv, int recvOff, int count, Op op) {
        arrays(Collective.ALLREDUCE, send, sendOff, recv, recvOff, count, DataType.LONG, op, 0, false);
    }

    /** Allreduce of all of {@code send} into {@code recv}. */
    public void allreduce(long[] send, long[] recv, Op op) {
        arrays(Collective.ALLREDUCE, send, 0, recv, 0, send == null ? 0 : send.length, DataType.LONG, op, 0, false);
    }

    /** In-place allreduce of {@code buf[off, off+count)}. */
    public void allreduce(long[] buf, int off, int count, Op op) {
        arrays(Collective.ALLREDUCE, buf, off, buf, off, count, DataType.LONG, op, 0, true);
    }

    /** Reduce to {@code root}; {@code recv} is used only on the root (may be null elsewhere). */
    public void reduce(long[] send, int sendOff, long[] recv, int recvOff, int count, Op op, int root) {
        arrays(Collective.REDUCE, send, sendOff, recv, recvOff, count, DataType.LONG, op, root, false);
    }

    /** In-place reduce: the root's {@code buf[off, off+count)} gets the result; other ranks' data is unchanged. */
    public void reduce(long[] buf, int off, int count, Op op, int root) {
        arrays(Collective.REDUCE, buf, off, buf, off, count, DataType.LONG, op, root, true);
    }

    /** Allreduce of {@code count} floats: {@code recv[recvOff..]} = op over all ranks of {@code send[sendOff..]}. */
    public void allreduce(float[] send, int sendOff, float[] recv, int recvOff, int count, Op op) {
        arrays(Collective.ALLREDUCE, send, sendOff, recv, recvOff, count, DataType.FLOAT, op, 0, false);
    }

    /** Allreduce of all of {@code send} into {@code recv}. */
    public void allreduce(float[] send, float[] recv, Op op) {
        arrays(Collective.ALLREDUCE, send, 0, recv, 0, send == null ? 0 : send.length, DataType.FLOAT, op, 0, false);
    }

    /** In-place allreduce of {@code buf[off, off+count)}. */
    public void allreduce(float[] buf, int off, int count, Op op) {
        arrays(Collective.ALLREDUCE, buf, off, buf, off, count, DataType.FLOAT, op, 0, true);
    }

    /** Reduce to {@code root}; {@code recv} is used only on the root (may be null elsewhere). */
    public void reduce(float[] send, int sendOff, float[] recv, int recvOff, int count, Op op, int root) {
        arrays(Collective.REDUCE, send, sendOff, recv, recvOff, count, DataType.FLOAT, op, root, false);
    }

    /** In-place reduce: the root's {@code buf[off, off+count)} gets the result; other ranks' data is unchanged. */
    public void reduce(float[] buf, int off, int count, Op op, int root) {
        arrays(Collective.REDUCE, buf, off, buf, off, count, DataType.FLOAT, op, root, true);
    }

    /** Allreduce of {@code count} doubles: {@code recv[recvOff..]} = op over all ranks of {@code send[sendOff..]}. */
    public void allreduce(double[] send, int sendOff, double[] recv, int recvOff, int count, Op op) {
        arrays(Collective.ALLREDUCE, send, sendOff, recv, recvOff, count, DataType.DOUBLE, op, 0, false);
    }

    /** Allreduce of all of {@code send} into {@code recv}. */
    public void allreduce(double[] send, double[] recv, Op op) {
        arrays(Collective.ALLREDUCE, send, 0, recv, 0, send == null ? 0 : send.length, DataType.DOUBLE, op, 0, false);
    }

    /** In-place allreduce of {@code buf[off, off+count)}. */
    public void allreduce(double[] buf, int off, int count, Op op) {
        arrays(Collective.ALLREDUCE, buf, off, buf, off, count, DataType.DOUBLE, op, 0, true);
    }

    /** Reduce to {@code root}; {@code recv} is used only on the root (may be null elsewhere). */
    public void reduce(double[] send, int sendOff, double[] recv, int recvOff, int count, Op op, int root) {
        arrays(Collective.REDUCE, send, sendOff, recv, recvOff, count, DataType.DOUBLE, op, root, false);
    }

    /** In-place reduce: the root's {@code buf[off, off+count)} gets the result; other ranks' data is unchanged. */
    public void reduce(double[] buf, int off, int count, Op op, int root) {
        arrays(Collective.REDUCE, buf, off, buf, off, count, DataType.DOUBLE, op, root, true);
    }

    /** Allreduce on direct buffers; offsets and count in elements of {@code type}. */
    public void allreduce(ByteBuffer send, int sendOff, ByteBuffer recv, int recvOff, int count, DataType type, Op op) {
        buffers(Collective.ALLREDUCE, send, sendOff, recv, recvOff, count, type, op, 0, false);
    }

    /** In-place allreduce on a direct buffer. */
    public void allreduce(ByteBuffer buf, int off, int count, DataType type, Op op) {
        buffers(Collective.ALLREDUCE, buf, off, buf, off, count, type, op, 0, true);
    }

    /** Reduce on direct buffers to {@code root}; {@code recv} is used only on the root (may be null elsewhere). */
    public void reduce(ByteBuffer send, int sendOff, ByteBuffer recv, int recvOff, int count, DataType type, Op op, int root) {
        buffers(Collective.REDUCE, send, sendOff, recv, recvOff, count, type, op, root, false);
    }

    /** In-place reduce on a direct buffer: the root's buffer gets the result. */
    public void reduce(ByteBuffer buf, int off, int count, DataType type, Op op, int root) {
        buffers(Collective.REDUCE, buf, off, buf, off, count, type, op, root, true);
    }

    /**
     * This rank's buffer in shared memory ({@code sharp4j.shared.bytes}, default 1 MiB). Collectives
     * on it skip the copy-in: the tree reads leaves' data in place, the tiled algorithm every rank's.
     */
    public SharedBuffer sharedBuffer() {
        checkOpen();
        if (shared == null) {
            shared = new SharedBuffer(this, engine.sharedView());
        }
        return shared;
    }

    /** In-place allreduce of the first {@code count} elements of this rank's shared buffer. */
    public void allreduce(SharedBuffer buf, int count, DataType type, Op op) {
        sharedCall(Collective.ALLREDUCE, buf, count, type, op, 0);
    }

    /** Reduce of the shared buffers' first {@code count} elements; the root's shared buffer gets the result. */
    public void reduce(SharedBuffer buf, int count, DataType type, Op op, int root) {
        sharedCall(Collective.REDUCE, buf, count, type, op, root);
    }

    private void sharedCall(Collective kind, SharedBuffer buf, int count, DataType type, Op op, int root) {
        checkOpen();
        if (buf == null) {
            throw new NullPointerException("shared buffer is null");
        }
        if (buf.owner() != this) {
            throw new IllegalArgumentException("shared buffer belongs to another communicator");
        }
        checkCommon(kind, count, type, op, root);
        if ((long) count * type.size > buf.capacity()) {
            throw new IllegalArgumentException("shared buffer too short: " + count + " " + type + " elements need "
                    + (long) count * type.size + " bytes, it has " + buf.capacity() + " (sharp4j.shared.bytes)");
        }
        engine.useShared(src);
        engine.useShared(dst);
        if (kind == Collective.REDUCE && rank() != root) {
            dst.none();
        }
        engine.run(kind, type, op, root, count);
    }

    private void arrays(Collective kind, Object send, int sendOff, Object recv, int recvOff, int count, DataType type, Op op,
            int root, boolean inPlace) {
        checkOpen();
        checkCommon(kind, count, type, op, root);
        boolean needRecv = kind == Collective.ALLREDUCE || rank() == root;
        if (send == null) {
            throw new NullPointerException(inPlace ? "buffer is null" : "send buffer is null");
        }
        checkRange(inPlace ? "buffer" : "send buffer", java.lang.reflect.Array.getLength(send), sendOff, count);
        if (needRecv && !inPlace) {
            if (recv == null) {
                throw new NullPointerException(kind == Collective.REDUCE ? "recv buffer is null on the root" : "recv buffer is null");
            }
            checkRange("recv buffer", java.lang.reflect.Array.getLength(recv), recvOff, count);
        }
        src.array(send, sendOff);
        if (needRecv) {
            dst.array(recv, recvOff);
        } else {
            dst.none();
        }
        engine.run(kind, type, op, root, count);
    }

    private void buffers(Collective kind, ByteBuffer send, int sendOff, ByteBuffer recv, int recvOff, int count, DataType type,
            Op op, int root, boolean inPlace) {
        checkOpen();
        checkCommon(kind, count, type, op, root);
        boolean needRecv = kind == Collective.ALLREDUCE || rank() == root;
        checkBuffer(inPlace ? "buffer" : "send buffer", send, sendOff, count, type, false);
        if (needRecv && !inPlace) {
            checkBuffer("recv buffer", recv, recvOff, count, type, true);
        } else if (needRecv) {
            checkBuffer("buffer", send, sendOff, count, type, true);
        }
        src.buffer(send, sendOff);
        if (needRecv) {
            dst.buffer(recv, recvOff);
        } else {
            dst.none();
        }
        engine.run(kind, type, op, root, count);
    }

    private void checkCommon(Collective kind, int count, DataType type, Op op, int root) {
        if (type == null) {
            throw new NullPointerException("data type is null");
        }
        if (op == null) {
            throw new NullPointerException("op is null");
        }
        if (!op.validFor(type)) {
            throw new IllegalArgumentException("op " + op + " is not defined for " + type + " (bitwise and logical ops take INT or LONG)");
        }
        if (count < 0) {
            throw new IllegalArgumentException("count must be >= 0, got " + count);
        }
        if ((long) count * type.size > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("count " + count + " of " + type + " exceeds 2 GiB per call");
        }
        if (kind == Collective.REDUCE && (root < 0 || root >= size())) {
            throw new IllegalArgumentException("root " + root + " out of range [0, " + size() + ")");
        }
    }

    private static void checkRange(String what, int length, int off, int count) {
        if (off < 0) {
            throw new IllegalArgumentException(what + ": negative offset " + off);
        }
        if ((long) off + count > length) {
            throw new IllegalArgumentException(what + " too short: offset " + off + " + count " + count + " > length " + length);
        }
    }

    private static void checkBuffer(String what, ByteBuffer b, int off, int count, DataType type, boolean written) {
        if (b == null) {
            throw new NullPointerException(what + " is null");
        }
        if (!b.isDirect()) {
            throw new IllegalArgumentException(what + " must be a direct ByteBuffer (ByteBuffer.allocateDirect), or pass an array");
        }
        if (written && b.isReadOnly()) {
            throw new IllegalArgumentException(what + " is read-only");
        }
        if (b.order() != java.nio.ByteOrder.nativeOrder()) {
            throw new IllegalArgumentException(what + " is in " + b.order() + " byte order but sharp4j reduces the memory as "
                    + java.nio.ByteOrder.nativeOrder() + " (this machine's order): call order(ByteOrder.nativeOrder()) on it"
                    + " (a direct buffer starts BIG_ENDIAN)");
        }
        if (off < 0) {
            throw new IllegalArgumentException(what + ": negative offset " + off);
        }
        long end = ((long) off + count) * type.size;
        if (end > b.limit()) {
            throw new IllegalArgumentException(what + " too short: elements [" + off + ", " + (off + (long) count) + ") of "
                    + type + " need " + end + " bytes, limit is " + b.limit());
        }
    }

    /**
     * Gives up on the job: peers waiting for this rank in a collective fail promptly with a
     * {@link PeerFailureException} naming it, rather than at the timeout (MPI_Abort without the
     * exit). This communicator is unusable afterwards.
     */
    public void abort(String reason) {
        if (!closed) {
            engine.abort(reason);
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("communicator is closed");
        }
    }

    /**
     * Releases this rank's shared memory (and the bootstrap, if the communicator made it). Across
     * nodes the node leaders meet first (see the README). From another thread while a call runs:
     * aborts that call, waits until it has left, then releases.
     */
    @Override
    public void close() {
        if (!closed) {
            closed = true;
            try {
                engine.close(); // may report a mismatch of a Reduce this rank went ahead of (after releasing)
            } finally {
                if (ownsBootstrap) {
                    bootstrap.close();
                }
            }
        }
    }
}
