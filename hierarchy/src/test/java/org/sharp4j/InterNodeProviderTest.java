package org.sharp4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Phase 3 providers: an offload wraps the host path when every rank accepts it, and is skipped when one objects. */
class InterNodeProviderTest {
    static final Config CFG = Config.defaults().withSimulatedTopology(2, 1).withWarmupRounds(0);

    @AfterEach
    void off() {
        CountingOffloadProvider.mode = null;
    }

    @Test
    void anOffloadEveryRankAcceptsWrapsTheHostPath() {
        CountingOffloadProvider.mode = "all";
        CountingOffloadProvider.CALLS.set(0);
        ThreadRanks.run(4, CFG, comm -> {
            assertEquals("counting offload over shared memory (simulated nodes on one host)", comm.interNode());
            long[] sum = new long[1];
            comm.allreduce(new long[] {comm.rank()}, 0, sum, 0, 1, Op.SUM);
            assertArrayEquals(new long[] {6}, sum);
            comm.barrier();
        });
        assertEquals(4, CountingOffloadProvider.CALLS.get(), "2 node leaders x (allreduce + barrier)");
    }

    @Test
    void oneObjectingRankKeepsEveryRankOnTheHostPath() {
        CountingOffloadProvider.mode = "not-rank-3";
        CountingOffloadProvider.CALLS.set(0);
        ThreadRanks.run(4, CFG, comm -> {
            assertTrue(comm.interNode().startsWith("shared memory"), comm.interNode());
            comm.barrier();
        });
        assertEquals(0, CountingOffloadProvider.CALLS.get());
    }
}
