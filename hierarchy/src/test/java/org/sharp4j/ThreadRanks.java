package org.sharp4j;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.sharp4j.bootstrap.Bootstrap;
import org.sharp4j.bootstrap.ThreadBootstrap;

/** Runs a body on N ranks as threads of this JVM, each with its own communicator over the same segments. */
public final class ThreadRanks {
    public interface Body {
        void run(Communicator comm) throws Exception;
    }

    private ThreadRanks() {
    }

    /** Runs and rethrows the first rank's failure (with the others suppressed). */
    public static void run(int n, Config cfg, Body body) {
        Throwable[] errors = runCollect(n, cfg, body, 600_000);
        AssertionError first = null;
        for (int r = 0; r < n; r++) {
            if (errors[r] != null) {
                if (first == null) {
                    first = new AssertionError("rank " + r + " of " + n + " failed: " + errors[r], errors[r]);
                } else {
                    first.addSuppressed(new AssertionError("rank " + r + ": " + errors[r], errors[r]));
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    /** Runs and returns each rank's failure (null where it succeeded). */
    public static Throwable[] runCollect(int n, Config cfg, Body body, long joinMillis) {
        return runCollect(n, r -> cfg, body, joinMillis);
    }

    /** As {@link #runCollect(int, Config, Body, long)}, each rank with its own configuration ({@code cfgOf.apply(rank)}). */
    public static Throwable[] runCollect(int n, java.util.function.IntFunction<Config> cfgOf, Body body, long joinMillis) {
        List<Bootstrap> boots = ThreadBootstrap.group(n, 60_000);
        AtomicReferenceArray<Throwable> errs = new AtomicReferenceArray<>(n);
        List<Thread> threads = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            final int rank = r;
            Thread t = new Thread(() -> {
                try (Communicator c = Sharp4j.create(boots.get(rank), cfgOf.apply(rank))) {
                    try {
                        body.run(c);
                    } catch (Throwable e) {
                        c.abort(e.toString()); // peers fail now, not at the timeout
                        throw e;
                    }
                } catch (Throwable e) {
                    errs.set(rank, e);
                }
            }, "rank-" + r);
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }
        long deadline = System.currentTimeMillis() + joinMillis;
        for (int r = 0; r < n; r++) {
            try {
                threads.get(r).join(Math.max(1, deadline - System.currentTimeMillis()));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (threads.get(r).isAlive()) {
                errs.compareAndSet(r, null, new AssertionError("rank " + r + " still running after " + joinMillis + " ms (hang)"));
            }
        }
        Throwable[] out = new Throwable[n];
        for (int r = 0; r < n; r++) {
            out[r] = errs.get(r);
        }
        return out;
    }
}
