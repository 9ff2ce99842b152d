package org.sharp4j;

import java.nio.file.Path;
import java.util.Properties;
import org.sharp4j.shm.WaitPolicy;
import org.sharp4j.tuning.IntraNodeTuning;
import org.sharp4j.tuning.Sizes;
import org.sharp4j.tuning.TuningTable;

/**
 * Settings of a communicator. {@link #fromSystemProperties()} reads the {@code sharp4j.*} system
 * properties; tests build variants with the {@code with*} methods. Immutable: every {@code with*} returns a copy.
 *
 * <table>
 *   <caption>Properties</caption>
 *   <tr><td>sharp4j.topology.nodes</td><td>simulate K nodes on this host (0: real hosts)</td></tr>
 *   <tr><td>sharp4j.topology.sockets</td><td>simulate S sockets per node (0: real sockets)</td></tr>
 *   <tr><td>sharp4j.topology.group</td><td>socket (default) or numa: the unit of phases 1/5</td></tr>
 *   <tr><td>sharp4j.hostname</td><td>host name used to group ranks into nodes</td></tr>
 *   <tr><td>sharp4j.slot.bytes</td><td>per-rank slot (chunk) size: auto (default: 64k, more for a job on one socket of one node, see {@code Engine.autoSlotBytes}), or a size</td></tr>
 *   <tr><td>sharp4j.shared.bytes</td><td>per-rank shared buffer size, default 1M</td></tr>
 *   <tr><td>sharp4j.tune.file (env SHARP4J_TUNE_FILE)</td><td>a tuning table file (see TuningTable for the format)</td></tr>
 *   <tr><td>sharp4j.tune (env SHARP4J_TUNE)</td><td>one-line rule override, e.g. allreduce:0-16k:tree:radix=2#allreduce:16k-inf:tiled</td></tr>
 *   <tr><td>sharp4j.tree.radix, sharp4j.tiled.threshold</td><td>legacy overrides of the table (above the file, below sharp4j.tune)</td></tr>
 *   <tr><td>sharp4j.wait</td><td>spin:20us,yield:1ms,park:50us (see WaitPolicy)</td></tr>
 *   <tr><td>sharp4j.timeout</td><td>how long to wait for a peer before failing, default 300 s</td></tr>
 *   <tr><td>sharp4j.shm.dir</td><td>where segment files live, default /dev/shm</td></tr>
 *   <tr><td>sharp4j.internode</td><td>auto (default), or the id of the inter-node host path to force: shm, ucx</td></tr>
 *   <tr><td>sharp4j.internode.fragment</td><td>auto (default: up to 512k, see HostStep.partFragBytes), or a size of 4k to 512k in pages:
 *       the host path's message size for the later parts of long calls; the same on every rank</td></tr>
 *   <tr><td>sharp4j.stores</td><td>auto (default), streaming or ordinary: how a rank writes what others read next in long calls (see StoreChoice)</td></tr>
 *   <tr><td>sharp4j.cma</td><td>auto (default), on or off: whether the ranks of a socket may read each other's memory
 *       ({@code process_vm_readv}) for the cma Reduce of the tuning table (see PeerReads); off runs it as direct;
 *       auto runs the built-in table's cma Reduces and cma_split Allreduces only where such a read is cheap here
 *       (PeerReads.costGate, PeerReads.pairSplitGate), on wherever the ranks can read each other</td></tr>
 *   <tr><td>sharp4j.warmup</td><td>JIT warm-up rounds at creation, default 16, then the hot path heated until compiled, once per JVM (0: off)</td></tr>
 * </table>
 */
public final class Config {
    public static final int DEFAULT_SLOT_BYTES = 64 * 1024;
    public static final int DEFAULT_SHARED_BYTES = 1024 * 1024;
    public static final long DEFAULT_TIMEOUT_NANOS = 300_000_000_000L;
    /** Rounds of the JIT warm-up run when a communicator is created (see Engine.warmUp). */
    public static final int DEFAULT_WARMUP_ROUNDS = 16;
    /** Default of {@code sharp4j.internode.pipeline}. */
    public static final int DEFAULT_INTER_PIPELINE = 4;
    /** The largest {@code sharp4j.internode.fragment} (the UCX transport's TCP receive segment holds it whole). */
    public static final int MAX_INTER_FRAGMENT = 512 * 1024;

