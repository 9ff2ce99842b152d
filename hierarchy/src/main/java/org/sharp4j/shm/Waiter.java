package org.sharp4j.shm;

import java.nio.ByteBuffer;
import java.util.concurrent.locks.LockSupport;

/**
 * Waits until a monotonically increasing flag word reaches a target, by the {@link WaitPolicy}.
 *
 * <p>The fast path is one acquire load. The slow path spins, yields, parks, and every few
 * milliseconds asks the {@link FailureProbe} whether a peer died or the job was aborted, so a dead
 * peer is reported quickly and a stuck one after the timeout; nothing waits forever.
 *
 * <p>An interrupted thread keeps waiting (a collective cannot be left half done) but parks
 * properly: its interrupt status is cleared while it parks and set again when the wait ends.
 */
public final class Waiter {
    /** Decides, in the slow path, whether waiting is hopeless; throws the error to report. */
    public interface FailureProbe {
        /**
         * @param awaitedRank the rank whose flag we wait for
         * @param waitedNanos how long this wait has lasted
         * @param timeoutNanos the policy's timeout (the probe decides what to do past it)
         */
        void check(int awaitedRank, long waitedNanos, long timeoutNanos);

        /** Called when a wait that called {@link #check} at least once ends (successfully or not). */
        default void waitEnded() {
        }
    }

    /**
     * Something other than a flag word to wait for, e.g. a network request (the inter-node host
     * path polls its transport in {@link #done()}). Implement it on a long-lived object: the wait
     * itself allocates nothing.
     */
    public interface Condition {
        /** Polls once; true when the wait is over. May throw to end the wait with an error. */
        boolean done();
    }

    private static final long PROBE_INTERVAL_NANOS = 20_000_000L;

    private final WaitPolicy policy;
    private final FailureProbe probe;
    private final long probeIntervalNanos;

    public Waiter(WaitPolicy policy, FailureProbe probe) {
        this(policy, probe, PROBE_INTERVAL_NANOS);
    }

    private Waiter(WaitPolicy policy, FailureProbe probe, long probeIntervalNanos) {
        this.policy = policy;
        this.probe = probe;
        this.probeIntervalNanos = probeIntervalNanos;
    }

    /**
     * Takes every branch of the flag wait's slow path (spin budget spent, yield, park, the
     * failure probe, the end of a probed wait) on a private flag that another thread sets after
     * about 1 ms; local, parked, about 1 ms. Why: C2 compiles a branch it never saw taken as a
     * trap, and ranks heated in lockstep never wait long, so a program's first long wait (a peer
     * that computes, a late start) threw the compiled slow path, and the collective it was inlined
     * into, back to the interpreter, and recompiled them against the program's first calls
     * (LogCompilation: unstable_if in {@code awaitSlow}, then the exchange recompiled). The engine
     * calls it while it heats the hot path, when the slow path's profile exists. {@code selfRank}:
     * the rank the probe is asked about (this rank: nothing to find dead).
     */
    public void exerciseSlowPath(int selfRank) {
        ByteBuffer flag = ByteBuffer.allocateDirect(64).order(java.nio.ByteOrder.nativeOrder());
        Waiter w = new Waiter(new WaitPolicy(2_000, 50_000, 50_000, policy.timeoutNanos), probe, 200_000);
        Thread setter = new Thread(() -> {
            LockSupport.parkNanos(1_000_000);
            Flags.release(flag, 0, 1);
        }, "sharp4j-wait-exercise");
        setter.setDaemon(true);
        setter.start();
        w.await(flag, 0, 1, selfRank);
        try {
            setter.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    public WaitPolicy policy() {
        return policy;
    }

    /** Returns the flag value once it is {@code >= target}. */
    public long await(ByteBuffer b, int off, long target, int awaitedRank) {
        long v = Flags.acquire(b, off);
        if (v >= target) {
            return v;
        }
        return awaitSlow(b, off, target, awaitedRank);
    }

    /**
     * Waits until {@code c.done()}, with the same spin, yield, park and failure probing as for
     * flags; {@code awaitedRank} is the (global) rank blamed if it never happens.
     */
    public void await(Condition c, int awaitedRank) {
        if (c.done()) {
            return;
        }
        final long start = System.nanoTime();
        for (int i = 1; policy.spinNanos > 0; i++) {
            Thread.onSpinWait();
            if (c.done()) {
                return;
            }
            if ((i & 7) == 0 && System.nanoTime() - start >= policy.spinNanos) {
                break;
            }
        }
        boolean interrupted = false;
        boolean probed = false;
        try {
            long nextProbe = start + probeIntervalNanos;
            long parkNanos = 1_000;
            while (true) {
                long now = System.nanoTime();
                long waited = now - start;
                if (waited < policy.yieldNanos) {
                    Thread.yield();
                } else {
                    interrupted |= Thread.interrupted(); // else parkNanos returns at once: a busy loop
                    LockSupport.parkNanos(parkNanos);
                    parkNanos = Math.min(parkNanos * 2, policy.parkMaxNanos);
                }
                if (c.done()) {
                    return;
                }
                if (now - nextProbe >= 0) {
                    nextProbe = now + probeIntervalNanos;
                    probed = true;
                    probe.check(awaitedRank, waited, policy.timeoutNanos);
                }
            }
        } finally {
            if (probed) {
                probe.waitEnded();
            }
            if (interrupted) {
                Thread.currentThread().interrupt(); // a collective is not interruptible; the status is kept for the caller
            }
        }
    }

    private long awaitSlow(ByteBuffer b, int off, long target, int awaitedRank) {
        final long start = System.nanoTime();
        long v;
        // Spin: check the clock every 8 polls (a PAUSE is ~40-140 cycles on x86, so 8 of them stay
        // well below a microsecond, and a short budget for oversubscribed ranks is honoured).
        for (int i = 1; policy.spinNanos > 0; i++) {
            Thread.onSpinWait();
            v = Flags.acquire(b, off);
            if (v >= target) {
                return v;
            }
            if ((i & 7) == 0 && System.nanoTime() - start >= policy.spinNanos) {
                break;
            }
        }
        boolean interrupted = false;
        boolean probed = false;
        try {
            long nextProbe = start + probeIntervalNanos;
            long parkNanos = 1_000;
            while (true) {
                long now = System.nanoTime();
                long waited = now - start;
                if (waited < policy.yieldNanos) {
                    Thread.yield();
                } else {
                    interrupted |= Thread.interrupted(); // else parkNanos returns at once: a busy loop
                    LockSupport.parkNanos(parkNanos);
                    parkNanos = Math.min(parkNanos * 2, policy.parkMaxNanos);
                }
                v = Flags.acquire(b, off);
                if (v >= target) {
                    return v;
                }
                if (now - nextProbe >= 0) {
                    nextProbe = now + probeIntervalNanos;
                    probed = true;
                    probe.check(awaitedRank, waited, policy.timeoutNanos);
                }
            }
        } finally {
            if (probed) {
                probe.waitEnded();
            }
            if (interrupted) {
                Thread.currentThread().interrupt(); // a collective is not interruptible; the status is kept for the caller
            }
        }
    }
}
