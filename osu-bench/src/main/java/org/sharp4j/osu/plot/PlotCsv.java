package org.sharp4j.osu.plot;

import java.awt.Color;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.internal.chartpart.Chart;
import org.knowm.xchart.style.Styler.LegendLayout;
import org.knowm.xchart.style.Styler.LegendPosition;
import org.sharp4j.logplot.LogPlot;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code sharp4j-plot}: draws one or more OSU CSV files ({@code osu_* --csv FILE}), or the stdout of
 * OMB's C benchmarks or of this port, as a PNG. Allreduce and reduce files give latency against
 * message size on log-log axes ({@link LogPlot}: power-of-two size ticks 8, 1K, 1M; 1-2-5 latency
 * ticks in us), one line per library (sharp4j, Open MPI Java, Open MPI C) per file and per datatype
 * when there are several, with a P10-P90 band where the file has those percentiles ({@code -z10,50,90});
 * the title names the collective, ranks, nodes and datatype when the files agree on them. Barrier
 * files, which have no sizes, give a bar per library, or a dashed horizontal line when plotted
 * together with sized files.
 *
 * <pre>
 * java -cp "osu-bench/target/sharp4j-osu-bench-0.1.0-SNAPSHOT.jar:osu-bench/target/lib/*" \
 *     org.sharp4j.osu.plot.PlotCsv a.csv b.csv -o out.png [--title T] [--width W --height H] [--column avg|p50|p99]
 * </pre>
 * (The launcher script is meant to map {@code sharp4j-plot} to this class.) Runs headless: no
 * window is opened, no display is needed. Exit code 0, 1 for an unreadable or malformed file
 * ({@code FILE:LINE: reason} on stderr) or an unwritable output, 2 for a bad command line.
 */
@Command(name = "sharp4j-plot", mixinStandardHelpOptions = true, version = "sharp4j-plot 0.1.0",
        sortOptions = false, usageHelpAutoWidth = true,
        description = {"Plots OSU CSV files (osu_allreduce | osu_reduce | osu_barrier --csv FILE), or OSU output",
            "(stdout of OMB's C benchmarks or of this port), as a PNG: latency against message size,",
            "log-log, one line per library per file, P10-P90 bands where the files have them.",
            "Barrier files (no sizes) become bars, or dashed lines next to sized files."})
public final class PlotCsv implements Callable<Integer> {
    static final int MIN_PIXELS = 200;
    static final int MAX_PIXELS = 10_000;

    @Parameters(paramLabel = "FILE", arity = "1..*", description = "CSV files written by osu_* --csv, or saved OSU output")
    List<Path> files;

    @Option(names = {"-o", "--output"}, paramLabel = "PNG", defaultValue = "osu-latency.png",
            description = "PNG to write (default: ${DEFAULT-VALUE})")
    Path output;

    @Option(names = "--title", paramLabel = "TEXT", description = "chart title (default: collective, statistic, ranks, nodes, datatype from the files)")
    String title;

    @Option(names = "--width", paramLabel = "PX", defaultValue = "1000", description = "image width in pixels (default: ${DEFAULT-VALUE})")
    int width;

    @Option(names = "--height", paramLabel = "PX", defaultValue = "650", description = "image height in pixels (default: ${DEFAULT-VALUE})")
    int height;

    @Option(names = "--column", paramLabel = "avg|min|max|pNN", defaultValue = "avg",
            description = "statistic to plot: avg (default), min, max, or a percentile such as p50 or p99 (files written with -z)")
    String column;

    @Option(names = "--primary", paramLabel = "NAME", defaultValue = "sharp4j",
            description = "library of the unprefixed columns of CSVs written before the backend column existed (default: "
                    + "${DEFAULT-VALUE}; say 'Open MPI Java' for an old --backend mpi run). Newer files name it themselves; the mpi_ "
                    + "columns of a --compare mpi run are always Open MPI Java.")
    String primary;

    @Option(names = "--band", paramLabel = "LO:HI|none", defaultValue = "p10:p90",
            description = "shade the band between two statistics of each series where the file has both columns "
                    + "(default ${DEFAULT-VALUE}: run osu_* with -z10,50,90; min:max shows the spread over ranks; none: no band)")
    String band;

    @Option(names = "--c-label", paramLabel = "NAME", defaultValue = OsuCsv.OMB_C,
            description = "legend name of OSU output files without the port's line, i.e. printed by OMB's own C benchmarks "
                    + "(default: ${DEFAULT-VALUE})")
    String cLabel;

