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
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.internal.chartpart.Chart;
import org.knowm.xchart.style.Styler.LegendLayout;
import org.knowm.xchart.style.Styler.LegendPosition;
import org.knowm.xchart.style.lines.SeriesLines;
import org.knowm.xchart.style.markers.SeriesMarkers;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code sharp4j-plot}: draws one or more OSU CSV files ({@code osu_* --csv FILE}) as a PNG. Allreduce
 * and reduce files give latency against message size on log-log axes, one line per backend per file
 * (and per datatype when a file has several); barrier files, which have no sizes, give a bar per
 * backend per file, or a dashed horizontal line when plotted together with sized files.
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
        description = {"Plots OSU CSV files (osu_allreduce | osu_reduce | osu_barrier --csv FILE) as a PNG:",
            "latency against message size, log-log, one line per backend per file.",
            "Barrier files (no sizes) become bars, or dashed lines next to sized files."})
public final class PlotCsv implements Callable<Integer> {
    static final int MIN_PIXELS = 200;
    static final int MAX_PIXELS = 10_000;

    @Parameters(paramLabel = "CSV", arity = "1..*", description = "CSV files written by osu_* --csv")
    List<Path> files;

    @Option(names = {"-o", "--output"}, paramLabel = "PNG", defaultValue = "osu-latency.png",
            description = "PNG to write (default: ${DEFAULT-VALUE})")
    Path output;

    @Option(names = "--title", paramLabel = "TEXT", description = "chart title (default: from the column and the kind of files)")
    String title;

    @Option(names = "--width", paramLabel = "PX", defaultValue = "1000", description = "image width in pixels (default: ${DEFAULT-VALUE})")
    int width;

    @Option(names = "--height", paramLabel = "PX", defaultValue = "650", description = "image height in pixels (default: ${DEFAULT-VALUE})")
    int height;

    @Option(names = "--column", paramLabel = "avg|min|max|pNN", defaultValue = "avg",
            description = "statistic to plot: avg (default), min, max, or a percentile such as p50 or p99 (files written with -z)")
    String column;

