package org.sharp4j.tuner;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.function.Consumer;
import org.sharp4j.Communicator;
import org.sharp4j.Config;
import org.sharp4j.Op;
import org.sharp4j.Sharp4j;
import org.sharp4j.bootstrap.Bootstrap;
import org.sharp4j.tuning.Collective;
import org.sharp4j.tuning.CompiledTable;
import org.sharp4j.tuning.Sizes;

/**
 * The measuring half of {@code sharp4j tune}, run on every rank of the job (embedded launcher,
 * {@code mpirun}, {@code srun --mpi=pmix}): for each candidate a communicator forced to it with an
 * override rule, then per collective and message size rounds of timed calls until the round times
 * are stable (relative standard error under the target) or the round budget is spent. The choice
 * and the table are {@link org.sharp4j.tuner.TuneTable}'s (rank 0, after the sweep).
 *
 * <p><b>Candidates</b>, for the job's shape (nodes, largest ranks per node), in this order on every rank:
 * <ul>
 *   <li>intra-node (when a node has 2 ranks or more): {@code tree:radix=k} for each radix up to the
 *       ranks per node, {@code exchange} (up to 32 ranks per node, sizes up to {@link Options#exchangeMax}),
 *       {@code tiled} (allreduce, reduce; {@code tiled:chunk=C} for each of {@link Options#chunks}); at several
 *       nodes measured on a communicator per node (no phase 3, whose noise would swamp them), the slowest node's figure;</li>
 *   <li>inter-node (2 nodes or more, phase 3 on the host path, e.g. UCX): {@code knomial:radix=k} for k in
 *       {@link Options#interRadices} up to the node count (allreduce, reduce, and barrier, which runs the
 *       host path's spine at that radix), {@code sra:radix=k} (allreduce, reduce); {@code sharp} where SHARP is
 *       phase 3 ({@code sharp4j.sharp=on} and the library loads), against the host path per size, and
 *       {@code sharp:pipeline=d} for the other depths of {@link Options#pipelines} (allreduce, reduce; sizes from
 *       {@link Options#pipelineMin}, unless {@code sharp4j.sharp.pipeline} fixes the depth). The
 *       intra-node phases keep the table's choice. Simulated nodes meeting in shared memory have no
 *       inter-node algorithm to choose: run with {@code -Dsharp4j.internode=ucx}.</li>
 * </ul>
 * <b>Method</b>: an untimed pass over every candidate and size (about 0.1 s per point at most), then a pause until the JIT is idle;
 * then {@link Options#passes} passes: each pass creates every candidate's communicator (new connections;
 * at most {@link Options#together} open at once) and measures each point on all of them together:
 * warm-up calls per candidate, then rounds in which every candidate in turn makes a block of timed calls
 * (about 30 ms, at least 5 and at most {@link Options#iterations} calls; the block's figure OSU's P50: the median over
 * its calls of the call's time averaged over the ranks), the order rotating from round to round, until
 * every candidate's standard error of the mean is under the target or {@link Options#maxRounds} rounds.
 * Interleaved so, every candidate meets the same phases of the machine, as the two sides of the OSU ports'
 * {@code --compare} do.
 * A point's figure is the median over its passes, its error from their spread
 * ({@link Measurement#overPasses}): on UCX over TCP one communicator's connections run in one of two
 * modes about 2x apart, so one communicator per candidate judged the connections, not the candidate.
 * Calls are timed
 * as OSU times them: one at a time, an untimed barrier after each (none for Barrier itself), Reduce
 * to root 0. <b>Budget</b>: rank 0's clock decides
 * before each point whether there is time left and every rank follows (one allreduce); the points
 * measured so far are kept. <b>Resume</b>: the passes of points rank 0 already has (the state file, given as
 * {@code done}) are skipped on every rank.
 */
public final class Tuner {
    /** What to sweep and how hard. */
    public static final class Options {
        public EnumSet<Collective> collectives = EnumSet.allOf(Collective.class);
        /** Up to 16 MiB, the OSU range: a table measured to 1 MiB extended its last winner to 16 MiB, where the built-in SRA was 2x faster (3 hosts). */
        public long[] sizes = {8, 64, 512, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216};
        public int[] radices = {2, 4, 8};
        public int[] interRadices = {2, 3, 4, 5, 6, 7, 8};
        /** Tiled chunk sizes to try besides the slot (bytes, multiples of 64 below the slot); none by default. */
        public long[] chunks = {};
        /**
         * SHARP pipeline depths to try (operations of one long call in flight); the default depth
         * ({@link CompiledTable#DEFAULT_SHARP_PIPELINE}) is the plain {@code sharp} candidate.
         */
        public int[] pipelines = {1, 2, 4, 8};
        /** Smallest size the pipeline depths are tried at: a call of one SHARP operation has nothing to pipeline. */
        public long pipelineMin = 8192;
        /**
         * Largest size the exchange is tried at (it reads every rank's slot): 16 KiB, the tree's
         * range, since with two ranks per node it folds straight into the output (runPair) and beat
         * the tree there; with more ranks it loses above a few hundred bytes and is not chosen.
         */
        public long exchangeMax = 16384;
        public int iterations = 1000;
        /** Warm-up calls per point and pass, at most (fewer where they would take longer than a round). */
        public int warmup = 100;
        /**
         * Passes: each candidate is measured on this many communicators (new connections), the passes
         * interleaved; a point's figure is the median over its passes ({@link Measurement#overPasses}).
         */
        public int passes = 3;
        /**
         * Candidates whose communicators are open at once and whose points are measured together, in interleaved
         * rounds; a stage with more is measured in groups of this many, one after another.
         */
        public int together = 8;
        /** Rounds per point and pass, at least (unless {@link #maxRounds} is smaller). */
        public int minRounds = 2;
        /** Rounds per point and pass, at most: 3 passes of 4 rounds cost about what 1 pass of 10 did. */
        public int maxRounds = 4;
        /** Rounds stop when the standard error of their mean is under this fraction of it. */
        public double targetRse = 0.03;
        /** A challenger must beat the incumbent by this fraction (and by 2 combined errors). */
        public double guard = 0.05;
        /** Wall-clock budget of the sweep in nanoseconds (rank 0's clock), 0 for none. */
        public long budgetNanos;

