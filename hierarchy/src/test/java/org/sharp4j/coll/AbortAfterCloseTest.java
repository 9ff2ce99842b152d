package org.sharp4j.coll;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.sharp4j.Config;
import org.sharp4j.Sharp4jException;
import org.sharp4j.ThreadRanks;

/**
 * An abort from another thread and the close of its own rank (Engine's "teardown"): a watchdog's
 * abort records its reason, then relays it into the segments' abort words. The rank's own wait
 * sees the reason at its next failure probe, fails the call, and the program closes. A watchdog
 * preempted between the two steps (a loaded machine) then resumed into memory that close had
 * unmapped: on JDK 17, where close unmaps at once, a SIGSEGV of the whole JVM. Here the watchdog
 * is paused there for 300 ms; its rank must see the abort, and its close must wait for the relay.
 */
class AbortAfterCloseTest {
    @AfterEach
    void noPause() {
        Engine.abortPauseForTest = null;
    }

    @Test
    void aPreemptedWatchdogsAbortFinishesBeforeItsRanksCloseFreesTheSegments() {
        AtomicLong pauseEnded = new AtomicLong();
        AtomicLong abortEnded = new AtomicLong();
        AtomicLong closeEnded = new AtomicLong();
        Engine.abortPauseForTest = () -> {
            if (Thread.currentThread().getName().equals("watchdog")) {
                sleep(300);
                pauseEnded.set(System.nanoTime()); // inside abort, before the relay: close must not free anything until after it
            }
        };
        Throwable[] errs = ThreadRanks.runCollect(2, Config.defaults().withTimeoutNanos(120_000_000_000L), comm -> {
            if (comm.rank() == 0) {
                Thread watchdog = new Thread(() -> {
                    sleep(200); // rank 0 is inside the barrier, waiting for rank 1
                    comm.abort("watchdog fired");
                    abortEnded.set(System.nanoTime());
                }, "watchdog");
                watchdog.start();
                long t0 = System.nanoTime();
                Sharp4jException e = assertThrows(Sharp4jException.class, comm::barrier);
                assertTrue(e.getMessage().contains("watchdog fired"), e.getMessage());
                assertTrue(pauseEnded.get() == 0, "the call should end while the watchdog is still paused in abort (after "
                        + (System.nanoTime() - t0) / 1_000_000 + " ms)");
                comm.close(); // the segments are freed here (JDK 17: unmapped)
                closeEnded.set(System.nanoTime());
                watchdog.join(10_000);
                assertTrue(abortEnded.get() != 0, "the watchdog's abort did not end");
                // Timestamps taken inside abort (under its lock), not after it returned: the watchdog
                // may be preempted between leaving abort and reading the clock (Temurin 25 CI run).
                assertTrue(pauseEnded.get() != 0 && pauseEnded.get() <= closeEnded.get(),
                        "close returned while the watchdog was still inside abort, before its relay: it freed the segments under it");
            } else {
                sleep(2_000); // never calls: rank 0 can only leave through the abort
            }
        }, 60_000);
        assertNull(errs[0]);
        assertNull(errs[1]);
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
