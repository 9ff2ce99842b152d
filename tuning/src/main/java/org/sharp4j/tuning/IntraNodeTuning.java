package org.sharp4j.tuning;

import java.util.Properties;

/**
 * Intra-node choices: which algorithm for a message size, and its parameters.
 *
 * <p>Built-in defaults come from paper 001 (binary trees are optimal inside a socket for small
 * vectors; tree and tiled cross near 14-16 KB). They can be overridden per run with system
 * properties; the full rule tables (size x nodes x ppn ranges, table files, UCC-style override
 * strings) build on this class in the tuning issue.
 *
 * <p>Lookup is a compare on the hot path: no allocation, no map.
 */
public final class IntraNodeTuning {
    /** Default k of the k-nomial trees (2 = binomial; paper 001's optimum for small vectors). */
    public static final int DEFAULT_TREE_RADIX = 2;
    /** Largest message (bytes) that goes through the tree; larger ones are tiled. */
    public static final int DEFAULT_TILED_THRESHOLD = 16 * 1024;

    private final int treeRadix;
    private final int tiledThresholdBytes;

    public IntraNodeTuning(int treeRadix, int tiledThresholdBytes) {
        if (treeRadix < 2 || treeRadix > 64) {
            throw new IllegalArgumentException("tree radix must be in 2..64, got " + treeRadix);
        }
        if (tiledThresholdBytes < 0) {
            throw new IllegalArgumentException("tiled threshold must be >= 0 bytes, got " + tiledThresholdBytes);
        }
        this.treeRadix = treeRadix;
        this.tiledThresholdBytes = tiledThresholdBytes;
    }

    public static IntraNodeTuning defaults() {
        return new IntraNodeTuning(DEFAULT_TREE_RADIX, DEFAULT_TILED_THRESHOLD);
    }

    /** Reads {@code sharp4j.tree.radix} and {@code sharp4j.tiled.threshold} (bytes, k/M suffixes). */
    public static IntraNodeTuning fromProperties(Properties p) {
        int radix = Integer.parseInt(p.getProperty("sharp4j.tree.radix", Integer.toString(DEFAULT_TREE_RADIX)).trim());
        long thr = Sizes.parseBytes(p.getProperty("sharp4j.tiled.threshold", Integer.toString(DEFAULT_TILED_THRESHOLD)));
        if (thr > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("sharp4j.tiled.threshold too large: " + thr);
        }
        return new IntraNodeTuning(radix, (int) thr);
    }

    public int treeRadix() {
        return treeRadix;
    }

    public int tiledThresholdBytes() {
        return tiledThresholdBytes;
    }

    /** The algorithm for a message of {@code bytes} (the same on every rank for the same call). */
    public IntraNodeAlgorithm algorithm(Collective c, long bytes) {
        return c == Collective.BARRIER || bytes <= tiledThresholdBytes ? IntraNodeAlgorithm.TREE : IntraNodeAlgorithm.TILED;
    }

    @Override
    public String toString() {
        return "tree radix " + treeRadix + ", tiled above " + tiledThresholdBytes + " B";
    }
}