        /** A sweep that finishes in seconds on 2 cores. */
        public static Options quick() {
            Options o = new Options();
            o.sizes = new long[] {8, 1024, 65536};
            o.radices = new int[] {2, 4};
            o.interRadices = new int[] {2, 4};
            o.iterations = 200;
            o.warmup = 20;
            o.passes = 2;
            o.minRounds = 2;
            o.maxRounds = 2;
            o.targetRse = 0.05;
            return o;
        }
    }

    /** One candidate: its layer, name (a rule's tail), the override that forces it, the collectives it applies to. */
    record Candidate(String layer, String name, String forcing, Set<Collective> collectives) {
        /** The override with the spine's radix put in ({@code spine} 0: the table's own spine). */
        String forcing(int spine) {
            return forcing.replace(SPINE_RULE, spine > 0 ? "#allreduce:0-1:knomial:radix=" + spine : "");
        }

        boolean needsSpine() {
            return forcing.contains(SPINE_RULE);
        }
    }

    /** Stands, in a data candidate's override, for the spine rule the measured barrier chose. */
    static final String SPINE_RULE = "#SPINE";
    /** The inter-node barrier's points are measured again on a resumed sweep: the spine is chosen from them. */
    private static boolean alwaysMeasured(Collective c, Candidate cand) {
        return c == Collective.BARRIER && cand.layer().equals(Measurement.INTER);
    }

    /** What a sweep did. */
    public static final class Result {
        public final List<Measurement> measurements = new ArrayList<>();
        public int nodes;
        public int ppn;
        public int total;
        public int skipped;
        public boolean budgetSpent;
        /** Why a layer was not swept (printed by rank 0). */
        public final List<String> notes = new ArrayList<>();
    }

    private Tuner() {
    }

