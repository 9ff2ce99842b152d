package org.sharp4j.tuner;

import java.util.Locale;
import org.sharp4j.tuning.Collective;

/**
 * One point of a {@code sharp4j tune} sweep: a candidate at one size, for one job shape, as the
 * mean over rounds of the slowest rank's time per call and the standard error of that mean.
 *
 * @param nodes     nodes of the job it was measured in
 * @param ppn       largest number of ranks per node of that job
 * @param layer     {@code intra} (inside a node) or {@code inter} (between node leaders)
 * @param candidate the candidate as a rule's tail: {@code tree:radix=4}, {@code tiled}, {@code knomial:radix=2}, {@code sharp}
 * @param bytes     message size (0 for barrier)
 * @param stable    whether the rounds reached the target relative standard error
 */
public record Measurement(int nodes, int ppn, Collective collective, String layer, String candidate, long bytes, double meanUs,
        double stderrUs, int rounds, boolean stable) {
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
    }

    /** The point's identity in a sweep (a resumed sweep skips points it already has). */
    public String key() {
        return key(nodes, ppn, collective, layer, candidate, bytes);
    }

    public static String key(int nodes, int ppn, Collective c, String layer, String candidate, long bytes) {
        return nodes + "," + ppn + "," + name(c) + "," + layer + "," + candidate + "," + bytes;
    }

    static String name(Collective c) {
        return c.name().toLowerCase(Locale.ROOT);
    }
}
