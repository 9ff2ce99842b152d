package org.sharp4j.osu.tune;

import java.awt.Graphics2D;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.imageio.ImageIO;
import org.sharp4j.osu.plot.LogPlot;
import org.sharp4j.tuning.Sizes;

/**
 * The PNG of {@code sharp4j tune --plot}: latency vs message size per candidate (one chart per
 * collective with several sizes, stacked), each point with its error bar (± the standard error the
 * tuner measured), the algorithm the table chose at each size ringed, and the switches between
 * algorithms as labelled dashed vertical lines. The title names the collective, ranks and nodes.
 */
public final class TunePlot {
    private static final Pattern SHAPE = Pattern.compile("# job shape: (\\d+) node\\(s\\), (\\d+) rank\\(s\\) per node.*");

    private TunePlot() {
    }

    /** One measurement of the tuner's CSV. */
    record Point(String collective, String candidate, long bytes, double meanUs, double stderrUs) {
    }

    /** One rule of the table: sizes [lo, hi) of a collective go to {@code algorithm}. */
    record Rule(String collective, long lo, long hi, String algorithm) {
    }

    static List<Point> readCsv(Path csv) throws IOException {
        List<String> rows = Files.readAllLines(csv, StandardCharsets.UTF_8);
        if (rows.isEmpty() || !rows.get(0).startsWith("collective,candidate,bytes,mean_us,stderr_us")) {
            throw new IOException(csv + ": not a sharp4j tune CSV (expected the header collective,candidate,bytes,mean_us,stderr_us,...)");
        }
        List<Point> out = new ArrayList<>();
        for (int i = 1; i < rows.size(); i++) {
            String r = rows.get(i).trim();
            if (r.isEmpty()) {
                continue;
            }
            String[] f = r.split(",");
            try {
                out.add(new Point(f[0], f[1], Long.parseLong(f[2]), Double.parseDouble(f[3]), Double.parseDouble(f[4])));
            } catch (RuntimeException e) {
                throw new IOException(csv + ":" + (i + 1) + ": malformed row '" + r + "': " + e.getMessage(), e);
            }
        }
        return out;
    }

    /** The rules of a tuning table: {@code collective:LO-HI:[nodes=N:][ppn=P:]algorithm[:params]}. */
    static List<Rule> readRules(List<String> table) {
        List<Rule> out = new ArrayList<>();
        for (String l : table) {
            String t = l.contains("#") ? l.substring(0, l.indexOf('#')).trim() : l.trim();
            if (t.isEmpty()) {
                continue;
            }
            String[] f = t.split(":");
            int dash = f[1].indexOf('-');
            long lo = Sizes.parseBytes(f[1].substring(0, dash));
            String his = f[1].substring(dash + 1);
            long hi = his.equalsIgnoreCase("inf") ? Long.MAX_VALUE : Sizes.parseBytes(his);
            int k = 2;
            while (k < f.length && (f[k].startsWith("nodes=") || f[k].startsWith("ppn="))) {
                k++;
            }
            String algo = String.join(":", java.util.Arrays.copyOfRange(f, k, f.length));
            for (String c : f[0].split(",")) {
                out.add(new Rule(c.trim().toLowerCase(Locale.ROOT), lo, hi, algo));
            }
        }
        return out;
    }

    static String chosen(List<Rule> rules, String collective, long bytes) {
        for (Rule r : rules) {
            if ((r.collective.equals(collective) || r.collective.equals("all")) && bytes >= r.lo && bytes < r.hi) {
                return r.algorithm;
            }
        }
        return null;
    }

    /** Reads the tuner's CSV and table, writes {@code png}. */
    public static void plot(Path csv, Path table, Path png) throws IOException {
        System.setProperty("java.awt.headless", "true");
        List<Point> points = readCsv(csv);
        List<String> tableLines = Files.readAllLines(table, StandardCharsets.UTF_8);
        List<Rule> rules = readRules(tableLines);
        int nodes = -1;
        int ppn = -1;
        for (String l : tableLines) {
            Matcher m = SHAPE.matcher(l.trim());
            if (m.matches()) {
                nodes = Integer.parseInt(m.group(1));
                ppn = Integer.parseInt(m.group(2));
            }
        }
        // collective -> candidate -> points (barrier has one size: nothing to plot against size)
        Map<String, Map<String, List<Point>>> data = new LinkedHashMap<>();
        for (Point p : points) {
            if (!p.collective.equals("barrier")) {
                data.computeIfAbsent(p.collective, k -> new LinkedHashMap<>()).computeIfAbsent(p.candidate, k -> new ArrayList<>()).add(p);
            }
        }
        if (data.isEmpty()) {
            throw new IOException("no allreduce/reduce measurements in " + csv + " to plot");
        }
        List<BufferedImage> images = new ArrayList<>();
        for (Map.Entry<String, Map<String, List<Point>>> e : data.entrySet()) {
            images.add(chart(e.getKey(), e.getValue(), rules, nodes, ppn).render(1000, 600));
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

    static LogPlot chart(String collective, Map<String, List<Point>> byCandidate, List<Rule> rules, int nodes, int ppn) {
        String shape = nodes > 0 && ppn > 0 ? ", " + nodes * ppn + " ranks on " + nodes + (nodes == 1 ? " node" : " nodes") : "";
        LogPlot plot = new LogPlot("sharp4j tune: " + Character.toUpperCase(collective.charAt(0)) + collective.substring(1) + shape,
                "mean of the slowest rank per call; error bars: \u00b1 1 standard error; ringed: the algorithm the table chose at that size",
                "Message size (bytes)", "Latency (us, slowest rank)", LogPlot.XLabels.BYTES);
        plot.highlightLegend("chosen");
        LogPlot.Marker[] markers = {LogPlot.Marker.CIRCLE, LogPlot.Marker.SQUARE, LogPlot.Marker.TRIANGLE, LogPlot.Marker.DIAMOND};
        int i = 0;
        for (Map.Entry<String, List<Point>> c : byCandidate.entrySet()) {
            List<Point> ps = c.getValue();
            double[] x = ps.stream().mapToDouble(p -> Math.max(1, p.bytes)).toArray();
            double[] y = ps.stream().mapToDouble(p -> p.meanUs).toArray();
            double[] err = ps.stream().mapToDouble(p -> p.stderrUs).toArray();
            boolean[] h = new boolean[ps.size()];
            for (int k = 0; k < h.length; k++) {
                h[k] = c.getKey().equals(chosen(rules, collective, ps.get(k).bytes));
            }
            plot.add(c.getKey(), x, y).errorBars(err).highlight(h).marker(markers[i % markers.length]);
            i++;
        }
        for (Rule r : rules) {
            if (r.collective.equals(collective) && r.lo > 0) {
                plot.vertical(r.lo, "\u2265 " + LogPlot.bytesLabel(r.lo) + ": " + r.algorithm);
            }
        }
        return plot;
    }
}