    static List<Candidate> candidates(Options o, int nodes, int ppn, String interNode, List<String> notes) {
        List<Candidate> out = new ArrayList<>();
        EnumSet<Collective> all = EnumSet.allOf(Collective.class);
        EnumSet<Collective> data = EnumSet.of(Collective.ALLREDUCE, Collective.REDUCE);
        if (ppn >= 2) {
            for (int r : o.radices) {
                if (r == 2 || r <= ppn) { // a radix above the ranks per node is the same flat tree
                    out.add(new Candidate(Measurement.INTRA, "tree:radix=" + r, "all:0-inf:tree:radix=" + r, all));
                }
            }
            if (ppn <= 32) {
                out.add(new Candidate(Measurement.INTRA, "exchange", "all:0-inf:exchange", all));
            }
            out.add(new Candidate(Measurement.INTRA, "tiled", "allreduce,reduce:0-inf:tiled", data));
            if (nodes == 1) {
                out.add(new Candidate(Measurement.INTRA, "direct", "reduce:0-inf:direct", EnumSet.of(Collective.REDUCE)));
                out.add(new Candidate(Measurement.INTRA, "pipelined", "allreduce,reduce:0-inf:pipelined", data));
                // where the ranks cannot read each other's memory the engine runs it as direct (the same times)
                out.add(new Candidate(Measurement.INTRA, "cma", "reduce:0-inf:cma", EnumSet.of(Collective.REDUCE)));
                out.add(new Candidate(Measurement.INTRA, "cma_split", "allreduce,reduce:0-inf:cma_split", data));
            } else {
                // the engine runs the direct Reduce and the pipelined algorithm on one node only (tiled
                // elsewhere), but the node-local communicator they would be measured on is one node: they
                // would be timed as they never run here
                notes.add("several nodes: the direct, cma and cma_split Reduces and the pipelined algorithm (one node only) are not candidates");
            }
            for (long c : o.chunks) {
                String k = "tiled:chunk=" + Sizes.format(c);
                out.add(new Candidate(Measurement.INTRA, k, "allreduce,reduce:0-inf:" + k, data));
            }
        } else {
            notes.add("one rank per node: no intra-node candidates");
        }
        if (nodes < 2) {
            notes.add("one node: no inter-node candidates");
        } else if (interNode.startsWith("shared memory") || interNode.startsWith("none")) {
            notes.add("phase 3 is " + interNode + ", which has no algorithm to choose: no inter-node candidates"
                    + " (simulated nodes: run with -Dsharp4j.internode=ucx)");
        } else {
            // The host path's barrier is its spine, and every call of the host path first meets on
            // the spine at the radix of a 0-byte allreduce: so the barrier candidates (the spine's
            // radix) are measured first, and every data candidate then runs on the spine they
            // chose ({@link #SPINE}), as the written table will make it run.
            for (int r : o.interRadices) {
                if (r == 2 || r <= nodes) { // the host path clamps the radix to the node count
                    out.add(new Candidate(Measurement.INTER, "knomial:radix=" + r,
                            "barrier:0-inf:knomial:radix=" + r + "#allreduce:0-1:knomial:radix=" + r, EnumSet.of(Collective.BARRIER)));
                }
            }
            for (int r : o.interRadices) {
                if (r == 2 || r <= nodes) {
                    out.add(new Candidate(Measurement.INTER, "knomial:radix=" + r, "allreduce,reduce:0-inf:knomial:radix=" + r + SPINE_RULE, data));
                }
            }
            for (int r : o.interRadices) {
                if (r == 2 || r <= nodes) {
                    out.add(new Candidate(Measurement.INTER, "sra:radix=" + r, "allreduce,reduce:0-inf:sra:radix=" + r + SPINE_RULE, data));
                }
            }
            if (interNode.startsWith("SHARP")) {
                out.add(new Candidate(Measurement.INTER, "sharp", "all:0-inf:sharp", all));
                String fixed = System.getProperty("sharp4j.sharp.pipeline");
                if (fixed != null && !fixed.isBlank()) {
                    notes.add("sharp4j.sharp.pipeline=" + fixed.trim() + " overrides the table's pipeline depth: depths not swept");
                } else {
                    for (int d : o.pipelines) {
                        if (d != CompiledTable.DEFAULT_SHARP_PIPELINE) {
                            out.add(new Candidate(Measurement.INTER, "sharp:pipeline=" + d, "allreduce,reduce:0-inf:sharp:pipeline=" + d, data));
                        }
                    }
                }
            } else {
                notes.add("SHARP is not phase 3 here (" + interNode + "): host path only (SHARP needs libsharp_coll, e.g."
                        + " -Dsharp4j.sharp.lib=..., and the UCX host path)");
            }
        }
        return out;
    }

    static long[] sizes(Options o, Candidate cand, Collective c) {
        if (c == Collective.BARRIER) {
            return new long[] {0};
        }
        if (cand.name().equals("exchange")) {
            return java.util.Arrays.stream(o.sizes).filter(s -> s <= o.exchangeMax).toArray();
        }
        if (TuneTable.isPipelineDepth(cand.name())) {
            return java.util.Arrays.stream(o.sizes).filter(s -> s >= o.pipelineMin).toArray();
        }
        return o.sizes;
    }