    // Effectively final: only the private copy-and-set methods below write them.
    private int simulatedNodes;
    private int simulatedSockets;
    private String hostname;
    private int slotBytes = DEFAULT_SLOT_BYTES;
    /** sharp4j.slot.bytes=auto: the engine picks the slot for the job's shape ({@link #withResolvedSlot}); slotBytes holds its pick or the default. */
    private boolean slotAuto = true;
    private int sharedBytes = DEFAULT_SHARED_BYTES;
    private TuningTable table = TuningTable.builtIn();
    private String waitSpec;
    private long timeoutNanos = DEFAULT_TIMEOUT_NANOS;
    private Path shmDir = Path.of("/dev/shm");
    private boolean groupByNuma;
    private int warmupRounds = DEFAULT_WARMUP_ROUNDS;
    private String longWarmup = "auto";
    private String interNode = "auto";
    private int interPipeline = DEFAULT_INTER_PIPELINE;
    /** sharp4j.internode.fragment: 0 = auto (the host path's choice). */
    private int interFragment;
    private String stores = "auto";
    private boolean cma = true;
    /** {@code sharp4j.cma=auto}: the built-in cma Reduces are gated by the read cost (on: not gated). */
    private boolean cmaCostGate = true;

    private Config() {
    }

    private Config copy() {
        Config c = new Config();
        c.simulatedNodes = simulatedNodes;
        c.simulatedSockets = simulatedSockets;
        c.hostname = hostname;
        c.slotBytes = slotBytes;
        c.slotAuto = slotAuto;
        c.sharedBytes = sharedBytes;
        c.table = table;
        c.waitSpec = waitSpec;
        c.timeoutNanos = timeoutNanos;
        c.shmDir = shmDir;
        c.groupByNuma = groupByNuma;
        c.warmupRounds = warmupRounds;
        c.longWarmup = longWarmup;
        c.interNode = interNode;
        c.interPipeline = interPipeline;
        c.interFragment = interFragment;
        c.stores = stores;
        c.cma = cma;
        c.cmaCostGate = cmaCostGate;
        return c;
    }

    private Config validated() {
        if (simulatedNodes < 0 || simulatedSockets < 0) {
            throw new IllegalArgumentException("simulated nodes/sockets must be >= 0");
        }
        if (slotBytes < 4096 || slotBytes % 4096 != 0) {
            throw new IllegalArgumentException("sharp4j.slot.bytes must be a positive multiple of 4096, got " + slotBytes);
        }
        if (sharedBytes < 0 || sharedBytes % 4096 != 0) {
            throw new IllegalArgumentException("sharp4j.shared.bytes must be a multiple of 4096, got " + sharedBytes);
        }
        if (timeoutNanos <= 0) {
            throw new IllegalArgumentException("sharp4j.timeout must be positive");
        }
        if (!("auto".equals(longWarmup) || "on".equals(longWarmup) || "off".equals(longWarmup))) {
            throw new IllegalArgumentException("sharp4j.warmup.long must be auto, on or off, got " + longWarmup);
        }
        if (warmupRounds < 0) {
            throw new IllegalArgumentException("sharp4j.warmup must be >= 0, got " + warmupRounds);
        }
        if (interNode == null || interNode.isEmpty()) {
            throw new IllegalArgumentException("sharp4j.internode must be auto or a host path id such as shm or ucx");
        }
        if (interPipeline < 1 || interPipeline > 4) {
            throw new IllegalArgumentException("sharp4j.internode.pipeline must be 1 to 4 (chunks of a long call in flight "
                    + "between nodes, at most the 4 slot sets), got " + interPipeline);
        }
        if (interFragment != 0 && (interFragment < 4096 || interFragment > MAX_INTER_FRAGMENT || interFragment % 4096 != 0)) {
            throw new IllegalArgumentException("sharp4j.internode.fragment must be auto or a multiple of 4096 bytes from 4k to 512k, got "
                    + interFragment);
        }
        if (!("auto".equals(stores) || "streaming".equals(stores) || "ordinary".equals(stores))) {
            throw new IllegalArgumentException("sharp4j.stores must be auto (chosen per call from this rank's timings), streaming or "
                    + "ordinary, got '" + stores + "'");
        }
        if (table == null || shmDir == null) {
            throw new NullPointerException("tuning and shm dir must not be null");
        }
        return this;
    }

