package org.sharp4j.tuner.model;

import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;

/**
 * The parameters of {@link PerfModel}: times in microseconds, per-byte costs in microseconds per
 * byte. Every parameter has a default (below, with where it comes from) and can be overridden from
 * a properties file with the key shown ({@link #load}, {@code sharp4j model --params FILE}).
 *
 * <p><b>Host path, LogGP</b> (Alexandrov et al.; HDR InfiniBand as on TACC Frontera, paper 004):
 * <ul>
 *   <li>{@code host.L} = 1.2 us wire + switch latency; {@code host.o} = 0.35 us CPU overhead per
 *       message end; {@code host.g} = 0.35 us gap between consecutive sends. These three were
 *       calibrated so that the radix-4 k-nomial allreduce of 2 KiB on 4 nodes predicts 3.7 us, the
 *       3.66 us paper 004 measured for MVAPICH2-X at 4 nodes x 1 ppn (Sec. V-D1).</li>
 *   <li>{@code host.G} = 0.00008 us/B: 1 / 12.5 GB/s, the 100 Gb/s HDR100 host links of Frontera
 *       (paper 004 Sec. V-A).</li>
 *   <li>{@code host.gamma} = 0.0001 us/B: reducing a received byte (10 GB/s per core, an assumed
 *       streaming sum; not from a paper).</li>
 * </ul>
 * <b>Inside a node</b>, paper 001's cost of touching m bytes, {@code a + b m}:
 * <ul>
 *   <li>{@code intra.a} = 0.2 us per step (a cache-line flag hand-off plus the first lines;
 *       the reference notes 0.27 us for a whole 2-rank shared-memory allreduce step through
 *       these bindings), {@code intra.b} = 0.0001 us/B (10 GB/s per core). Both are replaced by
 *       what {@code sharp4j tune} measured: {@code sharp4j model --from-tune TABLE} fits them.</li>
 *   <li>{@code intra.B} = 0.0000125 us/B = b/8: paper 001's congested per-byte cost of the
 *       shared link (eq. 8, {@code a q + B q m}), chosen so that at 16 ranks the tree/tiled
 *       crossover falls at 6a/b = 12 KB, near paper 001's 14-16 KB.</li>
 * </ul>
 * <b>SHARP</b> (in-network aggregation tree over the switches):
 * <ul>
 *   <li>{@code sharp.base} = 2.0 us (host send + result delivery), {@code sharp.level} = 1.0 us
 *       per aggregation level: with radix 40 this gives 3 us at 4 nodes and 5 us at 2,048-7,861
 *       nodes, inside paper 004's 3-8 us for Allreduce up to 2,048 nodes (Barrier 1.7-8.2 us up
 *       to 4,096).</li>
 *   <li>{@code sharp.radix} = 40: the ports of an HDR Quantum switch (QM8700);
 *       levels = ceil(log_radix n). (A fat tree uses half of them downwards; set 20 for that.)</li>
 *   <li>{@code sharp.G} = 0.0004 us/B: paper 004 saw the 2 KiB latency about 1.2x the 4-byte
 *       one (Sec. V-D3), i.e. about 0.8 us more for 2 KiB.</li>
 *   <li>{@code sharp.sw} = 0.31 us: sharp4j's own software cost per SHARP call on top of the
 *       library's (JNA calls to post nonblocking, test and complete; dispatch; the copy out of the
 *       registered result buffer), measured by {@code SharpCallBench} against a C loop calling the
 *       same emulator (8 B: 413.6 ns per call through {@code SharpStep}, 107.7 ns in C,
 *       2026-11-24). No host message travels on success, so nothing else is added.</li>
 *   <li>{@code sharp.max.bytes} = 2048: the largest message paper 004 measured and the built-in
 *       table's SHARP limit; above it SHARP is not a candidate.</li>
 * </ul>
 * <b>Radices</b> of the candidates: {@code knomial.radix} = 4, {@code sra.radix} = 4,
 * {@code barrier.radix} = 8 (UCC's defaults, as the built-in table), {@code tree.radix} = 2
 * (paper 001: a binary tree is optimal inside a socket).
 */
public final class ModelParams {
    public double hostL = 1.2;
    public double hostO = 0.35;
    public double hostGap = 0.35;
    public double hostG = 0.00008;
    public double hostGamma = 0.0001;
    public double intraA = 0.2;
    public double intraB = 0.0001;
    public double intraBCongested = 0.0000125;
    public double sharpBase = 2.0;
    public double sharpLevel = 1.0;
    public double sharpG = 0.0004;
    public double sharpSw = 0.31;
    public int sharpRadix = 40;
    public long sharpMaxBytes = 2048;
    public int knomialRadix = 4;
    public int sraRadix = 4;
    public int barrierRadix = 8;
    public int treeRadix = 2;
    /** Where each value came from (key -> "default", a file, "fitted from ..."). */
    private final Map<String, String> origin = new LinkedHashMap<>();

    public ModelParams() {
        for (String k : keys()) {
            origin.put(k, "default");
        }
    }

    /** The defaults. */
    public static ModelParams defaults() {
        return new ModelParams();
    }

    /** The property keys, in the order they are printed. */
    public static List<String> keys() {
        return List.of("host.L", "host.o", "host.g", "host.G", "host.gamma", "intra.a", "intra.b", "intra.B",
                "sharp.base", "sharp.level", "sharp.G", "sharp.sw", "sharp.radix", "sharp.max.bytes", "knomial.radix", "sra.radix",
                "barrier.radix", "tree.radix");
    }