    /**
     * Collective over {@code boot}: every rank calls it with the same options. {@code done}: the passes
     * already measured ({@link Measurement.Pass#key()}), as rank 0 knows them (other ranks' are ignored);
     * {@code sink}: called on rank 0 with each new pass of a point (the state file).
     *
     * <p>The candidates are measured in {@link Options#passes} passes: pass 1 creates every candidate's
     * communicator and measures each point on all of them in interleaved rounds, then pass 2 does so again on
     * new communicators (new connections), and so on, each pass starting one candidate further on. A
     * point's figure is taken over its passes ({@link Measurement#overPasses}): on UCX over TCP one set of
     * connections runs in one of two modes about 2x apart, and a candidate measured on one
     * communicator only was judged by its connections' mode. The inter-node barrier (the spine) is
     * measured in all its passes before the data candidates, which run on the spine it chose.
     */
    public static Result run(Bootstrap boot, Config base, Options o, Set<String> done, Consumer<Measurement.Pass> sink, PrintStream progress) {
        if (o.passes < 1) {
            throw new IllegalArgumentException("the tuner needs at least 1 pass, got " + o.passes);
        }
        long start = System.nanoTime();
        Result res = new Result();
        String forced = forcedSharp(System.getProperties());
        if (forced != null) {
            throw new IllegalArgumentException("sharp4j tune measures SHARP against the host path by forcing each candidate through "
                    + "the tuning table, but " + forced + " makes SHARP take calls whatever the table says: run it with sharp4j.sharp=auto"
                    + " (the default; sharp4j.sharp.lib names the library) and without sharp4j.sharp.min.nodes/max.bytes");
        }
        String interNode;
        Bootstrap nodeBoot;
        // the probe's table picks SHARP for small messages, so that SHARP is set up (and named in phase 3) wherever it can be
        try (Communicator probe = Sharp4j.create(boot, base.withTuneOverride("all:0-2k:sharp").withWarmupRounds(0))) {
            res.ppn = probe.topology().maxRanksPerNode();
            res.nodes = probe.topology().nodeCount();
            interNode = probe.interNode();
            int node = probe.topology().nodeOf(boot.rank());
            nodeBoot = new NodeBootstrap(boot, probe.topology().nodeRanks(node), node);
        }
        PrintStream out = boot.rank() == 0 ? progress : null;
        List<Candidate> cands = candidates(o, res.nodes, res.ppn, interNode, res.notes);
        Set<String> skip = agreeDone(boot, done);
        if (out != null) {
            out.println("sharp4j tune: " + boot.size() + " rank(s), " + res.nodes + " node(s), " + res.ppn + " rank(s) per node; phase 3: "
                    + interNode + "; " + cands.size() + " candidate(s), " + o.passes + " pass(es)");
            for (String n : res.notes) {
                out.println("sharp4j tune: " + n);
            }
        }
        // two stages, each measured in interleaved passes: what runs on no chosen spine (intra-node
        // candidates, the spine itself), then the data candidates on the spine the first stage chose
        List<Candidate> first = new ArrayList<>();
        List<Candidate> second = new ArrayList<>();
        int total = 0;
        for (Candidate cand : cands) {
            boolean any = false;
            for (Collective c : o.collectives) {
                if (!cand.collectives().contains(c)) {
                    continue;
                }
                for (long bytes : sizes(o, cand, c)) {
                    for (int p = 1; p <= o.passes; p++) {
                        total++;
                        if (skipped(skip, c, cand, bytes, p, res)) {
                            res.skipped++;
                        } else {
                            any = true;
                        }
                    }
                }
            }
            if (any) {
                (cand.needsSpine() ? second : first).add(cand);
            }
        }
        res.total = total;
        if (out != null && res.skipped > 0) {
            out.println("sharp4j tune: resuming: " + res.skipped + " of " + total + " point-pass(es) already measured");
        }
        // An untimed pass over every candidate and size first, then a pause until the JIT is idle:
        // otherwise the first candidates are timed while the code is interpreted or recompiling,
        // and the spinning ranks starve the compiler threads (seen: 8 B at 21 us instead of 0.2).
        List<Candidate> todo = new ArrayList<>(first);
        todo.addAll(second);
        for (Candidate cand : todo) {
            Config cfg = base.withTuneOverride(cand.forcing(2)).withWarmupRounds(0); // untimed: any spine

            try (Communicator comm = Sharp4j.create(boot, cfg)) {
                if (outOfTime(comm, o, start)) {
                    res.budgetSpent = true;
                    break;
                }
                for (Collective c : o.collectives) {
                    if (cand.collectives().contains(c)) {
                        for (long bytes : sizes(o, cand, c)) {
                            int count = (int) Math.max(1, bytes / 8);
                            untimed(comm, c, new double[count], new double[count], count,
                                    (int) Math.max(20, Math.min(3000, (64L << 20) / Math.max(8, bytes))));
                        }
                    }
                }
            }
        }
        jitSettle(boot);
        int[] doneCount = {res.skipped};
        int spine = -1;
        for (List<Candidate> stage : List.of(first, second)) {
            if (res.budgetSpent || stage.isEmpty()) {
                continue;
            }
            if (stage == second) {
                spine = agreeSpine(boot, res, o);
                if (out != null) {
                    out.println();
                    out.println("sharp4j tune: the data candidates run on the spine the barrier chose: "
                            + (spine > 0 ? "knomial:radix=" + spine : "the table's"));
                }
            }
            List<Measurement.Pass> got = new ArrayList<>();
            for (int p = 1; p <= o.passes && !res.budgetSpent; p++) {
                List<Candidate> order = passOrder(stage, p);
                for (int g = 0; g < order.size(); g += o.together) {
                    List<Candidate> group = order.subList(g, Math.min(order.size(), g + o.together));
                    if (!measurePass(boot, nodeBoot, base, o, group, p, Math.max(0, spine), skip, res, got, sink, out, doneCount, start)) {
                        res.budgetSpent = true;
                        break;
                    }
                }
            }
            res.measurements.addAll(Measurement.overPassesByPoint(got));
        }
        if (out != null) {
            out.println();
            out.println(String.format(Locale.ROOT, "sharp4j tune: %d point-pass(es) measured in %.0f s (this run, with its set-up)",
                    doneCount[0] - res.skipped, (System.nanoTime() - start) / 1e9));
            if (res.budgetSpent) {
                out.println("sharp4j tune: the budget is spent after " + doneCount[0] + " of " + total
                        + " point-pass(es); the table has what was measured; rerun with the same output to continue");
            }
        }
        return res;
    }

    /** Whether pass {@code p} of a point is skipped: rank 0 has it, and it is not the inter-node barrier (always measured). */
    private static boolean skipped(Set<String> skip, Collective c, Candidate cand, long bytes, int p, Result res) {
        return !alwaysMeasured(c, cand)
                && skip.contains(Measurement.passKey(Measurement.key(res.nodes, res.ppn, c, cand.layer(), cand.name(), bytes), p));
    }

