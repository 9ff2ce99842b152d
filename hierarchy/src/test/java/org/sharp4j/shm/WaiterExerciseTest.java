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
 * the probe is only ever asked about this rank. A pass whose waits did not both reach the probe (a
 * rank descheduled for a millisecond) is run again, at most three in all.
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
        // its last pass (it passes again, at most 3 times, after one whose waits did not both reach the probe):
        // two probed waits, each calling check at least once (every 200 us for about 1 ms), then ended once
        List<Integer> ends = new ArrayList<>();
        for (int i = 0; i < probe.events.size(); i++) {
            if (probe.events.get(i).equals("ended")) {
                ends.add(i);
            }
        }
        assertTrue(ends.size() >= 2 && ends.size() <= 6, "probed waits ended: " + probe.events);
        int last = ends.get(ends.size() - 1);
        int prev = ends.get(ends.size() - 2);
        int before = ends.size() > 2 ? ends.get(ends.size() - 3) : -1;
        assertTrue(probe.events.subList(before + 1, prev).contains("check"), "the flag wait probed before it ended: " + probe.events);
        assertTrue(probe.events.subList(prev + 1, last).contains("check"), "the condition wait reached the failure probe: " + probe.events);
        assertEquals(probe.events.size() - 1, last, "nothing after the last pass: " + probe.events);
        assertTrue(probe.outside >= 2, "the waits drove the other library (every 20 us past the spin): " + probe.outside);
        assertTrue(took < 1_000_000_000L, "the exercise took " + took / 1_000_000 + " ms");
    }
}
