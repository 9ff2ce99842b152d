package org.sharp4j;

import java.nio.file.Path;
import java.util.Properties;
import org.sharp4j.shm.WaitPolicy;
import org.sharp4j.tuning.IntraNodeTuning;
import org.sharp4j.tuning.Sizes;

/**
 * Settings of a communicator. {@link #fromSystemProperties()} reads the {@code sharp4j.*} system
 * properties; tests build variants with the {@code with*} methods. Immutable.
 *
 * <table>
 *   <caption>Properties</caption>
 *   <tr><td>sharp4j.topology.nodes</td><td>simulate K nodes on this host (0: real hosts)</td></tr>
 *   <tr><td>sharp4j.topology.sockets</td><td>simulate S sockets per node (0: real sockets)</td></tr>
 *   <tr><td>sharp4j.topology.group</td><td>socket (default) or numa: the unit of phases 1/5</td></tr>
 *   <tr><td>sharp4j.hostname</td><td>host name used to group ranks into nodes</td></tr>
 *   <tr><td>sharp4j.slot.bytes</td><td>per-rank slot (chunk) size, default 64k</td></tr>
 *   <tr><td>sharp4j.shared.bytes</td><td>per-rank shared buffer size, default 1M</td></tr>
 *   <tr><td>sharp4j.tree.radix, sharp4j.tiled.threshold</td><td>see IntraNodeTuning</td></tr>
 *   <tr><td>sharp4j.wait</td><td>spin:20us,yield:1ms,park:1ms (see WaitPolicy)</td></tr>
 *   <tr><td>sharp4j.timeout</td><td>how long to wait for a peer before failing, default 300 s</td></tr>
 *   <tr><td>sharp4j.shm.dir</td><td>where segment files live, default /dev/shm</td></tr>
 * </table>
 */
public final class Config {
    public static final int DEFAULT_SLOT_BYTES = 64 * 1024;
    public static final int DEFAULT_SHARED_BYTES = 1024 * 1024;
    public static final long DEFAULT_TIMEOUT_NANOS = 300_000_000_000L;

    private final int simulatedNodes;
    private final int simulatedSockets;
    private final String hostname;
    private final int slotBytes;
    private final int sharedBytes;
    private final IntraNodeTuning tuning;
    private final String waitSpec;
    private final long timeoutNanos;
    private final Path shmDir;
    private final boolean groupByNuma;

    private Config(int simulatedNodes, int simulatedSockets, String hostname, int slotBytes, int sharedBytes,
            IntraNodeTuning tuning, String waitSpec, long timeoutNanos, Path shmDir) {
        this(simulatedNodes, simulatedSockets, hostname, slotBytes, sharedBytes, tuning, waitSpec, timeoutNanos, shmDir, false);
    }

    private Config(int simulatedNodes, int simulatedSockets, String hostname, int slotBytes, int sharedBytes,
            IntraNodeTuning tuning, String waitSpec, long timeoutNanos, Path shmDir, boolean groupByNuma) {
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
        this.simulatedNodes = simulatedNodes;
        this.simulatedSockets = simulatedSockets;
        this.hostname = hostname;
        this.slotBytes = slotBytes;
        this.sharedBytes = sharedBytes;
        this.tuning = tuning;
        this.waitSpec = waitSpec;
        this.timeoutNanos = timeoutNanos;
        this.shmDir = shmDir;
        this.groupByNuma = groupByNuma;
    }

    public static Config defaults() {
        return new Config(0, 0, null, DEFAULT_SLOT_BYTES, DEFAULT_SHARED_BYTES, IntraNodeTuning.defaults(), null,
                DEFAULT_TIMEOUT_NANOS, Path.of("/dev/shm"));
    }

    public static Config fromSystemProperties() {
        return fromProperties(System.getProperties());
    }

    public static Config fromProperties(Properties p) {
        try {
            return new Config(
                    Integer.parseInt(p.getProperty("sharp4j.topology.nodes", "0").trim()),
                    Integer.parseInt(p.getProperty("sharp4j.topology.sockets", "0").trim()),
                    p.getProperty("sharp4j.hostname"),
                    (int) Math.min(Integer.MAX_VALUE, Sizes.parseBytes(p.getProperty("sharp4j.slot.bytes", "64k"))),
                    (int) Math.min(Integer.MAX_VALUE, Sizes.parseBytes(p.getProperty("sharp4j.shared.bytes", "1M"))),
                    IntraNodeTuning.fromProperties(p),
                    p.getProperty("sharp4j.wait"),
                    WaitPolicy.parseNanos(p.getProperty("sharp4j.timeout", "300")),
                    Path.of(p.getProperty("sharp4j.shm.dir", "/dev/shm")),
                    parseGroup(p.getProperty("sharp4j.topology.group", "socket")));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("bad sharp4j.* property: " + e.getMessage(), e);
        }
    }

    private static boolean parseGroup(String g) {
        switch (g.trim().toLowerCase(java.util.Locale.ROOT)) {
            case "socket": return false;
            case "numa": return true;
            default: throw new IllegalArgumentException("sharp4j.topology.group must be socket or numa, got '" + g + "'");
        }
    }

    /** Whether ranks are grouped by NUMA node rather than socket ({@code sharp4j.topology.group=numa}). */
    public boolean groupByNuma() {
        return groupByNuma;
    }

    public Config withSimulatedTopology(int nodes, int sockets) {
        return new Config(nodes, sockets, hostname, slotBytes, sharedBytes, tuning, waitSpec, timeoutNanos, shmDir);
    }

    public Config withSlotBytes(int bytes) {
        return new Config(simulatedNodes, simulatedSockets, hostname, bytes, Math.max(sharedBytes, bytes), tuning, waitSpec,
                timeoutNanos, shmDir);
    }

    public Config withSharedBytes(int bytes) {
        return new Config(simulatedNodes, simulatedSockets, hostname, slotBytes, bytes, tuning, waitSpec, timeoutNanos, shmDir);
    }

    public Config withTuning(IntraNodeTuning t) {
        return new Config(simulatedNodes, simulatedSockets, hostname, slotBytes, sharedBytes, t, waitSpec, timeoutNanos, shmDir);
    }

    public Config withTimeoutNanos(long nanos) {
        return new Config(simulatedNodes, simulatedSockets, hostname, slotBytes, sharedBytes, tuning, waitSpec, nanos, shmDir);
    }

    public Config withWait(String spec) {
        return new Config(simulatedNodes, simulatedSockets, hostname, slotBytes, sharedBytes, tuning, spec, timeoutNanos, shmDir);
    }

    public Config withHostname(String h) {
        return new Config(simulatedNodes, simulatedSockets, h, slotBytes, sharedBytes, tuning, waitSpec, timeoutNanos, shmDir);
    }

    public int simulatedNodes() {
        return simulatedNodes;
    }

    public int simulatedSockets() {
        return simulatedSockets;
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

    public IntraNodeTuning tuning() {
        return tuning;
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
}