    /**
     * The order of the candidates in pass {@code p} (from 1), the same on every rank: pass 1 as listed,
     * each later pass starting one candidate further on, so that no candidate always follows the same one.
     */
    static List<Candidate> passOrder(List<Candidate> stage, int p) {
        List<Candidate> out = new ArrayList<>(stage);
        if (!out.isEmpty()) {
            java.util.Collections.rotate(out, -((p - 1) % out.size()));
        }
        return out;
    }

    /** Whether candidate {@code cand} has a point of collective {@code c} at {@code bytes} to measure in pass {@code p}. */
    private static boolean toMeasure(Options o, Candidate cand, Collective c, long bytes, int p, Set<String> skip, Result res) {
        if (!o.collectives.contains(c) || !cand.collectives().contains(c)) {
            return false;
        }
        for (long b : sizes(o, cand, c)) {
            if (b == bytes) {
                return !skipped(skip, c, cand, bytes, p, res);
            }
        }
        return false;
    }

    /**
     * Pass {@code p} of a group of candidates (at most {@link Options#together}): a communicator forced to
     * each, all open at once, then point by point (collective, size) every candidate that has it, measured
     * in interleaved rounds ({@link #measurePoint}). False when the budget is spent (every rank gets rank
     * 0's answer before each point).
     *
     * <p>An intra-node candidate at a job of several nodes is measured on a communicator per node
     * (over {@code nodeBoot}, the node's ranks only), so without phase 3, whose noise over TCP
     * (about +-100 us) would swamp the intra-node phases' microseconds; its figure is the slowest node's.
     * The tuner's communicators use one page of shared buffer each (it never uses the shared buffer).
     */
    private static boolean measurePass(Bootstrap boot, Bootstrap nodeBoot, Config base, Options o, List<Candidate> group, int p, int spine,
            Set<String> skip, Result res, List<Measurement.Pass> got, Consumer<Measurement.Pass> sink, PrintStream out, int[] doneCount,
            long start) {
        java.util.TreeSet<Long> all = new java.util.TreeSet<>();
        List<Candidate> cands = new ArrayList<>();
        for (Candidate cand : group) {
            boolean any = false;
            for (Collective c : o.collectives) {
                if (cand.collectives().contains(c)) {
                    for (long bytes : sizes(o, cand, c)) {
                        if (!skipped(skip, c, cand, bytes, p, res)) {
                            any = true;
                            all.add(bytes);
                        }
                    }
                }
            }
            if (any) {
                cands.add(cand);
            }
        }
        if (cands.isEmpty()) {
            return true;
        }
        List<Communicator> comms = new ArrayList<>();
        boolean[] nodeLocal = new boolean[cands.size()];
        try {
            for (int k = 0; k < cands.size(); k++) {
                Candidate cand = cands.get(k);
                Config cfg = base.withTuneOverride(cand.forcing(spine)).withWarmupRounds(Math.min(base.warmupRounds(), 4))
                        .withSharedBytes(4096);
                nodeLocal[k] = cand.layer().equals(Measurement.INTRA) && res.nodes > 1;
                if (nodeLocal[k]) {
                    cfg = cfg.withSimulatedTopology(0, cfg.simulatedSockets()); // one node: its ranks only, no phase 3
                }
                comms.add(Sharp4j.create(nodeLocal[k] ? nodeBoot : boot, cfg));
            }
            for (Collective c : o.collectives) {
                for (long bytes : all) {
                    List<Integer> here = new ArrayList<>();
                    for (int k = 0; k < cands.size(); k++) {
                        if (toMeasure(o, cands.get(k), c, bytes, p, skip, res)) {
                            here.add(k);
                        }
                    }
                    if (here.isEmpty()) {
                        continue;
                    }
                    if (outOfTime(boot, o, start)) {
                        return false;
                    }
                    boolean anyNodeLocal = false;
                    for (int k : here) {
                        anyNodeLocal |= nodeLocal[k];
                    }
                    Measurement[] ms = measurePoint(comms, cands, here, c, bytes, o, res.nodes, res.ppn, anyNodeLocal ? boot : null);
                    for (int k : here) {
                        Measurement.Pass m = new Measurement.Pass(nodeLocal[k] ? slowestNode(boot, ms[k]) : ms[k], p);
                        got.add(m);
                        if (boot.rank() == 0 && sink != null) {
                            sink.accept(m);
                        }
                        doneCount[0]++;
                    }
                    if (out != null) {
                        bar(out, doneCount[0], res.total, "pass " + p + "/" + o.passes + " " + name(c) + " " + Sizes.format(bytes) + " B, "
                                + here.size() + " candidate(s)");
                    }
                }
            }
        } finally {
            for (int k = comms.size() - 1; k >= 0; k--) {
                comms.get(k).close();
            }
        }
        return true;
    }

    /** The SHARP setting that would make SHARP ignore the forcing rules, or null. */
    static String forcedSharp(java.util.Properties p) {
        if ("on".equalsIgnoreCase(p.getProperty("sharp4j.sharp", "").trim())) {
            return "sharp4j.sharp=on";
        }
        for (String k : new String[] {"sharp4j.sharp.min.nodes", "sharp4j.sharp.max.bytes"}) {
            if (p.getProperty(k) != null) {
                return k + "=" + p.getProperty(k);
            }
        }
        return null;
    }

