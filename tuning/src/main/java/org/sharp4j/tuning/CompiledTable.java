package org.sharp4j.tuning;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The rules of a {@link TuningTable} resolved for one job shape (nodes, ranks per node): per
 * collective and layer, sorted size boundaries and what applies from each. Built once when a
 * communicator is created; the per-call lookup is a binary search over a handful of longs, with
 * no allocation.
 */
public final class CompiledTable {
    /** Defaults of parameters a rule leaves unset. */
    public static final int DEFAULT_TREE_RADIX = IntraNodeTuning.DEFAULT_TREE_RADIX;
    public static final int DEFAULT_KNOMIAL_RADIX = 4;
    public static final int DEFAULT_SRA_RADIX = 4;
    /** SHARP operations of one call in flight where neither a rule's {@code pipeline=} nor {@code sharp4j.sharp.pipeline} says. */
    public static final int DEFAULT_SHARP_PIPELINE = 4;

    private final int nodes;
    private final int ppn;
    // [collective][segment]
    private final long[][] intraStart;
    private final Algorithm[][] intraAlg;
    private final int[][] intraRadix;
    private final int[][] intraChunk;
    private final String[][] intraOrigin;
    private final String[][] intraProv;
    private final String[][] interProv;
    private final long[][] interStart;
    private final Algorithm[][] interAlg;
    private final int[][] interRadix;
    private final int[][] interPipeline;
    private final String[][] interOrigin;

    /** Builds from the painted segments; called by {@link TuningTable#compile}. */
    CompiledTable(int nodes, int ppn, List<List<Seg>> intra, List<List<Seg>> inter) {
        this.nodes = nodes;
        this.ppn = ppn;
        int n = Collective.values().length;
        intraStart = new long[n][];
        intraAlg = new Algorithm[n][];
        intraRadix = new int[n][];
        intraChunk = new int[n][];
        intraOrigin = new String[n][];
        interStart = new long[n][];
        interAlg = new Algorithm[n][];
        interRadix = new int[n][];
        interPipeline = new int[n][];
        interOrigin = new String[n][];
        intraProv = new String[n][];
        interProv = new String[n][];
        for (int c = 0; c < n; c++) {
            List<Seg> a = intra.get(c);
            intraStart[c] = new long[a.size()];
            intraAlg[c] = new Algorithm[a.size()];
            intraRadix[c] = new int[a.size()];
            intraChunk[c] = new int[a.size()];
            intraOrigin[c] = new String[a.size()];
            intraProv[c] = new String[a.size()];
            for (int i = 0; i < a.size(); i++) {
                Seg s = a.get(i);
                intraStart[c][i] = s.lo;
                intraAlg[c][i] = s.alg;
                intraRadix[c][i] = s.radix;
                intraChunk[c][i] = s.chunk;
                intraOrigin[c][i] = s.origin;
                intraProv[c][i] = s.provenance;
            }
            List<Seg> b = inter.get(c);
            interStart[c] = new long[b.size()];
            interAlg[c] = new Algorithm[b.size()];
            interRadix[c] = new int[b.size()];
            interPipeline[c] = new int[b.size()];
            interOrigin[c] = new String[b.size()];
            interProv[c] = new String[b.size()];
            for (int i = 0; i < b.size(); i++) {
                Seg s = b.get(i);
                interStart[c][i] = s.lo;
                interAlg[c][i] = s.alg;
                interRadix[c][i] = s.radix;
                interPipeline[c][i] = s.pipeline;
                interOrigin[c][i] = s.origin;
                interProv[c][i] = s.provenance;
            }
        }
    }

    /** A painted piece of the size axis, {@code [lo, hi)}. */
    static final class Seg {
        final long lo;
        final long hi;
        final Algorithm alg;
        final int radix;
        final int chunk;
        /** SHARP operations in flight, {@link Rule#UNSET} for the default. */
        final int pipeline;
        final String origin;
        /** Where the choice comes from, in words: built in, measured on this cluster, modelled, table file, ... */
        final String provenance;

