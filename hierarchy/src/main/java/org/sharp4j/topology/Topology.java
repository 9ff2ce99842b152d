package org.sharp4j.topology;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Which ranks share a node and a socket; computed identically on every rank from everybody's
 * {@link RankInfo}.
 *
 * <p>Nodes: ranks with the same host name, or, with {@code simulatedNodes = K > 0}, K balanced
 * blocks of consecutive ranks ({@code node(r) = floor(r*K/size)}) on whatever hosts they run.
 * Sockets inside a node: the socket a rank is bound to; unbound ranks are spread over the host's
 * sockets in blocks of consecutive local ranks; with {@code simulatedSockets = S > 0}, S balanced
 * blocks of the node's local ranks. Nodes and sockets are numbered by their lowest rank, so the
 * socket leader (lowest rank of a socket) of socket 0 is the node leader (lowest rank of the node).
 */
public final class Topology {
    private final int size;
    private final int[] nodeOf;
    private final int[] socketOf;
    private final int[][] nodeRanks;
    private final int[][][] socketRanks;
    private final boolean simulated;
    private final boolean singleHost;
    /** Largest node's rank count, computed once: {@code TiledAlgorithm} reads it on every call. */
    private final int maxRanksPerNode;

    private Topology(int size, int[] nodeOf, int[] socketOf, int[][] nodeRanks, int[][][] socketRanks, boolean simulated,
            boolean singleHost) {
        this.size = size;
        this.nodeOf = nodeOf;
        this.socketOf = socketOf;
        this.nodeRanks = nodeRanks;
        this.socketRanks = socketRanks;
        this.simulated = simulated;
        this.singleHost = singleHost;
        int max = 0;
        for (int[] n : nodeRanks) {
            max = Math.max(max, n.length);
        }
        this.maxRanksPerNode = max;
    }

    public static Topology compute(RankInfo[] infos, int simulatedNodes, int simulatedSockets) {
        return compute(infos, simulatedNodes, simulatedSockets, false);
    }

    /**
     * @param byNuma group by NUMA node instead of socket where ranks are bound to one (machines in
     *               sub-NUMA-clustering or NPS modes have several NUMA domains per socket)
     */
    public static Topology compute(RankInfo[] infos, int simulatedNodes, int simulatedSockets, boolean byNuma) {
        int size = infos.length;
        if (simulatedNodes > size) {
            throw new IllegalArgumentException("cannot simulate " + simulatedNodes + " nodes with " + size + " ranks");
        }
        int[] nodeOf = new int[size];
        if (simulatedNodes > 0) {
            for (int r = 0; r < size; r++) {
                nodeOf[r] = (int) ((long) r * simulatedNodes / size);
            }
        } else {
            Map<String, Integer> ids = new LinkedHashMap<>(); // first appearance = lowest rank
            for (int r = 0; r < size; r++) {
                nodeOf[r] = ids.computeIfAbsent(infos[r].hostname, h -> ids.size());
            }
        }
        int nodes = Arrays.stream(nodeOf).max().orElse(0) + 1;
        int[][] nodeRanks = new int[nodes][];
        for (int n = 0; n < nodes; n++) {
            final int nn = n;
            nodeRanks[n] = java.util.stream.IntStream.range(0, size).filter(r -> nodeOf[r] == nn).toArray();
        }
        int[] socketOf = new int[size];
        int[][][] socketRanks = new int[nodes][][];
        for (int n = 0; n < nodes; n++) {
            int[] local = nodeRanks[n];
            int l = local.length;
            int[] key = new int[l];
            if (simulatedSockets > 0) {
                if (simulatedSockets > l) {
                    throw new IllegalArgumentException("cannot simulate " + simulatedSockets + " sockets on node " + n
                            + " with " + l + " ranks");
                }
                for (int i = 0; i < l; i++) {
                    key[i] = (int) ((long) i * simulatedSockets / l);
                }
            } else {
                int hostSockets = infos[local[0]].socketsOnHost;
                for (int i = 0; i < l; i++) {
                    RankInfo ri = infos[local[i]];
                    int bound = byNuma && ri.numaNode >= 0 ? ri.numaNode : ri.socket;
                    key[i] = bound >= 0 ? bound : (int) ((long) i * hostSockets / l);
                }
            }
            // Renumber sockets by lowest local rank.
            Map<Integer, List<Integer>> groups = new LinkedHashMap<>();
            for (int i = 0; i < l; i++) {
                groups.computeIfAbsent(key[i], k -> new ArrayList<>()).add(local[i]);
            }
            socketRanks[n] = new int[groups.size()][];
            int s = 0;
            for (List<Integer> g : groups.values()) {
                socketRanks[n][s] = g.stream().mapToInt(Integer::intValue).toArray();
                for (int r : socketRanks[n][s]) {
                    socketOf[r] = s;
                }
                s++;
            }
        }
        TreeMap<String, Integer> hosts = new TreeMap<>();
        for (RankInfo ri : infos) {
            hosts.merge(ri.hostname, 1, Integer::sum);
        }
        return new Topology(size, nodeOf, socketOf, nodeRanks, socketRanks, simulatedNodes > 0 || simulatedSockets > 0,
                hosts.size() == 1);
    }

    public int size() {
        return size;
    }

    public int nodeCount() {
        return nodeRanks.length;
    }

    public int nodeOf(int rank) {
        return nodeOf[rank];
    }

    /** Socket index of {@code rank} within its node. */
    public int socketOf(int rank) {
        return socketOf[rank];
    }

    public int[] nodeRanks(int node) {
        return nodeRanks[node].clone();
    }

    public int socketCount(int node) {
        return socketRanks[node].length;
    }

    public int[] socketRanks(int node, int socket) {
        return socketRanks[node][socket].clone();
    }

    public int nodeLeader(int node) {
        return nodeRanks[node][0];
    }

    public int socketLeader(int node, int socket) {
        return socketRanks[node][socket][0];
    }

    /** Index of {@code rank} among its node's ranks (0 = node leader). */
    public int localIndex(int rank) {
        return Arrays.binarySearch(nodeRanks[nodeOf[rank]], rank);
    }

    /** Index of {@code rank} among its socket's ranks (0 = socket leader). */
    public int socketIndex(int rank) {
        int[] s = socketRanks[nodeOf[rank]][socketOf[rank]];
        for (int i = 0; i < s.length; i++) {
            if (s[i] == rank) {
                return i;
            }
        }
        throw new IllegalStateException("rank " + rank + " not in its socket");
    }

    /** Node and/or socket counts come from the simulation override, not the machine. */
    public boolean simulated() {
        return simulated;
    }

    /** All ranks run on one real host (so simulated nodes can meet in shared memory). */
    public boolean singleHost() {
        return singleHost;
    }

    /** Largest number of ranks on one node. */
    public int maxRanksPerNode() {
        return maxRanksPerNode;
    }

    @Override
    public String toString() {
        StringBuilder b = new StringBuilder();
        b.append(size).append(" ranks on ").append(nodeCount()).append(simulated ? " (simulated)" : "").append(" node(s):");
        for (int n = 0; n < nodeCount(); n++) {
            b.append(" node ").append(n).append('{');
            for (int s = 0; s < socketRanks[n].length; s++) {
                b.append(s == 0 ? "" : " ").append("socket ").append(s).append(Arrays.toString(socketRanks[n][s]));
            }
            b.append('}');
        }
        return b.toString();
    }
}

