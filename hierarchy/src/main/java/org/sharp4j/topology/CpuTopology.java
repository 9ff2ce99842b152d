package org.sharp4j.topology;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.BitSet;
import java.util.List;
import java.util.TreeSet;

/**
 * What Linux says about this process's CPUs: its affinity ({@code Cpus_allowed_list} in
 * {@code /proc/self/status}) and, per CPU, the socket
 * ({@code /sys/devices/system/cpu/cpuN/topology/physical_package_id}) and NUMA node
 * ({@code cpuN/nodeK}). A rank bound inside one socket reports that socket; an unbound rank
 * reports -1 and is placed by {@link Topology}.
 */
public final class CpuTopology {
    private static final Path CPU = Path.of("/sys/devices/system/cpu");

    /** Socket (physical package) this process is bound to, or -1 when its CPUs span sockets or it is unknown. */
    public final int socket;
    /** NUMA node this process is bound to, or -1. */
    public final int numaNode;
    /** Number of sockets on this host (at least 1). */
    public final int socketsOnHost;
    /** The affinity list as Linux prints it, for diagnostics. */
    public final String cpusAllowed;

    private CpuTopology(int socket, int numaNode, int socketsOnHost, String cpusAllowed) {
        this.socket = socket;
        this.numaNode = numaNode;
        this.socketsOnHost = socketsOnHost;
        this.cpusAllowed = cpusAllowed;
    }

    public static CpuTopology detect() {
        String allowed = readAllowed();
        BitSet cpus = parseList(allowed);
        TreeSet<Integer> sockets = new TreeSet<>();
        TreeSet<Integer> nodes = new TreeSet<>();
        for (int c = cpus.nextSetBit(0); c >= 0; c = cpus.nextSetBit(c + 1)) {
            sockets.add(packageOf(c));
            nodes.add(numaOf(c));
        }
        TreeSet<Integer> all = new TreeSet<>();
        BitSet online = parseList(read(CPU.resolve("online"), "0"));
        for (int c = online.nextSetBit(0); c >= 0; c = online.nextSetBit(c + 1)) {
            all.add(packageOf(c));
        }
        all.remove(-1);
        int socket = sockets.size() == 1 ? sockets.first() : -1;
        int numa = nodes.size() == 1 ? nodes.first() : -1;
        return new CpuTopology(socket, numa, Math.max(1, all.size()), allowed);
    }

    /** The CPUs this process may run on, in ascending order ({@code Cpus_allowed_list}). */
    public static int[] allowedCpus() {
        return parseList(readAllowed()).stream().toArray();
    }

    private static String readAllowed() {
        try {
            List<String> lines = Files.readAllLines(Path.of("/proc/self/status"));
            for (String l : lines) {
                if (l.startsWith("Cpus_allowed_list:")) {
                    return l.substring(l.indexOf(':') + 1).trim();
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux: fall through
        }
        return "0-" + (Runtime.getRuntime().availableProcessors() - 1);
    }

    /**
     * CPUs online on this host (not this process's affinity: under {@code mpirun --bind-to core}
     * {@code availableProcessors()} is 1 although every rank has a core of its own).
     */
    public static int onlineCpus() {
        try {
            int n = parseList(Files.readString(CPU.resolve("online")).trim()).cardinality();
            if (n > 0) {
                return n;
            }
        } catch (IOException | RuntimeException e) {
            // not Linux: fall through
        }
        return Runtime.getRuntime().availableProcessors();
    }

    private static int packageOf(int cpu) {
        String s = read(CPU.resolve("cpu" + cpu).resolve("topology").resolve("physical_package_id"), "-1");
        try {
            return Integer.parseInt(s.trim());
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    private static int numaOf(int cpu) {
        try (var dir = Files.list(CPU.resolve("cpu" + cpu))) {
            return dir.map(p -> p.getFileName().toString())
                    .filter(n -> n.startsWith("node") && n.length() > 4 && n.substring(4).chars().allMatch(Character::isDigit))
                    .mapToInt(n -> Integer.parseInt(n.substring(4))).findFirst().orElse(-1);
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    private static String read(Path p, String dflt) {
        try {
            return Files.readString(p).trim();
        } catch (IOException | RuntimeException e) {
            return dflt;
        }
    }

    /** Parses Linux CPU lists such as {@code 0-3,8,10-11}. */
    static BitSet parseList(String list) {
        BitSet b = new BitSet();
        for (String part : list.split(",")) {
            String p = part.trim();
            if (p.isEmpty()) {
                continue;
            }
            int dash = p.indexOf('-');
            if (dash < 0) {
                b.set(Integer.parseInt(p));
            } else {
                b.set(Integer.parseInt(p.substring(0, dash)), Integer.parseInt(p.substring(dash + 1)) + 1);
            }
        }
        return b;
    }
}
