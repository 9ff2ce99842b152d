package org.sharp4j.shm;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * A condition wait whose {@link Waiter.Condition#activity} keeps changing (a node leader's parts
 * moving between nodes) does not park however long it lasts; one whose activity stands still parks
 * after the yield window, as a flag's wait does; and the timeout still counts from the wait's
 * start, so a peer that keeps a wait busy without ever ending it is still reported.
 */
class WaiterActivityTest {
    private static final long TIMEOUT = 30_000_000_000L;
    /** Yield window of the policies below: 20 ms, far above one yield on an idle core. */
    private static final long YIELD = 20_000_000L;

    private static final Waiter.FailureProbe NEVER = (r, waited, timeout) -> {
        if (waited > timeout) {
            throw new IllegalStateException("timed out waiting for rank " + r);
        }
    };

    /**
     * Done after {@code nanos}; its activity moves at every poll when {@code moving}. Counts the
     * gaps between polls longer than half the yield window: a yield on a loaded core can hand the
     * core away for a scheduler slice or more, and a wait that saw nothing move for a window may
     * park (rightly); every other park of a moving wait is the bug.
     */
    private static final class Clocked implements Waiter.Condition {
        final long end;
        final boolean moving;
        long polls;
        long last;
        int longGaps;

        Clocked(long nanos, boolean moving) {
            this.end = System.nanoTime() + nanos;
            this.moving = moving;
        }

        @Override
        public boolean done() {
            polls++;
            long now = System.nanoTime();
            if (last != 0 && now - last > YIELD / 2) {
                longGaps++;
            }
            last = now;
            return now - end >= 0;
        }

        @Override
        public long activity() {
            return moving ? polls : 7;
        }
    }

    @Test
    void aWaitWhoseActivityMovesNeverParksOneThatStandsStillDoes() {
        WaitPolicy policy = new WaitPolicy(20_000, YIELD, 50_000, TIMEOUT);
        Waiter w = new Waiter(policy, NEVER);
        Clocked moving = new Clocked(8 * YIELD, true);
        w.await(moving, 3);
        assertTrue(w.parks <= moving.longGaps, "a wait whose messages kept moving parked " + w.parks + " times ("
                + moving.longGaps + " gaps of half a window between its polls, of " + moving.polls + ")");

        Waiter still = new Waiter(policy, NEVER);
        still.await(new Clocked(4 * YIELD, false), 3);
        assertTrue(still.parks > 0, "a wait with nothing moving for 4 yield windows never parked");

        // a condition that cannot tell (the default activity) waits as before: it parks
        Waiter plain = new Waiter(policy, NEVER);
        long end = System.nanoTime() + 4 * YIELD;
        plain.await(() -> System.nanoTime() - end >= 0, 3);
        assertTrue(plain.parks > 0, "a condition without activity never parked");
    }

    @Test
    void activityThatStopsLetsTheWaitParkAgain() {
        // moves for 2 windows, then stands still for 4: the window restarts at the last move, then it parks
        long t0 = System.nanoTime();
        Waiter w = new Waiter(new WaitPolicy(20_000, YIELD, 50_000, TIMEOUT), NEVER);
        w.await(new Waiter.Condition() {
            long n;

            @Override
            public boolean done() {
                return System.nanoTime() - t0 >= 6 * YIELD;
            }

            @Override
            public long activity() {
                return System.nanoTime() - t0 < 2 * YIELD ? ++n : n;
            }
        }, 3);
        assertTrue(w.parks > 0, "stopped activity never let the wait park");
    }

    @Test
    void activityDoesNotPostponeTheTimeout() {
        // the probe reports at 100 ms of waiting although the condition's activity never stops
        Waiter.FailureProbe probe = (r, waited, timeout) -> {
            if (waited > 100_000_000L) {
                throw new IllegalStateException("rank " + r + " never completed");
            }
        };
        Waiter w = new Waiter(new WaitPolicy(20_000, YIELD, 50_000, TIMEOUT), probe);
        long t0 = System.nanoTime();
        Clocked busy = new Clocked(TIMEOUT, true);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> w.await(busy, 5));
        assertTrue(e.getMessage().contains("rank 5"), e.getMessage());
        assertTrue(System.nanoTime() - t0 < 5_000_000_000L, "the busy wait was reported only after "
                + (System.nanoTime() - t0) / 1_000_000 + " ms");
        assertTrue(w.parks <= busy.longGaps, "parked " + w.parks + " times");
    }
}
