package org.sharp4j.coll;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicIntegerArray;
import org.junit.jupiter.api.Test;
import org.sharp4j.Config;
import org.sharp4j.Op;
import org.sharp4j.ThreadRanks;

/**
 * The JIT heating at creation ({@link Engine#heatCalls()}, {@link Engine#heatLongCalls()}): collective,
 * so every rank runs the same number of calls (a rank that ran fewer would leave the others waiting in the next call), once per
 * JVM, and off with the warm-up.
 */
class HeatTest {
    @Test
    void everyRankHeatsTheSameOnceAndTheCommunicatorWorksAfterwards() {
        Engine.forgetHeatForTests();
        AtomicIntegerArray first = new AtomicIntegerArray(3);
        AtomicIntegerArray firstLong = new AtomicIntegerArray(3);
        AtomicIntegerArray second = new AtomicIntegerArray(3);
        Config cfg = Config.defaults().withTimeoutNanos(60_000_000_000L);
        ThreadRanks.run(3, cfg.withLongWarmup("on"), comm -> {
            first.set(comm.rank(), comm.engine().heatCalls());
            firstLong.set(comm.rank(), comm.engine().heatLongCalls());
            long[] x = {comm.rank() + 1};
            long[] y = new long[1];
            comm.allreduce(x, 0, y, 0, 1, Op.SUM);
            assertEquals(6, y[0], "an allreduce right after the heating");
        });
        ThreadRanks.run(3, cfg, comm -> second.set(comm.rank(), comm.engine().heatCalls()));
        assertTrue(first.get(0) >= 500, "a fresh JVM heats at least one block: " + first);
        assertTrue(firstLong.get(0) >= 250, "a fresh JVM heats the long paths, at least one block: " + firstLong);
        for (int r = 1; r < 3; r++) {
            assertEquals(first.get(0), first.get(r), "rank " + r + " heated as many calls as rank 0: " + first);
            assertEquals(firstLong.get(0), firstLong.get(r), "rank " + r + " heated as many long calls as rank 0: " + firstLong);
        }
        for (int r = 0; r < 3; r++) {
            assertEquals(0, second.get(r), "a JVM that heated does not heat again: " + second);
        }
        Engine.forgetHeatForTests();
        AtomicIntegerArray auto = new AtomicIntegerArray(2);
        ThreadRanks.run(2, cfg, comm -> auto.set(comm.rank(), comm.engine().heatLongCalls() + 1));
        assertEquals(2, auto.get(0) + auto.get(1), "sharp4j.warmup.long=auto on one node heats no long calls: " + auto);
        Engine.forgetHeatForTests();
        AtomicIntegerArray off = new AtomicIntegerArray(2);
        ThreadRanks.run(2, cfg.withWarmupRounds(0), comm -> off.set(comm.rank(), comm.engine().heatCalls()));
        assertEquals(0, off.get(0) + off.get(1), "sharp4j.warmup=0 turns the heating off too");
    }

    /**
     * The local heating of the two members' operand check gives the check's answers: of the 37 pairs a round
     * tries, 18 are served in place (a direct buffer against itself at the same start, against another direct
     * buffer or the shared buffer, or with no output), and not a direct buffer against itself at overlapping
     * other starts, nor two places of the shared buffer, nor an array on either side.
     */
    @Test
    void theOperandChecksHeatingAnswersLikeTheDispatch() {
        assertEquals(18, ExchangeAlgorithm.heatOperandChecks(1));
        assertEquals(18 * 7, ExchangeAlgorithm.heatOperandChecks(7));
    }

    /**
     * Across nodes the long heating takes the cheap path for most calls (forced chunks of 8 KiB through phase 3's
     * posted parts): every rank heats as many long calls, more than the one-node minimum when the budget allows,
     * and a long call right after it (several slots, every element checked) is right.
     */
    @Test
    void severalNodesHeatTheLongPathsOnTheCheapPathAndLongCallsAreRightAfterwards() {
        Engine.forgetHeatForTests();
        AtomicIntegerArray longCalls = new AtomicIntegerArray(2);
        AtomicIntegerArray wrong = new AtomicIntegerArray(2);
        Config cfg = Config.defaults().withTimeoutNanos(60_000_000_000L).withSimulatedTopology(2, 1).withLongWarmup("on");
        ThreadRanks.run(2, cfg, comm -> {
            longCalls.set(comm.rank(), comm.engine().heatLongCalls());
            int n = 300_001; // several slots and a short last chunk
            long[] x = new long[n];
            long[] y = new long[n];
            for (int i = 0; i < n; i++) {
                x[i] = (long) i * (comm.rank() + 1);
            }
            comm.allreduce(x, 0, y, 0, n, Op.SUM);
            for (int i = 0; i < n; i++) {
                if (y[i] != 3L * i) {
                    wrong.incrementAndGet(comm.rank());
                }
            }
        });
        Engine.forgetHeatForTests();
        assertTrue(longCalls.get(0) >= 250, "the long paths were heated across nodes: " + longCalls);
        assertEquals(longCalls.get(0), longCalls.get(1), "both ranks heated as many long calls: " + longCalls);
        assertEquals(0, wrong.get(0) + wrong.get(1), "elements wrong after the heating: " + wrong);
    }
}