    /** Whether rank 0's budget is spent; every rank of {@code boot} gets rank 0's answer (one bootstrap allgather). */
    private static boolean outOfTime(Bootstrap boot, Options o, long start) {
        boolean mine = boot.rank() == 0 && o.budgetNanos > 0 && System.nanoTime() - start > o.budgetNanos;
        return boot.allgather(new byte[] {(byte) (mine ? 1 : 0)})[0][0] != 0;
    }

    /** The figure of the slowest node (each node's communicator measured its own), on every rank (one bootstrap allgather). */
    static Measurement slowestNode(Bootstrap boot, Measurement mine) {
        String enc = String.format(Locale.ROOT, "%s,%s,%d,%b", Double.toString(mine.meanUs()), Double.toString(mine.stderrUs()),
                mine.rounds(), mine.stable());
        Measurement worst = null;
        for (byte[] b : boot.allgather(enc.getBytes(StandardCharsets.UTF_8))) {
            String[] f = new String(b, StandardCharsets.UTF_8).split(",");
            Measurement m = new Measurement(mine.nodes(), mine.ppn(), mine.collective(), mine.layer(), mine.candidate(), mine.bytes(),
                    Double.parseDouble(f[0]), Double.parseDouble(f[1]), Integer.parseInt(f[2]), Boolean.parseBoolean(f[3]));
            if (worst == null || m.meanUs() > worst.meanUs()) {
                worst = m;
            }
        }
        return worst;
    }

    /**
     * The ranks of one node as a bootstrap of their own, for a communicator of that node alone. Its
     * allgathers are the job's: every rank of the job calls each (every node creates, uses and closes
     * its communicator at the same point of the sweep) and sees its node's part; its job id names the
     * node, so the nodes' shared-memory segments (one host for simulated nodes) never meet.
     */
    static final class NodeBootstrap implements Bootstrap {
        private final Bootstrap job;
        private final int[] members;
        private final int rank;
        private final String jobId;

        NodeBootstrap(Bootstrap job, int[] members, int node) {
            this.job = job;
            this.members = members.clone();
            int me = -1;
            for (int i = 0; i < members.length; i++) {
                if (members[i] == job.rank()) {
                    me = i;
                }
            }
            if (me < 0) {
                throw new IllegalArgumentException("rank " + job.rank() + " is not among its node's ranks " + java.util.Arrays.toString(members));
            }
            this.rank = me;
            this.jobId = job.jobId() + "-node" + node;
        }

        @Override
        public int rank() {
            return rank;
        }

        @Override
        public int size() {
            return members.length;
        }

        @Override
        public String jobId() {
            return jobId;
        }

        @Override
        public byte[][] allgather(byte[] mine) {
            byte[][] all = job.allgather(mine);
            byte[][] out = new byte[members.length][];
            for (int i = 0; i < members.length; i++) {
                out[i] = all[members[i]];
            }
            return out;
        }

        @Override
        public String name() {
            return job.name() + " (node-local)";
        }

        @Override
        public Runnable progress() {
            return job.progress(); // the job's library: a node's communicator waits next to it too
        }

        @Override
        public void close() {
            // the job's bootstrap stays open: its owner closes it
        }
    }

    /** Whether rank 0's budget is spent; every rank gets rank 0's answer. */
    private static boolean outOfTime(Communicator comm, Options o, long start) {
        if (o.budgetNanos <= 0) {
            return false;
        }
        double[] mine = {comm.rank() == 0 && System.nanoTime() - start > o.budgetNanos ? 1 : 0};
        double[] any = new double[1];
        comm.allreduce(mine, any, Op.MAX);
        return any[0] > 0;
    }

    /**
     * The spine's radix as the written table will choose it (the inter-node barrier's winner by
     * {@link TuneTable}'s rule, over this sweep's barrier points), decided on rank 0 and given to
     * every rank (one bootstrap allgather); 0 when no host-path radix won (the table's own spine).
     */
    static int agreeSpine(Bootstrap boot, Result res, Options o) {
        int mine = 0;
        if (boot.rank() == 0) {
            List<TuneTable.Choice> cs = TuneTable.choose(res.measurements, res.nodes, res.ppn, Collective.BARRIER, Measurement.INTER, o.guard);
            if (!cs.isEmpty() && cs.get(0).candidate().startsWith("knomial:radix=")) {
                mine = Integer.parseInt(cs.get(0).candidate().substring("knomial:radix=".length()));
            }
        }
        byte[][] all = boot.allgather(Integer.toString(mine).getBytes(StandardCharsets.UTF_8));
        return Integer.parseInt(new String(all[0], StandardCharsets.UTF_8));
    }

    /** Rank 0's set of measured points, on every rank (one bootstrap allgather). */
    static Set<String> agreeDone(Bootstrap boot, Set<String> done) {
        byte[] mine = boot.rank() == 0 && done != null ? String.join("\n", done).getBytes(StandardCharsets.UTF_8) : new byte[0];
        byte[][] all = boot.allgather(mine);
        Set<String> out = new HashSet<>();
        String s = new String(all[0], StandardCharsets.UTF_8);
        if (!s.isEmpty()) {
            out.addAll(List.of(s.split("\n")));
        }
        return out;
    }

