package org.sharp4j.osu.tune;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * The PNG of {@code sharp4j tune --plot}: latency vs message size per candidate (one chart per
 * collective with several sizes, stacked), the chosen crossovers as dashed vertical lines.
 */
public final class TunePlot {
    private TunePlot() {
    }

    /** Reads the tuner's CSV and table, writes {@code png}. */
    public static void plot(Path csv, Path table, Path png) throws IOException {
        System.setProperty("java.awt.headless", "true");
        List<String> rows = Files.readAllLines(csv, StandardCharsets.UTF_8);
        // collective -> candidate -> (bytes, us)
        Map<String, Map<String, List<double[]>>> data = new LinkedHashMap<>();
        for (String r : rows.subList(1, rows.size())) {
            String[] f = r.split(",");
            if (f[0].equals("barrier")) {
                continue; // one size: nothing to plot against size
            }
            data.computeIfAbsent(f[0], k -> new LinkedHashMap<>()).computeIfAbsent(f[1], k -> new ArrayList<>())
                    .add(new double[] {Math.max(1, Double.parseDouble(f[2])), Double.parseDouble(f[3])});
        }
        // crossovers: starts (LO > 0) of the tuned rules
        Map<String, List<double[]>> cross = new LinkedHashMap<>();
        for (String l : Files.readAllLines(table, StandardCharsets.UTF_8)) {
            String t = l.contains("#") ? l.substring(0, l.indexOf('#')).trim() : l.trim();
            if (t.isEmpty()) {
                continue;
            }
            String[] f = t.split(":");
            long lo = org.sharp4j.tuning.Sizes.parseBytes(f[1].substring(0, f[1].indexOf('-')));
            if (lo > 0) {
                cross.computeIfAbsent(f[0], k -> new ArrayList<>()).add(new double[] {lo});
            }
        }
        List<XYChart> charts = new ArrayList<>();
        for (Map.Entry<String, Map<String, List<double[]>>> e : data.entrySet()) {
            XYChart ch = new XYChartBuilder().width(900).height(520).title("sharp4j tune: " + e.getKey())
                    .xAxisTitle("message size (bytes)").yAxisTitle("latency (us, slowest rank)").build();
            ch.getStyler().setXAxisLogarithmic(true);
            ch.getStyler().setYAxisLogarithmic(true);
            double ymin = Double.MAX_VALUE;
            double ymax = 0;
            for (Map.Entry<String, List<double[]>> c : e.getValue().entrySet()) {
                double[] x = c.getValue().stream().mapToDouble(v -> v[0]).toArray();
                double[] y = c.getValue().stream().mapToDouble(v -> v[1]).toArray();
                for (double v : y) {
                    ymin = Math.min(ymin, v);
                    ymax = Math.max(ymax, v);
                }
                ch.addSeries(c.getKey(), x, y).setMarker(SeriesMarkers.CIRCLE);
            }
            for (double[] x : cross.getOrDefault(e.getKey(), List.of())) {
                XYSeries s = ch.addSeries("switch at " + org.sharp4j.tuning.Sizes.format((long) x[0]) + " B",
                        new double[] {x[0], x[0]}, new double[] {ymin * 0.8, ymax * 1.25});
                s.setMarker(SeriesMarkers.NONE);
                s.setLineStyle(new java.awt.BasicStroke(1.5f, java.awt.BasicStroke.CAP_BUTT, java.awt.BasicStroke.JOIN_MITER,
                        10f, new float[] {6f, 4f}, 0f));
                s.setLineColor(java.awt.Color.DARK_GRAY);
            }
            charts.add(ch);
        }
        if (charts.isEmpty()) {
            throw new IOException("no allreduce/reduce measurements in " + csv + " to plot");
        }
        if (charts.size() == 1) {
            BitmapEncoder.saveBitmap(charts.get(0), png.toString(), BitmapEncoder.BitmapFormat.PNG);
            return;
        }
        List<java.awt.image.BufferedImage> imgs = new ArrayList<>();
        int h = 0;
        int w = 0;
        for (XYChart c : charts) {
            java.awt.image.BufferedImage i = BitmapEncoder.getBufferedImage(c);
            imgs.add(i);
            h += i.getHeight();
            w = Math.max(w, i.getWidth());
        }
        java.awt.image.BufferedImage all = new java.awt.image.BufferedImage(w, h, java.awt.image.BufferedImage.TYPE_INT_RGB);
        java.awt.Graphics2D g = all.createGraphics();
        int y = 0;
        for (java.awt.image.BufferedImage i : imgs) {
            g.drawImage(i, 0, y, null);
            y += i.getHeight();
        }
        g.dispose();
        javax.imageio.ImageIO.write(all, "png", png.toFile());
    }
}