    private PrintWriter out;
    private PrintWriter err;

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    /** Runs the command on the given streams and returns its exit code (for tests and launchers). */
    public static int run(String[] args, PrintStream stdout, PrintStream stderr) {
        // Before any AWT class is loaded: no display needed, no window ever opened.
        System.setProperty("java.awt.headless", "true");
        PlotCsv cmd = new PlotCsv();
        PrintWriter o = new PrintWriter(new java.io.OutputStreamWriter(stdout, StandardCharsets.UTF_8), true);
        PrintWriter e = new PrintWriter(new java.io.OutputStreamWriter(stderr, StandardCharsets.UTF_8), true);
        cmd.out = o;
        cmd.err = e;
        CommandLine cl = new CommandLine(cmd);
        cl.setOut(o);
        cl.setErr(e);
        int code = cl.execute(args);
        o.flush();
        e.flush();
        return code;
    }

    @Override
    public Integer call() {
        if (!OsuCsv.STATISTIC.matcher(column).matches()) {
            return usage("--column must be avg, min, max or pNN (e.g. p50, p99), got '" + column + "'");
        }
        if (!band.equalsIgnoreCase("none") && !band.toLowerCase(Locale.ROOT).matches("(avg|min|max|p\\d{1,3}):(avg|min|max|p\\d{1,3})")) {
            return usage("--band must be LO:HI with avg, min, max or pNN (e.g. p10:p90, min:max) or none, got '" + band + "'");
        }
        if (width < MIN_PIXELS || width > MAX_PIXELS || height < MIN_PIXELS || height > MAX_PIXELS) {
            return usage("--width and --height must be between " + MIN_PIXELS + " and " + MAX_PIXELS + " pixels, got " + width + "x" + height);
        }
        List<OsuCsv> csvs = new ArrayList<>();
        int bad = 0;
        for (Path f : files) {
            try {
                csvs.add(OsuCsv.read(f, cLabel));
            } catch (CsvFormatException ex) {
                err.println("sharp4j-plot: " + ex.getMessage());
                bad++;
            }
        }
        if (bad > 0) {
            return 1;
        }
        try {
            Object chart = chart(csvs);
            if (chart instanceof LogPlot) {
                ((LogPlot) chart).writePng(output, width, height);
            } else {
                write((Chart<?, ?>) chart, output);
            }
        } catch (CsvFormatException ex) {
            err.println("sharp4j-plot: " + ex.getMessage());
            return 1;
        } catch (IOException ex) {
            err.println("sharp4j-plot: cannot write " + output + ": " + ex);
            return 1;
        } catch (RuntimeException | Error ex) {
            String m = String.valueOf(ex);
            if (m.toLowerCase(Locale.ROOT).contains("font")) {
                err.println("sharp4j-plot: cannot draw text: " + m + " (headless Java still needs fontconfig and a font: "
                        + "apt-get install fontconfig fonts-dejavu-core)");
                return 1;
            }
            throw ex;
        }
        out.println("sharp4j-plot: wrote " + output + " (" + width + "x" + height + ")");
        return 0;
    }

    private int usage(String message) {
        err.println("sharp4j-plot: " + message);
        err.println("Try 'sharp4j-plot --help' for more information.");
        return 2;
    }

    /** Fixed colours per library, so that every plot shows sharp4j, Open MPI Java and OMB's C code alike. */
    static Color colourOf(String backend, int fallbackIndex) {
        switch (backend) {
            case "sharp4j":
                return new Color(0, 114, 178);
            case OsuCsv.OPEN_MPI_JAVA:
                return new Color(213, 94, 0);
            case OsuCsv.OMB_C:
                return new Color(0, 158, 115);
            default:
                return LogPlot.palette(3 + fallbackIndex);
        }
    }

    /** Value shared by all files, or null when they differ or one does not say. */
    private static <T> T common(List<OsuCsv> csvs, java.util.function.Function<OsuCsv, T> f) {
        T first = null;
        for (OsuCsv c : csvs) {
            T v = f.apply(c);
            if (v == null || (v instanceof Integer && (Integer) v < 0)) {
                return null;
            }
            if (first == null) {
                first = v;
            } else if (!first.equals(v)) {
                return null;
            }
        }
        return first;
    }

    static String capitalised(String s) {
        return s.isEmpty() ? s : Character.toUpperCase(s.charAt(0)) + s.substring(1);
    }

