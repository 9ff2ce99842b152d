package org.sharp4j.tuner;

import java.awt.Graphics2D;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import javax.imageio.ImageIO;
import org.sharp4j.logplot.LogPlot;
import org.sharp4j.tuning.Collective;

/**
 * The PNG of {@code sharp4j tune --plot}: latency vs message size per candidate, one chart per
 * job shape, collective and layer (intra-node candidates, inter-node candidates) with several sizes,
 * stacked; each point with its error bar (± the error of its figure over passes, {@link Measurement#overPasses}), the candidate
 * the table chose at each size ringed ({@link TuneTable#choose}, the choice the table was written
 * from), and the switches between candidates as labelled dashed vertical lines. The title names the
 * collective, the layer, ranks and nodes.
 */
public final class TunePlot {
    private TunePlot() {
    }

    /** Reads the tuner's CSV (the table's {@code .csv}), writes {@code png}. */
    public static void plot(Path csv, Path png) throws IOException {
        System.setProperty("java.awt.headless", "true");
        List<Measurement> points;
        try {
            points = TuneCsv.read(csv);
        } catch (IllegalArgumentException e) {
            throw new IOException(e.getMessage(), e);
        }
        List<TuneTable.Choice> choices = TuneTable.choose(points, TuneTable.GUARD);
        // (nodes, ppn, collective, layer) -> candidate -> points; barrier has one size: nothing to plot against size
        Map<String, Map<String, List<Measurement>>> data = new LinkedHashMap<>();
        List<Measurement> sorted = new ArrayList<>(points);
        sorted.sort(Comparator.comparingInt(Measurement::nodes).thenComparingInt(Measurement::ppn)
                .thenComparing(Measurement::collective).thenComparing(m -> m.layer().equals(Measurement.INTRA) ? 0 : 1)
                .thenComparingLong(Measurement::bytes));
        for (Measurement p : sorted) {
            if (p.collective() != Collective.BARRIER) {
                String k = p.nodes() + "," + p.ppn() + "," + p.collective() + "," + p.layer();
                data.computeIfAbsent(k, x -> new LinkedHashMap<>()).computeIfAbsent(p.candidate(), x -> new ArrayList<>()).add(p);
            }
        }
        if (data.isEmpty()) {
            throw new IOException("no allreduce/reduce measurements in " + csv + " to plot");
        }
        List<BufferedImage> images = new ArrayList<>();
        for (Map<String, List<Measurement>> byCandidate : data.values()) {
            images.add(chart(byCandidate, choices).render(1000, 600));
        }
        BufferedImage out = images.get(0);
        if (images.size() > 1) {
            out = new BufferedImage(1000, 600 * images.size(), BufferedImage.TYPE_INT_RGB);
            Graphics2D g = out.createGraphics();
            for (int i = 0; i < images.size(); i++) {
                g.drawImage(images.get(i), 0, 600 * i, null);
            }
            g.dispose();
        }
        ImageIO.write(out, "png", png.toFile());
    }

    static String chosen(List<TuneTable.Choice> choices, Measurement m) {
        TuneTable.Choice c = choiceAt(choices, m);
        return c == null ? null : c.candidate();
    }

    /** One chart: every candidate of one shape, collective and layer. */
    static LogPlot chart(Map<String, List<Measurement>> byCandidate, List<TuneTable.Choice> choices) {
        Measurement any = byCandidate.values().iterator().next().get(0);
        String collective = any.collective().name().toLowerCase(Locale.ROOT);
        int nodes = any.nodes();
        int ppn = any.ppn();
        String shape = ", " + nodes * ppn + " ranks on " + nodes + (nodes == 1 ? " node" : " nodes");
        LogPlot plot = new LogPlot("sharp4j tune: " + Character.toUpperCase(collective.charAt(0)) + collective.substring(1)
                + ", " + any.layer() + "-node candidates" + shape,
                "median call (OSU's P50), median over passes; error bars: \u00b1 its error; ringed: the candidate the table chose at that size",
                "Message size (bytes)", "Latency (us, P50)", LogPlot.XLabels.BYTES);
        plot.highlightLegend("chosen");
        LogPlot.Marker[] markers = {LogPlot.Marker.CIRCLE, LogPlot.Marker.SQUARE, LogPlot.Marker.TRIANGLE, LogPlot.Marker.DIAMOND};
        int i = 0;
        java.util.TreeMap<Long, TuneTable.Choice> switches = new java.util.TreeMap<>();
        for (Map.Entry<String, List<Measurement>> c : byCandidate.entrySet()) {
            List<Measurement> ps = c.getValue();
            double[] x = ps.stream().mapToDouble(p -> Math.max(1, p.bytes())).toArray();
            double[] y = ps.stream().mapToDouble(Measurement::meanUs).toArray();
            double[] err = ps.stream().mapToDouble(Measurement::stderrUs).toArray();
            boolean[] h = new boolean[ps.size()];
            for (int k = 0; k < h.length; k++) {
                String ch = chosen(choices, ps.get(k));
                h[k] = c.getKey().equals(ch);
                TuneTable.Choice at = choiceAt(choices, ps.get(k));
                if (at != null) {
                    switches.put(ps.get(k).bytes(), at);
                }
            }
            plot.add(c.getKey(), x, y).errorBars(err).highlight(h).marker(markers[i % markers.length]);
            i++;
        }
        String prev = null;
        for (TuneTable.Choice ch : switches.values()) {
            if (prev != null && !ch.candidate().equals(prev)) {
                // where the table's rule starts: at the size, or just above the previous measured one (TuneTable.choose)
                String where = ch.from() == ch.bytes() ? "\u2265 " + LogPlot.bytesLabel(ch.bytes()) : "> " + LogPlot.bytesLabel(ch.from() - 1);
                plot.vertical(ch.from(), where + ": " + ch.candidate());
            }
            prev = ch.candidate();
        }
        return plot;
    }

    /** The choice made at {@code m}'s shape, collective, layer and size, or null. */
    static TuneTable.Choice choiceAt(List<TuneTable.Choice> choices, Measurement m) {
        for (TuneTable.Choice c : choices) {
            if (c.nodes() == m.nodes() && c.ppn() == m.ppn() && c.collective() == m.collective() && c.layer().equals(m.layer())
                    && c.bytes() == m.bytes()) {
                return c;
            }
        }
        return null;
    }
}