    @Option(names = "--primary", paramLabel = "NAME", defaultValue = "sharp4j",
            description = "backend name for the unprefixed columns (default: ${DEFAULT-VALUE}; say MPI for a --backend mpi run). "
                    + "The mpi_ columns of a --compare mpi run are always MPI.")
    String primary;

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
        if (width < MIN_PIXELS || width > MAX_PIXELS || height < MIN_PIXELS || height > MAX_PIXELS) {
            return usage("--width and --height must be between " + MIN_PIXELS + " and " + MAX_PIXELS + " pixels, got " + width + "x" + height);
        }
        List<OsuCsv> csvs = new ArrayList<>();
        int bad = 0;
        for (Path f : files) {
            try {
                csvs.add(OsuCsv.read(f));
            } catch (CsvFormatException ex) {
                err.println("sharp4j-plot: " + ex.getMessage());
                bad++;
            }
        }
        if (bad > 0) {
            return 1;
        }
        try {
            Chart<?, ?> chart = chart(csvs);
            write(chart, output);
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

    private Chart<?, ?> chart(List<OsuCsv> csvs) throws CsvFormatException {
        Map<OsuCsv, String> names = fileLabels(csvs);
        List<OsuCsv> sized = csvs.stream().filter(c -> !c.isBarrier()).toList();
        List<OsuCsv> barriers = csvs.stream().filter(OsuCsv::isBarrier).toList();
        String stat = statName(column);
        if (sized.isEmpty()) {
            return barrierChart(barriers, names, stat);
        }
        XYChart chart = new XYChartBuilder().width(width).height(height)
                .title(title != null ? title : "OSU latency vs message size (" + stat + ")")
                .xAxisTitle("Message size (bytes)").yAxisTitle(stat + " latency (us)").build();
        var st = chart.getStyler();
        st.setXAxisLogarithmic(true);
        st.setYAxisLogarithmic(true);
        // Below the plot: never hides a point, however the lines run.
        st.setLegendPosition(LegendPosition.OutsideS);
        st.setLegendLayout(LegendLayout.Horizontal);
        st.setChartBackgroundColor(Color.WHITE);
        st.setPlotGridLinesVisible(true);
        st.setMarkerSize(6);
        // No custom tick formatter: XChart 3.8 then switches to a linear tick calculator, log axis or not.
        st.setXAxisDecimalPattern("#,##0.###");
        st.setYAxisDecimalPattern("#,##0.###");
        st.setYAxisLogarithmicDecadeOnly(false);
        Set<String> used = new HashSet<>();
        double minX = Double.MAX_VALUE;
        double maxX = 0;
        int count = 0;
        for (OsuCsv c : sized) {
            List<OsuCsv.Series> all = c.series(column, primary);
            boolean manyTypes = all.stream().map(OsuCsv.Series::datatype).distinct().count() > 1;
            for (OsuCsv.Series s : all) {
                List<Double> xs = new ArrayList<>();
                List<Double> ys = new ArrayList<>();
                int dropped = 0;
                for (int i = 0; i < s.sizes().length; i++) {
                    if (s.sizes()[i] > 0 && s.latencies()[i] > 0) {
                        xs.add(s.sizes()[i]);
                        ys.add(s.latencies()[i]);
                    } else {
                        dropped++;
                    }
                }
                String label = unique(used, names.get(c) + " " + s.backend() + (manyTypes ? " " + s.datatype() : ""));
                if (dropped > 0) {
                    err.println("sharp4j-plot: " + c.file() + ": " + label + ": left out " + dropped
                            + " point(s) with size or latency 0 (not drawable on log axes)");
                }
                if (xs.isEmpty()) {
                    continue;
                }
                chart.addSeries(label, xs, ys);
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
                XYSeries line = chart.addSeries(unique(used, names.get(c) + " " + s.backend() + " (barrier)"),
                        new double[] {minX, maxX}, new double[] {v, v});
                line.setMarker(SeriesMarkers.NONE);
                line.setLineStyle(SeriesLines.DASH_DASH);
            }
        }
        return chart;
    }

    private CategoryChart barrierChart(List<OsuCsv> barriers, Map<OsuCsv, String> names, String stat) throws CsvFormatException {
        CategoryChart chart = new CategoryChartBuilder().width(width).height(height)
                .title(title != null ? title : "OSU barrier latency (" + stat + ")")
                .xAxisTitle("").yAxisTitle(stat + " latency (us)").build();
        var st = chart.getStyler();
        st.setLegendPosition(LegendPosition.OutsideE);
        st.setChartBackgroundColor(Color.WHITE);
        st.setLabelsVisible(true);
        st.setYAxisDecimalPattern("#,##0.###");
        Set<String> used = new HashSet<>();
        for (OsuCsv c : barriers) {
            for (OsuCsv.Series s : c.series(column, primary)) {
                chart.addSeries(unique(used, names.get(c) + " " + s.backend()), List.of("barrier"), List.of(s.latencies()[0]));
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

    /** The files' names as given on the command line, shortened to the file name where that stays unambiguous. */
    private static Map<OsuCsv, String> fileLabels(List<OsuCsv> csvs) {
        Map<String, Integer> count = new HashMap<>();
        for (OsuCsv c : csvs) {
            count.merge(String.valueOf(c.file().getFileName()), 1, Integer::sum);
        }
        Map<OsuCsv, String> out = new HashMap<>();
        for (OsuCsv c : csvs) {
            String shortName = String.valueOf(c.file().getFileName());
            out.put(c, count.get(shortName) > 1 ? c.file().toString() : shortName);
        }
        return out;
    }

    /** XChart needs distinct series names: the same file given twice gets " #2". */
    private static String unique(Set<String> used, String name) {
        String n = name;
        for (int k = 2; !used.add(n); k++) {
            n = name + " #" + k;
        }
        return n;
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
