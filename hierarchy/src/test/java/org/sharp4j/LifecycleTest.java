package org.sharp4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.sharp4j.bootstrap.Bootstrap;
import org.sharp4j.coll.Engine;
import org.sharp4j.bootstrap.ThreadBootstrap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Who may touch a communicator when (Engine's class comment): concurrent use, abort and close
 * from another thread, an interrupted caller, a phase-3 error that is not a peer failure.
 */
class LifecycleTest {
    static final long LONG_TIMEOUT = 120_000_000_000L;

    @AfterEach
    void offloadOff() {
        CountingOffloadProvider.mode = null;
        CountingOffloadProvider.failAtCall = -1;
        CountingOffloadProvider.failNode = -1;
    }

    /**
     * Rank 0's thread 'caller', which waits (in a barrier) until rank 1 joins; meanwhile the test thread
     * probes. With {@code leased} it first completes two barriers (rank 1 makes them too: {@link #partner}),
     * the second of which grants it the lease (Engine's class comment, "The lease"), so the waiting one is
     * a leased call.
     */
    private static Thread inCall(Communicator comm, AtomicReference<Throwable> err, CountDownLatch done, boolean leased) {
        Thread t = new Thread(() -> {
            try {
                if (leased) {
                    comm.barrier(); // through the compare-and-set
                    comm.barrier(); // the second in a row: the caller is granted the lease
                }
                comm.barrier();
            } catch (Throwable e) {
                err.set(e);
            } finally {
                done.countDown();
            }
        }, "caller");
        t.start();
        return t;
    }

    private static void assumeLeases(boolean leased) {
        org.junit.jupiter.api.Assumptions.assumeTrue(!leased || org.sharp4j.coll.Engine.leasesAvailable(), "no membarrier: no leases here");
    }

    /**
     * {@link Engine#LEASE_PAYS_AFTER} + 44 Allreduces on the calling thread, which (granted the lease at
     * its second call at the latest) leaves it a lease that paid: the next thread's first call revokes
     * it and sets the run a thread needs for a lease back to 2, whatever came before (the set-up's calls).
     */
    private static void payingLease(Communicator comm) {
        long[] sum = new long[1];
        for (int i = 0; i < Engine.LEASE_PAYS_AFTER + 44; i++) {
            comm.allreduce(new long[] {comm.rank()}, 0, sum, 0, 1, Op.SUM);
        }
    }

    /** Rank 1's side of {@link #inCall}'s first two barriers, when leased. */
    private static void partner(Communicator comm, boolean leased) {
        if (leased) {
            comm.barrier();
            comm.barrier();
        }
    }

    /** After {@link #inCall} and a pause: the waiting call entered on the lease, when leased. */
    private static void assertLeased(Communicator comm, long leasedBefore, boolean leased) {
        if (leased) {
            assertEquals(leasedBefore + 1, comm.engine().leasedEntries(), "the caller's waiting call did not enter on its lease");
        }
    }

    /**
     * Rank 0's thread 'caller' waits in a barrier while rank 0's own thread calls: that call throws,
     * naming the caller, and touches nothing (both ranks stay in step). {@code leased}: the caller
     * first completes two barriers through the compare-and-set, the second of which grants it the lease
     * (Engine's class comment, "The lease"), so the waiting barrier enters with plain stores; the second thread's
     * compare-and-set then succeeds (the state stays IDLE during a leased call), and only the lease's
     * inside flag, read after the process-wide fence, can turn it away.
     */
    @ParameterizedTest(name = "leased: {0}")
    @ValueSource(booleans = {false, true})
    void aSecondThreadInsideACallGetsAnErrorAndTouchesNothing(boolean leased) {
        assumeLeases(leased);
        CountDownLatch probed = new CountDownLatch(1);
        ThreadRanks.run(2, Config.defaults().withTimeoutNanos(LONG_TIMEOUT), comm -> {
            if (leased) {
                payingLease(comm);
            }
            if (comm.rank() == 0) {
                AtomicReference<Throwable> err = new AtomicReference<>();
                CountDownLatch done = new CountDownLatch(1);
                try {
                    long leasedBefore = comm.engine().leasedEntries();
                    inCall(comm, err, done, leased);
                    Thread.sleep(300); // the caller is inside the barrier, waiting for rank 1
                    assertLeased(comm, leasedBefore, leased);
                    IllegalStateException e = assertThrows(IllegalStateException.class,
                            () -> comm.allreduce(new long[] {1}, 0, new long[1], 0, 1, Op.SUM));
                    assertTrue(e.getMessage().contains("two threads at once") && e.getMessage().contains("'caller'"), e.getMessage());
                } finally {
                    probed.countDown(); // also on a failure here: rank 1 must not wait forever
                }
                assertTrue(done.await(60, TimeUnit.SECONDS));
                assertNull(err.get(), "the caller's call must complete normally");
            } else {
                partner(comm, leased);
                assertTrue(probed.await(60, TimeUnit.SECONDS));
                comm.barrier();
            }
            long[] sum = new long[1];
            comm.allreduce(new long[] {comm.rank() + 1}, 0, sum, 0, 1, Op.SUM); // still in step
            assertArrayEquals(new long[] {3}, sum);
        });
    }

    /**
     * Threads that take turns (each waits for the other's turn to end, as MPI_THREAD_SERIALIZED asks):
     * the lease follows the thread that calls, every turn's results are right, and all but a turn's
     * first two calls enter on the lease (the second is granted it: Engine's class comment, "The lease").
     */
    @Test
    void theLeaseFollowsTheThreadThatCalls() {
        ThreadRanks.run(2, Config.defaults().withTimeoutNanos(LONG_TIMEOUT), comm -> {
            final int n = (int) Engine.LEASE_PAYS_AFTER + 1_000; // every lease pays: the next thread is granted at its second call
            long leased = takeTurns(comm, n, n, n, n, n, n);
            assertEquals(Engine.leasesAvailable() ? 6L * (n - 2) : 0, leased, "rank " + comm.rank() + ": calls entered on a lease");
        });
    }

    /**
     * Threads that take turns every few calls would pay a process-wide barrier per turn to revoke
     * leases that saved a few compare-and-sets: a lease revoked before it served LEASE_PAYS_AFTER
     * calls doubles the run of calls the next holder must make first, and one that served more
     * resets it to 2. The counts follow that rule exactly (a lease granted at a turn's k-th call
     * serves its calls after the k-th).
     */
    @Test
    void leasesWaitForLongerRunsWhereThreadsTakeTurnsOftenAndComeBackWhenTheyLast() {
        ThreadRanks.run(2, Config.defaults().withTimeoutNanos(LONG_TIMEOUT), comm -> {
            // run 2: granted at call 2 (1 leased); revoked having served 1: run 4, nothing; granted at call 4 of 5
            // (1); revoked having served 1: run 8, nothing; granted at call 8 of n (n - 8); revoked having served
            // n - 8 >= LEASE_PAYS_AFTER: run 2, granted at call 2 of 3 (1)
            final int n = (int) Engine.LEASE_PAYS_AFTER + 1_000;
            long leased = takeTurns(comm, 3, 3, 3, 5, 7, 7, n, 3);
            assertEquals(Engine.leasesAvailable() ? 1 + 1 + (n - 8) + 1 : 0, leased, "rank " + comm.rank() + ": calls entered on a lease");
        });
    }

    /**
     * {@link #payingLease}, then a new thread per turn making {@code calls[i]} Allreduces, each result
     * checked; returns the turns' calls entered on a lease.
     */
    private static long takeTurns(Communicator comm, int... calls) throws InterruptedException {
        payingLease(comm);
        long leasedBefore = comm.engine().leasedEntries();
        int base = 0;
        for (int turn = 0; turn < calls.length; turn++) {
            AtomicReference<Throwable> err = new AtomicReference<>();
            final int from = base;
            final int n = calls[turn];
            Thread t = new Thread(() -> {
                try {
                    long[] r = new long[1];
                    for (int i = from; i < from + n; i++) {
                        comm.allreduce(new long[] {i + comm.rank()}, 0, r, 0, 1, Op.SUM);
                        if (r[0] != 2L * i + 1) {
                            throw new AssertionError("rank " + comm.rank() + " call " + i + ": " + r[0]);
                        }
                    }
                } catch (Throwable e) {
                    err.set(e);
                }
            }, "turn-" + turn);
            t.start();
            t.join(60_000);
            assertNull(err.get());
            base += n;
        }
        return comm.engine().leasedEntries() - leasedBefore;
    }

    @Test
    void abortFromAWatchdogEndsItsOwnRanksWaitAtOnce() {
        Throwable[] errs = ThreadRanks.runCollect(2, Config.defaults().withTimeoutNanos(LONG_TIMEOUT), comm -> {
            if (comm.rank() == 0) {
                Thread watchdog = new Thread(() -> {
                    sleep(300);
                    comm.abort("watchdog fired");
                });
                watchdog.start();
                long t0 = System.nanoTime();
                Sharp4jException e = assertThrows(Sharp4jException.class, comm::barrier);
                double s = (System.nanoTime() - t0) / 1e9;
                assertTrue(e.getMessage().contains("watchdog fired"), e.getMessage());
                assertTrue(s < 5, "own wait took " + s + " s to end after abort (timeout 120 s)");
            } else {
                sleep(2_000); // never calls: rank 0 can only leave through the abort
            }
        }, 60_000);
        assertNull(errs[0]);
        assertNull(errs[1]);
    }

    /** {@code leased}: the caller is inside a call on its lease; the close aborts it and waits for its exit before it frees anything. */
    @ParameterizedTest(name = "leased: {0}")
    @ValueSource(booleans = {false, true})
    void closeFromAnotherThreadDuringACallEndsTheCallWithoutUnmappingUnderIt(boolean leased) {
        assumeLeases(leased);
        Throwable[] errs = ThreadRanks.runCollect(2, Config.defaults().withTimeoutNanos(LONG_TIMEOUT), comm -> {
            if (leased) {
                payingLease(comm);
            }
            if (comm.rank() == 0) {
                AtomicReference<Throwable> err = new AtomicReference<>();
                CountDownLatch done = new CountDownLatch(1);
                long leasedBefore = comm.engine().leasedEntries();
                inCall(comm, err, done, leased);
                sleep(300);
                assertLeased(comm, leasedBefore, leased);
                comm.close(); // e.g. a shutdown hook: must not unmap while the caller polls the segment
                assertTrue(done.await(10, TimeUnit.SECONDS), "the call did not end after close");
                assertNotNull(err.get());
                assertTrue(err.get().getMessage().contains("closed by thread") && err.get().getMessage().contains("'caller'"),
                        String.valueOf(err.get()));
                IllegalStateException closed = assertThrows(IllegalStateException.class, comm::barrier);
                assertTrue(closed.getMessage().contains("closed"), closed.getMessage());
            } else {
                partner(comm, leased);
                sleep(1_500);
            }
        }, 60_000);
        assertNull(errs[0]);
    }

    @Test
    void closeFromAnotherThreadWaitsForACallerThatKeepsCallingAndThenRefusesIt() {
        Throwable[] errs = ThreadRanks.runCollect(2, Config.defaults().withTimeoutNanos(LONG_TIMEOUT), comm -> {
            AtomicReference<Throwable> last = new AtomicReference<>();
            CountDownLatch done = new CountDownLatch(1);
            int[] calls = new int[1];
            Thread caller = new Thread(() -> {
                long end = System.nanoTime() + 30_000_000_000L;
                long[] sum = new long[1];
                // a program that ignores errors and calls again: the close must still get its turn
                while (System.nanoTime() < end) {
                    try {
                        comm.allreduce(new long[] {1}, 0, sum, 0, 1, Op.SUM);
                        calls[0]++;
                    } catch (Throwable e) {
                        last.set(e);
                        if (e instanceof IllegalStateException && e.getMessage().contains("communicator is closed")) {
                            break;
                        }
                    }
                }
                done.countDown();
            }, "looper");
            caller.start();
            sleep(300 + 200 * comm.rank()); // rank 0 first: rank 1's caller then keeps calling into a failed job
            long t0 = System.nanoTime();
            comm.close();
            double s = (System.nanoTime() - t0) / 1e9;
            assertTrue(s < 5, "rank " + comm.rank() + ": close took " + s + " s");
            assertTrue(calls[0] > 0, "rank " + comm.rank() + ": the looper never completed a call before the close");
            assertThrows(IllegalStateException.class, comm::barrier);
            assertTrue(done.await(10, TimeUnit.SECONDS), "rank " + comm.rank() + ": the caller never stopped");
            // its next call after the close was refused before touching anything
            assertTrue(last.get() instanceof IllegalStateException && last.get().getMessage().contains("communicator is closed"),
                    "rank " + comm.rank() + ": " + last.get());
        }, 60_000);
        assertNull(errs[0]);
        assertNull(errs[1]);
    }

    /**
     * A close from inside a call on the calling thread itself (here the outside-progress callback a
     * wait runs): it cannot wait for its own call to end, so the call's exit releases.
     */
    @Test
    void closeFromInsideACallOnItsOwnThreadEndsTheCallAndTheExitReleases() throws Exception {
        java.util.List<Bootstrap> boots = ThreadBootstrap.group(2, 60_000);
        AtomicReference<Communicator> self = new AtomicReference<>();
        java.util.concurrent.atomic.AtomicInteger closes = new java.util.concurrent.atomic.AtomicInteger();
        Bootstrap b0 = boots.get(0);
        Bootstrap closing = withProgress(b0, "closing", () -> {
            Communicator c = self.get();
            if (c != null && closes.getAndIncrement() == 0) {
                c.close(); // inside the barrier below, on its thread
            }
        });
        Config cfg = Config.defaults().withTimeoutNanos(LONG_TIMEOUT);
        AtomicReference<Throwable> err1 = new AtomicReference<>();
        CountDownLatch r0done = new CountDownLatch(1);
        Thread r1 = new Thread(() -> {
            try (Communicator c = Sharp4j.create(boots.get(1), cfg)) {
                c.barrier();
                assertTrue(r0done.await(60, TimeUnit.SECONDS));
            } catch (Throwable e) {
                err1.set(e);
            }
        }, "rank-1");
        r1.setDaemon(true);
        r1.start();
        Communicator c0 = Sharp4j.create(closing, cfg);
        try {
            c0.barrier(); // both in step
            self.set(c0);
            long t0 = System.nanoTime();
            Throwable e = assertThrows(Sharp4jException.class, c0::barrier); // rank 1 never comes: the wait runs progress
            assertTrue(e.getMessage().contains("closed from inside a collective by its own thread"), e.getMessage());
            assertTrue((System.nanoTime() - t0) / 1e9 < 5, "the call did not end at once");
            assertTrue(closes.get() >= 1); // the callback ran (and closed on its first run)
            IllegalStateException closed = assertThrows(IllegalStateException.class, c0::barrier);
            assertTrue(closed.getMessage().contains("closed"), closed.getMessage());
            c0.close(); // idempotent
        } finally {
            r0done.countDown();
        }
        r1.join(60_000);
        assertNull(err1.get());
        if (Runtime.version().feature() >= 22) {
            return; // from JDK 22 a close leaves the unmapping to the GC (Segment.Unmapper): nothing to see here
        }
        // released by the exit: no mapping of this job's segments is left once rank 1 closed too
        String seg = "sharp4j-" + b0.jobId() + "-n";
        java.util.List<String> mapped = java.nio.file.Files.readAllLines(java.nio.file.Paths.get("/proc/self/maps")).stream()
                .filter(l -> l.contains(seg)).collect(java.util.stream.Collectors.toList());
        assertTrue(mapped.isEmpty(), "still mapped: " + mapped);
    }

    /**
     * A collective called from inside another on the same thread (here from the outside-progress callback
     * that the outer call's wait runs): refused before it touches anything, and the outer call completes.
     * On a lease the state stays IDLE during the outer call, so only the lease's own inside flag can catch it.
     */
    @Test
    void aCollectiveCalledFromInsideOneOnItsOwnThreadIsRefused() throws Exception {
        java.util.List<Bootstrap> boots = ThreadBootstrap.group(2, 60_000);
        AtomicReference<Communicator> self = new AtomicReference<>();
        AtomicReference<Throwable> nested = new AtomicReference<>();
        CountDownLatch refused = new CountDownLatch(1);
        Bootstrap b0 = boots.get(0);
        Bootstrap calling = withProgress(b0, "calling", () -> {
            Communicator c = self.get();
            if (c != null && refused.getCount() > 0) {
                try {
                    c.allreduce(new long[] {1}, 0, new long[1], 0, 1, Op.SUM); // inside the barrier below
                } catch (Throwable e) {
                    nested.set(e);
                }
                refused.countDown();
            }
        });
        Config cfg = Config.defaults().withTimeoutNanos(LONG_TIMEOUT);
        AtomicReference<Throwable> err1 = new AtomicReference<>();
        Thread r1 = new Thread(() -> {
            try (Communicator c = Sharp4j.create(boots.get(1), cfg)) {
                c.barrier();
                c.barrier();
                assertTrue(refused.await(60, TimeUnit.SECONDS));
                c.barrier(); // lets rank 0's outer barrier end
                long[] sum = new long[1];
                c.allreduce(new long[] {2}, 0, sum, 0, 1, Op.SUM);
                assertArrayEquals(new long[] {3}, sum);
            } catch (Throwable e) {
                err1.set(e);
            }
        }, "rank-1");
        r1.setDaemon(true);
        r1.start();
        try (Communicator c0 = Sharp4j.create(calling, cfg)) {
            c0.barrier(); // both in step
            c0.barrier(); // the second call in a row on this thread at the latest grants it the lease (where leases exist)
            long leasedBefore = c0.engine().leasedEntries();
            self.set(c0);
            c0.barrier(); // rank 1 comes only after the callback's call was refused
            self.set(null);
            if (org.sharp4j.coll.Engine.leasesAvailable()) {
                assertEquals(leasedBefore + 1, c0.engine().leasedEntries(), "the outer barrier did not enter on its lease");
            }
            assertTrue(nested.get() instanceof IllegalStateException, String.valueOf(nested.get()));
            if (org.sharp4j.coll.Engine.leasesAvailable()) {
                assertTrue(nested.get().getMessage().contains("from inside one of its own collectives"), nested.get().getMessage());
            }
            long[] sum = new long[1];
            c0.allreduce(new long[] {1}, 0, sum, 0, 1, Op.SUM); // still in step: the refused call touched nothing
            assertArrayEquals(new long[] {3}, sum);
        }
        r1.join(60_000);
        assertNull(err1.get());
    }

    @Test
    void anInterruptedCallerParksInsteadOfSpinningAndKeepsItsStatus() {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        ThreadRanks.run(2, Config.defaults().withTimeoutNanos(LONG_TIMEOUT), comm -> {
            if (comm.rank() == 0) {
                Thread.currentThread().interrupt();
                long cpu0 = mx.getCurrentThreadCpuTime();
                long t0 = System.nanoTime();
                comm.barrier(); // rank 1 comes after 1.5 s
                long wall = System.nanoTime() - t0;
                long cpu = mx.getCurrentThreadCpuTime() - cpu0;
                assertTrue(Thread.interrupted(), "the interrupt status must survive the call");
                assertTrue(wall > 1_000_000_000L, "barrier returned early: " + wall / 1e6 + " ms");
                assertTrue(cpu < wall / 2, "an interrupted waiter burnt " + cpu / 1e6 + " ms of CPU in " + wall / 1e6 + " ms");
            } else {
                sleep(1_500);
                comm.barrier();
            }
        });
    }

    /** A plain Sharp4jException in phase 3 (a protocol or transport error) must not strand the node's ranks. */
    @Test
    void aPhase3ErrorThatIsNotAPeerFailureFailsEveryRankAtOnce() {
        CountingOffloadProvider.mode = "all";
        CountingOffloadProvider.failNode = 1;
        CountingOffloadProvider.failAtCall = 3;
        long t0 = System.nanoTime();
        Throwable[] errs = ThreadRanks.runCollect(4, Config.defaults().withSimulatedTopology(2, 1).withWarmupRounds(0)
                .withTimeoutNanos(LONG_TIMEOUT), comm -> {
                    for (int i = 0; i < 10; i++) {
                        comm.allreduce(new long[] {i}, 0, new long[1], 0, 1, Op.SUM);
                    }
                }, 90_000);
        double s = (System.nanoTime() - t0) / 1e9;
        assertTrue(s < 20, "took " + s + " s (timeout 120 s)");
        int leader1 = 2; // node 1 = ranks 2, 3
        assertTrue(errs[leader1] instanceof Sharp4jException && errs[leader1].getMessage().contains("injected"),
                String.valueOf(errs[leader1]));
        for (int r : new int[] {0, 1, 3}) {
            assertTrue(errs[r] instanceof PeerFailureException, "rank " + r + ": " + errs[r]);
            assertTrue(errs[r].getMessage().contains("rank " + leader1 + " gave up"), "rank " + r + ": " + errs[r].getMessage());
        }
        assertEquals(4, errs.length);
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** {@code b0} under another name, whose waits run {@code progress} (Bootstrap.progress: the outside-progress callback). */
    private static Bootstrap withProgress(Bootstrap b0, String name, Runnable progress) {
        return new Bootstrap() {
            @Override public int rank() { return b0.rank(); }
            @Override public int size() { return b0.size(); }
            @Override public String jobId() { return b0.jobId(); }
            @Override public byte[][] allgather(byte[] mine) { return b0.allgather(mine); }
            @Override public String name() { return name; }
            @Override public void close() { b0.close(); }
            @Override public Runnable progress() { return progress; }
        };
    }
}