    /** Sleeps (does not spin) until this JVM's JIT has been idle for 200 ms (10 s at most), then a bootstrap barrier. */
    static void jitSettle(Bootstrap boot) {
        org.sharp4j.coll.JitIdle.await(10_000, 200);
        boot.barrier();
    }

    static void bar(PrintStream out, int done, int total, String what) {
        int w = 30;
        int filled = total == 0 ? w : done * w / total;
        String s = "[" + "#".repeat(filled) + "-".repeat(w - filled) + "] " + done + "/" + total + " " + what;
        out.print("\r" + String.format("%-90s", s));
        out.flush();
    }

    /** Target length of one round of timed calls. */
    static final double ROUND_NANOS = 30e6;
    /** Fewest timed calls of a candidate's block in a round, however long a call takes. */
    static final int MIN_BLOCK = 5;

    /**
     * One point on the candidates {@code here} (indices into {@code cands} and {@code comms}), measured
     * together: each candidate's warm-up, then rounds in which every candidate in turn (the order rotating
     * from round to round) makes a block of timed calls, until every candidate's rounds are stable or
     * {@link Options#maxRounds}. Candidates measured one after another, seconds apart, met different phases
     * of a loaded machine (at 3 hosts x 2 ranks the same candidate's rounds spread 5x within seconds, and a
     * sweep chose a reduce radix that osu_reduce, side by side, measured 1.1-1.5x slower); interleaved, as
     * the OSU ports' {@code --compare} interleaves its two sides, every candidate's rounds see the same
     * phases. Returns each candidate's figure (null for those not in {@code here}). {@code agree}: the job's
     * bootstrap when a candidate is node-local (its rounds, and so the decision to stop, differ between
     * nodes): every rank then stops where all would; null otherwise.
     */
    private static Measurement[] measurePoint(List<Communicator> comms, List<Candidate> cands, List<Integer> here, Collective c, long bytes,
            Options o, int nodes, int ppn, Bootstrap agree) {
        int count = (int) Math.max(1, bytes / 8);
        double[] in = new double[count];
        double[] out = new double[count];
        double[] t = new double[1];
        double[] tmax = new double[1];
        int n = cands.size();
        int[] iters = new int[n];
        int[] rewarm = new int[n];
        List<List<Double>> rounds = new ArrayList<>();
        boolean[] stable = new boolean[n];
        // As OSU measures (and so as users compare tables): each call timed alone, the ranks lined
        // up by an untimed barrier after it, reduce to a fixed root (0). Back-to-back calls measured
        // together let a non-root rank run ahead into the next call, which hides a call's latency:
        // on 3 hosts over TCP a sweep timed that way chose a reduce radix 2-3x slower in osu_reduce.
        final boolean lineUp = c != Collective.BARRIER;
        for (int k = 0; k < n; k++) {
            rounds.add(new ArrayList<>());
            if (!here.contains(k)) {
                continue;
            }
            Communicator comm = comms.get(k);
            // A round lasts about ROUND_NANOS whatever a call costs (at least MIN_BLOCK calls, at most the
            // iterations asked for): 1,000 calls of 100 us over TCP made one point take seconds. So does
            // the warm-up, at most o.warmup calls: a few first calls (new connections), a few timed ones,
            // then as many as fill about a round. The counts come from the slowest rank's cost (an
            // allreduce of MAX), so every rank makes the same calls.
            int first = Math.min(o.warmup, 3);
            warm(comm, c, in, out, count, first, lineUp);
            int probe = Math.min(o.warmup - first, 5);
            t[0] = warm(comm, c, in, out, count, probe, lineUp);
            comm.allreduce(t, tmax, Op.MAX);
            int rest = (int) Math.min(o.warmup - first - probe, ROUND_NANOS / Math.max(1.0, tmax[0]));
            if (rest >= 5) {
                t[0] = warm(comm, c, in, out, count, rest, lineUp);
                comm.allreduce(t, tmax, Op.MAX);
            }
            int most = bytes > 65536 ? Math.max(10, o.iterations / 5) : o.iterations;
            // at least MIN_BLOCK calls: a block of 16 MiB calls over TCP (70-100 ms each) lasts 0.5 s so, and every
            // candidate runs maxRounds of them (interleaved rounds end when every candidate is stable)
            iters[k] = (int) Math.max(MIN_BLOCK, Math.min(most, ROUND_NANOS / Math.max(1.0, tmax[0])));
            rewarm[k] = Math.min(o.warmup, Math.max(2, iters[k] / 10));
        }
        // A round's figure is OSU's P50 over its calls: each call's time averaged over the ranks (one
        // allreduce of the calls' times per round), then the median call. The mean of a round (the
        // slowest rank's, as before) moved with every stall of a descheduled rank: one 50 ms stall
        // doubled a 1 MiB round at 3 hosts x 2 ranks on 2 cores.
        int most = 0;
        for (int k : here) {
            most = Math.max(most, iters[k]);
        }
        double[] lat = new double[most];
        double[] latSum = new double[most];
        List<Integer> order = new ArrayList<>(here);
        for (int r = 0; r < o.maxRounds; r++) {
            for (int q = 0; q < order.size(); q++) {
                int k = order.get((q + r) % order.size());
                Communicator comm = comms.get(k);
                // the calls on other communicators in between: a few untimed calls first (from the first round on)
                for (int i = 0; i < rewarm[k]; i++) {
                    call(comm, c, in, out, count, 0);
                    if (lineUp) {
                        comm.barrier();
                    }
                }
                comm.barrier();
                for (int i = 0; i < iters[k]; i++) {
                    long t0 = System.nanoTime();
                    call(comm, c, in, out, count, 0);
                    lat[i] = (System.nanoTime() - t0) / 1e3;
                    if (lineUp) {
                        comm.barrier();
                    }
                }
                comm.allreduce(lat, 0, latSum, 0, iters[k], Op.SUM);
                rounds.get(k).add(Measurement.median(java.util.Arrays.copyOf(latSum, iters[k])) / comm.size());
            }
            if (r + 1 >= o.minRounds) {
                boolean all = true;
                for (int k : here) {
                    double[] ms = meanSe(rounds.get(k));
                    stable[k] = ms[1] <= o.targetRse * ms[0];
                    all &= stable[k];
                }
                if (agree != null) {
                    // a node-local candidate's rounds differ from node to node, so would the decision: every rank
                    // of the job must make the same rounds (a job-wide candidate in the group would wait forever)
                    for (byte[] b : agree.allgather(new byte[] {(byte) (all ? 1 : 0)})) {
                        all &= b[0] != 0;
                    }
                }
                if (all) {
                    break;
                }
            }
        }
        // The pass's figure is the median of the rounds (its error that of a median, 1.2533 standard errors of the
        // mean): a round in a slow phase of the machine (at 3 hosts x 2 ranks: 300 us rounds and one of 6 ms) moved
        // a mean of 4 rounds 5x.
        Measurement[] res = new Measurement[n];
        for (int k : here) {
            double[] ms = meanSe(rounds.get(k));
            double med = Measurement.median(rounds.get(k).stream().mapToDouble(Double::doubleValue).toArray());
            Candidate cand = cands.get(k);
            res[k] = new Measurement(nodes, ppn, c, cand.layer(), cand.name(), bytes, med, 1.2533 * ms[1], rounds.get(k).size(), stable[k]);
        }
        return res;
    }

