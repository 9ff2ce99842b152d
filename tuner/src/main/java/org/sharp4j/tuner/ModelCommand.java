package org.sharp4j.tuner;

import java.awt.Color;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.sharp4j.logplot.LogPlot;
import org.sharp4j.tuning.Sizes;
import org.sharp4j.tuner.model.ModelParams;
import org.sharp4j.tuner.model.PerfModel;
import org.sharp4j.tuner.model.SeedTable;
import org.sharp4j.tuner.model.TuneFit;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code sharp4j model}: predicted latency per inter-node algorithm per node count and size from
 * {@link PerfModel} (formulas and parameter sources: {@link PerfModel}, {@link ModelParams}); a
 * PNG of latency vs node count with paper 004's measurements overlaid; a seeded tuning table.
 */
@Command(name = "model", mixinStandardHelpOptions = true,
        description = "Predict Allreduce/Barrier latency per inter-node algorithm (host k-nomial, SRA, SHARP) from a LogGP + SHARP"
                + " model; plot it against paper 004's measurements; seed a tuning table from it.")
public final class ModelCommand implements Callable<Integer> {
    /** Paper 004 (MVAPICH2-X on Frontera, 1 ppn), Allreduce, 2 KiB, host path: (nodes, us). */
    static final double[][] PAPER_HOST_2K = {{4, 3.66}, {7861, 61}};
    /** Paper 004, Allreduce with SHARP, 16 B - 2 KiB: "around 3-8 us up to 2,048 nodes", 40 us at 7,861. */
    static final double[][] PAPER_SHARP = {{4, 3}, {2048, 8}, {7861, 40}};

    @Spec
    CommandSpec spec;

    @Option(names = "--params", description = "properties file overriding the model parameters (keys: see ModelParams)")
    Path params;

    @Option(names = "--from-tune", description = "a table written by sharp4j tune: fit intra a, b, the LogGP host parameters and"
            + " SHARP's base and per-level cost from its measurements (TABLE.csv)")
    Path fromTune;

    @Option(names = "--nodes", split = ",", description = "node counts (default 2,4,8,...,8192)")
    List<String> nodes;

    @Option(names = "--sizes", split = ",", description = "message sizes, e.g. 16,2k (default 16,2048)")
    List<String> sizes;

    @Option(names = "--ppn", defaultValue = "1", description = "ranks per node for the intra-node phases (default ${DEFAULT-VALUE})")
    int ppn;

    @Option(names = "--plot", description = "PNG: latency vs node count, host k-nomial and SHARP, paper 004 points overlaid")
    Path plot;

    @Option(names = "--seed-table", description = "merge a [modelled] section choosing the cheapest predicted inter-node algorithm"
            + " into this table file (with --from-tune: for node counts above the largest measured; the file may be the tuned table itself)")
    Path seedTable;

    PrintStream out = System.out;

    @Override
    public Integer call() throws Exception {
        int[] ns = nodeCounts();
        long[] ms = messageSizes();
        if (ppn < 1) {
            throw bad("--ppn must be >= 1, got " + ppn);
        }
        ModelParams p;
        List<Measurement> measured = List.of();
        try {
            p = params != null ? ModelParams.load(params) : ModelParams.defaults();
            if (fromTune != null) {
                measured = fit(p, fromTune, spec.commandLine().getErr());
            }
        } catch (IllegalArgumentException e) {
            throw bad(e.getMessage());
        }
        PerfModel model = new PerfModel(p);
        for (String l : report(model, ns, ms, ppn)) {
            out.println(l);
        }
        if (plot != null) {
            plot(model, ns, ms, plot);
            System.err.println("sharp4j model: wrote " + plot);
        }
        if (seedTable != null) {
            int maxMeasured = measured.stream().filter(m -> m.layer().equals(Measurement.INTER)).mapToInt(Measurement::nodes).max().orElse(0);
            int[] seedNodes = ns;
            if (maxMeasured > 0) {
                // the measured shapes have their own sections: model the node counts above them
                seedNodes = java.util.stream.IntStream.concat(java.util.stream.IntStream.of(maxMeasured + 1),
                        java.util.Arrays.stream(ns).filter(n -> n > maxMeasured + 1)).toArray();
            }
            boolean sharp = measured.stream().noneMatch(m -> m.layer().equals(Measurement.INTER))
                    || measured.stream().anyMatch(m -> m.candidate().equals("sharp"));
            List<String> section = new ArrayList<>();
            section.add("[modelled]");
            section.addAll(SeedTable.generate(p, seedNodes, seedSizes(ms), sharp));
            TuneTable.mergeSection(seedTable, section); // parsed before it is written: what the engine reads must parse
            System.err.println("sharp4j model: merged a [modelled] section for " + seedNodes[0] + "-inf nodes into " + seedTable
                    + "; use it with -Dsharp4j.tune.file=" + seedTable);
        }
        return 0;
    }