    /** The defaults overridden by a properties file (unknown keys and bad values are rejected). */
    public static ModelParams load(Path file) {
        Properties p = new Properties();
        try (Reader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            p.load(r);
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read the model parameters " + file + ": " + e.getMessage(), e);
        }
        ModelParams m = defaults();
        m.apply(p, file.toString());
        return m;
    }

    /** Overrides from {@code p}; {@code from} is recorded as the origin. */
    public void apply(Properties p, String from) {
        for (String k : p.stringPropertyNames()) {
            if (!keys().contains(k)) {
                throw new IllegalArgumentException(from + ": unknown model parameter '" + k + "' (known: " + keys() + ")");
            }
            set(k, p.getProperty(k).trim(), from);
        }
    }

    /** Sets one parameter by key. */
    public void set(String key, String value, String from) {
        double v;
        try {
            v = Double.parseDouble(value);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(from + ": model parameter " + key + " is not a number: '" + value + "'");
        }
        if (!(v >= 0) || Double.isInfinite(v)) {
            throw new IllegalArgumentException(from + ": model parameter " + key + " must be finite and >= 0, got " + value);
        }
        boolean radix = key.endsWith("radix");
        if (radix && (v < 2 || v != Math.rint(v) || v > 1024)) {
            throw new IllegalArgumentException(from + ": " + key + " must be an integer in 2..1024, got " + value);
        }
        switch (key) {
            case "host.L": hostL = v; break;
            case "host.o": hostO = v; break;
            case "host.g": hostGap = v; break;
            case "host.G": hostG = v; break;
            case "host.gamma": hostGamma = v; break;
            case "intra.a": intraA = v; break;
            case "intra.b": intraB = v; break;
            case "intra.B": intraBCongested = v; break;
            case "sharp.base": sharpBase = v; break;
            case "sharp.level": sharpLevel = v; break;
            case "sharp.G": sharpG = v; break;
            case "sharp.sw": sharpSw = v; break;
            case "sharp.radix": sharpRadix = (int) v; break;
            case "sharp.max.bytes": sharpMaxBytes = (long) v; break;
            case "knomial.radix": knomialRadix = (int) v; break;
            case "sra.radix": sraRadix = (int) v; break;
            case "barrier.radix": barrierRadix = (int) v; break;
            case "tree.radix": treeRadix = (int) v; break;
            default: throw new IllegalArgumentException(from + ": unknown model parameter '" + key + "'");
        }
        origin.put(key, from);
    }

    public double get(String key) {
        switch (key) {
            case "host.L": return hostL;
            case "host.o": return hostO;
            case "host.g": return hostGap;
            case "host.G": return hostG;
            case "host.gamma": return hostGamma;
            case "intra.a": return intraA;
            case "intra.b": return intraB;
            case "intra.B": return intraBCongested;
            case "sharp.base": return sharpBase;
            case "sharp.level": return sharpLevel;
            case "sharp.G": return sharpG;
            case "sharp.sw": return sharpSw;
            case "sharp.radix": return sharpRadix;
            case "sharp.max.bytes": return sharpMaxBytes;
            case "knomial.radix": return knomialRadix;
            case "sra.radix": return sraRadix;
            case "barrier.radix": return barrierRadix;
            case "tree.radix": return treeRadix;
            default: throw new IllegalArgumentException("unknown model parameter '" + key + "'");
        }
    }

    public String origin(String key) {
        return origin.get(key);
    }

    /** {@code key=value} lines, each after a {@code # origin} comment (a valid properties file). */
    public List<String> describe() {
        List<String> out = new ArrayList<>();
        for (String k : keys()) {
            out.add("# " + origin.get(k));
            out.add(k + "=" + value(k));
        }
        return out;
    }

    /** {@code key=value    (origin)} lines, for printing. */
    public List<String> describeWithOrigin() {
        List<String> out = new ArrayList<>();
        for (String k : keys()) {
            out.add(String.format(Locale.ROOT, "%-16s %-12s (%s)", k, value(k), origin.get(k)));
        }
        return out;
    }

    private String value(String k) {
        double v = get(k);
        return v == Math.rint(v) && Math.abs(v) < 1e15 ? Long.toString((long) v) : String.format(Locale.ROOT, "%.6g", v);
    }

    /**
     * Replaces {@code intra.a} and {@code intra.b} with a least-squares fit of a tree allreduce
     * measured at {@code ppn} ranks per node: with radix 2 the model's time is
     * {@code (a + b m) (ceil(log2 ppn) + 1)} (reduce up the tree, then one read-out), so the fitted
     * line {@code alpha + beta m} gives {@code a = alpha / steps}, {@code b = beta / steps}.
     * Negative intercepts or slopes are clamped to 0. Returns the fit {@code {alpha, beta}}.
     */
    public double[] fitIntra(double[] bytes, double[] us, int ppn, String from) {
        if (bytes.length < 2 || bytes.length != us.length) {
            throw new IllegalArgumentException("fitting a + b m needs at least 2 sizes, got " + bytes.length);
        }
        double[] ab = PerfModel.leastSquares(bytes, us);
        int steps = PerfModel.ceilLog(2, Math.max(1, ppn)) + 1;
        intraA = Math.max(0, ab[0]) / steps;
        intraB = Math.max(0, ab[1]) / steps;
        origin.put("intra.a", from);
        origin.put("intra.b", from);
        return ab;
    }
}
