package org.sharp4j.tuner.model;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.TreeSet;
import org.sharp4j.tuning.Collective;
import org.sharp4j.tuner.Measurement;

/**
 * Fits {@link ModelParams} from {@code sharp4j tune}'s measurements (its CSV), for
 * {@code sharp4j model --from-tune}: what this cluster measured replaces the defaults, and the
 * model then seeds rules for node counts the tuner could not run.
 *
 * <ul>
 *   <li><b>intra.a, intra.b</b>: the radix-2 tree allreduce on one node ({@link ModelParams#fitIntra}),
 *       from the one-node shape with the most ranks per node.</li>
 *   <li><b>LogGP host</b>: every inter-node {@code knomial:radix=k} point (allreduce, reduce, and the
 *       barrier as m = 0), the intra-node phases the model predicts subtracted, divided by the rounds
 *       {@code ceil(log_k n)}, is {@code L + 2o + (k-2) g + (k-1)(G + gamma) m} (see {@link PerfModel}); a
 *       least-squares fit gives {@code L + 2o}, {@code g} (only if two radices or more were measured) and
 *       {@code G + gamma} (only if two sizes or more). Latency and overhead, and the wire and reduction
 *       costs per byte, cannot be told apart from such times: {@code o} and {@code gamma} keep their
 *       values and {@code L}, {@code G} take the rest (never below 0).</li>
 *   <li><b>SHARP</b>: every {@code sharp} point up to {@code sharp.max.bytes}, less the intra-node phases,
 *       is {@code base + sw + levels(n) level + G m}: {@code sharp.level} is fitted only when the points
 *       span two level counts or more ({@code sharp.radix} nodes per switch level), else it keeps its
 *       value and {@code sharp.base} takes the rest; {@code sharp.G} needs two sizes.</li>
 * </ul>
 * A parameter nothing was measured for keeps its value and origin; the lines returned say which did what.
 */
public final class TuneFit {
    private TuneFit() {
    }

    /** Fits {@code p} in place from {@code ms}; {@code from} names the source in the parameters' origins. Returns what it did. */
    public static List<String> fit(ModelParams p, List<Measurement> ms, String from) {
        List<String> said = new ArrayList<>();
        fitIntra(p, ms, from, said);
        fitHost(p, ms, from, said);
        fitSharp(p, ms, from, said);
        return said;
    }

    private static void fitIntra(ModelParams p, List<Measurement> ms, String from, List<String> said) {
        int ppn = 0;
        for (Measurement m : ms) {
            if (m.nodes() == 1 && m.collective() == Collective.ALLREDUCE && m.candidate().equals("tree:radix=2")) {
                ppn = Math.max(ppn, m.ppn());
            }
        }
        List<double[]> pts = new ArrayList<>();
        for (Measurement m : ms) {
            if (m.nodes() == 1 && m.ppn() == ppn && m.collective() == Collective.ALLREDUCE && m.candidate().equals("tree:radix=2")) {
                pts.add(new double[] {m.bytes(), m.meanUs()});
            }
        }
        if (pts.stream().mapToDouble(x -> x[0]).distinct().count() < 2) {
            said.add("intra.a, intra.b kept: no one-node allreduce tree:radix=2 measured at 2 sizes or more");
            return;
        }
        double[] ab = p.fitIntra(pts.stream().mapToDouble(x -> x[0]).toArray(), pts.stream().mapToDouble(x -> x[1]).toArray(), ppn,
                "fitted from " + from + " (" + ppn + " ppn)");
        said.add(String.format(Locale.ROOT, "intra.a, intra.b fitted from %d point(s) at 1 node x %d ppn: %.3f us + %.6f us/B",
                pts.size(), ppn, ab[0], ab[1]));
    }

    private static double intra(PerfModel model, Measurement m) {
        return model.intraReduce(m.ppn(), m.bytes()) + model.intraBcast(m.ppn(), m.bytes());
    }

    private static void fitHost(ModelParams p, List<Measurement> ms, String from, List<String> said) {
        PerfModel model = new PerfModel(p);
        List<double[]> rows = new ArrayList<>(); // {1, k-2, (k-1) m, y}
        TreeSet<Integer> radices = new TreeSet<>();
        TreeSet<Long> sizes = new TreeSet<>();
        for (Measurement m : ms) {
            if (m.nodes() < 2 || !m.layer().equals(Measurement.INTER) || !m.candidate().startsWith("knomial:radix=")) {
                continue;
            }
            int k = Integer.parseInt(m.candidate().substring("knomial:radix=".length()));
            int rounds = PerfModel.ceilLog(k, m.nodes());
            double y = Math.max(0, m.meanUs() - intra(model, m)) / rounds;
            rows.add(new double[] {1, k - 2, (k - 1) * (double) m.bytes(), y});
            radices.add(k);
            sizes.add(m.bytes());
        }
        if (rows.isEmpty()) {
            said.add("host.L, host.g, host.G kept: no inter-node knomial point measured (2 nodes or more, host path)");
            return;
        }
        boolean fitGap = radices.size() >= 2;
        boolean fitBytes = sizes.size() >= 2;
        double[] x = solve(rows, new boolean[] {true, fitGap, fitBytes}, new double[] {0, p.hostGap, p.hostG + p.hostGamma});
        String o = "fitted from " + from;
        p.set("host.L", Double.toString(Math.max(0, x[0] - 2 * p.hostO)), o);
        if (fitGap) {
            p.set("host.g", Double.toString(Math.max(0, x[1])), o);
        }
        if (fitBytes) {
            p.set("host.G", Double.toString(Math.max(0, x[2] - p.hostGamma)), o);
        }
        said.add(String.format(Locale.ROOT, "host LogGP fitted from %d knomial point(s): L + 2o = %.3f us%s%s (o = %s and gamma = %s kept)",
                rows.size(), x[0], fitGap ? String.format(Locale.ROOT, ", g = %.3f us", x[1]) : ", g kept (one radix)",
                fitBytes ? String.format(Locale.ROOT, ", G + gamma = %.6f us/B", x[2]) : ", G kept (one size)", p.hostO, p.hostGamma));
    }

