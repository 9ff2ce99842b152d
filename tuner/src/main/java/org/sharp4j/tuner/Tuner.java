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
 *       {@code tiled} (allreduce, reduce; {@code tiled:chunk=C} for each of {@link Options#chunks}); phase 3
 *       keeps the table's choice;</li>
 *   <li>inter-node (2 nodes or more, phase 3 on the host path, e.g. UCX): {@code knomial:radix=k} for k in
 *       {@link Options#interRadices} up to the node count (allreduce, reduce, and barrier, which runs the
 *       host path's spine at that radix), {@code sra:radix=k} (allreduce, reduce); {@code sharp} where SHARP is
 *       phase 3 ({@code sharp4j.sharp=on} and the library loads), against the host path per size, and
 *       {@code sharp:pipeline=d} for the other depths of {@link Options#pipelines} (allreduce, reduce; sizes from
 *       {@link Options#pipelineMin}, unless {@code sharp4j.sharp.pipeline} fixes the depth). The
 *       intra-node phases keep the table's choice. Simulated nodes meeting in shared memory have no
 *       inter-node algorithm to choose: run with {@code -Dsharp4j.internode=ucx}.</li>
 * </ul>
 * <b>Method</b>: an untimed pass over every candidate and size, then a pause until the JIT is idle;
 * per point, warm-up calls, then rounds of timed calls (about 30 ms each, at most {@link Options#iterations}
 * calls; each the slowest rank's mean time per call, an allreduce of MAX) until the standard error of
 * their mean is under the target. Calls are timed
 * as OSU times them: one at a time, an untimed barrier after each (none for Barrier itself), Reduce
 * to root 0. <b>Budget</b>: rank 0's clock decides
 * before each point whether there is time left and every rank follows (one allreduce); the points
 * measured so far are kept. <b>Resume</b>: points rank 0 already has (the state file, given as
 * {@code done}) are skipped on every rank.
 */
public final class Tuner {
    /** What to sweep and how hard. */
    public static final class Options {
        public EnumSet<Collective> collectives = EnumSet.allOf(Collective.class);
        public long[] sizes = {8, 64, 512, 4096, 16384, 65536, 262144, 1048576};
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
        /** Largest size the exchange is tried at (it reads every rank's slot). */
        public long exchangeMax = 4096;
        public int iterations = 1000;
        public int warmup = 100;
        public int minRounds = 3;
        public int maxRounds = 10;
        /** Rounds stop when the standard error of their mean is under this fraction of it. */
        public double targetRse = 0.03;
        /** A challenger must beat the incumbent by this fraction (and by 2 standard errors). */
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
            o.minRounds = 2;
            o.maxRounds = 4;
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
            out.add(new Candidate(Measurement.INTRA, "direct", "reduce:0-inf:direct", EnumSet.of(Collective.REDUCE)));
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
     * Collective over {@code boot}: every rank calls it with the same options. {@code done}: keys
     * ({@link Measurement#key()}) already measured, as rank 0 knows them (other ranks' are ignored);
     * {@code sink}: called on rank 0 with each new measurement (the state file).
     */
    public static Result run(Bootstrap boot, Config base, Options o, Set<String> done, Consumer<Measurement> sink, PrintStream progress) {
        long start = System.nanoTime();
        Result res = new Result();
        String forced = forcedSharp(System.getProperties());
        if (forced != null) {
            throw new IllegalArgumentException("sharp4j tune measures SHARP against the host path by forcing each candidate through "
                    + "the tuning table, but " + forced + " makes SHARP take calls whatever the table says: run it with sharp4j.sharp=auto"
                    + " (the default; sharp4j.sharp.lib names the library) and without sharp4j.sharp.min.nodes/max.bytes");
        }
        String interNode;
        // the probe's table picks SHARP for small messages, so that SHARP is set up (and named in phase 3) wherever it can be
        try (Communicator probe = Sharp4j.create(boot, base.withTuneOverride("all:0-2k:sharp").withWarmupRounds(0))) {
            res.ppn = probe.topology().maxRanksPerNode();
            res.nodes = probe.topology().nodeCount();
            interNode = probe.interNode();
        }
        PrintStream out = boot.rank() == 0 ? progress : null;
        List<Candidate> cands = candidates(o, res.nodes, res.ppn, interNode, res.notes);
        Set<String> skip = agreeDone(boot, done);
        if (out != null) {
            out.println("sharp4j tune: " + boot.size() + " rank(s), " + res.nodes + " node(s), " + res.ppn + " rank(s) per node; phase 3: "
                    + interNode + "; " + cands.size() + " candidate(s)");
            for (String n : res.notes) {
                out.println("sharp4j tune: " + n);
            }
        }
        List<Candidate> todo = new ArrayList<>();
        int total = 0;
        for (Candidate cand : cands) {
            boolean any = false;
            for (Collective c : o.collectives) {
                if (!cand.collectives().contains(c)) {
                    continue;
                }
                for (long bytes : sizes(o, cand, c)) {
                    total++;
                    if (!alwaysMeasured(c, cand) && skip.contains(Measurement.key(res.nodes, res.ppn, c, cand.layer(), cand.name(), bytes))) {
                        res.skipped++;
                    } else {
                        any = true;
                    }
                }
            }
            if (any) {
                todo.add(cand);
            }
        }
        res.total = total;
        if (out != null && res.skipped > 0) {
            out.println("sharp4j tune: resuming: " + res.skipped + " of " + total + " point(s) already measured");
        }
        // An untimed pass over every candidate and size first, then a pause until the JIT is idle:
        // otherwise the first candidates are timed while the code is interpreted or recompiling,
        // and the spinning ranks starve the compiler threads (seen: 8 B at 21 us instead of 0.2).
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
                            double[] in = new double[count];
                            double[] outb = new double[count];
                            int n = (int) Math.max(20, Math.min(3000, (64L << 20) / Math.max(8, bytes)));
                            for (int i = 0; i < n; i++) {
                                call(comm, c, in, outb, count, i % comm.size()); // every root path warmed
                            }
                        }
                    }
                }
            }
        }
        jitSettle(boot);
        int doneCount = res.skipped;
        int spine = -1;
        outer:
        for (Candidate cand : res.budgetSpent ? List.<Candidate>of() : todo) {
            if (cand.needsSpine() && spine < 0) {
                spine = agreeSpine(boot, res, o);
                if (out != null) {
                    out.println();
                    out.println("sharp4j tune: the data candidates run on the spine the barrier chose: "
                            + (spine > 0 ? "knomial:radix=" + spine : "the table's"));
                }
            }
            Config cfg = base.withTuneOverride(cand.forcing(Math.max(0, spine))).withWarmupRounds(Math.min(base.warmupRounds(), 4));
            try (Communicator comm = Sharp4j.create(boot, cfg)) {
                for (Collective c : o.collectives) {
                    if (!cand.collectives().contains(c)) {
                        continue;
                    }
                    for (long bytes : sizes(o, cand, c)) {
                        if (!alwaysMeasured(c, cand) && skip.contains(Measurement.key(res.nodes, res.ppn, c, cand.layer(), cand.name(), bytes))) {
                            continue;
                        }
                        if (outOfTime(comm, o, start)) {
                            res.budgetSpent = true;
                            break outer;
                        }
                        Measurement m = measure(comm, c, cand, bytes, o, res.nodes, res.ppn);
                        res.measurements.add(m);
                        if (boot.rank() == 0 && sink != null) {
                            sink.accept(m);
                        }
                        doneCount++;
                        if (out != null) {
                            bar(out, doneCount, total, name(c) + " " + cand.name() + " " + Sizes.format(bytes) + " B");
                        }
                    }
                }
            }
        }
        if (out != null) {
            out.println();
            if (res.budgetSpent) {
                out.println("sharp4j tune: the budget is spent after " + doneCount + " of " + total
                        + " point(s); the table has what was measured; rerun with the same output to continue");
            }
        }
        return res;
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

    private static Measurement measure(Communicator comm, Collective c, Candidate cand, long bytes, Options o, int nodes, int ppn) {
        int count = (int) Math.max(1, bytes / 8);
        double[] in = new double[count];
        double[] out = new double[count];
        double[] t = new double[1];
        double[] tmax = new double[1];
        List<Double> rounds = new ArrayList<>();
        int iters = bytes > 65536 ? Math.max(10, o.iterations / 5) : o.iterations;
        boolean stable = false;
        // As OSU measures (and so as users compare tables): each call timed alone, the ranks lined
        // up by an untimed barrier after it, reduce to a fixed root (0). Back-to-back calls measured
        // together let a non-root rank run ahead into the next call, which hides a call's latency:
        // on 3 hosts over TCP a sweep timed that way chose a reduce radix 2-3x slower in osu_reduce.
        final boolean lineUp = c != Collective.BARRIER;
        // A round lasts about ROUND_NANOS whatever a call costs (at least 10 calls, at most the
        // iterations asked for): 1,000 calls of 100 us over TCP made one point take seconds. The
        // count comes from the first warm-up's cost, the slowest rank's, so every rank makes the same calls.
        long w0 = System.nanoTime();
        for (int i = 0; i < o.warmup; i++) {
            call(comm, c, in, out, count, 0);
            if (lineUp) {
                comm.barrier();
            }
        }
        t[0] = (System.nanoTime() - w0) / (double) Math.max(1, o.warmup);
        comm.allreduce(t, tmax, Op.MAX);
        iters = (int) Math.max(10, Math.min(iters, ROUND_NANOS / Math.max(1.0, tmax[0])));
        final int rewarm = Math.min(o.warmup, Math.max(2, iters / 10));
        for (int r = 0; r < o.maxRounds; r++) {
            for (int i = 0; r > 0 && i < rewarm; i++) {
                call(comm, c, in, out, count, 0);
                if (lineUp) {
                    comm.barrier();
                }
            }
            comm.barrier();
            long sum = 0;
            for (int i = 0; i < iters; i++) {
                long t0 = System.nanoTime();
                call(comm, c, in, out, count, 0);
                sum += System.nanoTime() - t0;
                if (lineUp) {
                    comm.barrier();
                }
            }
            t[0] = sum / 1e3 / iters;
            comm.allreduce(t, tmax, Op.MAX); // the job is as slow as its slowest rank
            rounds.add(tmax[0]);
            if (rounds.size() >= o.minRounds) {
                double[] ms = meanSe(rounds);
                if (ms[1] <= o.targetRse * ms[0]) {
                    stable = true;
                    break;
                }
            }
        }
        double[] ms = meanSe(rounds);
        return new Measurement(nodes, ppn, c, cand.layer(), cand.name(), bytes, ms[0], ms[1], rounds.size(), stable);
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
