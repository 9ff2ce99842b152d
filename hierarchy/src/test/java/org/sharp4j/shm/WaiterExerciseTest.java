package org.sharp4j.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link Waiter#exerciseSlowPath}, which the heating runs so that C2 compiles the waits' rare
 * branches from a profile that has them: both waits, the flag's and the condition's, reach the
 * failure probe (the branch a program takes first after 20 ms of waiting, which trapped when only
 * the flag wait was exercised), end a probed wait, and drive the other library; about 2 ms, and
 * the probe is only ever asked about this rank. Each wait ends once it has asked the probe twice,
 * not after a time, so a descheduled test thread cannot make it skip a branch.
 */
class WaiterExerciseTest {
    /** Records what the waits ask of it, in order. */
    private static final class Probe implements Waiter.FailureProbe {
        final List<String> events = new ArrayList<>();
        int outside;

        @Override
        public void check(int awaitedRank, long waitedNanos, long timeoutNanos) {
            assertEquals(5, awaitedRank, "the exercise asks about this rank only");
            events.add("check");
        }

        @Override
        public void waitEnded() {
            events.add("ended");
        }

        @Override
        public void outsideProgress() {
            outside++;
        }
    }

    @Test
    void bothWaitsReachTheFailureProbeEndAProbedWaitAndDriveTheOtherLibrary() {
        Probe probe = new Probe();
        Waiter w = new Waiter(new WaitPolicy(20_000, 1_000_000, 50_000, 30_000_000_000L), probe);
        long t0 = System.nanoTime();
        w.exerciseSlowPath(5);
        long took = System.nanoTime() - t0;
        // two probed waits, each asking the probe twice (every 200 us) and then ending: the flag wait more often if
        // the thread that sets its flag is late, the condition wait exactly twice (it watches the count itself)
        assertTrue(String.join(" ", probe.events).matches("check check( check)* ended check check ended"),
                "the flag wait, then the condition wait, each probed and ended: " + probe.events);
        assertTrue(probe.outside >= 2, "the waits drove the other library (every 20 us past the spin): " + probe.outside);
        assertTrue(took < 1_000_000_000L, "the exercise took " + took / 1_000_000 + " ms");
    }

    /**
     * A probe that throws (an abort, a dead peer found during the heating) ends the exercise with
     * its error, and the thread that would set the exercise's flag ends too: it must not poll on
     * for the rest of the process.
     */
    @Test
    void aProbeThatThrowsEndsTheExerciseAndLeavesNoThreadBehind() throws InterruptedException {
        Waiter.FailureProbe aborting = (r, waited, timeout) -> {
            throw new IllegalStateException("aborted");
        };
        Waiter w = new Waiter(new WaitPolicy(20_000, 1_000_000, 50_000, 30_000_000_000L), aborting);
        IllegalStateException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class, () -> w.exerciseSlowPath(5));
        assertEquals("aborted", e.getMessage());
        assertTrue(Thread.getAllStackTraces().keySet().stream().noneMatch(t -> t.getName().equals("sharp4j-wait-exercise") && t.isAlive()),
                "the exercise's setter thread is still running");
    }
}