    static String shape(int ranks, int nodes) {
        StringBuilder sb = new StringBuilder();
        if (ranks > 0) {
            sb.append(ranks).append(ranks == 1 ? " rank" : " ranks");
        }
        if (nodes > 0) {
            sb.append(sb.length() > 0 ? " on " : "").append(nodes).append(nodes == 1 ? " node" : " nodes");
        }
        return sb.toString();
    }

    /** The default title: collective, ranks, nodes and datatype when the files agree on them. */
    static String defaultTitle(List<OsuCsv> csvs, String stat) {
        String coll = common(csvs, OsuCsv::collective);
        Integer ranks = common(csvs, OsuCsv::ranks);
        Integer nodes = common(csvs, OsuCsv::nodes);
        List<OsuCsv> sized = csvs.stream().filter(c -> !c.isBarrier()).toList();
        String type = sized.isEmpty() ? null : common(sized, c -> c.datatypes().size() == 1 ? c.datatypes().get(0) : null);
        List<String> parts = new ArrayList<>();
        parts.add((coll != null ? "OSU " + capitalised(coll) : "OSU") + " latency (" + stat + ")");
        String sh = shape(ranks != null ? ranks : -1, nodes != null ? nodes : -1);
        if (!sh.isEmpty()) {
            parts.add(sh);
        }
        if (type != null) {
            parts.add(type);
        }
        return String.join(", ", parts);
    }

    /** A series' legend label: its backend, plus what differs between the files (collective, shape, datatype). */
    private static String label(List<OsuCsv> csvs, OsuCsv c, OsuCsv.Series s, boolean manyTypes) {
        StringBuilder sb = new StringBuilder(s.backend());
        List<String> extra = new ArrayList<>();
        if (common(csvs, OsuCsv::collective) == null && c.collective() != null) {
            extra.add(c.collective());
        }
        if ((common(csvs, OsuCsv::ranks) == null || common(csvs, OsuCsv::nodes) == null) && (c.ranks() > 0 || c.nodes() > 0)) {
            extra.add(shape(c.ranks(), c.nodes()));
        }
        if (manyTypes && !s.datatype().isEmpty()) {
            extra.add(s.datatype());
        }
        if (!extra.isEmpty()) {
            sb.append(" (").append(String.join(", ", extra)).append(')');
        }
        return sb.toString();
    }

    private Object chart(List<OsuCsv> csvs) throws CsvFormatException {
        List<OsuCsv> sized = csvs.stream().filter(c -> !c.isBarrier()).toList();
        List<OsuCsv> barriers = csvs.stream().filter(OsuCsv::isBarrier).toList();
        String stat = statName(column);
        if (sized.isEmpty()) {
            return barrierChart(barriers, stat);
        }
        String[] band = bandColumns();
        boolean anyBand = false;
        for (OsuCsv c : sized) {
            anyBand |= band != null && c.has(band[0]) && c.has(band[1]);
        }
        String sub = "OSU Micro-Benchmarks " + org.sharp4j.osu.OsuOptions.OMB_VERSION + " methodology; "
                + (column.equals("avg") ? "mean over ranks of each rank's mean latency" : stat + " latency")
                + (anyBand ? "; shaded: " + statName(band[0]) + " to " + statName(band[1]) : "");
        LogPlot plot = new LogPlot(title != null ? title : defaultTitle(csvs, stat), sub, "Message size (bytes)",
                stat + " latency (us)", LogPlot.XLabels.BYTES);
        Set<String> used = new HashSet<>();
        double minX = Double.MAX_VALUE;
        double maxX = 0;
        int count = 0;
        Map<String, Integer> perBackend = new HashMap<>();
        boolean manyTypes = sized.stream().flatMap(x -> x.datatypes().stream()).distinct().count() > 1;
        for (OsuCsv c : sized) {
            List<OsuCsv.Series> all = c.series(column, primary, band != null ? band[0] : null, band != null ? band[1] : null);
            for (OsuCsv.Series s : all) {
                List<Integer> keep = new ArrayList<>();
                for (int i = 0; i < s.sizes().length; i++) {
                    if (s.sizes()[i] > 0 && s.latencies()[i] > 0) {
                        keep.add(i);
                    }
                }
                String name = unique(used, label(csvs, c, s, manyTypes), c);
                int dropped = s.sizes().length - keep.size();
                if (dropped > 0) {
                    err.println("sharp4j-plot: " + c.file() + ": " + name + ": left out " + dropped
                            + " point(s) with size or latency 0 (not drawable on log axes)");
                }
                if (keep.isEmpty()) {
                    continue;
                }
                double[] xs = keep.stream().mapToDouble(i -> s.sizes()[i]).toArray();
                double[] ys = keep.stream().mapToDouble(i -> s.latencies()[i]).toArray();
                int n = perBackend.merge(s.backend(), 1, Integer::sum);
                LogPlot.Line line = plot.add(name, xs, ys).color(shade(colourOf(s.backend(), used.size()), n - 1))
                        .marker(MARKERS[(n - 1) % MARKERS.length]);
                if (s.lo() != null) {
                    line.band(keep.stream().mapToDouble(i -> s.lo()[i]).toArray(), keep.stream().mapToDouble(i -> s.hi()[i]).toArray());
                }
                count++;
                for (double x : xs) {
                    minX = Math.min(minX, x);
                    maxX = Math.max(maxX, x);
                }
            }
        }
        if (count == 0) {
            throw new CsvFormatException(sized.get(0).file(), 0, "nothing to plot: every point has size or latency 0");
        }
        for (OsuCsv c : barriers) {
            for (OsuCsv.Series s : c.series(column, primary)) {
                double v = s.latencies()[0];
                if (v <= 0) {
                    err.println("sharp4j-plot: " + c.file() + ": barrier latency 0 left out (not drawable on a log axis)");
                    continue;
                }
                String l = label(csvs, c, s, false);
                String name = unique(used, l.contains("barrier") ? l : l + " barrier", c);
                plot.add(name, new double[] {minX, maxX}, new double[] {v, v}).color(colourOf(s.backend(), used.size()))
                        .marker(LogPlot.Marker.NONE).dashed();
            }
        }
        return plot;
    }

