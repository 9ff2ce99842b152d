package org.sharp4j.tuning;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * The tuning rules of a job and where each came from. Four sources, lowest precedence first:
 *
 * <ol>
 *   <li><b>built-in</b> defaults ({@link #BUILT_IN}: paper 001's tree/tiled crossover, UCC's
 *       k-nomial/SRA switch, paper 004's and HCOLL's SHARP limits);</li>
 *   <li>a <b>table file</b>: {@code -Dsharp4j.tune.file=PATH} or {@code SHARP4J_TUNE_FILE}
 *       (as written by {@code sharp4j tune});</li>
 *   <li>the <b>legacy properties</b> {@code sharp4j.tree.radix} (radix of every tree and k-nomial
 *       rule) and {@code sharp4j.tiled.threshold} (tree up to and including it, tiled above), or
 *       {@code Config.withTuning(IntraNodeTuning)};</li>
 *   <li>the <b>override string</b>: {@code -Dsharp4j.tune=...} or {@code SHARP4J_TUNE} (a
 *       property beats the variable), rules joined by {@code #} like UCC's TUNE strings:
 *       {@code allreduce:0-16k:tree:radix=2#allreduce:16k-inf:tiled}.</li>
 * </ol>
 *
 * <p><b>Format.</b> One rule a line in files ({@code #} to the end of a line is a comment, blank
 * lines are ignored); {@code #}-separated in the override string. A rule is colon-separated:
 * <pre>
 *   COLLECTIVES : LO-HI [: nodes=A-B] [: ppn=A-B] [: ALGORITHM] [: radix=K] [: chunk=SIZE] [: pipeline=D]
 * </pre>
 * <ul>
 *   <li>COLLECTIVES: {@code allreduce}, {@code reduce}, {@code barrier}, a comma list, or {@code all};</li>
 *   <li>LO-HI: message bytes, LO inclusive, HI exclusive, with k/M/G suffixes (powers of 1024) and
 *       {@code inf}: {@code 0-4k} is 0..4095 bytes, {@code 4k-inf} from 4096 bytes;</li>
 *   <li>{@code nodes=A-B}, {@code ppn=A-B}: inclusive, {@code A}, {@code A-B} or {@code A-inf}; the rule
 *       is ignored for other job shapes (default: any);</li>
 *   <li>ALGORITHM: intra-node {@code tree} (param radix, 2..64) or {@code tiled} (param chunk,
 *       multiple of 64 bytes, default and maximum the slot size {@code sharp4j.slot.bytes}) or, for
 *       reduce alone, {@code direct} (param chunk, as tiled; one socket of one node, tiled elsewhere) or
 *       {@code cma} (as direct, members' direct buffers read by the root from their processes; direct
 *       where the ranks cannot read each other's memory);
 *       inter-node {@code sharp} (param pipeline: SHARP operations of one long call in flight, 1..8, default 4;
 *       the property {@code sharp4j.sharp.pipeline} overrides it), {@code knomial} (radix), {@code sra} (radix).
 *       The SHARP size limit is the HI of the sharp rule, the minimum node count its {@code nodes=A-inf};</li>
 *   <li>a rule without ALGORITHM sets only parameters, on whatever algorithm applies there.</li>
 * </ul>
 * <b>Sections</b> (files only): a line {@code [nodes=A-B:ppn=A-B:measured]} applies its shape to the
 * rules after it (intersected with a rule's own nodes=/ppn=; a rule outside it is an error) and
 * records their provenance, {@code measured} (on this cluster, by {@code sharp4j tune}) or
 * {@code modelled} (by {@code sharp4j model --seed-table}); both words and the fields are optional,
 * {@code []} ends a section. {@code sharp4j tune} writes one measured section per job shape it ran at
 * and merges it into the file, keeping the other sections; {@code sharp4j info} shows each choice's
 * provenance ({@link CompiledTable#intraProvenance}).
 * Rules paint the size axis: within a source later rules override earlier ones, and every
 * source overrides the ones before it, only where its rules apply. Parameters a rule leaves
 * unset keep the value of the rule it overrides when the algorithm is the same, else the default
 * (tree radix 2, k-nomial and SRA radix 4, tiled chunk = slot). The engine clamps: a tree rule for
 * a message larger than the slot runs tiled; barrier always runs the tree.
 */
public final class TuningTable {
    public static final String PROP_TUNE = "sharp4j.tune";
    public static final String PROP_FILE = "sharp4j.tune.file";
    public static final String ENV_TUNE = "SHARP4J_TUNE";
    public static final String ENV_FILE = "SHARP4J_TUNE_FILE";

    /** The built-in rules, with the reasons (they are shown by {@code sharp4j info}). */
    public static final List<String> BUILT_IN = List.of(
            "# intra-node: paper 001, binary trees are optimal inside a socket for small vectors,",
            "# and tree and tiled cross near 14-16 KB (eq. 5 vs 11); tree up to and including 16 KiB",
            "allreduce,reduce:0-16385:tree:radix=2",
            "allreduce,reduce:16385-inf:tiled",
            "# Reduce on one socket of one node, up to 4 ranks: the root folds the members' chunks straight into its",
            "# output as they are published (direct); measured at 2 and 4 ranks, 64 KiB-1 MiB, the root 1.3-2.8x faster",
            "# than tiled's (best of 600-1500 calls on a loaded machine). Several sockets or nodes run tiled.",
            "reduce:16385-inf:nodes=1:ppn=1-4:direct",
            "# (4 ranks from 8 MiB ran pipelined until 2026-12-01, where the root alone moving five streams of the message",
            "# bounds the direct Reduce and the pipelined one spreads the fold: --compare tune, 6 runs, direct/pipelined",
            "# 1.12-1.32 at 8 MiB, 0.91-1.22 at 16 MiB, 0.81-1.21 at 4 MiB, 0.57-1.0 below; 2 ranks 0.79-0.87 and 3 ranks",
            "# 0.78-1.12. cma_split took that place from 4 MiB, below.)",
            "# Allreduce on one node from 64 KiB: tiled pipelined over three chunks in flight (pipelined); measured against",
            "# tiled in the same processes, alternating: 2 ranks 0.5-1.05x at 64 KiB-4 MiB, 4 ranks on 2 cores 0.75-1.0x at",
            "# 64 KiB-2 MiB, 8 ranks 0.8-1.06x; at 32 KiB (one chunk) it lost (1.1-1.5x). Several sockets run tiled.",
            "allreduce:65536-inf:nodes=1:pipelined",
            "# ...and where every rank's input and output are direct buffers, the split cma Allreduce: each rank folds its slice",
            "# of all inputs, read from the others' processes (process_vm_readv), and writes it into their outputs",
            "# (process_vm_writev); other calls run pipelined. --compare tune against the pipelined Allreduce (same processes,",
            "# blocks alternating), Intel VM: 2 ranks 1.63-2.62x as fast at 32 KiB-4 MiB and 1.16-1.54x at 8-16 MiB (3 runs);",
            "# 3 and 4 ranks on the 2 cores 1.04-1.57x from 128 KiB (3 ranks) and 256 KiB (4), 0.55-1.08x below (2 runs each)",
            "allreduce:65536-inf:nodes=1:ppn=2:cma_split",
            "# (where such a read costs more than 4x a fold, PeerReads.pairSplitGate, pipelined: a page pinned per 4 KiB each way;",
            "# AMD EPYC VM with PTI at 4.4-5.0, the pipelined one 0.32-0.74x Open MPI Java at 64 KiB-16 MiB, the split one 0.54-1.10x)",
            "# (where a read of another process costs more than 3x a fold of it, PeerReads.costGate, those of 3-4 ranks run",
            "# pipelined: AMD EPYC VM with PTI, 4 ranks, the pipelined one 1.11-1.56x as fast at 256 KiB-16 MiB, 2 runs)",
            "allreduce:262144-inf:nodes=1:ppn=3-4:cma_split",
            "barrier:0-inf:tree:radix=2",
            "# the exchange (every rank reads every contribution: one cache-line transfer where a tree needs two) for",
            "# small messages and up to 32 ranks per node; measured at 2 ranks: 8 B 0.27 us against the tree's 0.29,",
            "# equal at 128-256 B, slower from 512 B (it reads q slots)",
            "allreduce,reduce,barrier:0-257:ppn=1-32:exchange",
            "# two ranks on one node: each folds x0 op x1 from where the operands lie straight into its output, the peer's",
            "# lines loaded together first up to 1 KiB (ExchangeAlgorithm.runPair), so the exchange's two folds in parallel",
            "# beat the tree's fold then copy; OSU port, same processes, 3 runs: Allreduce 0.84-0.94x the tree's P50 at",
            "# 2-16 KiB; Reduce (4 runs) 0.66-0.85x at 512 B-1 KiB, 0.90-1.0x at 2-8 KiB; at 16 KiB the tree's leaf streams",
            "# (Payload.STREAM_MIN_BYTES) and took 0.24-0.69x the exchange's time. Up to 64 KiB - 1 rather than tiled since",
            "# 2026-12-01: OSU port, same processes, tiled/exchange 1.02-1.14 at 24-48 KiB (0.98 at 56 KiB); calls back to back",
            "# (OMB Java through the agent) 0.31-0.6x Open MPI's time at 32-56 KiB where tiled took 0.83-4.9x: the exchange is",
            "# the small calls' heated code, and a rank copies its next call into the next set while the other still reads",
            "allreduce:257-65536:nodes=1:ppn=2:exchange",
            "reduce:257-16384:nodes=1:ppn=2:exchange",
            "# two ranks on one node, 16-256 KiB: the root reads the other's input from its process (process_vm_readv) instead",
            "# of the other copying it into shared memory (cma; direct where the ranks cannot read each other). OSU port,",
            "# --compare tune (same processes), Intel VM, 2 runs: direct/cma 1.16-1.26 at 16 KiB, 1.10-1.87 at 32-256 KiB,",
            "# 0.74-1.11 at 512 KiB, 0.62-0.74 at 1 MiB; 3 and 4 ranks on 2 cores 0.5-1.13 (not taken)",
            "# (These cma and cma_split Reduces, as the 4-rank one below, run where sharp4j.cma=auto finds reading another",
            "# process cheap, PeerReads.costGate: on an AMD EPYC VM with PTI a 16 KiB process_vm_readv took 3.6-3.9x a fold",
            "# of it and there the direct Reduce took 0.45-0.95x their time at 16 KiB-16 MiB, 2026-12-02; elsewhere direct.)",
            "reduce:16384-262145:nodes=1:ppn=2:cma",
            "# ...and from 512 KiB each of the two folds half of the message, reading the other's half of it from its process,",
            "# the member writing its half of the result into the root's output (process_vm_writev): cma_split. OSU port,",
            "# --compare tune (same processes, blocks alternating), Intel VM, direct/cma_split: in its fast phase (2 runs)",
            "# 0.97-1.61 at 512 KiB, 1.24-1.67 at 1 MiB, 1.13-1.57 at 2-16 MiB, in its slow one (4 runs) 0.86-1.52 at 512 KiB,",
            "# 0.96-1.12 at 1 MiB, 0.89-1.25 at 2-16 MiB; cma_split took 1.1-1.3x cma's time at 64-256 KiB (three system",
            "# calls and a flag from each rank per call); 4 ranks on 2 cores 0.64-0.68 at 512 KiB-1 MiB (not taken)",
            "reduce:524288-inf:nodes=1:ppn=2:cma_split",
            "# ...and 4 ranks from 4 MiB, where the root alone folding 4 inputs (direct) or the pipelined fold's copies bound",
            "# the call: --compare tune, 3 runs, 4 ranks on this VM's 2 cores, built-in/cma_split 1.11-1.57 at 4 MiB (direct),",
            "# 1.44-1.74 at 8 MiB and 1.38-1.71 at 16 MiB (pipelined), 0.88-1.01 at 2 MiB; 3 ranks 0.84-1.28 and 8 ranks",
            "# 0.93-1.19 from 1 MiB (not taken). Where the ranks cannot read each other it runs as direct, not pipelined",
            "reduce:4m-inf:nodes=1:ppn=4:cma_split",
            "# inter-node host path (UCX over TCP, 4 nodes, sweep of issue 3): recursive k-ing radix 2-3 is fastest",
            "# up to 16 KiB (SRA 2x slower at 4 KiB), SRA radix 4 from 32 KiB (1.5x faster than k-ing at 1 MiB);",
            "# UCC's 4 KiB crossover assumes RDMA. Barrier and argument checks ride the radix of 0-byte allreduce.",
            "allreduce:0-16k:knomial:radix=2",
            "allreduce:16k-inf:sra:radix=4",
            "# with the host path's messages sent eagerly over TCP (no rendezvous round trip each; UcxTransport) k-ing",
            "# radix 2 keeps its lead longer; netns rig, same processes: at 4 hosts SRA radix 4 took 1.03-1.09x its time",
            "# at 16-32 KiB, 0.55-0.82x from 64 KiB; at 3 hosts 2.3-2.4x at 16-32 KiB, 1.2-1.4x at 64 KiB, 0.91-1.16x above",
            "allreduce:16k-64k:knomial:radix=2",
            "# re-measured with a long call's later parts posted (3 hosts x 1 rank, same processes, alternating, 3 rounds):",
            "# SRA radix 3 took 1.5-1.7x k-ing radix 2's time at 128 KiB and 1.2-1.3x at 256 KiB; from 512 KiB it wins",
            "allreduce:64k-512k:nodes=3:knomial:radix=2",
            "# with several ranks per node a long call reaches the host path a slot (64 KiB) at a time, where SRA's",
            "# blocks are small: 3 hosts x 2 ranks, 2 rounds, SRA radix 3 took 1.4-1.6x k-ing's time at 512 KiB-4 MiB;",
            "# with one rank per node, since a radix-2 round's one peer is received into the result (PostedRounds),",
            "# SRA radix 4 (run as 3) took 1.00-1.26x k-ing radix 2's time at 512 KiB-16 MiB (one row 0.96; 3 hosts x",
            "# 1 rank, same processes, blocks alternating, 3 runs)",
            "allreduce:512k-inf:nodes=3:knomial:radix=2",
            "# two nodes: recursive doubling is one exchange of the whole vector where SRA is two of half of it (the same",
            "# bytes, twice the rounds); measured on the netns rig (2 hosts, UCX over TCP, same processes): SRA radix 4",
            "# took 1.04-1.9x the time of k-ing radix 2 from 16 KiB to 4 MiB",
            "allreduce:16k-inf:nodes=2:knomial:radix=2",
            "# ...except one rank per node from 512 KiB, since the host path's later parts go out in 512 KiB fragments",
            "# (HostStep's large fragments) and every byte received over TCP pays UCX's copy out of its receive buffer:",
            "# there folding half the vector (SRA radix 2) beats folding all of it. Same processes, blocks alternating",
            "# (--compare tune), 2 runs: recursive doubling took 1.09-1.21x SRA's time at 1-16 MiB, 1.01-1.09x at 512 KiB,",
            "# 0.91-0.92x at 256 KiB (Intel VM, 2 vCPUs; on the earlier AMD VM 1 MiB 0.90x, 2-8 MiB within 1%)",
            "# Since long messages go from a second UCX worker (one way per TCP socket, UcxTransport) recursive doubling",
            "# leads again below 2 MiB: --compare tune, 7 runs (2 hosts x 1 rank, AMD VM, 2 vCPUs, P50): k-ing took",
            "# 0.65-1.11x SRA's time at 512 KiB (median 0.85), 0.76-1.05x at 1 MiB (0.80), 0.64-1.29x at 2 MiB (1.03)",
            "# and 1.01-1.20x at 4 MiB (1.08); so SRA from 2 MiB",
            "# Since the host path's sockets run reno rather than bbr (UcxTransport, TcpCongestion) SRA leads from 512 KiB:",
            "# --compare tune, 4 runs (2 hosts x 1 rank, AMD VM, 2 vCPUs, P50, 10 blocks): k-ing took 1.00-1.07x SRA's time",
            "# at 512 KiB, 1.05-1.16x at 1 MiB and 0.88-0.93x at 256 KiB (from 2 MiB, SRA on both sides: 0.97-1.01x)",
            "allreduce:512k-inf:nodes=2:ppn=1:sra:radix=2",
            "reduce:0-inf:knomial:radix=4",
            "# three nodes from 256 KiB: the binomial tree's first child is received into the root's result",
            "# (PostedRounds), where radix 4 makes the root fold both children from scratch; 3 hosts x 1 rank, same",
            "# processes, blocks alternating, 2 runs: radix 4 took 1.04-1.22x radix 2's time at 256 KiB-16 MiB",
            "# (0.73-1.0 below); since the sockets run reno (UcxTransport, TcpCongestion) radix 2 leads from 16 KiB too:",
            "# --compare tune, 3 hosts x 1 rank, 6 runs (3 with the rig's flows steered to their readers' CPUs, where two",
            "# identical communicators agree within 6%), radix 4 took 1.02-1.24x radix 2's time at 32 KiB, 0.85-1.47x at",
            "# 64 KiB (median 0.99 over 9 runs) and 1.11-2.15x at 128 KiB",
            "reduce:16385-inf:nodes=3:knomial:radix=2",
            "# three nodes up to and including 16 KiB: the radix of the spine (2 there), so that the reduce runs its tree inside the",
            "# spine's rounds (KnomialReduce.runMerged) instead of the spine and then a radix-3 tree; 3 hosts x 1 rank,",
            "# OSU port, variants alternating, 4 rounds: 0.61-0.87x the time at 8 B-4 KiB and 16 KiB (8 KiB 0.96), but",
            "# 1.13-1.18x at 32-128 KiB, where the tree's one round of two children wins",
            "reduce:0-16385:nodes=3:knomial:radix=2",
            "barrier:0-inf:knomial:radix=8",
            "# SHARP: paper 004 measured flat latency up to 2 KiB; HCOLL_SHARP_NP: from 4 nodes",
            "all:0-2k:nodes=4-inf:sharp");

    /** Source slots, lowest precedence first. */
    public enum Level {
        BUILT_IN("built-in"), FILE("table file"), LEGACY("legacy property"), OVERRIDE("override string");

        private final String label;

        Level(String label) {
            this.label = label;
        }

        public String label() {
            return label;
        }
    }

    /** Rules of one source and a name for it (file path, property name). */
    public static final class Source {
        private final Level level;
        private final String name;
        private final List<Rule> rules;

        Source(Level level, String name, List<Rule> rules) {
            this.level = level;
            this.name = name;
            this.rules = Collections.unmodifiableList(new ArrayList<>(rules));
        }

        public Level level() {
            return level;
        }

        public String name() {
            return name;
        }

        public List<Rule> rules() {
            return rules;
        }
    }

    private final Source[] sources = new Source[Level.values().length];

    private TuningTable() {
    }

    private TuningTable copy() {
        TuningTable t = new TuningTable();
        System.arraycopy(sources, 0, t.sources, 0, sources.length);
        return t;
    }

    /** Only the built-in rules. */
    public static TuningTable builtIn() {
        TuningTable t = new TuningTable();
        t.sources[Level.BUILT_IN.ordinal()] = new Source(Level.BUILT_IN, "built-in",
                RuleParser.parseLines(BUILT_IN, "built-in"));
        return t;
    }

    /** Reads the sources from properties, with environment variables as fallbacks (see the class comment). */
    public static TuningTable resolve(Properties p, Map<String, String> env) {
        TuningTable t = builtIn();
        String file = p.getProperty(PROP_FILE);
        String fileFrom = PROP_FILE;
        if (file == null && env.get(ENV_FILE) != null) {
            file = env.get(ENV_FILE);
            fileFrom = ENV_FILE;
        }
        if (file != null && !file.isBlank()) {
            t = t.withFile(Path.of(file.trim()), fileFrom);
        }
        String radix = p.getProperty("sharp4j.tree.radix");
        String thr = p.getProperty("sharp4j.tiled.threshold");
        if (radix != null || thr != null) {
            t = t.withLegacy(radix == null ? Rule.UNSET : parseRadix(radix), thr == null ? -1 : parseThreshold(thr));
        }
        String tune = p.getProperty(PROP_TUNE);
        String tuneFrom = PROP_TUNE;
        if (tune == null && env.get(ENV_TUNE) != null) {
            tune = env.get(ENV_TUNE);
            tuneFrom = ENV_TUNE;
        }
        if (tune != null && !tune.isBlank()) {
            t = t.withOverride(tune, tuneFrom);
        }
        return t;
    }

    private static int parseRadix(String s) {
        int r;
        try {
            r = Integer.parseInt(s.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("sharp4j.tree.radix is not a number: '" + s + "'", e);
        }
        if (r < 2 || r > Rule.MAX_RADIX) {
            throw new IllegalArgumentException("sharp4j.tree.radix must be in 2.." + Rule.MAX_RADIX + ", got " + r);
        }
        return r;
    }

    private static long parseThreshold(String s) {
        long v;
        try {
            v = Sizes.parseBytes(s);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("sharp4j.tiled.threshold=" + s + ": " + e.getMessage(), e);
        }
        if (v < 0) {
            throw new IllegalArgumentException("sharp4j.tiled.threshold must be >= 0 bytes, got " + s);
        }
        if (v > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("sharp4j.tiled.threshold too large: " + v);
        }
        return v;
    }

    /** Replaces the table-file source with the rules of {@code file} ({@code from}: the property or variable that named it). */
    public TuningTable withFile(Path file, String from) {
        TuningTable t = copy();
        List<Rule> rules = RuleParser.parseFile(file);
        t.sources[Level.FILE.ordinal()] = new Source(Level.FILE, file + " (" + from + ")", rules);
        return t;
    }

    /** Replaces the table-file source with rules given as lines (tests, tools). */
    public TuningTable withFileLines(List<String> lines, String name) {
        TuningTable t = copy();
        t.sources[Level.FILE.ordinal()] = new Source(Level.FILE, name, RuleParser.parseLines(lines, name));
        return t;
    }

    /** Replaces the override string. */
    public TuningTable withOverride(String tune, String from) {
        TuningTable t = copy();
        List<Rule> rules = RuleParser.parseOverride(tune, from);
        t.sources[Level.OVERRIDE.ordinal()] = rules.isEmpty() ? null : new Source(Level.OVERRIDE, from, rules);
        return t;
    }

    /**
     * Replaces the legacy source: {@code radix} (or {@link Rule#UNSET}) for every tree and host
     * k-nomial/SRA rule, {@code threshold} (or -1) the largest tree message of allreduce and reduce.
     */
    public TuningTable withLegacy(int radix, long threshold) {
        TuningTable t = copy();
        List<Rule> rules = new ArrayList<>();
        EnumSet<Collective> data = EnumSet.of(Collective.ALLREDUCE, Collective.REDUCE);
        if (threshold >= 0) {
            rules.add(new Rule(data, 0, threshold + 1, 1, Integer.MAX_VALUE, 1, Integer.MAX_VALUE, Algorithm.TREE,
                    Rule.UNSET, Rule.UNSET, "sharp4j.tiled.threshold"));
            rules.add(new Rule(data, threshold + 1, Long.MAX_VALUE, 1, Integer.MAX_VALUE, 1, Integer.MAX_VALUE,
                    Algorithm.TILED, Rule.UNSET, Rule.UNSET, "sharp4j.tiled.threshold"));
        }
        if (radix != Rule.UNSET) {
            rules.add(new Rule(EnumSet.allOf(Collective.class), 0, Long.MAX_VALUE, 1, Integer.MAX_VALUE, 1,
                    Integer.MAX_VALUE, null, radix, Rule.UNSET, "sharp4j.tree.radix"));
        }
        t.sources[Level.LEGACY.ordinal()] = rules.isEmpty() ? null
                : new Source(Level.LEGACY, "sharp4j.tree.radix / sharp4j.tiled.threshold", rules);
        return t;
    }

    /** The same as {@link #withLegacy} with both values given (what {@code Config.withTuning} does). */
    public TuningTable withLegacy(IntraNodeTuning t) {
        return withLegacy(t.treeRadix(), t.tiledThresholdBytes());
    }

    /** Sources present, lowest precedence first. */
    public List<Source> sources() {
        List<Source> out = new ArrayList<>();
        for (Source s : sources) {
            if (s != null) {
                out.add(s);
            }
        }
        return out;
    }

    public Source source(Level l) {
        return sources[l.ordinal()];
    }

    /** Resolves the rules for a job of {@code nodes} nodes with at most {@code ppn} ranks per node. */
    public CompiledTable compile(int nodes, int ppn) {
        List<List<CompiledTable.Seg>> intra = new ArrayList<>();
        List<List<CompiledTable.Seg>> inter = new ArrayList<>();
        for (Collective c : Collective.values()) {
            List<CompiledTable.Seg> a = new ArrayList<>();
            a.add(new CompiledTable.Seg(0, Long.MAX_VALUE, Algorithm.TREE, CompiledTable.DEFAULT_TREE_RADIX, 0, Rule.UNSET, "default", "default"));
            List<CompiledTable.Seg> b = new ArrayList<>();
            b.add(new CompiledTable.Seg(0, Long.MAX_VALUE, Algorithm.KNOMIAL, CompiledTable.DEFAULT_KNOMIAL_RADIX, 0, Rule.UNSET, "default", "default"));
            for (Source s : sources) {
                if (s == null) {
                    continue;
                }
                for (Rule r : s.rules) {
                    if (!r.appliesTo(c) || !r.appliesTo(nodes, ppn)) {
                        continue;
                    }
                    String origin = s.level == Level.BUILT_IN ? "built-in: " + r : r.origin() + ": " + r;
                    String prov = s.level == Level.BUILT_IN ? "built in" : r.provenance() != null ? r.provenance().label() : s.level.label();
                    if (r.algorithm() == null) {
                        a = paint(a, r, origin, prov);
                        b = paint(b, r, origin, prov);
                    } else if (r.algorithm().intraNode()) {
                        a = paint(a, r, origin, prov);
                    } else {
                        b = paint(b, r, origin, prov);
                    }
                }
            }
            intra.add(merge(a));
            inter.add(merge(b));
        }
        return new CompiledTable(nodes, ppn, intra, inter);
    }

    private static int defaultRadix(Algorithm a) {
        switch (a) {
            case TREE:
            case EXCHANGE: return CompiledTable.DEFAULT_TREE_RADIX;
            case KNOMIAL: return CompiledTable.DEFAULT_KNOMIAL_RADIX;
            case SRA: return CompiledTable.DEFAULT_SRA_RADIX;
            default: return 0;
        }
    }

    private static List<CompiledTable.Seg> paint(List<CompiledTable.Seg> segs, Rule r, String origin, String prov) {
        List<CompiledTable.Seg> out = new ArrayList<>();
        long lo = r.minBytes();
        long hi = r.maxBytes();
        for (CompiledTable.Seg s : segs) {
            if (s.hi <= lo || s.lo >= hi) {
                out.add(s);
                continue;
            }
            if (s.lo < lo) {
                out.add(s.range(s.lo, lo));
            }
            long a = Math.max(s.lo, lo);
            long b = Math.min(s.hi, hi);
            if (r.algorithm() == null) {
                boolean radixApplies = r.radix() != Rule.UNSET && s.alg.takesRadix();
                boolean chunkApplies = r.chunk() != Rule.UNSET && s.alg.takesChunk();
                boolean pipelineApplies = r.pipeline() != Rule.UNSET && s.alg.takesPipeline();
                if (radixApplies || chunkApplies || pipelineApplies) {
                    out.add(new CompiledTable.Seg(a, b, s.alg, radixApplies ? r.radix() : s.radix,
                            chunkApplies ? r.chunk() : s.chunk, pipelineApplies ? r.pipeline() : s.pipeline, s.origin + "; " + origin,
                            s.provenance.equals(prov) ? prov : s.provenance + "; " + prov));
                } else {
                    out.add(s.range(a, b));
                }
            } else {
                boolean same = s.alg == r.algorithm();
                int radix = r.radix() != Rule.UNSET ? r.radix() : same ? s.radix : defaultRadix(r.algorithm());
                int chunk = r.chunk() != Rule.UNSET ? r.chunk() : same ? s.chunk : 0;
                int pipeline = r.pipeline() != Rule.UNSET ? r.pipeline() : same ? s.pipeline : Rule.UNSET;
                out.add(new CompiledTable.Seg(a, b, r.algorithm(), radix, chunk, pipeline, origin, prov));
            }
            if (s.hi > hi) {
                out.add(s.range(hi, s.hi));
            }
        }
        return out;
    }

    private static List<CompiledTable.Seg> merge(List<CompiledTable.Seg> segs) {
        List<CompiledTable.Seg> out = new ArrayList<>();
        for (CompiledTable.Seg s : segs) {
            if (!out.isEmpty() && out.get(out.size() - 1).sameChoice(s)) {
                CompiledTable.Seg p = out.remove(out.size() - 1);
                out.add(p.range(p.lo, s.hi));
            } else {
                out.add(s);
            }
        }
        return out;
    }

    /** Every source and its rules, for {@code sharp4j info}. */
    public List<String> describeSources() {
        List<String> out = new ArrayList<>();
        for (Source s : sources) {
            if (s == null) {
                continue;
            }
            out.add(s.level.label() + " (" + s.name + "), " + s.rules.size() + " rule(s):");
            for (Rule r : s.rules) {
                out.add("  " + r + (s.level == Level.BUILT_IN ? "" : "    # " + r.origin()
                        + (r.provenance() != null ? ", " + r.provenance().label() : "")));
            }
        }
        return out;
    }

    @Override
    public String toString() {
        List<String> names = new ArrayList<>();
        for (Source s : sources) {
            if (s != null) {
                names.add(s.level.label() + (s.level == Level.BUILT_IN ? "" : " " + s.name));
            }
        }
        return String.join(" < ", names);
    }

    static List<String> lines(String... s) {
        return Arrays.asList(s);
    }
}
