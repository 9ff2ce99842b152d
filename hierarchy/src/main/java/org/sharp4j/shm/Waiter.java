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

    public Waiter(WaitPolicy policy, FailureProbe probe) {
        this.policy = policy;
        this.probe = probe;
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
            long nextProbe = start + PROBE_INTERVAL_NANOS;
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
                    nextProbe = now + PROBE_INTERVAL_NANOS;
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
            long nextProbe = start + PROBE_INTERVAL_NANOS;
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
                    nextProbe = now + PROBE_INTERVAL_NANOS;
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