    private ParameterException bad(String msg) {
        return new ParameterException(spec.commandLine(), "sharp4j model: " + msg);
    }

    int[] nodeCounts() {
        if (nodes == null || nodes.isEmpty()) {
            int[] d = new int[13];
            for (int i = 0; i < d.length; i++) {
                d[i] = 2 << i;
            }
            return d;
        }
        int[] out = new int[nodes.size()];
        for (int i = 0; i < out.length; i++) {
            String s = nodes.get(i).trim();
            try {
                out[i] = Integer.parseInt(s);
            } catch (NumberFormatException e) {
                throw bad("--nodes: '" + s + "' is not a node count (expected e.g. 2,4,64)");
            }
            if (out[i] < 1) {
                throw bad("--nodes: node counts must be >= 1, got " + out[i]);
            }
        }
        return java.util.Arrays.stream(out).distinct().sorted().toArray();
    }

    long[] messageSizes() {
        if (sizes == null || sizes.isEmpty()) {
            return new long[] {16, 2048};
        }
        long[] out = new long[sizes.size()];
        for (int i = 0; i < out.length; i++) {
            try {
                out[i] = Sizes.parseBytes(sizes.get(i));
            } catch (IllegalArgumentException e) {
                throw bad("--sizes: " + e.getMessage());
            }
            if (out[i] == Long.MAX_VALUE) {
                throw bad("--sizes: 'inf' is not a message size");
            }
        }
        return java.util.Arrays.stream(out).distinct().sorted().toArray();
    }

    /** The sizes the seeded table compares at: the given ones plus powers of 4 from 8 B to 4 MiB. */
    static long[] seedSizes(long[] given) {
        java.util.TreeSet<Long> s = new java.util.TreeSet<>();
        for (long m : given) {
            s.add(m);
        }
        for (long m = 8; m <= (4L << 20); m *= 4) {
            s.add(m);
        }
        return s.stream().mapToLong(Long::longValue).toArray();
    }

    /** Fits the model's parameters from the tuner's measurements ({@code TABLE.csv}, {@link TuneFit}); returns them. */
    static List<Measurement> fit(ModelParams p, Path table, java.io.PrintWriter err) {
        Path csv = TuneCsv.of(table);
        if (!Files.exists(csv)) {
            throw new IllegalArgumentException("--from-tune: cannot read " + csv + " (the measurements sharp4j tune writes next to " + table + ")");
        }
        List<Measurement> ms = TuneCsv.read(csv);
        if (ms.isEmpty()) {
            throw new IllegalArgumentException("--from-tune: " + csv + " holds no measurement");
        }
        for (String l : TuneFit.fit(p, ms, csv.toString())) {
            err.println("sharp4j model: " + l);
        }
        err.flush();
        return ms;
    }

