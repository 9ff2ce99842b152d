package org.sharp4j.logplot;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.FontMetrics;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.Shape;
import java.awt.Stroke;
import java.awt.geom.Ellipse2D;
import java.awt.geom.Line2D;
import java.awt.geom.Path2D;
import java.awt.geom.Rectangle2D;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.io.OutputStream;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import javax.imageio.ImageIO;

/**
 * A log-log line chart drawn with Java2D, for the benchmark plots (sharp4j-plot, the tuner's and the
 * model's plots). Written for what XChart 3.8 cannot do on log axes: ticks at powers of two labelled
 * 8, 1K, 1M on the x axis, 1-2-5 ticks on the y axis (never one label for a whole decade, never all
 * nine), bands between two statistics (P10-P90), error bars, highlighted points and labelled vertical
 * lines. The legend is below the plot, so it never hides a point.
 */
public final class LogPlot {
    /** How x tick labels are written: message sizes with binary prefixes (8, 1K, 1M), or plain integers. */
    public enum XLabels {
        BYTES, PLAIN
    }

    /** Point shapes. */
    public enum Marker {
        NONE, CIRCLE, SQUARE, DIAMOND, TRIANGLE
    }

    /** One series: a line through (x, y), optionally with a band [lo, hi], error bars ±err and highlighted points. */
    public static final class Line {
        final String name;
        final double[] x;
        final double[] y;
        Color color;
        Marker marker = Marker.CIRCLE;
        boolean dashed;
        boolean connect = true;
        double[] lo;
        double[] hi;
        double[] err;
        boolean[] highlight;

        Line(String name, double[] x, double[] y) {
            if (x.length != y.length) {
                throw new IllegalArgumentException(name + ": " + x.length + " x values but " + y.length + " y values");
            }
            this.name = name;
            this.x = x.clone();
            this.y = y.clone();
        }

        public Line color(Color c) {
            this.color = c;
            return this;
        }

        public Line marker(Marker m) {
            this.marker = m;
            return this;
        }

        public Line dashed() {
            this.dashed = true;
            return this;
        }

        /** Markers only, no connecting line. */
        public Line pointsOnly() {
            this.connect = false;
            return this;
        }

        /** A shaded band from lo[i] to hi[i] at each x[i]. */
        public Line band(double[] lo, double[] hi) {
            if (lo.length != x.length || hi.length != x.length) {
                throw new IllegalArgumentException(name + ": band of " + lo.length + "/" + hi.length + " values for " + x.length + " points");
            }
            this.lo = lo.clone();
            this.hi = hi.clone();
            return this;
        }

        /** Error bars of y[i] ± err[i]. */
        public Line errorBars(double[] err) {
            if (err.length != x.length) {
                throw new IllegalArgumentException(name + ": " + err.length + " error bars for " + x.length + " points");
            }
            this.err = err.clone();
            return this;
        }

        public String name() {
            return name;
        }

        /** The highlighted points, or null. */
        public boolean[] highlights() {
            return highlight == null ? null : highlight.clone();
        }

        /** The error bars, or null. */
        public double[] errors() {
            return err == null ? null : err.clone();
        }

        /** Points drawn larger with a black ring (e.g. the algorithm the tuner chose at that size). */
        public Line highlight(boolean[] h) {
            if (h.length != x.length) {
                throw new IllegalArgumentException(name + ": " + h.length + " highlight flags for " + x.length + " points");
            }
            this.highlight = h.clone();
            return this;
        }
    }

    private record VLine(double x, String label) {
    }

    static final Color[] PALETTE = {
        new Color(0, 114, 178), new Color(213, 94, 0), new Color(0, 158, 115), new Color(204, 121, 167),
        new Color(230, 159, 0), new Color(86, 180, 233), new Color(120, 120, 120), new Color(140, 60, 20), new Color(60, 60, 160),
    };

    /** The i-th colour of the palette lines get by default (it repeats; i >= 0). */
    public static Color palette(int i) {
        return PALETTE[Math.floorMod(i, PALETTE.length)];
    }

    private final String title;
    private final String subtitle;
    private final String xTitle;
    private final String yTitle;
    private final XLabels xLabels;
    private final List<Line> lines = new ArrayList<>();
    private final List<VLine> vlines = new ArrayList<>();
    private String highlightLegend;