    public static Config defaults() {
        return new Config();
    }

    public static Config fromSystemProperties() {
        return fromProperties(System.getProperties());
    }

    public static Config fromProperties(Properties p) {
        Config c = new Config();
        c.simulatedNodes = prop(p, "sharp4j.topology.nodes", "0", Config::nonNegativeInt);
        c.simulatedSockets = prop(p, "sharp4j.topology.sockets", "0", Config::nonNegativeInt);
        c.groupByNuma = prop(p, "sharp4j.topology.group", "socket", Config::parseGroup);
        c.hostname = p.getProperty("sharp4j.hostname");
        c.slotAuto = "auto".equalsIgnoreCase(p.getProperty("sharp4j.slot.bytes", "auto").trim());
        c.slotBytes = c.slotAuto ? DEFAULT_SLOT_BYTES : prop(p, "sharp4j.slot.bytes", "64k", v -> pageMultiple(v, 4096));
        c.sharedBytes = prop(p, "sharp4j.shared.bytes", "1M", v -> pageMultiple(v, 0));
        c.table = TuningTable.resolve(p, System.getenv()); // names its own properties
        c.waitSpec = prop(p, "sharp4j.wait", null, v -> {
            WaitPolicy.parse(v, WaitPolicy.defaults(false, DEFAULT_TIMEOUT_NANOS)); // checked now, applied by the engine
            return v;
        });
        c.timeoutNanos = prop(p, "sharp4j.timeout", "300", v -> {
            long n = WaitPolicy.parseNanos(v);
            if (n <= 0) {
                throw new IllegalArgumentException("must be positive (seconds, or with a unit: 30s, 500ms)");
            }
            return n;
        });
        c.shmDir = prop(p, "sharp4j.shm.dir", "/dev/shm", Path::of);
        c.warmupRounds = prop(p, "sharp4j.warmup", Integer.toString(DEFAULT_WARMUP_ROUNDS), Config::nonNegativeInt);
        c.longWarmup = prop(p, "sharp4j.warmup.long", "auto", v -> {
            String m = v.trim().toLowerCase(java.util.Locale.ROOT);
            if (!(m.equals("auto") || m.equals("on") || m.equals("off"))) {
                throw new IllegalArgumentException("must be auto (on when the job spans several nodes or a node has more ranks than CPUs), on or off");
            }
            return m;
        });
        c.interNode = prop(p, "sharp4j.internode", "auto", v -> {
            String id = v.trim().toLowerCase(java.util.Locale.ROOT);
            if (id.isEmpty()) {
                throw new IllegalArgumentException("must be auto or a host path id such as shm or ucx");
            }
            return id;
        });
        c.interPipeline = prop(p, "sharp4j.internode.pipeline", Integer.toString(DEFAULT_INTER_PIPELINE), v -> {
            int d;
            try {
                d = Integer.parseInt(v.trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("must be 1 to 4");
            }
            if (d < 1 || d > 4) {
                throw new IllegalArgumentException("must be 1 to 4 (chunks of a long call in flight between nodes, at most the 4 slot sets)");
            }
            return d;
        });
        c.interFragment = prop(p, "sharp4j.internode.fragment", "auto", v -> {
            if ("auto".equalsIgnoreCase(v.trim())) {
                return 0;
            }
            int f = pageMultiple(v, 4096);
            if (f > MAX_INTER_FRAGMENT) {
                throw new IllegalArgumentException("must be auto or at most 512k (a multiple of 4096 bytes)");
            }
            return f;
        });
        c.stores = prop(p, "sharp4j.stores", "auto", v -> v.trim().toLowerCase(java.util.Locale.ROOT)); // checked in validated()
        String cmaMode = prop(p, "sharp4j.cma", "auto", v -> {
            String t = v.trim().toLowerCase(java.util.Locale.ROOT);
            if (!t.equals("auto") && !t.equals("on") && !t.equals("off")) {
                throw new IllegalArgumentException("must be auto (the ranks of a socket read each other's inputs where they can,"
                        + " the built-in cma Reduces where that is cheap), on (wherever they can) or off");
            }
            return t;
        });
        c.cma = !cmaMode.equals("off");
        c.cmaCostGate = cmaMode.equals("auto");
        return c.validated();
    }

    /**
     * Reads one property through {@code parse}; any error names the property and its value, e.g.
     * {@code sharp4j.timeout=-1: must be positive}. A null default leaves an absent property null.
     */
    private static <T> T prop(Properties p, String name, String def, java.util.function.Function<String, T> parse) {
        String v = p.getProperty(name, def);
        if (v == null) {
            return null;
        }
        try {
            return parse.apply(v.trim());
        } catch (IllegalArgumentException e) { // NumberFormatException too
            String why = e instanceof NumberFormatException ? "not a number" : e.getMessage();
            throw new IllegalArgumentException(name + "=" + v + ": " + why, e);
        }
    }

    private static int nonNegativeInt(String v) {
        int n = Integer.parseInt(v);
        if (n < 0) {
            throw new IllegalArgumentException("must be >= 0");
        }
        return n;
    }

    /** A size (k/M/G suffixes) that is a multiple of 4096 and at least {@code min}. */
    private static int pageMultiple(String v, int min) {
        long n = Sizes.parseBytes(v);
        if (n < min || n % 4096 != 0 || n > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("must be a multiple of 4096 bytes" + (min > 0 ? " and at least " + min : "")
                    + " and below 2 GiB");
        }
        return (int) n;
    }

    private static boolean parseGroup(String g) {
        switch (g.trim().toLowerCase(java.util.Locale.ROOT)) {
            case "socket": return false;
            case "numa": return true;
            default: throw new IllegalArgumentException("sharp4j.topology.group must be socket or numa, got '" + g + "'");
        }
    }

    public Config withSimulatedTopology(int nodes, int sockets) {
        Config c = copy();
        c.simulatedNodes = nodes;
        c.simulatedSockets = sockets;
        return c.validated();
    }

    /** A fixed slot (sharp4j.slot.bytes=N); also raises the shared buffer to at least one slot. */
    public Config withSlotBytes(int bytes) {
        Config c = copy();
        c.slotBytes = bytes;
        c.slotAuto = false;
        c.sharedBytes = Math.max(sharedBytes, bytes);
        return c.validated();
    }

    /**
     * The engine's pick for {@code sharp4j.slot.bytes=auto} at the job's shape (the config a
     * communicator then reports and hands to its inter-node step); still auto, so that another
     * communicator built from it picks again for its own shape. Ignored (this config) for a fixed slot.
     */
    public Config withResolvedSlot(int bytes) {
        if (!slotAuto) {
            return this;
        }
        Config c = copy();
        c.slotBytes = bytes;
        return c.validated();
    }

    /** Whether the slot is sharp4j.slot.bytes=auto (the engine picks it per job shape). */
    public boolean slotAuto() {
        return slotAuto;
    }

    /** {@code sharp4j.stores}: auto, streaming or ordinary. */
    public Config withStores(String mode) {
        Config c = copy();
        c.stores = mode;
        return c.validated();
    }

    /** {@code sharp4j.cma}: true for auto, false for off. */
    public Config withCma(boolean auto) {
        Config c = copy();
        c.cma = auto;
        c.cmaCostGate = true;
        return c.validated();
    }

    /** {@code sharp4j.cma=on}: peer reads wherever the ranks can, the built-in cma Reduces not gated by the read cost. */
    public Config withCmaOn() {
        Config c = copy();
        c.cma = true;
        c.cmaCostGate = false;
        return c.validated();
    }

    /** Whether this rank measures the read cost that gates the built-in cma Reduces ({@code sharp4j.cma=auto}). */
    public boolean cmaCostGate() {
        return cmaCostGate;
    }

    /** Whether the ranks of a socket may read each other's memory where they can ({@code sharp4j.cma=auto}). */
    public boolean cma() {
        return cma;
    }

    /** How calls store what other ranks read next: streaming, ordinary, or chosen per call (auto); {@code sharp4j.stores}. */
    public String stores() {
        return stores;
    }

    public Config withSharedBytes(int bytes) {
        Config c = copy();
        c.sharedBytes = bytes;
        return c.validated();
    }

    /** Sets the legacy radix and tiled threshold (the level of sharp4j.tree.radix / sharp4j.tiled.threshold). */
    public Config withTuning(IntraNodeTuning t) {
        Config c = copy();
        c.table = table.withLegacy(t);
        return c.validated();
    }

    /** Replaces the whole tuning table (all its sources). */
    public Config withTuningTable(TuningTable t) {
        Config c = copy();
        c.table = t;
        return c.validated();
    }

    /** Sets the override string (the level of sharp4j.tune), e.g. {@code allreduce:0-64:tiled}. */
    public Config withTuneOverride(String rules) {
        Config c = copy();
        c.table = table.withOverride(rules, "Config.withTuneOverride");
        return c.validated();
    }

    public Config withTimeoutNanos(long nanos) {
        Config c = copy();
        c.timeoutNanos = nanos;
        return c.validated();
    }

    /** Directory of the segment files ({@code sharp4j.shm.dir}). */
    public Config withShmDir(Path dir) {
        Config c = copy();
        c.shmDir = dir;
        return c.validated();
    }

    public Config withWait(String spec) {
        Config c = copy();
        c.waitSpec = spec;
        return c.validated();
    }

    public Config withHostname(String h) {
        Config c = copy();
        c.hostname = h;
        return c.validated();
    }

    public Config withGroupByNuma(boolean byNuma) {
        Config c = copy();
        c.groupByNuma = byNuma;
        return c.validated();
    }

    public Config withWarmupRounds(int rounds) {
        Config c = copy();
        c.warmupRounds = rounds;
        return c.validated();
    }

    /** {@code sharp4j.warmup.long}: auto, on or off (see {@link #longWarmup()}). */
    public Config withLongWarmup(String mode) {
        Config c = copy();
        c.longWarmup = mode == null ? null : mode.trim().toLowerCase(java.util.Locale.ROOT);
        return c.validated();
    }

    /** Forces the inter-node host path by id ({@code sharp4j.internode}: shm, ucx), or "auto". */
    public Config withInterNode(String id) {
        Config c = copy();
        c.interNode = id == null ? null : id.trim().toLowerCase(java.util.Locale.ROOT);
        return c.validated();
    }

    /**
     * The settings every rank of a job must share, as {@code name=value} lines: they decide the
     * segment layout, the algorithm of every call and the warm-up's calls, so ranks that differ
     * would hang or mis-read each other's memory. Compared at creation ({@code Engine}); the host
     * name, timeout and waiting policy may differ per rank.
     */
    public java.util.List<String> jobWideSettings() {
        java.util.List<String> out = new java.util.ArrayList<>();
        out.add("sharp4j.topology.nodes=" + simulatedNodes);
        out.add("sharp4j.topology.sockets=" + simulatedSockets);
        out.add("sharp4j.topology.group=" + (groupByNuma ? "numa" : "socket"));
        out.add("sharp4j.slot.bytes=" + (slotAuto ? "auto" : Integer.toString(slotBytes)));
        out.add("sharp4j.shared.bytes=" + sharedBytes);
        out.add("sharp4j.shm.dir=" + shmDir);
        out.add("sharp4j.warmup=" + warmupRounds);
        out.add("sharp4j.warmup.long=" + longWarmup);
        out.add("sharp4j.internode=" + interNode);
        out.add("sharp4j.internode.pipeline=" + interPipeline);
        out.add("sharp4j.internode.fragment=" + (interFragment == 0 ? "auto" : Integer.toString(interFragment)));
        StringBuilder rules = new StringBuilder();
        for (TuningTable.Source src : table.sources()) {
            rules.append(src.level().label()).append(':');
            for (org.sharp4j.tuning.Rule r : src.rules()) {
                rules.append(' ').append(r);
            }
            rules.append("; ");
        }
        out.add("tuning rules (sharp4j.tune, sharp4j.tune.file, sharp4j.tree.radix, sharp4j.tiled.threshold)=" + rules);
        return out;
    }

    public int simulatedNodes() {
        return simulatedNodes;
    }

    public int simulatedSockets() {
        return simulatedSockets;
    }

    /** Whether ranks are grouped by NUMA node rather than socket ({@code sharp4j.topology.group=numa}). */
    public boolean groupByNuma() {
        return groupByNuma;
    }

    /** Host name override, or null for the real one. */
    public String hostname() {
        return hostname;
    }

    public int slotBytes() {
        return slotBytes;
    }

    public int sharedBytes() {
        return sharedBytes;
    }

    /** Summary of the table for one node and one rank per node: radix of small allreduces, tiled threshold. */
    public IntraNodeTuning tuning() {
        return table.compile(1, 1).summary();
    }

    /** The tuning rules and their sources; the engine compiles them for its job shape. */
    public TuningTable tuningTable() {
        return table;
    }

    public String waitSpec() {
        return waitSpec;
    }

    public long timeoutNanos() {
        return timeoutNanos;
    }

    public Path shmDir() {
        return shmDir;
    }

    /** "auto" or the id of the forced inter-node host path. */
    public String interNode() {
        return interNode;
    }

    /**
     * Chunks of a long call in flight between nodes ({@code sharp4j.internode.pipeline}: 1 to 4; see
     * {@code TiledAlgorithm}).
     */
    public int interPipeline() {
        return interPipeline;
    }

    /**
     * The host path's message size for the posted parts of long calls ({@code
     * sharp4j.internode.fragment}), or 0 for the host path's own choice ({@code HostStep.partFragBytes}).
     */
    public int interFragment() {
        return interFragment;
    }

    /** A copy with another {@link #interFragment()} (0: auto, else 4 KiB to 512 KiB in pages). */
    public Config withInterFragment(int bytes) {
        Config c = copy();
        c.interFragment = bytes;
        return c.validated();
    }

    /** A copy with another {@link #interPipeline()} (1 to 4). */
    public Config withInterPipeline(int chunks) {
        Config c = copy();
        c.interPipeline = chunks;
        return c.validated();
    }

    /** Rounds of collectives run at creation so the JIT sees every path ({@code sharp4j.warmup}, 0 = off). */
    public int warmupRounds() {
        return warmupRounds;
    }

    /**
     * Whether this rank asks the heating at creation to run the long-message paths too, until C2
     * compiled them ({@code sharp4j.warmup.long}): {@code on}, {@code off}, or {@code auto} (the
     * default): on when the job spans several nodes or this rank's node runs more ranks than it has
     * CPUs ({@code oversubscribed}); the heating runs them when any rank asks (the ranks agree on it
     * first). Why not always: long calls in the heating leave their branches and types in the
     * profiles of the methods small calls share (the entry points, the dispatch, the waits), and C2
     * compiles those for both; on one node, 2 ranks on 2 CPUs, small calls took 1.14-1.35x their time
     * (Allreduce 16-128 B, P50, the median of 5 runs each, alternating; 8 B 0.89x; up to 1.3-2x at
     * 8 B-512 B in an earlier measurement). Between nodes a call costs tens of microseconds, and the long paths' compilations
     * during a program cost 4-12 ms calls. With more ranks than CPUs the compilations during a program
     * took the CPUs from ranks that all wait for each other: 4 ranks on 2 CPUs, the first 100-200 calls
     * of 4-16 MiB took 30-80 ms against a median of 7-10 (OSU port P99 34-77 ms, average 1.6-2x the
     * run with the long heating), while small calls there took 0.72-0.94x their time without it (8 B-4
     * KiB, P50, the median of 4 runs each).
     */
    public boolean longWarmup(int nodes, boolean oversubscribed) {
        return "on".equals(longWarmup) || "auto".equals(longWarmup) && (nodes > 1 || oversubscribed);
    }
}
