package org.sharp4j.launch;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import org.sharp4j.Communicator;
import org.sharp4j.Config;
import org.sharp4j.Op;
import org.sharp4j.Sharp4j;
import org.sharp4j.bootstrap.Bootstrap;
import org.sharp4j.tuning.Collective;
import org.sharp4j.tuning.IntraNodeAlgorithm;
import org.sharp4j.tuning.Sizes;

/**
 * The measuring half of {@code sharp4j tune}, run on every rank of the job: for each candidate
 * (tree with each radix, tiled) a communicator forced to it with an override rule, then per
 * collective and message size rounds of timed calls until the round times are stable (relative
 * standard error under the target) or the round budget is spent. Rank 0 then picks the winner
 * per size, preferring the previous size's winner (then the built-in choice) when the candidates
 * are within noise, and writes the rules.
 *
 * <p>Only the intra-node algorithms can be swept here: phase 3 on one host is shared memory;
 * SHARP and the UCX host paths are chosen by the table's inter-node rules (or the model).
 */
public final class Tuner {
    /** What to sweep and how hard. */
    public static final class Options {
        public EnumSet<Collective> collectives = EnumSet.allOf(Collective.class);
        public long[] sizes = {8, 64, 512, 4096, 16384, 65536, 262144};
        public int[] radices = {2, 4, 8};
        public int iterations = 1000;
        public int warmup = 100;
        public int minRounds = 3;
        public int maxRounds = 10;
        /** Rounds stop when the standard error of their mean is under this fraction of it. */
        public double targetRse = 0.03;
        /** A challenger must beat the incumbent by this fraction (and by 2 standard errors). */
        public double guard = 0.05;

        /** A sweep that finishes in seconds on 2 cores. */
        public static Options quick() {
            Options o = new Options();
            o.sizes = new long[] {8, 1024, 65536};
            o.radices = new int[] {2, 4};
            o.iterations = 200;
            o.warmup = 20;
            o.minRounds = 2;
            o.maxRounds = 4;
            o.targetRse = 0.05;
            return o;
        }
    }

    /** One candidate at one size: the mean over rounds of the slowest rank's time per call. */
    public static final class Measurement {
        public final Collective collective;
        public final String candidate;
        public final long bytes;
        public final double meanUs;
        public final double stderrUs;
        public final int rounds;
        public final boolean stable;

        Measurement(Collective c, String cand, long bytes, double mean, double se, int rounds, boolean stable) {
            this.collective = c;
            this.candidate = cand;
            this.bytes = bytes;
            this.meanUs = mean;
            this.stderrUs = se;
            this.rounds = rounds;
            this.stable = stable;
        }
    }

    /** Rank 0's outcome (other ranks get the measurements only). */
    public static final class Result {
        public final List<Measurement> measurements = new ArrayList<>();
        /** The table file: comments, then rules. */
        public final List<String> table = new ArrayList<>();
        /** The winner per collective and size: collective, bytes, candidate, separable. */
        public final List<String[]> choices = new ArrayList<>();

        /** The chosen candidate for a collective at a measured size, or null. */
        public String choice(Collective c, long bytes) {
            for (String[] ch : choices) {
                if (ch[0].equals(c.name()) && Long.parseLong(ch[1]) == bytes) {
                    return ch[2];
                }
            }
            return null;
        }

        /** CSV: collective,candidate,bytes,mean_us,stderr_us,rounds,stable. */
        public List<String> csv() {
            List<String> out = new ArrayList<>();
            out.add("collective,candidate,bytes,mean_us,stderr_us,rounds,stable");
            for (Measurement m : measurements) {
                out.add(String.format(Locale.ROOT, "%s,%s,%d,%.4f,%.4f,%d,%b", m.collective.name().toLowerCase(Locale.ROOT),
                        m.candidate, m.bytes, m.meanUs, m.stderrUs, m.rounds, m.stable));
            }
            return out;
        }
    }

    private Tuner() {
    }

    static List<String> candidates(Options o, Collective c, int ppn) {
        List<String> out = new ArrayList<>();
        for (int r : o.radices) {
            if (r == 2 || r <= Math.max(2, ppn)) { // a radix above the ranks per node is the same flat tree
                out.add("tree:radix=" + r);
            }
        }
        if (c != Collective.BARRIER) {
            out.add("tiled");
        }
        return out;
    }

    static String forcing(String candidate) {
        return candidate.startsWith("tree") ? "all:0-inf:" + candidate : "allreduce,reduce:0-inf:" + candidate;
    }