    private static void fitSharp(ModelParams p, List<Measurement> ms, String from, List<String> said) {
        PerfModel model = new PerfModel(p);
        List<double[]> rows = new ArrayList<>(); // {1, levels, m, y}
        TreeSet<Integer> levels = new TreeSet<>();
        TreeSet<Long> sizes = new TreeSet<>();
        for (Measurement m : ms) {
            if (m.nodes() < 2 || !m.candidate().equals("sharp") || m.bytes() > p.sharpMaxBytes) {
                continue;
            }
            int l = model.sharpLevels(m.nodes());
            rows.add(new double[] {1, l, m.bytes(), Math.max(0, m.meanUs() - intra(model, m)) - p.sharpSw});
            levels.add(l);
            sizes.add(m.bytes());
        }
        if (rows.isEmpty()) {
            said.add("sharp.base, sharp.level, sharp.G kept: no SHARP point measured (SHARP is measured where libsharp_coll loads and the host path is UCX)");
            return;
        }
        boolean fitLevel = levels.size() >= 2;
        boolean fitBytes = sizes.size() >= 2;
        double[] x = solve(rows, new boolean[] {true, fitLevel, fitBytes}, new double[] {0, p.sharpLevel, p.sharpG});
        String o = "fitted from " + from;
        p.set("sharp.base", Double.toString(Math.max(0, x[0])), o);
        if (fitLevel) {
            p.set("sharp.level", Double.toString(Math.max(0, x[1])), o);
        }
        if (fitBytes) {
            p.set("sharp.G", Double.toString(Math.max(0, x[2])), o);
        }
        said.add(String.format(Locale.ROOT, "SHARP fitted from %d point(s): base = %.3f us%s%s", rows.size(), Math.max(0, x[0]),
                fitLevel ? String.format(Locale.ROOT, ", per level %.3f us", x[1])
                        : ", per level kept (" + p.sharpLevel + " us: one level count measured)",
                fitBytes ? String.format(Locale.ROOT, ", G = %.6f us/B", x[2]) : ", G kept (one size)"));
    }

    /**
     * Least squares of {@code y = sum x_j f_j} over rows {@code {f_0, f_1, f_2, y}}, fitting only the
     * coefficients marked in {@code free}; the others are fixed at {@code fixed[j]}.
     */
    static double[] solve(List<double[]> rows, boolean[] free, double[] fixed) {
        int nf = 0;
        int[] idx = new int[3];
        for (int j = 0; j < 3; j++) {
            if (free[j]) {
                idx[nf++] = j;
            }
        }
        double[][] a = new double[nf][nf + 1];
        for (double[] r : rows) {
            double y = r[3];
            for (int j = 0; j < 3; j++) {
                if (!free[j]) {
                    y -= fixed[j] * r[j];
                }
            }
            for (int u = 0; u < nf; u++) {
                for (int v = 0; v < nf; v++) {
                    a[u][v] += r[idx[u]] * r[idx[v]];
                }
                a[u][nf] += r[idx[u]] * y;
            }
        }
        // Gaussian elimination with partial pivoting
        for (int c = 0; c < nf; c++) {
            int piv = c;
            for (int r = c + 1; r < nf; r++) {
                if (Math.abs(a[r][c]) > Math.abs(a[piv][c])) {
                    piv = r;
                }
            }
            double[] t = a[c];
            a[c] = a[piv];
            a[piv] = t;
            if (Math.abs(a[c][c]) < 1e-300) {
                throw new IllegalArgumentException("the measurements do not determine the model's parameters (singular fit)");
            }
            for (int r = 0; r < nf; r++) {
                if (r != c) {
                    double f = a[r][c] / a[c][c];
                    for (int k = c; k <= nf; k++) {
                        a[r][k] -= f * a[c][k];
                    }
                }
            }
        }
        double[] out = fixed.clone();
        for (int u = 0; u < nf; u++) {
            out[idx[u]] = a[u][nf] / a[u][u];
        }
        return out;
    }
}
