package org.sharp4j.tuner;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.sharp4j.tuning.Collective;

/**
 * One point of a {@code sharp4j tune} sweep: a candidate at one size, for one job shape. Measured
 * in one pass (one communicator, so one set of connections) it is the median over rounds of each
 * round's median call (a call's time averaged over the ranks: OSU's P50) and the standard error of
 * that median; over several passes
 * ({@link #overPasses}) it is the median of the passes' figures and an error from their spread.
 *
 * @param nodes     nodes of the job it was measured in
 * @param ppn       largest number of ranks per node of that job
 * @param layer     {@code intra} (inside a node) or {@code inter} (between node leaders)
 * @param candidate the candidate as a rule's tail: {@code tree:radix=4}, {@code tiled}, {@code knomial:radix=2}, {@code sharp}
 * @param bytes     message size (0 for barrier)
 * @param rounds    timed rounds, over all passes
 * @param stable    whether the rounds of every pass reached the target relative standard error
 * @param passes    passes (communicators) the figure is taken over
 * @param byPass    each pass's figure, element p-1 for pass p (NaN where that pass is missing); empty where unknown
 */
public record Measurement(int nodes, int ppn, Collective collective, String layer, String candidate, long bytes, double meanUs,
        double stderrUs, int rounds, boolean stable, int passes, List<Double> byPass) {
    public static final String INTRA = "intra";
    public static final String INTER = "inter";

    public Measurement {
        if (nodes < 1 || ppn < 1) {
            throw new IllegalArgumentException("a measurement needs nodes >= 1 and ppn >= 1, got " + nodes + ", " + ppn);
        }
        if (!layer.equals(INTRA) && !layer.equals(INTER)) {
            throw new IllegalArgumentException("layer must be intra or inter, got '" + layer + "'");
        }
        if (candidate.isEmpty() || candidate.contains(",")) {
            throw new IllegalArgumentException("bad candidate '" + candidate + "'");
        }
        if (passes < 1) {
            throw new IllegalArgumentException("a measurement needs passes >= 1, got " + passes);
        }
        byPass = byPass == null ? List.of() : List.copyOf(byPass);
    }

    /** A point over {@code passes} passes whose figures one by one are not known. */
    public Measurement(int nodes, int ppn, Collective collective, String layer, String candidate, long bytes, double meanUs,
            double stderrUs, int rounds, boolean stable, int passes) {
        this(nodes, ppn, collective, layer, candidate, bytes, meanUs, stderrUs, rounds, stable, passes, List.of());
    }

    /** A point measured in one pass. */
    public Measurement(int nodes, int ppn, Collective collective, String layer, String candidate, long bytes, double meanUs,
            double stderrUs, int rounds, boolean stable) {
        this(nodes, ppn, collective, layer, candidate, bytes, meanUs, stderrUs, rounds, stable, 1, List.of(meanUs));
    }

    /** One pass's figure of a point: {@code pass} counts from 1. */
    public record Pass(Measurement point, int pass) {
        public Pass {
            if (pass < 1) {
                throw new IllegalArgumentException("a pass counts from 1, got " + pass);
            }
            if (point.passes() != 1) {
                throw new IllegalArgumentException("a pass holds one pass's figure, got one over " + point.passes());
            }
        }

        /** The identity of this pass of the point (a resumed sweep skips the passes it already has). */
        public String key() {
            return passKey(point.key(), pass);
        }
    }

    /** The point's identity in a sweep. */
    public String key() {
        return key(nodes, ppn, collective, layer, candidate, bytes);
    }

    public static String key(int nodes, int ppn, Collective c, String layer, String candidate, long bytes) {
        return nodes + "," + ppn + "," + name(c) + "," + layer + "," + candidate + "," + bytes;
    }

    /** The identity of pass {@code pass} of the point {@code key}. */
    public static String passKey(String key, int pass) {
        return key + "#" + pass;
    }

    /**
     * One figure from the passes of one point (every pass measured on its own communicator): the
     * median of the passes' figures, so that one pass on slow (or fast) connections moves it little;
     * its error the larger of the passes' median standard error and the standard error of a median
     * estimated from the spread between passes ({@code 1.2533 * 1.4826 * MAD / sqrt(passes)}, MAD the
     * median absolute deviation from the median).
     */
    public static Measurement overPasses(List<Measurement> passes) {
        List<Double> byPass = new ArrayList<>();
        for (Measurement m : passes) {
            byPass.add(m.meanUs());
        }
        return overPasses(passes, byPass);
    }

    /** {@link #overPasses(List)} with the figures by pass number given ({@link #byPass()}). */
    private static Measurement overPasses(List<Measurement> passes, List<Double> byPass) {
        if (passes.isEmpty()) {
            throw new IllegalArgumentException("no passes to take a figure over");
        }
        Measurement first = passes.get(0);
        if (passes.size() == 1) {
            return first;
        }
        for (Measurement m : passes) {
            if (!m.key().equals(first.key())) {
                throw new IllegalArgumentException("passes of different points: " + first.key() + " and " + m.key());
            }
        }
        double[] means = passes.stream().mapToDouble(Measurement::meanUs).toArray();
        double med = median(means);
        double[] dev = new double[means.length];
        for (int i = 0; i < means.length; i++) {
            dev[i] = Math.abs(means[i] - med);
        }
        double spread = 1.2533 * 1.4826 * median(dev) / Math.sqrt(means.length);
        double within = median(passes.stream().mapToDouble(Measurement::stderrUs).toArray());
        int rounds = passes.stream().mapToInt(Measurement::rounds).sum();
        boolean stable = passes.stream().allMatch(Measurement::stable);
        return new Measurement(first.nodes(), first.ppn(), first.collective(), first.layer(), first.candidate(), first.bytes(), med,
                Math.max(spread, within), rounds, stable, passes.size(), byPass);
    }

    /** The points of {@code passes} (in the order their first pass comes), each over its passes. */
    public static List<Measurement> overPassesByPoint(List<Pass> passes) {
        java.util.Map<String, List<Measurement>> by = new java.util.LinkedHashMap<>();
        java.util.Map<String, List<Double>> figures = new java.util.HashMap<>();
        for (Pass p : passes) {
            by.computeIfAbsent(p.point().key(), k -> new ArrayList<>()).add(p.point());
            List<Double> f = figures.computeIfAbsent(p.point().key(), k -> new ArrayList<>());
            while (f.size() < p.pass()) {
                f.add(Double.NaN);
            }
            f.set(p.pass() - 1, p.point().meanUs());
        }
        List<Measurement> out = new ArrayList<>();
        for (java.util.Map.Entry<String, List<Measurement>> e : by.entrySet()) {
            out.add(e.getValue().size() == 1 ? withByPass(e.getValue().get(0), figures.get(e.getKey()))
                    : overPasses(e.getValue(), figures.get(e.getKey())));
        }
        return out;
    }

    private static Measurement withByPass(Measurement m, List<Double> byPass) {
        return new Measurement(m.nodes(), m.ppn(), m.collective(), m.layer(), m.candidate(), m.bytes(), m.meanUs(), m.stderrUs(),
                m.rounds(), m.stable(), m.passes(), byPass);
    }

    static double median(double[] xs) {
        double[] s = xs.clone();
        java.util.Arrays.sort(s);
        int n = s.length;
        return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    }

    static String name(Collective c) {
        return c.name().toLowerCase(Locale.ROOT);
    }
}