    public LogPlot(String title, String subtitle, String xTitle, String yTitle, XLabels xLabels) {
        this.title = title;
        this.subtitle = subtitle;
        this.xTitle = xTitle;
        this.yTitle = yTitle;
        this.xLabels = xLabels;
    }

    /** Adds a series (points with x or y not > 0 cannot be drawn on log axes: the caller filters them). */
    public Line add(String name, double[] x, double[] y) {
        Line l = new Line(name, x, y);
        l.color = PALETTE[lines.size() % PALETTE.length];
        lines.add(l);
        return l;
    }

    /** A dashed vertical line at {@code x} with a label at its top. */
    public void vertical(double x, String label) {
        vlines.add(new VLine(x, label));
    }

    /** The legend entry that explains highlighted points (shown when some line has them). */
    public void highlightLegend(String text) {
        this.highlightLegend = text;
    }

    public String title() {
        return title;
    }

    public List<Line> lines() {
        return List.copyOf(lines);
    }

    public void writePng(Path png, int width, int height) throws IOException {
        Path parent = png.toAbsolutePath().getParent();
        if (parent != null && !Files.isDirectory(parent)) {
            throw new IOException("no such directory: " + parent);
        }
        BufferedImage img = render(width, height);
        try (OutputStream os = Files.newOutputStream(png)) {
            if (!ImageIO.write(img, "png", os)) {
                throw new IOException("no PNG writer in this JDK");
            }
        }
    }

    // ---- ticks ----

    /** Powers of two from 2^lo to 2^hi, every {@code step}-th exponent labelled. */
    public static String bytesLabel(double v) {
        long n = Math.round(v);
        String[] units = {"", "K", "M", "G", "T"};
        int u = 0;
        while (n >= 1024 && n % 1024 == 0 && u < units.length - 1) {
            n /= 1024;
            u++;
        }
        return n + units[u];
    }

    static String plainLabel(double v) {
        if (v >= 1e6) {
            return String.format(Locale.ROOT, "%.0e", v).replace("e+0", "e").replace("e+", "e");
        }
        if (v >= 1) {
            return Long.toString(Math.round(v));
        }
        return new BigDecimal(String.format(Locale.ROOT, "%.6g", v)).stripTrailingZeros().toPlainString();
    }

    /**
     * The y ticks in [lo, hi]: the sparsest of decades, 1-2-5, 1-2-3-5 and 1-1.5-2-3-4-5-7 per decade that
     * gives five ticks or more within {@code maxTicks}; the densest that fits when none gives five; every
     * n-th decade when even decades are too many.
     */
    static List<Double> yTicks(double lo, double hi, int maxTicks) {
        double[][] levels = {{1}, {1, 2, 5}, {1, 2, 3, 5}, {1, 1.5, 2, 3, 4, 5, 7}};
        List<Double> densestFitting = null;
        for (double[] m : levels) {
            List<Double> t = ticksOf(lo, hi, m, 1);
            if (t.size() > maxTicks) {
                break;
            }
            densestFitting = t;
            if (t.size() >= 5) {
                return t;
            }
        }
        if (densestFitting != null) {
            return densestFitting;
        }
        for (int every = 2; every < 100; every++) {
            List<Double> d = ticksOf(lo, hi, new double[] {1}, every);
            if (d.size() <= maxTicks) {
                return d;
            }
        }
        return ticksOf(lo, hi, new double[] {1}, 100);
    }

