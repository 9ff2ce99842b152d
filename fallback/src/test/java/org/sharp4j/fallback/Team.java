package org.sharp4j.fallback;

import java.util.concurrent.atomic.AtomicReferenceArray;
import org.sharp4j.PeerFailureException;
import org.sharp4j.shm.WaitPolicy;
import org.sharp4j.shm.Waiter;
import org.sharp4j.tuning.CompiledTable;
import org.sharp4j.tuning.TuningTable;

/** Node leaders as threads over a {@link MemTransport.Mesh}, with the waiting and failure probing of the engine. */
final class Team {
    interface Body {
        void run(int node) throws Exception;
    }

    private Team() {
    }

    /** Runs {@code body} on n threads; returns each one's failure (null where it succeeded), a hang as an AssertionError. */
    static Throwable[] run(int n, long timeoutMillis, Body body) {
        AtomicReferenceArray<Throwable> errs = new AtomicReferenceArray<>(n);
        Thread[] threads = new Thread[n];
        for (int p = 0; p < n; p++) {
            final int node = p;
            threads[p] = new Thread(() -> {
                try {
                    body.run(node);
                } catch (Throwable e) {
                    errs.set(node, e);
                }
            }, "node-" + p);
            threads[p].setDaemon(true);
            threads[p].start();
        }
        long deadline = System.currentTimeMillis() + timeoutMillis;
        Throwable[] out = new Throwable[n];
        for (int p = 0; p < n; p++) {
            try {
                threads[p].join(Math.max(1, deadline - System.currentTimeMillis()));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (threads[p].isAlive()) {
                errs.compareAndSet(p, null, new AssertionError("node " + p + " still running after " + timeoutMillis + " ms (hang)"));
            }
        }
        for (int p = 0; p < n; p++) {
            out[p] = errs.get(p);
        }
        return out;
    }

    /** Runs and rethrows the first failure, the others suppressed. */
    static void runOk(int n, long timeoutMillis, Body body) {
        Throwable[] errors = run(n, timeoutMillis, body);
        AssertionError first = null;
        for (int p = 0; p < n; p++) {
            if (errors[p] != null) {
                AssertionError e = new AssertionError("node " + p + " of " + n + ": " + errors[p], errors[p]);
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    /**
     * A waiter like the engine's for node leaders: short spin, yield, park; its probe fails at
     * once when {@code steps[node]} received an abort and after {@code timeoutNanos} otherwise.
     */
    static Waiter waiter(long timeoutNanos, HostStep[] steps, int node) {
        WaitPolicy policy = new WaitPolicy(1_000, 2_000_000, 100_000, timeoutNanos);
        return new Waiter(policy, (awaited, waited, timeout) -> {
            HostStep s = steps == null ? null : steps[node];
            long w = s == null ? 0 : s.abortWord();
            if (w != 0) {
                int giver = (int) w - 1;
                int blamed = (int) (w >>> 32) - 1;
                throw new PeerFailureException("rank " + giver + " gave up" + (blamed >= 0 ? " because of rank " + blamed : ""),
                        new int[] {blamed >= 0 ? blamed : giver});
            }
            if (waited >= timeout) {
                throw new PeerFailureException("timed out waiting for rank " + awaited, new int[] {awaited});
            }
        });
    }

    /** The built-in table with {@code rules} as the override string, compiled for n nodes of one rank. */
    static CompiledTable table(String rules, int n) {
        TuningTable t = TuningTable.builtIn();
        if (rules != null) {
            t = t.withOverride(rules, "test");
        }
        return t.compile(n, 1);
    }
}