    /** Collective over {@code boot}: every rank calls it with the same options. */
    public static Result run(Bootstrap boot, Config base, Options o, PrintStream progress) {
        Result res = new Result();
        List<String> all = new ArrayList<>();
        int ppn;
        int nodes;
        try (Communicator probe = Sharp4j.create(boot, base.withWarmupRounds(0))) {
            ppn = probe.topology().maxRanksPerNode();
            nodes = probe.topology().nodeCount();
        }
        for (Collective c : o.collectives) {
            for (String cand : candidates(o, c, ppn)) {
                if (!all.contains(cand)) {
                    all.add(cand);
                }
            }
        }
        int total = 0;
        for (String cand : all) {
            for (Collective c : o.collectives) {
                if (candidates(o, c, ppn).contains(cand)) {
                    total += c == Collective.BARRIER ? 1 : o.sizes.length;
                }
            }
        }
        // An untimed pass over every candidate and size first, then a pause until the JIT is idle:
        // otherwise the first candidates are timed while the code is interpreted or recompiling,
        // and the two spinning ranks starve the compiler threads (seen: 8 B at 21 us instead of 0.2).
        for (String cand : all) {
            Config cfg = base.withTuneOverride(forcing(cand)).withWarmupRounds(0);
            try (Communicator comm = Sharp4j.create(boot, cfg)) {
                for (Collective c : o.collectives) {
                    if (candidates(o, c, ppn).contains(cand)) {
                        for (long bytes : c == Collective.BARRIER ? new long[] {0} : o.sizes) {
                            int count = (int) Math.max(1, bytes / 8);
                            double[] in = new double[count];
                            double[] out = new double[count];
                            int n = (int) Math.max(20, Math.min(3000, (64L << 20) / Math.max(8, bytes)));
                            for (int i = 0; i < n; i++) {
                                call(comm, c, in, out, count, i);
                            }
                        }
                    }
                }
            }
        }
        jitSettle(boot);
        int done = 0;
        for (String cand : all) {
            Config cfg = base.withTuneOverride(forcing(cand)).withWarmupRounds(Math.min(base.warmupRounds(), 4));
            try (Communicator comm = Sharp4j.create(boot, cfg)) {
                for (Collective c : o.collectives) {
                    if (!candidates(o, c, ppn).contains(cand)) {
                        continue;
                    }
                    long[] sizes = c == Collective.BARRIER ? new long[] {0} : o.sizes;
                    for (long bytes : sizes) {
                        res.measurements.add(measure(comm, c, cand, bytes, o));
                        done++;
                        if (boot.rank() == 0 && progress != null) {
                            bar(progress, done, total, c + " " + cand + " " + Sizes.format(bytes) + " B");
                        }
                    }
                }
            }
        }
        if (progress != null && boot.rank() == 0) {
            progress.println();
        }
        if (boot.rank() == 0) {
            choose(res, o, nodes, ppn);
        }
        return res;
    }