    private static final LogPlot.Marker[] MARKERS = {LogPlot.Marker.CIRCLE, LogPlot.Marker.SQUARE, LogPlot.Marker.TRIANGLE,
        LogPlot.Marker.DIAMOND};

    /** The n-th series of one library: the library's colour, darker for each further file. */
    private static Color shade(Color c, int n) {
        double f = Math.pow(0.72, n);
        return new Color((int) (c.getRed() * f), (int) (c.getGreen() * f), (int) (c.getBlue() * f));
    }

    /** The two statistics of --band (e.g. p10, p90), or null for none. */
    private String[] bandColumns() {
        if (band.equalsIgnoreCase("none")) {
            return null;
        }
        return band.toLowerCase(Locale.ROOT).split(":");
    }

    private CategoryChart barrierChart(List<OsuCsv> barriers, String stat) throws CsvFormatException {
        CategoryChart chart = new CategoryChartBuilder().width(width).height(height)
                .title(title != null ? title : defaultTitle(barriers, stat))
                .xAxisTitle("").yAxisTitle(stat + " latency (us)").build();
        var st = chart.getStyler();
        st.setLegendPosition(LegendPosition.OutsideS);
        st.setLegendLayout(LegendLayout.Horizontal);
        st.setChartBackgroundColor(Color.WHITE);
        st.setLabelsVisible(true);
        st.setYAxisDecimalPattern("#,##0.##");
        st.setYAxisMin(0.0);
        Set<String> used = new HashSet<>();
        for (OsuCsv c : barriers) {
            for (OsuCsv.Series s : c.series(column, primary)) {
                chart.addSeries(unique(used, label(barriers, c, s, false), c), List.of("barrier"), List.of(s.latencies()[0]))
                        .setFillColor(colourOf(s.backend(), used.size()));
            }
        }
        return chart;
    }

    private static void write(Chart<?, ?> chart, Path output) throws IOException {
        Path parent = output.toAbsolutePath().getParent();
        if (parent != null && !Files.isDirectory(parent)) {
            throw new IOException("no such directory: " + parent);
        }
        try (OutputStream os = Files.newOutputStream(output)) {
            BitmapEncoder.saveBitmap(chart, os, BitmapEncoder.BitmapFormat.PNG);
        }
    }

    /** Legend names must be distinct: a second series of the same label gets its file name, then " #2". */
    private static String unique(Set<String> used, String name, OsuCsv c) {
        if (used.add(name)) {
            return name;
        }
        String n = name + " [" + c.file().getFileName() + "]";
        String m = n;
        for (int k = 2; !used.add(m); k++) {
            m = n + " #" + k;
        }
        return m;
    }

    static String statName(String column) {
        switch (column) {
            case "avg":
                return "Avg";
            case "min":
                return "Min";
            case "max":
                return "Max";
            default:
                return column.toUpperCase(Locale.ROOT);
        }
    }
}
