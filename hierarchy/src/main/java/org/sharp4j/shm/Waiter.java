package org.sharp4j.shm;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.util.concurrent.locks.LockSupport;

/**
 * Waits until a monotonically increasing flag word reaches a target, by the {@link WaitPolicy}.
 *
 * <p>The fast path is one acquire load. The slow path spins, yields, parks, and every few
 * milliseconds asks the {@link FailureProbe} whether a peer died or the job was aborted, so a dead
 * peer is reported quickly and a stuck one after the timeout; nothing waits forever.
 *
 * <p>Past the spin budget a wait also drives the program's other communication library every
 * {@link #OUTSIDE_PROGRESS_NANOS} ({@link FailureProbe#outsideProgress}): MPI, when sharp4j runs
 * next to it, so that what MPI queued on this rank moves while this rank waits in sharp4j.
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

        /**
         * Called every {@link #OUTSIDE_PROGRESS_NANOS} while a wait is past its spin budget (yielding
         * or parking), first when it has lasted that long: drives the other communication library
         * the program uses, if any ({@link org.sharp4j.bootstrap.Bootstrap#progress}). Must not throw.
         */
        default void outsideProgress() {
        }
    }

    /**
     * How often a wait past its spin budget drives the program's other communication library
     * ({@link FailureProbe#outsideProgress}): often enough that data it queued moves at a useful
     * rate (an MPI progress call writes what the sockets take), rarely enough that its cost (an
     * {@code MPI_Iprobe}: a JNI call and the library's progress, about a microsecond) stays a few
     * percent of a yielding wait and nothing of a spinning one.
     */
    public static final long OUTSIDE_PROGRESS_NANOS = 20_000;

    /**
     * Something other than a flag word to wait for, e.g. a network request (the inter-node host
     * path polls its transport in {@link #done()}). Implement it on a long-lived object: the wait
     * itself allocates nothing.
     */
    public interface Condition {
        /** Polls once; true when the wait is over. May throw to end the wait with an error. */
        boolean done();

        /**
         * A count that grows whenever what is waited for moved, read after each {@link #done()} that
         * said no (the host path: the events its transport's progress calls reported, i.e. messages
         * or pieces of them sent and received). While it grows the wait does not park: its yield
         * window ({@link WaitPolicy#yieldNanos}) restarts at every change, so only a wait that saw
         * nothing move for that long parks. Why: a node leader waiting for a long call's parts
         * between nodes is the one that drives them (a parked leader reads no socket and sends
         * nothing for up to a nap), and a 1 MiB Allreduce over TCP waits longer than the 1 ms
         * window. Measured on the netns rig (2 hosts x 1 rank, Allreduce, OSU port, 6 rounds
         * alternating with the build before, P50 medians): 128 KiB 203 us against 227, 512 KiB 548
         * against 614, 1 MiB 1020 against 1208, 2-16 MiB 7-19% less, 64 and 256 KiB 3-5% more; the
         * 2-host Reduce and 3 hosts mixed (README, "Benchmarks"). Open MPI Java in the same
         * processes varied too much (1 MiB: 236-1348 us) for its ratios to show it. The
         * timeout and the failure probe still count from the wait's start. Default: 0, nothing to
         * tell (a flag's wait parks after the window).
         */
        default long activity() {
            return 0;
        }
    }

    private static final long PROBE_INTERVAL_NANOS = 20_000_000L;

    private final WaitPolicy policy;
    private final FailureProbe probe;
    private final long probeIntervalNanos;
    /**
     * Naps taken by condition waits ({@link #await(Condition, int)}) so far: statistics for tests,
     * written and read by the waiting thread only.
     */
    long parks;
    /**
     * Failure probes asked by this waiter's waits so far: {@link #exerciseSlowPath} ends each of its
     * waits after two. Written by the waiting thread only (opaque), read by the exercise's setter
     * thread (opaque: it only needs to see the count grow, in time).
     */
    private long probes;
    private static final VarHandle PROBES;

    static {
        try {
            PROBES = MethodHandles.lookup().findVarHandle(Waiter.class, "probes", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
    /** The spin budget in force: the policy's, or {@link #HEATING_SPIN_NANOS} while the engine heats (see {@link #heating}). */
    private long spinNanos;
    /** 1 while the engine heats, else 0, and a count of {@link #unreachableEveryOther}'s calls (this rank's thread only, as spinNanos). */
    private int heatMask;
    private int glances;

    /**
     * Spin budget while the engine heats the hot path at creation: ranks wait for each other
     * there while their JVMs' compiler threads need the same cores (mpirun and the launcher bind
     * each rank to one CPU), and a rank that spins 20 us per wait starves its own compiler and
     * the peer waiting for it (measured: 2,000 heating rounds took 700 ms instead of about 50, and
     * the budget cut the heating before C2 had compiled the exchange). A short spin still runs
     * every branch of the spin loop, so the profile C2 compiles from has them all.
     */
    static final long HEATING_SPIN_NANOS = 1_000;

    public Waiter(WaitPolicy policy, FailureProbe probe) {
        this(policy, probe, PROBE_INTERVAL_NANOS);
    }

    private Waiter(WaitPolicy policy, FailureProbe probe, long probeIntervalNanos) {
        this.policy = policy;
        this.probe = probe;
        this.probeIntervalNanos = probeIntervalNanos;
        this.spinNanos = policy.spinNanos;
    }

    /**
     * While {@code on}, waits spin at most {@link #HEATING_SPIN_NANOS} before they yield (never
     * more than the policy's). Called by the thread that runs the collectives, around the heating.
     */
    public void heating(boolean on) {
        spinNanos = on ? Math.min(policy.spinNanos, HEATING_SPIN_NANOS) : policy.spinNanos;
        heatMask = on ? 1 : 0;
    }

    /**
     * 0, or while the engine heats every other time a bias that puts a flag's target out of reach,
     * so that a caller's {@link #glance} then fails and the caller goes its way on (the slow branch)
     * during the heating as well: the JIT then profiles that branch and compiles it, instead of a
     * trap that deoptimizes the caller the first time a peer is late after the heating. Arithmetic,
     * not a test of a heating flag: a branch on the flag would itself be taken one way in the heating
     * and the other after it (measured: that trap, then the caller run in the interpreter for a
     * while, cost OSU's Java barrier through the agent 0.3-0.5 us per call over 100,000 calls).
     */
    public long unreachableEveryOther() {
        return (long) (++glances & heatMask) << 60;
    }

    /**
     * A short look for a flag to reach {@code target}: its first poll, then up to {@link #FIRST_POLLS}
     * more while spinning is allowed (none when ranks outnumber cores). Returns the flag's value
     * (acquire), {@code >= target} once it reached it, else the last value seen when the polls ran
     * out: the caller then waits for its own condition with {@link #await}, which spins on, yields,
     * parks and probes failures, so a wait that begins here costs at most those polls more than one
     * that does not.
     */
    public long glance(ByteBuffer b, int off, long target) {
        long v = Flags.acquire(b, off);
        if (v >= target || spinNanos <= 0) {
            return v;
        }
        for (int i = 0; i < FIRST_POLLS; i++) {
            Thread.onSpinWait();
            v = Flags.acquire(b, off);
            if (v >= target) {
                return v;
            }
        }
        return v;
    }

    /**
     * Takes every branch of the slow paths of both waits, the flag's and the condition's (spin
     * budget spent, yield, park, activity seen and not, the failure probe, the other library's
     * progress, the end of a probed wait), each on a private flag or condition that comes true once
     * the wait has asked the failure probe twice (every 200 us); local, parked, about 1 ms in all,
     * and whatever the scheduler does (timed by the clock, a wait that a cold or descheduled rank
     * reached late ended at its first poll, about once in ten unit-test runs). Why: C2 compiles a branch it never saw
     * taken as a trap, and ranks heated in lockstep never wait long, so a program's first long
     * wait (a peer that computes, a late start) threw the compiled slow path, and the collective
     * it was inlined into, back to the interpreter, and recompiled them against the program's
     * first calls (LogCompilation: unstable_if in {@code awaitSlow}, then the exchange
     * recompiled). The condition wait, the host path's between nodes, trapped the same way at its
     * failure probe (JFR: unstable_if and profile_predicate in {@code await(Condition, int)} under
     * the host step, during the OSU port's rows on the netns rig; {@code FirstLongCallsTest}). The
     * engine calls it while it heats the hot path, when the slow paths' profiles exist.
     * {@code selfRank}: the rank the probe is asked about (this rank: nothing to find dead).
     */
    public void exerciseSlowPath(int selfRank) {
        // Each wait ends once it has asked the failure probe twice, whatever the scheduler does (a wait timed
        // by the clock ended at its first poll when a cold or descheduled rank reached it late): the flag is
        // set by a thread that watches the exercise waiter's count, and the condition watches it itself. The
        // waits ask the engine's own probe: a probe of another type here would be the only one the profile of
        // those calls has seen, and C2 compiled the real one as a class_check trap (FirstLongCallsTest).
        final ByteBuffer flag = ByteBuffer.allocateDirect(64).order(java.nio.ByteOrder.nativeOrder());
        final Waiter w = new Waiter(new WaitPolicy(2_000, 50_000, 50_000, policy.timeoutNanos), probe, 200_000);
        // word 8: the wait is over (it may end by the probe's exception: an abort during the heating), the setter stops
        Thread setter = new Thread(() -> {
            while ((long) PROBES.getOpaque(w) < 2 && Flags.acquire(flag, 8) == 0) {
                LockSupport.parkNanos(10_000);
            }
            Flags.release(flag, 0, 1);
        }, "sharp4j-wait-exercise");
        setter.setDaemon(true);
        setter.start();
        try {
            w.await(flag, 0, 1, selfRank);
        } finally {
            Flags.release(flag, 8, 1);
            try {
                setter.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        // the condition: done once the probe was asked twice more; its activity moves for the first 100 us,
        // then stands still, so the wait sees it move, then yields out its window and parks
        final long checks = w.probes + 2;
        final long moving = System.nanoTime() + 100_000;
        w.awaitSlow(new Condition() {
            private long polls;

            @Override
            public boolean done() {
                return w.probes >= checks;
            }

            @Override
            public long activity() {
                return System.nanoTime() < moving ? ++polls : polls;
            }
        }, selfRank);
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
        awaitSlow(c, awaitedRank);
    }

    /**
     * The condition wait past its first poll: its own method so that {@link #exerciseSlowPath} can
     * take its branches with a condition of its own without adding that type to the profile of the
     * first poll, which every collective inlines (in here, a wait that spins or yields, an
     * interface call per poll costs nothing that matters).
     */
    private void awaitSlow(Condition c, int awaitedRank) {
        final long start = System.nanoTime();
        for (int i = 1; spinNanos > 0; i++) {
            Thread.onSpinWait();
            if (c.done()) {
                return;
            }
            if ((i & 7) == 0 && System.nanoTime() - start >= spinNanos) {
                break;
            }
        }
        boolean interrupted = false;
        boolean probed = false;
        try {
            long nextProbe = start + probeIntervalNanos;
            long nextOutside = start + OUTSIDE_PROGRESS_NANOS; // a wait shorter than that never calls it
            long parkNanos = 1_000;
            long moved = c.activity();
            long still = start; // since when nothing moved: the yield window counts from here (Condition.activity)
            while (true) {
                long now = System.nanoTime();
                long waited = now - start;
                if (now - still < policy.yieldNanos) {
                    Thread.yield();
                } else {
                    interrupted |= Thread.interrupted(); // else parkNanos returns at once: a busy loop
                    parks++;
                    LockSupport.parkNanos(parkNanos);
                    parkNanos = Math.min(parkNanos * 2, policy.parkMaxNanos);
                }
                if (c.done()) {
                    return;
                }
                long a = c.activity();
                if (a != moved) {
                    moved = a;
                    still = now;
                    parkNanos = 1_000;
                }
                if (now - nextProbe >= 0) {
                    nextProbe = now + probeIntervalNanos;
                    probed = true;
                    probe.check(awaitedRank, waited, policy.timeoutNanos);
                    PROBES.setOpaque(this, probes + 1); // for exerciseSlowPath: the waiting thread writes, its setter reads
                }
                if (now - nextOutside >= 0) {
                    nextOutside = now + OUTSIDE_PROGRESS_NANOS;
                    probe.outsideProgress();
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

    /**
     * Polls before the slow path reads the clock: a peer that is publishing shows up within a
     * line transfer or two (50-400 ns here), and reading the clock first (about 25-30 ns with the
     * TSC) only delayed seeing it. At about 25 ns per {@code PAUSE} on this machine's cores, the
     * 64 polls last 1-3 us, well inside the spin budget; with no spin budget (ranks outnumber
     * cores) there are none: the first failed poll yields.
     */
    static final int FIRST_POLLS = 64;

    private long awaitSlow(ByteBuffer b, int off, long target, int awaitedRank) {
        long v;
        if (spinNanos > 0) {
            for (int i = 0; i < FIRST_POLLS; i++) {
                Thread.onSpinWait();
                v = Flags.acquire(b, off);
                if (v >= target) {
                    return v;
                }
            }
        }
        final long start = System.nanoTime();
        // Spin: check the clock every 8 polls (a PAUSE is ~40-140 cycles on x86, so 8 of them stay
        // well below a microsecond, and a short budget for oversubscribed ranks is honoured).
        for (int i = 1; spinNanos > 0; i++) {
            Thread.onSpinWait();
            v = Flags.acquire(b, off);
            if (v >= target) {
                return v;
            }
            if ((i & 7) == 0 && System.nanoTime() - start >= spinNanos) {
                break;
            }
        }
        boolean interrupted = false;
        boolean probed = false;
        try {
            long nextProbe = start + probeIntervalNanos;
            long nextOutside = start + OUTSIDE_PROGRESS_NANOS; // a wait shorter than that never calls it
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
                    PROBES.setOpaque(this, probes + 1); // for exerciseSlowPath: the waiting thread writes, its setter reads
                }
                if (now - nextOutside >= 0) {
                    nextOutside = now + OUTSIDE_PROGRESS_NANOS;
                    probe.outsideProgress();
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
