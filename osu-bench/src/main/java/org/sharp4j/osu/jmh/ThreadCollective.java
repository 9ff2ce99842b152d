package org.sharp4j.osu.jmh;

import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Group;
import org.openjdk.jmh.annotations.GroupThreads;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Control;
import org.openjdk.jmh.infra.ThreadParams;
import org.sharp4j.Communicator;
import org.sharp4j.Config;
import org.sharp4j.Op;
import org.sharp4j.Sharp4j;
import org.sharp4j.bootstrap.Bootstrap;
import org.sharp4j.bootstrap.ThreadBootstrap;

/**
 * One in-JVM collective round on two thread ranks: the whole sharp4j call path (argument checks,
 * algorithm choice, copy-in, flags, reduction, copy-out) without process start-up or the OSU loop.
 * Each JMH group is one job of two ranks; a thread's rank is its index in the group. The
 * communicators are built in a trial setup, concurrently on two helper threads (creation is collective).
 *
 * <p>Ending an iteration: a collective blocks until the partner makes the same call, but JMH
 * stops calling each thread on its own schedule: once both threads have left their measured loops
 * (JMH's "warmdown" sync), neither is called again, so a call started by one rank late in the
 * iteration may never be matched. The ranks therefore publish how many calls they have started, and
 * once JMH has stopped the measurement ({@link Control#stopMeasurement}) a rank only joins a call its
 * partner has already started (and is blocked in), never starts a new one. A blocked rank has not
 * left JMH's loops, so its partner keeps being called until it joins; see {@link #enter}. This costs
 * one volatile read and one release store per call, on a line the partner does not read while measuring.
 *
 * <p>Needs two free cores: ranks spin, then yield, then park (the sharp4j.wait defaults).
 */
@State(Scope.Group)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class ThreadCollective {
    static final int RANKS = 2;
    static final long SETUP_TIMEOUT_MILLIS = 60_000;

    private List<Bootstrap> bootstraps;
    private Communicator[] comms;
    /** Longs between the two ranks' counters: 128 bytes, so each sits on its own pair of cache lines. */
    private static final int PAD = 16;
    /** Calls started by rank r (over the whole trial), at index (r + 1) * PAD; written by that rank only. */
    private final AtomicLongArray started = new AtomicLongArray((RANKS + 1) * PAD);

    @Setup(Level.Trial)
    public void open() throws InterruptedException {
        bootstraps = ThreadBootstrap.group(RANKS, SETUP_TIMEOUT_MILLIS);
        Communicator[] made = new Communicator[RANKS];
        Throwable[] failed = new Throwable[RANKS];
        Thread[] threads = new Thread[RANKS];
        for (int r = 0; r < RANKS; r++) {
            final int rank = r;
            threads[r] = new Thread(() -> {
                try {
                    made[rank] = Sharp4j.create(bootstraps.get(rank), Config.defaults());
                } catch (Throwable t) {
                    failed[rank] = t;
                }
            }, "sharp4j-jmh-create-" + r);
            threads[r].start();
        }
        for (Thread t : threads) {
            t.join();
        }
        for (int r = 0; r < RANKS; r++) {
            if (failed[r] != null) {
                closeAll(made);
                throw new IllegalStateException("rank " + r + ": creating the communicator failed", failed[r]);
            }
        }
        comms = made;
    }

    @TearDown(Level.Trial)
    public void close() {
        closeAll(comms);
        comms = null;
        for (Bootstrap b : bootstraps) {
            b.close();
        }
    }

    private static void closeAll(Communicator[] cs) {
        if (cs == null) {
            return;
        }
        for (Communicator c : cs) {
            if (c != null) {
                c.close(); // local: no synchronisation with the other rank
            }
        }
    }

    /**
     * Whether the calling rank should make its next collective call. While JMH measures, always. After
     * {@link Control#stopMeasurement}, only when the partner has started more calls than this rank, i.e. is
     * blocked in the call this rank would make next (ranks run in lockstep: neither can be more than one
     * call ahead). A rank that read the stop flag as false just before it was set may still start a call;
     * it is then blocked and has not told JMH it is done, so JMH keeps calling its partner, which sees the
     * started call and joins it.
     */
    boolean enter(Rank r, ThreadParams tp, Control control) {
        if (r.comm == null) {
            r.comm = comms[tp.getGroupThreadIndex()];
            r.rank = r.comm.rank();
        }
        long mine = r.started;
        if (control.stopMeasurement && started.get((2 - r.rank) * PAD) <= mine) {
            return false;
        }
        r.started = mine + 1;
        started.lazySet((r.rank + 1) * PAD, mine + 1);
        return true;
    }

    /**
     * One thread rank: its communicator and buffers, bound on the first call to the rank given by the
     * thread's index in the group (then kept: a communicator is used by one thread at a time).
     */
    @State(Scope.Thread)
    public static class Rank {
        Communicator comm;
        int rank;
        long started;
        final double[] send = new double[1];
        final double[] recv = new double[1];
    }

    /** Allreduce (SUM) of one double: the smallest message, i.e. pure synchronisation plus one combine. */
    @Benchmark
    @Group("allreduce1")
    @GroupThreads(RANKS)
    public double allreduce1(Rank r, ThreadParams tp, Control control) {
        if (enter(r, tp, control)) {
            r.send[0] = r.rank + 1;
            r.comm.allreduce(r.send, 0, r.recv, 0, 1, Op.SUM);
        }
        return r.recv[0];
    }

    @Benchmark
    @Group("barrier")
    @GroupThreads(RANKS)
    public void barrier(Rank r, ThreadParams tp, Control control) {
        if (enter(r, tp, control)) {
            r.comm.barrier();
        }
    }
}
