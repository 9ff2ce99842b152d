package org.sharp4j.fallback.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.bootstrap.Bootstrap;
import org.sharp4j.bootstrap.ThreadBootstrap;
import org.sharp4j.coll.CallStatus;
import org.sharp4j.coll.Desc;
import org.sharp4j.fallback.HostStep;
import org.sharp4j.shm.WaitPolicy;
import org.sharp4j.shm.Waiter;
import org.sharp4j.tuning.Collective;
import org.sharp4j.tuning.TuningTable;

/**
 * Issue 11 item 6: the UCX host path sets up and runs checked Allreduce, Reduce and Barrier on up
 * to 512 node leaders (threads of this JVM, each with its own UCX context and worker, TCP over
 * loopback), and reports per leader: setup time, endpoints, file descriptors and memory. Before,
 * setup posted 2(n-1) requests from a pool of 256 and failed from 130 leaders on.
 * {@code -Dsharp4j.scale.max=N} raises the largest size run (the CI run stops at 512).
 */
class HostPathScaleTest {
    static final long TIMEOUT = 300_000_000_000L;

    static long fds() throws Exception {
        try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
            return s.count();
        }
    }

    static long rssKb() throws Exception {
        for (String l : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (l.startsWith("VmRSS:")) {
                return Long.parseLong(l.replaceAll("\\D", ""));
            }
        }
        return -1;
    }

    @ParameterizedTest(name = "{0} node leaders")
    @ValueSource(ints = {16, 64, 256, 512})
    void setsUpAndRunsCheckedCollectives(int n) throws Exception {
        int max = Integer.getInteger("sharp4j.scale.max", 512);
        org.junit.jupiter.api.Assumptions.assumeTrue(n <= max, "sharp4j.scale.max=" + max);
        List<Bootstrap> boots = ThreadBootstrap.group(n, 600_000);
        int[] leaders = new int[n];
        for (int i = 0; i < n; i++) {
            leaders[i] = i;
        }
        Map<String, String> ucx = Map.of("TLS", "tcp", "NET_DEVICES", "lo");
        AtomicReferenceArray<Throwable> errs = new AtomicReferenceArray<>(n);
        AtomicLong setupNanos = new AtomicLong();
        AtomicLong endpoints = new AtomicLong();
        AtomicLong maxEndpoints = new AtomicLong();
        long fd0 = fds();
        long rss0 = rssKb();
        long[] fdAfter = new long[1];
        long[] rssAfter = new long[1];
        java.util.concurrent.CyclicBarrier measured = new java.util.concurrent.CyclicBarrier(n, () -> {
            try {
                fdAfter[0] = fds();
                rssAfter[0] = rssKb();
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        Thread[] threads = new Thread[n];
        for (int r = 0; r < n; r++) {
            final int me = r;
            threads[r] = new Thread(() -> {
                UcxTransport t = null;
                try {
                    long t0 = System.nanoTime();
                    // keep: every leader of this JVM would list the JVM's descriptors (all leaders' sockets,
                    // thousands here) twice per endpoint to find its own; a leader process has its own few
                    t = UcxTransport.connect(boots.get(me), leaders, ucx, TIMEOUT, UcxTransport.DEFAULT_POOL, "auto", "keep");
                    Waiter w = new Waiter(new WaitPolicy(0, 0, 200_000, TIMEOUT), (awaited, waited, timeout) -> {
                        if (waited >= timeout) {
                            throw new IllegalStateException("timed out waiting for " + awaited);
                        }
                    });
                    try (HostStep step = new HostStep(t, TuningTable.builtIn().compile(n, 1), w, "UCX k-nomial")) {
                        t = null; // the step owns it now
                        setupNanos.accumulateAndGet(System.nanoTime() - t0, Math::max);
                        ByteBuffer b = ByteBuffer.allocateDirect(64).order(ByteOrder.nativeOrder());
                        CallStatus st = new CallStatus();
                        for (int it = 0; it < 3; it++) {
                            for (int i = 0; i < 4; i++) {
                                b.putLong(8 * i, me + i + it);
                            }
                            step.allreduce(b, 0, 4, DataType.LONG, Op.SUM, Desc.make(Collective.ALLREDUCE, DataType.LONG, Op.SUM, 0, 4), st);
                            for (int i = 0; i < 4; i++) {
                                assertEquals((long) n * (n - 1) / 2 + (long) n * (i + it), b.getLong(8 * i), "allreduce");
                            }
                            b.putLong(0, me);
                            step.reduce(b, 0, 1, DataType.LONG, Op.MAX, n / 2, Desc.make(Collective.REDUCE, DataType.LONG, Op.MAX, n / 2, 1), st);
                            if (me == n / 2) {
                                assertEquals(n - 1, b.getLong(0), "reduce");
                            }
                            step.barrier(Desc.make(Collective.BARRIER, DataType.INT, Op.SUM, 0, 0), st);
                            assertTrue(st.ok());
                        }
                        int eps = ((UcxTransport) step.transport()).endpoints();
                        endpoints.addAndGet(eps);
                        maxEndpoints.accumulateAndGet(eps, Math::max);
                        measured.await();
                        step.barrier(Desc.make(Collective.BARRIER, DataType.INT, Op.SUM, 0, 0), st);
                    }
                } catch (Throwable e) {
                    errs.set(me, e);
                    measured.reset();
                } finally {
                    if (t != null) {
                        t.close();
                    }
                }
            }, "leader-" + r);
            threads[r].setDaemon(true);
            threads[r].start();
        }
        for (Thread th : threads) {
            th.join(900_000);
            assertTrue(!th.isAlive(), "a leader hangs");
        }
        for (int r = 0; r < n; r++) {
            if (errs.get(r) != null) {
                throw new AssertionError("leader " + r + " of " + n + ": " + errs.get(r), errs.get(r));
            }
        }
        double log2 = Math.ceil(Math.log(n) / Math.log(2));
        System.out.printf("HOST-SCALE | %d leaders | setup %.2f s | endpoints per leader %.1f (max %d; log2 n = %.0f) |"
                + " fds per leader %.1f | RSS per leader %.0f KiB |%n", n, setupNanos.get() / 1e9, endpoints.get() / (double) n,
                maxEndpoints.get(), log2, (fdAfter[0] - fd0) / (double) n, (rssAfter[0] - rss0) / (double) n);
        // O(log n) peers: the handshake's 2 log2 n plus the patterns' (recursive doubling: log2 n)
        assertTrue(maxEndpoints.get() <= 4 * log2 + 8, "endpoints per leader: " + maxEndpoints.get() + " for " + n + " leaders");
    }
}
