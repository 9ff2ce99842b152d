package org.sharp4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.sharp4j.topology.RankInfo;
import org.sharp4j.topology.Topology;

class TopologyTest {
    static RankInfo at(String host, int socket, int sockets) {
        return new RankInfo(host, socket, socket, sockets, 1);
    }

    @Test
    void nodesByHostnameSocketsByBindingLeadersLowest() {
        RankInfo[] infos = {at("b", 1, 2), at("a", 0, 2), at("b", 0, 2), at("a", 1, 2), at("b", 1, 2), at("a", 0, 2)};
        Topology t = Topology.compute(infos, 0, 0);
        assertEquals(2, t.nodeCount());
        assertArrayEquals(new int[] {0, 2, 4}, t.nodeRanks(0)); // host b appears first (rank 0)
        assertArrayEquals(new int[] {1, 3, 5}, t.nodeRanks(1));
        assertArrayEquals(new int[] {0, 4}, t.socketRanks(0, 0)); // physical socket 1 has node 0's lowest rank
        assertArrayEquals(new int[] {2}, t.socketRanks(0, 1));
        assertArrayEquals(new int[] {1, 5}, t.socketRanks(1, 0));
        assertEquals(0, t.nodeLeader(0));
        assertEquals(2, t.socketLeader(0, 1));
        assertTrue(!t.singleHost());
    }

    @Test
    void largestNodeCountsEveryRankOfTheFullestNode() {
        // uneven nodes: the largest is neither the first nor the last (TiledAlgorithm reads this on every call)
        RankInfo[] infos = {at("a", 0, 1), at("b", 0, 1), at("b", 0, 1), at("b", 0, 1), at("c", 0, 1), at("c", 0, 1)};
        Topology t = Topology.compute(infos, 0, 0);
        assertEquals(3, t.nodeCount());
        assertEquals(3, t.maxRanksPerNode());
        assertEquals(1, Topology.compute(new RankInfo[] {at("a", 0, 1), at("b", 0, 1)}, 0, 0).maxRanksPerNode());
        assertEquals(4, Topology.compute(new RankInfo[] {at("a", 0, 1), at("a", 0, 1), at("a", 0, 1), at("a", 0, 1)}, 0, 0)
                .maxRanksPerNode());
    }

    @Test
    void numaGroupingSplitsASocketIntoItsNumaDomains() {
        RankInfo[] infos = {new RankInfo("h", 0, 0, 1, 1), new RankInfo("h", 0, 1, 1, 2), new RankInfo("h", 0, 1, 1, 3),
            new RankInfo("h", 0, 0, 1, 4)};
        assertEquals(1, Topology.compute(infos, 0, 0, false).socketCount(0));
        Topology t = Topology.compute(infos, 0, 0, true);
        assertArrayEquals(new int[] {0, 3}, t.socketRanks(0, 0));
        assertArrayEquals(new int[] {1, 2}, t.socketRanks(0, 1));
    }

    @Test
    void unboundRanksAreSpreadInBlocksOverTheHostsSockets() {
        RankInfo[] infos = new RankInfo[6];
        for (int i = 0; i < 6; i++) {
            infos[i] = at("h", -1, 2);
        }
        Topology t = Topology.compute(infos, 0, 0);
        assertArrayEquals(new int[] {0, 1, 2}, t.socketRanks(0, 0));
        assertArrayEquals(new int[] {3, 4, 5}, t.socketRanks(0, 1));
    }

    @Test
    void simulationSplitsBalancedBlocks() {
        RankInfo[] infos = new RankInfo[7];
        for (int i = 0; i < 7; i++) {
            infos[i] = at("h", 0, 1);
        }
        Topology t = Topology.compute(infos, 3, 2);
        assertEquals(3, t.nodeCount());
        assertArrayEquals(new int[] {0, 1, 2}, t.nodeRanks(0));
        assertArrayEquals(new int[] {3, 4}, t.nodeRanks(1));
        assertArrayEquals(new int[] {5, 6}, t.nodeRanks(2));
        assertArrayEquals(new int[] {0, 1}, t.socketRanks(0, 0)); // local i -> socket floor(i*S/L)
        assertArrayEquals(new int[] {2}, t.socketRanks(0, 1));
        assertTrue(t.singleHost() && t.simulated());
        assertThrows(IllegalArgumentException.class, () -> Topology.compute(infos, 8, 0));
        assertThrows(IllegalArgumentException.class, () -> Topology.compute(infos, 3, 3));
    }
}