    private static List<Double> ticksOf(double lo, double hi, double[] mantissas, int decadeStep) {
        List<Double> out = new ArrayList<>();
        int d0 = (int) Math.floor(Math.log10(lo)) - 1;
        int d1 = (int) Math.ceil(Math.log10(hi)) + 1;
        for (int d = d0; d <= d1; d++) {
            if (Math.floorMod(d, decadeStep) != 0) {
                continue;
            }
            for (double m : mantissas) {
                double v = new BigDecimal(m).scaleByPowerOfTen(d).doubleValue();
                if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) {
                    out.add(v);
                }
            }
        }
        return out;
    }

    // ---- rendering ----

    public BufferedImage render(int width, int height) {
        BufferedImage img = new BufferedImage(width, height, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = img.createGraphics();
        try {
            g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
            g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
            g.setRenderingHint(RenderingHints.KEY_STROKE_CONTROL, RenderingHints.VALUE_STROKE_PURE);
            g.setColor(Color.WHITE);
            g.fillRect(0, 0, width, height);
            draw(g, width, height);
        } finally {
            g.dispose();
        }
        return img;
    }

    private void draw(Graphics2D g, int width, int height) {
        Font titleFont = new Font(Font.SANS_SERIF, Font.BOLD, 17);
        Font subFont = new Font(Font.SANS_SERIF, Font.PLAIN, 13);
        Font axisFont = new Font(Font.SANS_SERIF, Font.PLAIN, 14);
        Font tickFont = new Font(Font.SANS_SERIF, Font.PLAIN, 12);
        Font legendFont = new Font(Font.SANS_SERIF, Font.PLAIN, 12);

        // data ranges in log space
        double xmin = Double.MAX_VALUE;
        double xmax = -Double.MAX_VALUE;
        double ymin = Double.MAX_VALUE;
        double ymax = -Double.MAX_VALUE;
        for (Line l : lines) {
            for (int i = 0; i < l.x.length; i++) {
                if (!(l.x[i] > 0) || !(l.y[i] > 0)) {
                    continue;
                }
                xmin = Math.min(xmin, l.x[i]);
                xmax = Math.max(xmax, l.x[i]);
                ymin = Math.min(ymin, l.y[i]);
                ymax = Math.max(ymax, l.y[i]);
                if (l.lo != null && l.lo[i] > 0) {
                    ymin = Math.min(ymin, l.lo[i]);
                    ymax = Math.max(ymax, l.hi[i]);
                }
                if (l.err != null && l.err[i] > 0) {
                    ymax = Math.max(ymax, l.y[i] + l.err[i]);
                    if (l.y[i] - l.err[i] > 0) {
                        ymin = Math.min(ymin, l.y[i] - l.err[i]);
                    }
                }
            }
        }
        for (VLine v : vlines) {
            xmin = Math.min(xmin, v.x);
            xmax = Math.max(xmax, v.x);
        }
        if (xmin > xmax) {
            throw new IllegalStateException("nothing to plot: no point with x > 0 and y > 0");
        }
        double lx0 = Math.log(xmin) / Math.log(2);
        double lx1 = Math.log(xmax) / Math.log(2);
        if (lx1 - lx0 < 1) {
            lx0 -= 0.5;
            lx1 += 0.5;
        }
        double padX = (lx1 - lx0) * 0.03;
        lx0 -= padX;
        lx1 += padX;
        double ly0 = Math.log10(ymin);
        double ly1 = Math.log10(ymax);
        if (ly1 - ly0 < 0.3) {
            double c = (ly0 + ly1) / 2;
            ly0 = c - 0.15;
            ly1 = c + 0.15;
        }
        double padY = (ly1 - ly0) * 0.06;
        ly0 -= padY;
        ly1 += padY;

        // legend layout (below the plot)
        g.setFont(legendFont);
        FontMetrics lm = g.getFontMetrics();
        List<String> entries = new ArrayList<>();
        List<Line> entryLines = new ArrayList<>();
        for (Line l : lines) {
            entries.add(l.name);
            entryLines.add(l);
        }
        boolean anyHighlight = lines.stream().anyMatch(l -> l.highlight != null);
        if (anyHighlight && highlightLegend != null) {
            entries.add(highlightLegend);
            entryLines.add(null);
        }
        int sample = 34;
        int gap = 22;
        int rowH = lm.getHeight() + 6;
        List<int[]> pos = new ArrayList<>();
        int lx = 0;
        int row = 0;
        int avail = width - 40;
        for (String e : entries) {
            int w = sample + 6 + lm.stringWidth(e);
            if (lx > 0 && lx + w > avail) {
                row++;
                lx = 0;
            }
            pos.add(new int[] {lx, row, w});
            lx += w + gap;
        }
        int legendH = entries.isEmpty() ? 0 : (row + 1) * rowH + 10;

        // margins
        g.setFont(tickFont);
        FontMetrics tm = g.getFontMetrics();
        int plotTop = 16 + g.getFontMetrics(titleFont).getHeight() + (subtitle != null ? g.getFontMetrics(subFont).getHeight() : 0) + 14;
        int plotH0 = height - plotTop - 40 - legendH - 50;
        List<Double> yt = yTicks(Math.pow(10, ly0), Math.pow(10, ly1), Math.max(2, plotH0 / 32));
        int yLabelW = 0;
        for (double v : yt) {
            yLabelW = Math.max(yLabelW, tm.stringWidth(plainLabel(v)));
        }
        int plotLeft = 20 + g.getFontMetrics(axisFont).getHeight() + 8 + yLabelW + 8;
        int plotRight = width - 24;
        int plotBottom = height - legendH - 24 - g.getFontMetrics(axisFont).getHeight() - 8 - tm.getHeight() - 8;
        int plotW = plotRight - plotLeft;
        int plotH = plotBottom - plotTop;
        if (plotW < 50 || plotH < 50) {
            throw new IllegalArgumentException("image " + width + "x" + height + " too small for the plot and its legend");
        }
        final double fx0 = lx0;
        final double fx1 = lx1;
        final double fy0 = ly0;
        final double fy1 = ly1;
        java.util.function.DoubleUnaryOperator px = v -> plotLeft + (Math.log(v) / Math.log(2) - fx0) / (fx1 - fx0) * plotW;
        java.util.function.DoubleUnaryOperator py = v -> plotBottom - (Math.log10(v) - fy0) / (fy1 - fy0) * plotH;

        // title
        g.setColor(Color.BLACK);
        g.setFont(titleFont);
        FontMetrics ttm = g.getFontMetrics();
        int ty = 16 + ttm.getAscent();
        g.drawString(title, Math.max(8, (width - ttm.stringWidth(title)) / 2), ty);
        if (subtitle != null) {
            g.setFont(subFont);
            FontMetrics sm = g.getFontMetrics();
            g.setColor(new Color(60, 60, 60));
            g.drawString(subtitle, Math.max(8, (width - sm.stringWidth(subtitle)) / 2), ty + sm.getHeight() + 2);
        }

        // grid and ticks
        Stroke thin = new BasicStroke(1f);
        Color grid = new Color(225, 225, 225);
        g.setFont(tickFont);
        g.setStroke(thin);
        for (double v : yt) {
            double y = py.applyAsDouble(v);
            g.setColor(grid);
            g.draw(new Line2D.Double(plotLeft, y, plotRight, y));
            g.setColor(Color.BLACK);
            g.draw(new Line2D.Double(plotLeft - 5, y, plotLeft, y));
            String s = plainLabel(v);
            g.drawString(s, plotLeft - 8 - tm.stringWidth(s), (float) (y + tm.getAscent() / 2.0 - 1));
        }
        int e0 = (int) Math.ceil(lx0 - 1e-9);
        int e1 = (int) Math.floor(lx1 + 1e-9);
        int widest = 0;
        for (int e = e0; e <= e1; e++) {
            widest = Math.max(widest, tm.stringWidth(xLabel(Math.pow(2, e))));
        }
        double perExp = plotW / (lx1 - lx0);
        int step = 1;
        while (step * perExp < widest + 14) {
            step++;
        }
        for (int e = e0; e <= e1; e++) {
            double x = plotLeft + (e - lx0) / (lx1 - lx0) * plotW;
            boolean labelled = Math.floorMod(e, step) == 0;
            g.setColor(grid);
            if (labelled) {
                g.draw(new Line2D.Double(x, plotTop, x, plotBottom));
            }
            g.setColor(Color.BLACK);
            g.draw(new Line2D.Double(x, plotBottom, x, plotBottom + (labelled ? 5 : 3)));
            if (labelled) {
                String s = xLabel(Math.pow(2, e));
                g.drawString(s, (float) (x - tm.stringWidth(s) / 2.0), plotBottom + 8 + tm.getAscent());
            }
        }
        g.setColor(Color.BLACK);
        g.draw(new Rectangle2D.Double(plotLeft, plotTop, plotW, plotH));

        // axis titles
        g.setFont(axisFont);
        FontMetrics am = g.getFontMetrics();
        g.drawString(xTitle, plotLeft + (plotW - am.stringWidth(xTitle)) / 2, plotBottom + 8 + tm.getHeight() + 6 + am.getAscent());
        Graphics2D gy = (Graphics2D) g.create();
        gy.rotate(-Math.PI / 2);
        gy.drawString(yTitle, -(plotTop + (plotH + am.stringWidth(yTitle)) / 2), 20 + am.getAscent());
        gy.dispose();

        // data, clipped to the plot
        Graphics2D gc = (Graphics2D) g.create();
        gc.clip(new Rectangle2D.Double(plotLeft, plotTop, plotW, plotH));
        for (Line l : lines) {
            if (l.lo == null) {
                continue;
            }
            Path2D.Double band = new Path2D.Double();
            List<Integer> ok = new ArrayList<>();
            for (int i = 0; i < l.x.length; i++) {
                if (l.x[i] > 0 && l.lo[i] > 0 && l.hi[i] > 0) {
                    ok.add(i);
                }
            }
            if (ok.size() < 2) {
                continue;
            }
            for (int k = 0; k < ok.size(); k++) {
                int i = ok.get(k);
                double x = px.applyAsDouble(l.x[i]);
                double y = py.applyAsDouble(l.hi[i]);
                if (k == 0) {
                    band.moveTo(x, y);
                } else {
                    band.lineTo(x, y);
                }
            }
            for (int k = ok.size() - 1; k >= 0; k--) {
                int i = ok.get(k);
                band.lineTo(px.applyAsDouble(l.x[i]), py.applyAsDouble(l.lo[i]));
            }
            band.closePath();
            gc.setColor(new Color(l.color.getRed(), l.color.getGreen(), l.color.getBlue(), 48));
            gc.fill(band);
        }
        // labels of nearby lines go one text line lower, so that none is drawn over another
        List<Double> rowEnds = new ArrayList<>();
        List<VLine> byX = new ArrayList<>(vlines);
        byX.sort(java.util.Comparator.comparingDouble(v -> v.x));
        for (VLine v : byX) {
            double x = px.applyAsDouble(v.x);
            gc.setColor(new Color(90, 90, 90));
            gc.setStroke(new BasicStroke(1.2f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {6f, 4f}, 0f));
            gc.draw(new Line2D.Double(x, plotTop, x, plotBottom));
            gc.setFont(tickFont);
            gc.setStroke(thin);
            int labelRow = 0;
            while (labelRow < rowEnds.size() && rowEnds.get(labelRow) > x) {
                labelRow++;
            }
            double end = x + 4 + gc.getFontMetrics().stringWidth(v.label) + 6;
            if (labelRow == rowEnds.size()) {
                rowEnds.add(end);
            } else {
                rowEnds.set(labelRow, end);
            }
            gc.drawString(v.label, (float) x + 4, plotTop + tm.getAscent() + 4 + labelRow * (tm.getHeight() + 2));
        }
        for (Line l : lines) {
            Stroke s = l.dashed ? new BasicStroke(2f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_ROUND, 10f, new float[] {8f, 5f}, 0f)
                    : new BasicStroke(2f, BasicStroke.CAP_ROUND, BasicStroke.JOIN_ROUND);
            gc.setColor(l.color);
            if (l.connect) {
                Path2D.Double path = new Path2D.Double();
                boolean started = false;
                for (int i = 0; i < l.x.length; i++) {
                    if (!(l.x[i] > 0 && l.y[i] > 0)) {
                        started = false;
                        continue;
                    }
                    double x = px.applyAsDouble(l.x[i]);
                    double y = py.applyAsDouble(l.y[i]);
                    if (!started) {
                        path.moveTo(x, y);
                        started = true;
                    } else {
                        path.lineTo(x, y);
                    }
                }
                gc.setStroke(s);
                gc.draw(path);
            }
            gc.setStroke(new BasicStroke(1.3f));
            for (int i = 0; i < l.x.length; i++) {
                if (!(l.x[i] > 0 && l.y[i] > 0)) {
                    continue;
                }
                double x = px.applyAsDouble(l.x[i]);
                double y = py.applyAsDouble(l.y[i]);
                if (l.err != null && l.err[i] > 0) {
                    double top = py.applyAsDouble(l.y[i] + l.err[i]);
                    double bottom = l.y[i] - l.err[i] > 0 ? py.applyAsDouble(l.y[i] - l.err[i]) : plotBottom;
                    gc.draw(new Line2D.Double(x, top, x, bottom));
                    gc.draw(new Line2D.Double(x - 4, top, x + 4, top));
                    gc.draw(new Line2D.Double(x - 4, bottom, x + 4, bottom));
                }
                if (l.highlight != null && l.highlight[i]) {
                    gc.setColor(Color.BLACK);
                    gc.setStroke(new BasicStroke(2f));
                    gc.draw(new Ellipse2D.Double(x - 8, y - 8, 16, 16));
                    gc.setStroke(new BasicStroke(1.3f));
                    gc.setColor(l.color);
                }
                drawMarker(gc, l.marker, x, y, 4.5);
            }
        }
        gc.dispose();

        // legend
        g.setFont(legendFont);
        int legendTop = height - legendH;
        int rows = pos.isEmpty() ? 0 : pos.get(pos.size() - 1)[1] + 1;
        for (int r = 0; r < rows; r++) {
            int rowW = 0;
            for (int[] p : pos) {
                if (p[1] == r) {
                    rowW = p[0] + p[2];
                }
            }
            int x0 = (width - rowW) / 2;
            for (int k = 0; k < pos.size(); k++) {
                int[] p = pos.get(k);
                if (p[1] != r) {
                    continue;
                }
                int x = x0 + p[0];
                int cy = legendTop + r * rowH + rowH / 2;
                Line l = entryLines.get(k);
                if (l == null) {
                    g.setColor(Color.BLACK);
                    g.setStroke(new BasicStroke(2f));
                    g.draw(new Ellipse2D.Double(x + sample / 2.0 - 8, cy - 8, 16, 16));
                } else {
                    g.setColor(l.lo != null ? new Color(l.color.getRed(), l.color.getGreen(), l.color.getBlue(), 48) : Color.WHITE);
                    if (l.lo != null) {
                        g.fill(new Rectangle2D.Double(x, cy - 6, sample, 12));
                    }
                    g.setColor(l.color);
                    if (l.connect) {
                        g.setStroke(l.dashed ? new BasicStroke(2f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_ROUND, 10f, new float[] {8f, 5f}, 0f)
                                : new BasicStroke(2f));
                        g.draw(new Line2D.Double(x, cy, x + sample, cy));
                    }
                    g.setStroke(new BasicStroke(1.3f));
                    drawMarker(g, l.marker, x + sample / 2.0, cy, 4.5);
                }
                g.setColor(Color.BLACK);
                g.drawString(entries.get(k), x + sample + 6, cy + lm.getAscent() / 2 - 1);
            }
        }
    }

    private String xLabel(double v) {
        return xLabels == XLabels.BYTES ? bytesLabel(v) : plainLabel(v);
    }

    private static void drawMarker(Graphics2D g, Marker m, double x, double y, double r) {
        Shape s;
        switch (m) {
            case CIRCLE:
                s = new Ellipse2D.Double(x - r, y - r, 2 * r, 2 * r);
                break;
            case SQUARE:
                s = new Rectangle2D.Double(x - r, y - r, 2 * r, 2 * r);
                break;
            case DIAMOND: {
                Path2D.Double p = new Path2D.Double();
                p.moveTo(x, y - r * 1.3);
                p.lineTo(x + r * 1.3, y);
                p.lineTo(x, y + r * 1.3);
                p.lineTo(x - r * 1.3, y);
                p.closePath();
                s = p;
                break;
            }
            case TRIANGLE: {
                Path2D.Double p = new Path2D.Double();
                p.moveTo(x, y - r * 1.3);
                p.lineTo(x + r * 1.2, y + r);
                p.lineTo(x - r * 1.2, y + r);
                p.closePath();
                s = p;
                break;
            }
            default:
                return;
        }
        g.fill(s);
    }
}
