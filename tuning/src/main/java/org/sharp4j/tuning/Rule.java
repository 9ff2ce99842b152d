package org.sharp4j.tuning;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * One tuning rule: for these collectives, messages of {@code [minBytes, maxBytes)} bytes, jobs of
 * {@code [minNodes, maxNodes]} nodes with {@code [minPpn, maxPpn]} ranks per node, use this
 * algorithm with these parameters. A rule without an algorithm only sets parameters of whatever
 * algorithm an earlier rule chose (e.g. {@code all:0-inf:radix=4}).
 *
 * <p>Syntax (see {@link TuningTable} for the whole format):
 * <pre>  COLLECTIVES:LO-HI[:nodes=A-B][:ppn=A-B][:ALGORITHM][:radix=K][:chunk=SIZE][:pipeline=D]</pre>
 */
public final class Rule {
    public static final int UNSET = 0;
    public static final int MAX_RADIX = 64;
    /** Most SHARP operations of one call in flight: well below the 16 a switch group (and the emulator) keeps apart. */
    public static final int MAX_PIPELINE = 8;

    private final Set<Collective> collectives;
    private final long minBytes;
    private final long maxBytes;
    private final int minNodes;
    private final int maxNodes;
    private final int minPpn;
    private final int maxPpn;
    private final Algorithm algorithm;
    private final int radix;
    private final int chunk;
    private final int pipeline;
    private final String origin;
    private final Provenance provenance;

    /**
     * Where a table file's rule says it came from: its section header's {@code measured} or
     * {@code modelled} (see {@link TuningTable}); null for rules written by hand and for the other sources.
     */
    public enum Provenance {
        MEASURED("measured on this cluster"), MODELLED("modelled");

        private final String label;

        Provenance(String label) {
            this.label = label;
        }

        /** The word in a section header. */
        public String key() {
            return name().toLowerCase(Locale.ROOT);
        }

        /** What {@code sharp4j info} says. */
        public String label() {
            return label;
        }
    }

    public Rule(Set<Collective> collectives, long minBytes, long maxBytes, int minNodes, int maxNodes, int minPpn, int maxPpn,
            Algorithm algorithm, int radix, int chunk, String origin) {
        this(collectives, minBytes, maxBytes, minNodes, maxNodes, minPpn, maxPpn, algorithm, radix, chunk, origin, null);
    }

    public Rule(Set<Collective> collectives, long minBytes, long maxBytes, int minNodes, int maxNodes, int minPpn, int maxPpn,
            Algorithm algorithm, int radix, int chunk, String origin, Provenance provenance) {
        this(collectives, minBytes, maxBytes, minNodes, maxNodes, minPpn, maxPpn, algorithm, radix, chunk, UNSET, origin, provenance);
    }

    /** @param pipeline SHARP operations in flight (1..{@link #MAX_PIPELINE}), or {@link #UNSET} */
    public Rule(Set<Collective> collectives, long minBytes, long maxBytes, int minNodes, int maxNodes, int minPpn, int maxPpn,
            Algorithm algorithm, int radix, int chunk, int pipeline, String origin, Provenance provenance) {
        if (collectives.isEmpty()) {
            throw new IllegalArgumentException("a rule needs at least one collective");
        }
        if (minBytes < 0 || maxBytes <= minBytes) {
            throw new IllegalArgumentException("empty size range " + minBytes + "-" + maxBytes);
        }
        if (pipeline != UNSET && (pipeline < 1 || pipeline > MAX_PIPELINE)) {
            throw new IllegalArgumentException("pipeline must be in 1.." + MAX_PIPELINE + ", got " + pipeline);
        }
        if (pipeline != UNSET && algorithm != null && !algorithm.takesPipeline()) {
            throw new IllegalArgumentException(algorithm.key() + " takes no pipeline");
        }
        this.collectives = EnumSet.copyOf(collectives);
        this.minBytes = minBytes;
        this.maxBytes = maxBytes;
        this.minNodes = minNodes;
        this.maxNodes = maxNodes;
        this.minPpn = minPpn;
        this.maxPpn = maxPpn;
        this.algorithm = algorithm;
        this.radix = radix;
        this.chunk = chunk;
        this.pipeline = pipeline;
        this.origin = origin;
        this.provenance = provenance;
    }

    /** A copy with another origin (where it came from, for {@code sharp4j info}). */
    public Rule withOrigin(String o) {
        return new Rule(collectives, minBytes, maxBytes, minNodes, maxNodes, minPpn, maxPpn, algorithm, radix, chunk, pipeline, o,
                provenance);
    }

    /** Measured or modelled (from the section of a table file), or null. */
    public Provenance provenance() {
        return provenance;
    }

    public Set<Collective> collectives() {
        return EnumSet.copyOf(collectives);
    }

    public boolean appliesTo(Collective c) {
        return collectives.contains(c);
    }

    public boolean appliesTo(int nodes, int ppn) {
        return nodes >= minNodes && nodes <= maxNodes && ppn >= minPpn && ppn <= maxPpn;
    }

    public long minBytes() {
        return minBytes;
    }

    /** Exclusive; {@link Long#MAX_VALUE} for "inf". */
    public long maxBytes() {
        return maxBytes;
    }

    public int minNodes() {
        return minNodes;
    }

    public int maxNodes() {
        return maxNodes;
    }

    public int minPpn() {
        return minPpn;
    }

    public int maxPpn() {
        return maxPpn;
    }

    /** Null for a parameter-only rule. */
    public Algorithm algorithm() {
        return algorithm;
    }

    /** Whether this rule configures the intra-node layer (parameter-only rules: by their parameters). */
    public boolean intraNode() {
        if (algorithm != null) {
            return algorithm.intraNode();
        }
        return true; // radix/chunk/pipeline patches apply to both layers where the algorithm takes them
    }

    public int radix() {
        return radix;
    }

    public int chunk() {
        return chunk;
    }

    /** SHARP operations of one call in flight, or {@link #UNSET}. */
    public int pipeline() {
        return pipeline;
    }

    public String origin() {
        return origin;
    }

    /** The rule in the syntax it is parsed from (round-trips through {@link RuleParser}). */
    @Override
    public String toString() {
        List<String> f = new ArrayList<>();
        if (collectives.size() == Collective.values().length) {
            f.add("all");
        } else {
            List<String> cs = new ArrayList<>();
            for (Collective c : collectives) {
                cs.add(c.name().toLowerCase(Locale.ROOT));
            }
            f.add(String.join(",", cs));
        }
        f.add(Sizes.format(minBytes) + "-" + Sizes.format(maxBytes));
        if (minNodes != 1 || maxNodes != Integer.MAX_VALUE) {
            f.add("nodes=" + intRange(minNodes, maxNodes));
        }
        if (minPpn != 1 || maxPpn != Integer.MAX_VALUE) {
            f.add("ppn=" + intRange(minPpn, maxPpn));
        }
        if (algorithm != null) {
            f.add(algorithm.key());
        }
        if (radix != UNSET) {
            f.add("radix=" + radix);
        }
        if (chunk != UNSET) {
            f.add("chunk=" + Sizes.format(chunk));
        }
        if (pipeline != UNSET) {
            f.add("pipeline=" + pipeline);
        }
        return String.join(":", f);
    }

    private static String intRange(int a, int b) {
        if (a == b) {
            return Integer.toString(a);
        }
        return a + "-" + (b == Integer.MAX_VALUE ? "inf" : Integer.toString(b));
    }
}