    /** Sleeps (does not spin) until this JVM's JIT has been idle for 200 ms (10 s at most), then a bootstrap barrier. */
    static void jitSettle(Bootstrap boot) {
        java.lang.management.CompilationMXBean jit = java.lang.management.ManagementFactory.getCompilationMXBean();
        if (jit != null && jit.isCompilationTimeMonitoringSupported()) {
            long deadline = System.nanoTime() + 10_000_000_000L;
            long last = jit.getTotalCompilationTime();
            for (int quiet = 0; quiet < 10 && System.nanoTime() < deadline; ) {
                try {
                    Thread.sleep(20);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
                long now = jit.getTotalCompilationTime();
                quiet = now == last ? quiet + 1 : 0;
                last = now;
            }
        }
        boot.barrier();
    }

    static void bar(PrintStream out, int done, int total, String what) {
        int w = 30;
        int filled = total == 0 ? w : done * w / total;
        String s = "[" + "#".repeat(filled) + "-".repeat(w - filled) + "] " + done + "/" + total + " " + what;
        out.print("\r" + String.format("%-90s", s));
        out.flush();
    }

    private static Measurement measure(Communicator comm, Collective c, String cand, long bytes, Options o) {
        int count = (int) Math.max(1, bytes / 8);
        double[] in = new double[count];
        double[] out = new double[count];
        double[] t = new double[1];
        double[] tmax = new double[1];
        List<Double> rounds = new ArrayList<>();
        int iters = bytes > 65536 ? Math.max(10, o.iterations / 5) : o.iterations;
        boolean stable = false;
        for (int r = 0; r < o.maxRounds; r++) {
            for (int i = 0; i < o.warmup; i++) {
                call(comm, c, in, out, count, i);
            }
            comm.barrier();
            long t0 = System.nanoTime();
            for (int i = 0; i < iters; i++) {
                call(comm, c, in, out, count, i);
            }
            t[0] = (System.nanoTime() - t0) / 1e3 / iters;
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
        return new Measurement(c, cand, bytes, ms[0], ms[1], rounds.size(), stable);
    }

    private static void call(Communicator comm, Collective c, double[] in, double[] out, int count, int i) {
        switch (c) {
            case ALLREDUCE:
                comm.allreduce(in, 0, out, 0, count, Op.SUM);
                break;
            case REDUCE:
                comm.reduce(in, 0, out, 0, count, Op.SUM, i % comm.size());
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

    /** The built-in choice at a size (the incumbent of last resort). */
    static String builtInChoice(Collective c, long bytes, int nodes, int ppn) {
        org.sharp4j.tuning.CompiledTable t = org.sharp4j.tuning.TuningTable.builtIn().compile(nodes, ppn);
        int i = t.intraIndex(c, bytes);
        return t.intraAlgorithmAt(c, i) == IntraNodeAlgorithm.TREE || c == Collective.BARRIER
                ? "tree:radix=" + t.treeRadixAt(c, i) : "tiled";
    }

    static void choose(Result res, Options o, int nodes, int ppn) {
        List<String> rules = new ArrayList<>();
        List<String> notes = new ArrayList<>();
        for (Collective c : o.collectives) {
            long[] sizes = c == Collective.BARRIER ? new long[] {0} : o.sizes;
            String prev = null;
            List<long[]> starts = new ArrayList<>();
            List<String> winners = new ArrayList<>();
            for (long bytes : sizes) {
                List<Measurement> ms = new ArrayList<>();
                for (Measurement m : res.measurements) {
                    if (m.collective == c && m.bytes == bytes) {
                        ms.add(m);
                    }
                }
                ms.sort((a, b) -> Double.compare(a.meanUs, b.meanUs));
                Measurement best = ms.get(0);
                String incumbent = prev != null ? prev : builtInChoice(c, bytes, nodes, ppn);
                Measurement inc = null;
                for (Measurement m : ms) {
                    if (m.candidate.equals(incumbent)) {
                        inc = m;
                    }
                }
                String pick = best.candidate;
                boolean separable = true;
                if (inc != null && inc != best) {
                    double gap = inc.meanUs - best.meanUs;
                    double noise = Math.max(o.guard * best.meanUs, 2 * Math.hypot(inc.stderrUs, best.stderrUs));
                    if (gap <= noise) {
                        pick = incumbent;
                        separable = false;
                        notes.add(String.format(Locale.ROOT, "# %s %s B: %s (%.2f us) and %s (%.2f us) are within noise; kept %s",
                                name(c), Sizes.format(bytes), best.candidate, best.meanUs, inc.candidate, inc.meanUs, incumbent));
                    }
                }
                for (Measurement m : ms) {
                    if (!m.stable) {
                        notes.add(String.format(Locale.ROOT, "# %s %s B %s: not stable after %d rounds (+-%.2f us on %.2f us)",
                                name(c), Sizes.format(bytes), m.candidate, m.rounds, m.stderrUs, m.meanUs));
                    }
                }
                res.choices.add(new String[] {c.name(), Long.toString(bytes), pick, Boolean.toString(separable)});
                if (!pick.equals(prev)) {
                    starts.add(new long[] {bytes});
                    winners.add(pick);
                }
                prev = pick;
            }
            for (int i = 0; i < winners.size(); i++) {
                long lo = i == 0 ? 0 : starts.get(i)[0];
                long hi = i + 1 < winners.size() ? starts.get(i + 1)[0] : Long.MAX_VALUE;
                rules.add(name(c) + ":" + Sizes.format(lo) + "-" + Sizes.format(hi) + ":nodes=" + nodes + ":ppn=" + ppn + ":"
                        + winners.get(i));
            }
        }
        res.table.add("# sharp4j tuning table, written by sharp4j tune on " + java.time.LocalDateTime.now().withNano(0));
        res.table.add("# job shape: " + nodes + " node(s), " + ppn + " rank(s) per node; rules apply to that shape only");
        res.table.add("# (edit nodes=/ppn= to widen them). Format: see org.sharp4j.tuning.TuningTable.");
        res.table.add("# A winner covers sizes from the first measured size where it won up to the next winner's.");
        res.table.addAll(notes);
        res.table.addAll(rules);
    }

    private static String name(Collective c) {
        return c.name().toLowerCase(Locale.ROOT);
    }
}
