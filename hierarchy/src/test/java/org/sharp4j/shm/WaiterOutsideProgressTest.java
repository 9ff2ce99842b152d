package org.sharp4j.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/**
 * A wait past its spin budget drives the program's other communication library
 * ({@link Waiter.FailureProbe#outsideProgress}, MPI's progress next to sharp4j): a peer whose data
 * moves only when this rank calls that library is waited for successfully instead of until the
 * timeout; the calls come at most every {@link Waiter#OUTSIDE_PROGRESS_NANOS}, and a wait that
 * needs no waiting makes none.
 */
class WaiterOutsideProgressTest {
    private static final long TIMEOUT = 3_000_000_000L;

    private static ByteBuffer flag() {
        return ByteBuffer.allocateDirect(64).order(ByteOrder.nativeOrder());
    }

    /** Counts calls; {@link #check} throws at the timeout as the engine's probe does. */
    private static final class Probe implements Waiter.FailureProbe {
        final AtomicInteger calls = new AtomicInteger();
        Runnable onCall = () -> { };

        @Override
        public void check(int awaitedRank, long waitedNanos, long timeoutNanos) {
            if (waitedNanos > timeoutNanos) {
                throw new IllegalStateException("timed out waiting for rank " + awaitedRank);
            }
        }

        @Override
        public void outsideProgress() {
            calls.incrementAndGet();
            onCall.run();
        }
    }

    @Test
    void aPeerThatNeedsThisRanksOutsideProgressIsWaitedForNotTimedOut() {
        for (WaitPolicy policy : new WaitPolicy[] {
            new WaitPolicy(20_000, 200_000, 50_000, TIMEOUT), // the default shape: spin, yield, park
            new WaitPolicy(0, 0, 50_000, TIMEOUT)}) { // ranks outnumber cores: no spin, park at once
            ByteBuffer f = flag();
            Probe probe = new Probe();
            // the "peer" publishes only after this rank's other library moved its data 50 times
            probe.onCall = () -> {
                if (probe.calls.get() == 50) {
                    Flags.release(f, 0, 1);
                }
            };
            long t0 = System.nanoTime();
            assertEquals(1, new Waiter(policy, probe).await(f, 0, 1, 7));
            assertEquals(50, probe.calls.get());
            assertTrue(System.nanoTime() - t0 < TIMEOUT / 3, "took " + (System.nanoTime() - t0) / 1_000_000 + " ms");

            // the same through a Condition (the host path's waits)
            Probe p2 = new Probe();
            AtomicInteger moved = new AtomicInteger();
            p2.onCall = moved::incrementAndGet;
            new Waiter(policy, p2).await(() -> moved.get() >= 50, 7);
            assertEquals(50, p2.calls.get());
        }
        // without the calls the wait would have ended at the timeout: the probe's error
        Waiter.FailureProbe none = (r, waited, timeout) -> {
            if (waited > 200_000_000L) {
                throw new IllegalStateException("timed out waiting for rank " + r);
            }
        };
        assertThrows(IllegalStateException.class, () -> new Waiter(new WaitPolicy(0, 0, 50_000, TIMEOUT), none).await(flag(), 0, 1, 7));
    }

    @Test
    void callsComeAtMostEveryIntervalAndNeverOnAWaitThatDidNotWait() {
        ByteBuffer f = flag();
        Probe probe = new Probe();
        Flags.release(f, 0, 5);
        Waiter w = new Waiter(new WaitPolicy(0, 0, 50_000, TIMEOUT), probe);
        w.await(f, 0, 5, 1);
        assertEquals(0, probe.calls.get(), "the flag was there: no outside progress");

        ByteBuffer g = flag();
        Thread setter = new Thread(() -> {
            LockSupport.parkNanos(30_000_000L);
            Flags.release(g, 0, 1);
        });
        long t0 = System.nanoTime();
        setter.start();
        new Waiter(new WaitPolicy(20_000, 100_000, 50_000, TIMEOUT), probe).await(g, 0, 1, 1);
        long waited = System.nanoTime() - t0;
        int calls = probe.calls.get();
        assertTrue(calls >= 1, "a 30 ms wait made no outside progress");
        assertTrue(calls <= waited / Waiter.OUTSIDE_PROGRESS_NANOS + 1,
                calls + " calls in " + waited / 1000 + " us: more than one per " + Waiter.OUTSIDE_PROGRESS_NANOS / 1000 + " us");
    }
}