    /** The printed table. */
    static List<String> report(PerfModel model, int[] ns, long[] ms, int ppn) {
        ModelParams p = model.params();
        List<String> out = new ArrayList<>();
        out.add("sharp4j model: predicted latency (us); formulas: org.sharp4j.tuner.model.PerfModel");
        out.add("parameters:");
        for (String l : p.describeWithOrigin()) {
            out.add("  " + l);
        }
        int kk = p.knomialRadix;
        int ks = p.sraRadix;
        int kb = p.barrierRadix;
        for (long m : ms) {
            out.add("");
            out.add(String.format(Locale.ROOT, "allreduce %s B, %d rank(s) per node (intra reduce + read-out added in 'total')",
                    Sizes.format(m), ppn));
            out.add(String.format(Locale.ROOT, "%7s %12s %12s %10s %7s  %-12s %10s", "nodes", "knomial:r" + kk, "sra:r" + ks,
                    "sharp", "levels", "best inter", "total"));
            for (int n : ns) {
                double tk = model.knomial(n, m, kk);
                double ts = model.sra(n, m, ks);
                double th = model.sharp(n, m);
                String best = th <= tk && th <= ts ? "sharp" : tk <= ts ? "knomial" : "sra";
                double bi = Math.min(th, Math.min(tk, ts));
                double total = model.intraReduce(ppn, m) + bi + model.intraBcast(ppn, m);
                out.add(String.format(Locale.ROOT, "%7d %12.2f %12.2f %10s %7d  %-12s %10.2f", n, tk, ts,
                        Double.isInfinite(th) ? "n/a" : String.format(Locale.ROOT, "%.2f", th), model.sharpLevels(n), best, total));
            }
        }
        out.add("");
        out.add("barrier");
        out.add(String.format(Locale.ROOT, "%7s %12s %10s", "nodes", "knomial:r" + kb, "sharp"));
        for (int n : ns) {
            out.add(String.format(Locale.ROOT, "%7d %12.2f %10.2f", n, model.barrier(n, kb), model.sharp(n, 0)));
        }
        return out;
    }

    /**
     * The PNG: host k-nomial and SHARP per size vs node count (log x with the node counts as ticks,
     * log y with 1-2-5 ticks in us), paper 004's points as markers.
     */
    static void plot(PerfModel model, int[] ns, long[] ms, Path png) throws IOException {
        System.setProperty("java.awt.headless", "true");
        int[] xs = java.util.Arrays.stream(ns).filter(n -> n >= 2).toArray();
        if (xs.length < 2) {
            throw new IllegalArgumentException("--plot needs at least 2 node counts >= 2");
        }
        LogPlot ch = new LogPlot("sharp4j model: Allreduce latency vs nodes, 1 rank per node",
                "host k-nomial radix " + model.params().knomialRadix + " grows as log n (LogGP); SHARP stays nearly flat; "
                        + "points: paper 004's measurements",
                "Nodes (1 rank per node)", "Latency (us)", LogPlot.XLabels.PLAIN);
        double[] x = java.util.Arrays.stream(xs).asDoubleStream().toArray();
        Color[] host = {new Color(200, 40, 40), new Color(240, 130, 40), new Color(150, 20, 90)};
        Color[] sharp = {new Color(30, 130, 50), new Color(40, 90, 200), new Color(20, 160, 160)};
        int i = 0;
        for (long m : ms) {
            double[] yh = new double[x.length];
            double[] ys = new double[x.length];
            boolean sharpOk = true;
            for (int j = 0; j < x.length; j++) {
                yh[j] = model.knomial(xs[j], m, model.params().knomialRadix);
                ys[j] = model.sharp(xs[j], m);
                sharpOk &= !Double.isInfinite(ys[j]);
            }
            ch.add("model host k-nomial " + Sizes.format(m) + " B", x, yh).marker(LogPlot.Marker.NONE).color(host[i % host.length]);
            if (sharpOk) {
                ch.add("model sharp4j + SHARP " + Sizes.format(m) + " B (sw " + model.params().sharpSw + " us/call)", x, ys)
                        .marker(LogPlot.Marker.NONE).color(sharp[i % sharp.length]);
            }
            i++;
        }
        ch.add("paper 004 host (MVAPICH2-X) 2 KiB", col(PAPER_HOST_2K, 0), col(PAPER_HOST_2K, 1)).marker(LogPlot.Marker.DIAMOND)
                .color(Color.RED).dashed();
        ch.add("paper 004 SHARP 16 B-2 KiB (3-8 us to 2,048 nodes; 40 us at 7,861)", col(PAPER_SHARP, 0), col(PAPER_SHARP, 1))
                .marker(LogPlot.Marker.SQUARE).color(new Color(0, 120, 0)).pointsOnly();
        ch.writePng(png, 1000, 650);
    }

    private static double[] col(double[][] pts, int c) {
        double[] out = new double[pts.length];
        for (int i = 0; i < pts.length; i++) {
            out[i] = pts[i][c];
        }
        return out;
    }
}
