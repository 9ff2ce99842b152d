package org.sharp4j.tuning;

import java.util.Locale;

/**
 * Every algorithm a tuning rule can name. The name decides the layer the rule configures:
 * {@link #EXCHANGE}, {@link #TREE}, {@link #TILED}, {@link #DIRECT}, {@link #PIPELINED}, {@link #CMA} and {@link #CMA_SPLIT} the shared-memory phases inside a node, {@link #SHARP},
 * {@link #KNOMIAL} and {@link #SRA} phase 3 between node leaders.
 */
public enum Algorithm {
    /**
     * One-transfer exchange inside the node (every member reads every contribution); parameter
     * {@code radix}: the bracket of the k-nomial tree each member folds in, so that the exchange
     * and the tree of the same radix give the same bits.
     */
    EXCHANGE(true, true, false),
    /** k-nomial tree inside the node; parameter {@code radix}. */
    TREE(true, true, false),
    /** Tiled reduce-scatter + read-out inside the node; parameter {@code chunk}. */
    TILED(true, false, true),
    /**
     * Reduce only, one socket of one node: the root folds every member's input straight into its
     * output, chunk by chunk as they are published; parameter {@code chunk}. Elsewhere tiled runs.
     */
    DIRECT(true, false, true),
    /**
     * Allreduce and Reduce, one socket of one node: tiled software-pipelined over three chunks in
     * flight; parameter {@code chunk}. Elsewhere tiled runs.
     */
    PIPELINED(true, false, true),
    /**
     * Reduce only, one socket of one node: the direct Reduce with the root reading each member's
     * input from the member's process ({@code process_vm_readv}), no copy through shared memory;
     * parameter {@code chunk}. Where that cannot run (no native kernels, no ptrace access between
     * the ranks, {@code sharp4j.cma=off}) the direct Reduce runs; elsewhere tiled.
     */
    CMA(true, false, true),
    /**
     * Allreduce and Reduce, one socket of one node: every rank folds its slice of the message from
     * every member's input, read from their processes, and writes it into the outputs that get it
     * ({@code process_vm_writev}); parameter {@code chunk} (for calls whose buffers are not all direct
     * ones: a Reduce then runs as {@link #CMA}, an Allreduce as {@link #PIPELINED}). Where the ranks
     * cannot read each other's memory the direct Reduce and the pipelined Allreduce run; elsewhere tiled.
     */
    CMA_SPLIT(true, false, true),
    /**
     * SHARP in-network aggregation between nodes; parameter {@code pipeline}: operations of one long call
     * in flight at once (1..{@link Rule#MAX_PIPELINE}).
     */
    SHARP(false, false, false),
    /** Host k-nomial (recursive k-ing) between node leaders; parameter {@code radix}. */
    KNOMIAL(false, true, false),
    /** Host scatter-reduce-allgather (Rabenseifner, radix k) between node leaders; parameter {@code radix}. */
    SRA(false, true, false);

    private final boolean intra;
    private final boolean takesRadix;
    private final boolean takesChunk;

    Algorithm(boolean intra, boolean takesRadix, boolean takesChunk) {
        this.intra = intra;
        this.takesRadix = takesRadix;
        this.takesChunk = takesChunk;
    }

    public boolean intraNode() {
        return intra;
    }

    public boolean takesRadix() {
        return takesRadix;
    }

    public boolean takesChunk() {
        return takesChunk;
    }

    public boolean takesPipeline() {
        return this == SHARP;
    }

    public String key() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** The name as written in rules (case-insensitive, an optional UCC-style {@code @} prefix); null if unknown. */
    public static Algorithm parse(String s) {
        String t = s.trim().toLowerCase(Locale.ROOT);
        if (t.startsWith("@")) {
            t = t.substring(1);
        }
        for (Algorithm a : values()) {
            if (a.key().equals(t)) {
                return a;
            }
        }
        if (t.equals("sra_knomial")) {
            return SRA;
        }
        return null;
    }

    /** The intra-node enum the engine switches on (EXCHANGE, TREE, TILED, DIRECT, PIPELINED, CMA or CMA_SPLIT). */
    public IntraNodeAlgorithm toIntra() {
        if (this == EXCHANGE) {
            return IntraNodeAlgorithm.EXCHANGE;
        }
        if (this == TREE) {
            return IntraNodeAlgorithm.TREE;
        }
        if (this == TILED) {
            return IntraNodeAlgorithm.TILED;
        }
        if (this == DIRECT) {
            return IntraNodeAlgorithm.DIRECT;
        }
        if (this == PIPELINED) {
            return IntraNodeAlgorithm.PIPELINED;
        }
        if (this == CMA) {
            return IntraNodeAlgorithm.CMA;
        }
        if (this == CMA_SPLIT) {
            return IntraNodeAlgorithm.CMA_SPLIT;
        }
        throw new IllegalStateException(this + " is not an intra-node algorithm");
    }
}