        Seg(long lo, long hi, Algorithm alg, int radix, int chunk, int pipeline, String origin, String provenance) {
            this.lo = lo;
            this.hi = hi;
            this.alg = alg;
            this.radix = radix;
            this.chunk = chunk;
            this.pipeline = pipeline;
            this.origin = origin;
            this.provenance = provenance;
        }

        Seg range(long l, long h) {
            return new Seg(l, h, alg, radix, chunk, pipeline, origin, provenance);
        }

        boolean sameChoice(Seg o) {
            return alg == o.alg && radix == o.radix && chunk == o.chunk && pipeline == o.pipeline && origin.equals(o.origin) && provenance.equals(o.provenance);
        }
    }

    public int nodes() {
        return nodes;
    }

    public int ppn() {
        return ppn;
    }

    private static int find(long[] starts, long bytes) {
        int lo = 0;
        int hi = starts.length - 1;
        while (lo < hi) { // last index with starts[i] <= bytes (starts[0] == 0)
            int mid = (lo + hi + 1) >>> 1;
            if (starts[mid] <= bytes) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        return lo;
    }

    /** First size (bytes) of every intra-node segment of {@code c}, ascending from 0 (the warm-up visits each). */
    public long[] intraStarts(Collective c) {
        return intraStart[c.ordinal()].clone();
    }

    /** Index of the intra-node segment for a call: pass it to the {@code *At} methods. */
    public int intraIndex(Collective c, long bytes) {
        return find(intraStart[c.ordinal()], bytes);
    }

    public IntraNodeAlgorithm intraAlgorithmAt(Collective c, int i) {
        return intraAlg[c.ordinal()][i].toIntra();
    }

    public int treeRadixAt(Collective c, int i) {
        return intraRadix[c.ordinal()][i];
    }

    /** Tiled chunk in bytes, 0 for "the slot size". */
    public int chunkAt(Collective c, int i) {
        return intraChunk[c.ordinal()][i];
    }

    public IntraNodeAlgorithm intraAlgorithm(Collective c, long bytes) {
        return intraAlgorithmAt(c, intraIndex(c, bytes));
    }

    public int treeRadix(Collective c, long bytes) {
        return treeRadixAt(c, intraIndex(c, bytes));
    }

    public String intraOrigin(Collective c, long bytes) {
        return intraOrigin[c.ordinal()][intraIndex(c, bytes)];
    }

    /**
     * Where the intra-node choice for a call came from, in words: {@code built in}, {@code measured on this
     * cluster} or {@code modelled} (a table file's sections, see {@link TuningTable}), {@code table file}
     * (a rule without a provenance section), {@code override string}, {@code legacy property} or {@code default}.
     */
    public String intraProvenance(Collective c, long bytes) {
        return intraProv[c.ordinal()][intraIndex(c, bytes)];
    }

    /** Whether segment {@code i}'s intra-node choice for {@code c} is the built-in table's (no file, override or property set it). */
    public boolean intraBuiltInAt(Collective c, int i) {
        return "built in".equals(intraProv[c.ordinal()][i]);
    }

    /** As {@link #intraProvenance}, for the inter-node choice. */
    public String interProvenance(Collective c, long bytes) {
        return interProv[c.ordinal()][find(interStart[c.ordinal()], bytes)];
    }

    /** The inter-node path (SHARP, KNOMIAL or SRA) for a call; phase 3 implementations consult it. */
    public Algorithm interAlgorithm(Collective c, long bytes) {
        return interAlg[c.ordinal()][find(interStart[c.ordinal()], bytes)];
    }

    /** Radix of the host path for a call (0 for SHARP). */
    public int interRadix(Collective c, long bytes) {
        return interRadix[c.ordinal()][find(interStart[c.ordinal()], bytes)];
    }

    /**
     * SHARP operations of one call in flight for a call SHARP takes: the {@code pipeline=} of the sharp rule
     * that applies, else {@link #DEFAULT_SHARP_PIPELINE} (sharp4j.sharp.pipeline, where set, overrides both).
     */
    public int sharpPipeline(Collective c, long bytes) {
        int p = interPipeline[c.ordinal()][find(interStart[c.ordinal()], bytes)];
        return p != Rule.UNSET ? p : DEFAULT_SHARP_PIPELINE;
    }

    public String interOrigin(Collective c, long bytes) {
        return interOrigin[c.ordinal()][find(interStart[c.ordinal()], bytes)];
    }

    /** Largest message (exclusive bound) SHARP takes for {@code c} counting from 0 bytes; 0 when SHARP is not chosen for small messages. */
    public long sharpMaxBytes(Collective c) {
        int k = c.ordinal();
        if (interAlg[k][0] != Algorithm.SHARP) {
            return 0;
        }
        int i = 0;
        while (i + 1 < interAlg[k].length && interAlg[k][i + 1] == Algorithm.SHARP) {
            i++;
        }
        return i + 1 < interStart[k].length ? interStart[k][i + 1] : Long.MAX_VALUE;
    }

    /** Largest message the tree handles counting from 0 bytes for {@code c} (the "tiled threshold"), capped at Integer.MAX_VALUE. */
    public int tiledThreshold(Collective c) {
        int k = c.ordinal();
        for (int i = 0; i < intraAlg[k].length; i++) {
            if (intraAlg[k][i] == Algorithm.TILED || intraAlg[k][i] == Algorithm.DIRECT || intraAlg[k][i] == Algorithm.PIPELINED
                    || intraAlg[k][i] == Algorithm.CMA || intraAlg[k][i] == Algorithm.CMA_SPLIT) {
                return (int) Math.min(Integer.MAX_VALUE, intraStart[k][i] - 1);
            }
        }
        return Integer.MAX_VALUE;
    }

    /** The legacy summary: radix of the smallest allreduce, tiled threshold of allreduce. */
    public IntraNodeTuning summary() {
        int r = intraAlg[0][0] == Algorithm.TREE ? intraRadix[0][0] : DEFAULT_TREE_RADIX;
        return new IntraNodeTuning(r, Math.max(0, tiledThreshold(Collective.ALLREDUCE)));
    }

    /** One line per segment: {@code allreduce  intra  0-16385  tree radix=2  <- built-in: RULE  [built in]} (the provenance in brackets). */
    public List<String> describe() {
        List<String> out = new ArrayList<>();
        for (Collective c : Collective.values()) {
            int k = c.ordinal();
            String name = c.name().toLowerCase(Locale.ROOT);
            for (int i = 0; i < intraStart[k].length; i++) {
                long hi = i + 1 < intraStart[k].length ? intraStart[k][i + 1] : Long.MAX_VALUE;
                String p = intraAlg[k][i] == Algorithm.TREE || intraAlg[k][i] == Algorithm.EXCHANGE ? " radix=" + intraRadix[k][i]
                        : " chunk=" + (intraChunk[k][i] == 0 ? "slot" : Sizes.format(intraChunk[k][i]));
                out.add(String.format("%-9s intra %-13s %-19s <- %s  [%s]", name, Sizes.format(intraStart[k][i]) + "-" + Sizes.format(hi),
                        intraAlg[k][i].key() + p, intraOrigin[k][i], intraProv[k][i]));
            }
            for (int i = 0; i < interStart[k].length; i++) {
                long hi = i + 1 < interStart[k].length ? interStart[k][i + 1] : Long.MAX_VALUE;
                String p = interAlg[k][i] != Algorithm.SHARP ? " radix=" + interRadix[k][i]
                        : interPipeline[k][i] != Rule.UNSET ? " pipeline=" + interPipeline[k][i] : "";
                out.add(String.format("%-9s inter %-13s %-19s <- %s  [%s]", name, Sizes.format(interStart[k][i]) + "-" + Sizes.format(hi),
                        interAlg[k][i].key() + p, interOrigin[k][i], interProv[k][i]));
            }
        }
        return out;
    }
}