    /** How long the untimed pass spends at one point, at most (at the slowest rank's pace). */
    static final double UNTIMED_NANOS = 100e6;

    /**
     * The untimed pass at one point: 10 calls, then as many more as fill about {@link #UNTIMED_NANOS} at the
     * slowest rank's pace (one allreduce of MAX, so every rank makes the same calls), at most {@code cap}; the
     * root rotates so that every root's path is warmed. A fixed count (up to 3,000 calls or 64 MiB per point)
     * took longer than a 150 s budget at 3 hosts x 2 ranks over TCP on a loaded machine, so a sweep under a
     * budget measured nothing, however often it was resumed.
     */
    private static void untimed(Communicator comm, Collective c, double[] in, double[] out, int count, int cap) {
        int first = Math.min(cap, 10);
        long t0 = System.nanoTime();
        for (int i = 0; i < first; i++) {
            call(comm, c, in, out, count, i % comm.size());
        }
        double[] t = {(System.nanoTime() - t0) / (double) first};
        double[] tmax = new double[1];
        comm.allreduce(t, tmax, Op.MAX);
        int more = (int) Math.min(cap - first, UNTIMED_NANOS / Math.max(1.0, tmax[0]));
        for (int i = 0; i < more; i++) {
            call(comm, c, in, out, count, (first + i) % comm.size());
        }
    }

    /** {@code n} warm-up calls (each followed by a barrier when {@code lineUp}); their mean time per call in ns (0 for none). */
    private static double warm(Communicator comm, Collective c, double[] in, double[] out, int count, int n, boolean lineUp) {
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            call(comm, c, in, out, count, 0);
            if (lineUp) {
                comm.barrier();
            }
        }
        return n <= 0 ? 0 : (System.nanoTime() - t0) / (double) n;
    }

    private static void call(Communicator comm, Collective c, double[] in, double[] out, int count, int root) {
        switch (c) {
            case ALLREDUCE:
                comm.allreduce(in, 0, out, 0, count, Op.SUM);
                break;
            case REDUCE:
                comm.reduce(in, 0, out, 0, count, Op.SUM, root);
                break;
            default:
                comm.barrier();
        }
    }

    static double[] meanSe(List<Double> xs) {
        double m = 0;
        for (double x : xs) {
            m += x;
        }
        m /= xs.size();
        double v = 0;
        for (double x : xs) {
            v += (x - m) * (x - m);
        }
        double se = xs.size() > 1 ? Math.sqrt(v / (xs.size() - 1) / xs.size()) : m;
        return new double[] {m, se};
    }

    private static String name(Collective c) {
        return c.name().toLowerCase(Locale.ROOT);
    }
}
