package org.sharp4j.osu;

import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.List;
import org.sharp4j.Config;
import org.sharp4j.Sharp4j;
import org.sharp4j.bootstrap.RendezvousBootstrap;
import org.sharp4j.osu.Backend.StatOp;

/**
 * The benchmark core shared by {@link OsuAllreduce}, {@link OsuReduce} and {@link OsuBarrier}:
 * OMB 7.x's loop, statistics and output on one or two {@link Backend}s.
 *
 * <p>Timing as OMB: every timed call is bracketed by {@link System#nanoTime()}; allreduce has an
 * untimed barrier after each call, reduce one before it, barrier none; warmup iterations are run and
 * dropped; each rank averages its own iterations; the average over ranks, the smallest and the
 * largest per-rank average are reduced to rank 0 through the measured library itself. With
 * {@code -z} the per-iteration latencies are summed over ranks and the percentiles taken from
 * those rank averages (OMB's omb_get_stats). With {@code --compare} each message size is
 * measured on sharp4j and on the compared side (Open MPI, or sharp4j with other tuning: {@link Comparison})
 * in the same processes, in alternating blocks ({@link #measure}). One Java-only addition, from OMB-J:
 * before each table {@code --jit-warmup N} (default 30000, spread over the table's sizes, see jitWarmupAll) untimed calls
 * let the JIT compile the loop, so the first rows do not time the interpreter.
 *
 * <p>{@link #run} takes the output streams and an {@link Opener}, and returns the exit code rather
 * than exiting, so that tests run it on thread ranks.
 */
public final class Osu {
    static final String MPI_PROVIDER = "org.sharp4j.osu.mpi.OpenMpiProvider";

    private Osu() {
    }

    /** The backends of one run: the measured ones (sharp4j then MPI when comparing) and what to close, in order. */
    public static final class Backends implements AutoCloseable {
        final List<Backend> measured;
        final List<AutoCloseable> closeInOrder;

        public Backends(List<Backend> measured, List<? extends AutoCloseable> closeInOrder) {
            this.measured = List.copyOf(measured);
            this.closeInOrder = List.copyOf(closeInOrder);
        }

        /** One backend that is closed at the end. */
        public static Backends of(Backend b) {
            return new Backends(List.of(b), List.of(b));
        }

        void abort(String reason) {
            for (Backend b : measured) {
                try {
                    b.abort(reason);
                } catch (RuntimeException ignored) {
                    // best effort
                }
            }
        }

        @Override
        public void close() {
            RuntimeException first = null;
            for (AutoCloseable c : closeInOrder) {
                try {
                    c.close();
                } catch (Exception e) {
                    if (first == null) {
                        first = e instanceof RuntimeException ? (RuntimeException) e : new RuntimeException(e);
                    }
                }
            }
            if (first != null) {
                throw first;
            }
        }
    }

    /** Opens the backends a run measures (collective: every rank calls it). */
    @FunctionalInterface
    public interface Opener {
        Backends open(OsuOptions options) throws Exception;
    }

    /** Entry of the three main classes: runs on System.out/err with the backends the options ask for. */
    public static int main(Kind kind, String[] args) {
        return run(kind, args, System.out, System.err, o -> openDefault(o, args));
    }

    /**
     * Parses {@code args}, opens the backends, runs the benchmark and closes them. Only rank 0
     * prints the table; a bad command line is reported by the rank the launcher calls 0 alone.
     * Returns the exit code: 0, or 1 after a bad option, a validation failure or an error.
     */
    public static int run(Kind kind, String[] args, PrintStream out, PrintStream err, Opener opener) {
        boolean printer = launcherRank() == 0;
        OsuOptions.Parsed parsed = OsuOptions.parse(kind, args, out, err, printer);
        if (!parsed.run()) {
            out.flush();
            err.flush();
            return parsed.exitCode;
        }
        OsuOptions o = parsed.options;
        if (kind.hasData() && !o.mpiBackend() && o.types().contains(ElemType.CHAR)) {
            if (printer) {
                err.println(kind.program + ": " + Sharp4jBackend.NO_CHAR);
            }
            return 1;
        }
        Backends backends;
        try {
            backends = opener.open(o);
        } catch (BackendUnavailableException e) {
            if (printer) {
                err.println(kind.program + ": " + e.getMessage());
            }
            return 1;
        } catch (Exception e) {
            err.println(kind.program + ": could not start: " + e);
            return 1;
        }
        int rank = backends.measured.get(0).rank();
        try {
            return execute(o, backends.measured, out, err);
        } catch (RuntimeException e) {
            err.println(kind.program + ": rank " + rank + ": " + e);
            for (Throwable c = e.getCause(); c != null; c = c.getCause()) {
                err.println("  caused by: " + c);
            }
            backends.abort(e.toString());
            return 1;
        } finally {
            out.flush();
            err.flush();
            try {
                backends.close();
            } catch (RuntimeException e) {
                err.println(kind.program + ": rank " + rank + ": closing: " + e);
            }
        }
    }

    /** The rank the launcher gave this process (sharp4j-run, mpirun, PMIx), before any collective setup; 0 if none. */
    static int launcherRank() {
        for (String v : new String[] {RendezvousBootstrap.ENV_RANK, "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
            String s = System.getenv(v);
            if (s != null) {
                try {
                    return Integer.parseInt(s.trim());
                } catch (NumberFormatException ignored) {
                    // try the next one
                }
            }
        }
        return 0;
    }

    /**
     * sharp4j through its launcher ({@link Sharp4j#init()}), Open MPI for {@code --backend mpi}, both
     * for {@code --compare mpi} (sharp4j then bootstrapped over MPI). A sharp4j run started by mpirun
     * rather than bin/sharp4j-run also bootstraps over MPI when mpi.jar is there.
     */
    static Backends openDefault(OsuOptions o, String[] args) throws Exception {
        boolean underMpirun = System.getenv("OMPI_COMM_WORLD_SIZE") != null && System.getenv(RendezvousBootstrap.ENV_RENDEZVOUS) == null;
        if (o.comparison() != null && !o.comparison().mpi()) {
            return openPair(o.comparison(), underMpirun && mpiOnClassPath() ? loadMpi("--compare under mpirun") : null, args);
        }
        if (!o.needsMpi()) {
            if (underMpirun && mpiOnClassPath()) {
                MpiProvider p = loadMpi("--backend sharp4j under mpirun");
                Backend mpi = p.open(args);
                Sharp4jBackend s = new Sharp4jBackend(Sharp4j.create(p.bootstrap(), Config.fromSystemProperties()), true);
                return new Backends(List.of(s), List.of(s, mpi));
            }
            return Backends.of(new Sharp4jBackend(Sharp4j.init(), true));
        }
        String what = o.compareMpi() ? "--compare mpi" : "--backend mpi";
        MpiProvider p = loadMpi(what);
        Backend mpi;
        try {
            mpi = p.open(args);
        } catch (UnsatisfiedLinkError e) {
            throw new BackendUnavailableException(what + ": Open MPI's JNI library could not be loaded (" + e.getMessage()
                    + "): start java with $MPI_JAVA_OPTS from .ci/mpi-env.sh (-Djava.library.path=/usr/lib/x86_64-linux-gnu)", e);
        }
        if (mpi.size() < 2 && System.getenv(RendezvousBootstrap.ENV_SIZE) != null) {
            mpi.close();
            throw new BackendUnavailableException(what + " must be launched by mpirun, not bin/sharp4j-run: "
                    + "mpirun $MPIRUN_FLAGS -np 2 java $MPI_JAVA_OPTS -cp <osu-bench jar>:<lib>/*:$MPI_JAR ...");
        }
        if (o.mpiBackend()) {
            return Backends.of(mpi);
        }
        Sharp4jBackend s;
        try {
            s = new Sharp4jBackend(Sharp4j.create(p.bootstrap(), Config.fromSystemProperties()), true);
        } catch (RuntimeException e) {
            mpi.close();
            throw e;
        }
        return new Backends(List.of(s, mpi), List.of(s, mpi));
    }

    /**
     * {@code --compare builtin|table=FILE|tune=RULES}: two sharp4j communicators over one bootstrap, the run's
     * settings and the compared ones ({@link Comparison#apply}), created in that order on every rank. The
     * bootstrap is the one {@link Sharp4j#init()} would take, or MPI's under mpirun when {@code mpi} is given
     * (as for a plain sharp4j run there); it is closed after both communicators.
     */
    static Backends openPair(Comparison cmp, MpiProvider mpi, String[] args) throws Exception {
        Backend mpiBackend = mpi == null ? null : mpi.open(args);
        AutoCloseable boot;
        org.sharp4j.bootstrap.Bootstrap b;
        if (mpi != null) {
            b = mpi.bootstrap();
            boot = mpiBackend;
        } else {
            b = Sharp4j.bootstrap();
            boot = b;
        }
        List<AutoCloseable> opened = new java.util.ArrayList<>();
        try {
            Config base = Config.fromSystemProperties();
            Sharp4jBackend mine = new Sharp4jBackend(Sharp4j.create(b, base), true);
            opened.add(mine);
            Sharp4jBackend theirs = new Sharp4jBackend(Sharp4j.create(b, cmp.apply(base)), true);
            opened.add(theirs);
            opened.add(boot);
            return new Backends(List.of(mine, theirs), opened);
        } catch (RuntimeException e) {
            opened.add(boot);
            for (AutoCloseable c : opened) {
                try {
                    c.close();
                } catch (Exception ignored) {
                    // the first failure is the one to report
                }
            }
            throw e;
        }
    }

    static boolean mpiOnClassPath() {
        try {
            Class.forName("mpi.MPI", false, Osu.class.getClassLoader());
            Class.forName(MPI_PROVIDER, false, Osu.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    /** Loads the Open MPI backend by name; a clear error when mpi.jar or the compiled backend is missing. */
    static MpiProvider loadMpi(String what) {
        ClassLoader cl = Osu.class.getClassLoader();
        try {
            Class.forName("mpi.MPI", false, cl);
        } catch (ClassNotFoundException | LinkageError e) {
            throw new BackendUnavailableException(what + " needs Open MPI's mpi.jar on the class path: run .ci/setup-mpi.sh and launch under mpirun");
        }
        try {
            return (MpiProvider) Class.forName(MPI_PROVIDER, true, cl).getDeclaredConstructor().newInstance();
        } catch (ClassNotFoundException e) {
            throw new BackendUnavailableException(what + ": this osu-bench build has no MPI backend (mpi.jar was not in the local "
                    + "Maven repository when it was compiled): run .ci/setup-mpi.sh, then rebuild osu-bench");
        } catch (ReflectiveOperationException e) {
            throw new BackendUnavailableException(what + ": cannot load " + MPI_PROVIDER + ": " + e, e);
        }
    }

    /** Runs the benchmark on already opened backends; returns the exit code (1 on a validation failure). */
    static int execute(OsuOptions o, List<Backend> backends, PrintStream out, PrintStream err) {
        Kind kind = o.kind();
        Backend lead = backends.get(0);
        int size = lead.size();
        boolean print = lead.rank() == 0;
        for (Backend b : backends) {
            for (ElemType t : kind.hasData() ? o.types() : List.<ElemType>of()) {
                String why = b.unsupported(t);
                if (why != null) {
                    if (print) {
                        err.println(kind.program + ": " + why);
                    }
                    return 1;
                }
            }
        }
        if (size < 2) {
            if (print) {
                err.println("This test requires at least two processes");
            }
            return 1;
        }
        if (kind == Kind.REDUCE && !o.rotateRoot() && o.fixedRoot() >= size) {
            if (print) {
                err.println("Root rank('-k') cannot be more than number of processes");
            }
            return 1;
        }
        boolean compare = backends.size() > 1;
        int nodes = lead.nodes(); // collective on MPI: every rank calls it
        Table table = new Table(kind, o.full(), o.validation(), o.percentiles(),
                compare ? (o.comparison() != null ? o.comparison() : Comparison.MPI) : null,
                new Table.RunInfo(o.mpiBackend() ? Table.OPEN_MPI_JAVA : Table.SHARP4J, size, nodes));
        PrintWriter csv = null;
        if (print && o.csv() != null) {
            try {
                csv = new PrintWriter(Files.newBufferedWriter(o.csv(), StandardCharsets.UTF_8));
            } catch (IOException e) {
                err.println(kind.program + ": cannot write " + o.csv() + ": " + e);
            }
        }
        try {
            if (print) {
                out.print(table.preamble());
                out.flush();
            }
            if (csv != null) {
                csv.println(table.csvHeader());
            }
            if (kind == Kind.BARRIER) {
                int iters = o.iterationsFor(0);
                int skip = o.warmupFor(0);
                if (print) {
                    out.println(table.header());
                    out.flush();
                }
                for (Backend b : backends) {
                    jitWarmup(o, b, null, 0, o.jitWarmup());
                    if (o.jitWarmup() > 0) {
                        jitSettle(b);
                    }
                }
                harnessWarmup(o, backends, null, List.of(0), 0, table, compare);
                Measured m = measure(o, backends, null, 0, iters, skip);
                Stats[] st = m.stats();
                if (print) {
                    out.println(table.row(0, st[0], compare ? st[1] : null, m.ratio()));
                    out.flush();
                }
                if (csv != null) {
                    csv.println(table.csvRow("", 0, st[0], compare ? st[1] : null, m.ratio()));
                }
                return 0;
            }
            long failedSize = -1;
            types:
            for (ElemType type : o.types()) {
                List<Integer> counts = o.counts(type);
                if (counts.isEmpty()) {
                    if (print) {
                        err.println(kind.program + ": no " + type.mpiName + " message fits in " + o.maxSize() + " bytes; skipping "
                                + type);
                    }
                    continue;
                }
                int capacity = counts.get(counts.size() - 1);
                Buffers[] bufs = new Buffers[backends.size()];
                for (int j = 0; j < bufs.length; j++) {
                    bufs[j] = Buffers.allocate(type, o.arrays(), capacity);
                    jitWarmupAll(o, backends.get(j), bufs[j], counts, type.bytes);
                }
                harnessWarmup(o, backends, bufs, counts, type.bytes, table, compare);
                if (print) {
                    out.println(Table.datatypeLine(type));
                    out.println(table.header());
                    out.flush();
                }
                for (int count : counts) {
                    long bytes = (long) count * type.bytes;
                    int iters = o.iterationsFor(bytes);
                    int skip = o.warmupFor(bytes);
                    if (o.jitWarmup() > 0) {
                        jitSettle(backends.get(0), ROW_SETTLE_MAX_MS, ROW_SETTLE_QUIET_MS);
                    }
                    Measured m = measure(o, backends, bufs, count, iters, skip);
                    Stats[] st = m.stats();
                    if (print) {
                        out.println(table.row(bytes, st[0], compare ? st[1] : null, m.ratio()));
                        out.flush();
                    }
                    if (csv != null) {
                        csv.println(table.csvRow(type.mpiName, bytes, st[0], compare ? st[1] : null, m.ratio()));
                        csv.flush();
                    }
                    if (o.validation() && Arrays.stream(st).anyMatch(s -> !s.passed())) {
                        failedSize = bytes;
                        break types;
                    }
                }
            }
            if (failedSize >= 0) {
                if (print) {
                    out.println("DATA VALIDATION ERROR: " + kind.program + " exited with status 1 on message size " + failedSize + ".");
                    out.flush();
                }
                return 1;
            }
            return 0;
        } finally {
            if (csv != null) {
                csv.close();
                if (csv.checkError()) {
                    err.println(kind.program + ": error writing " + o.csv());
                }
            }
        }
    }

    /**
     * Java's warm-up before a table (OMB's C code needs none): {@code --jit-warmup} untimed calls
     * spread over every message size of the table (at most 64 MiB of data per size), so that the
     * JIT has seen every path (inline, slot, tiled) before it compiles; the calls that cap leaves
     * out are made with one element, so that the backend's call path gets all {@code --jit-warmup}
     * calls whatever the sizes; then {@link #jitSettle} lets the compiler finish. Without the
     * spread, each new size met code compiled for the smallest one and whole rows timed the
     * interpreter; without the settle, the C2 threads compete with two spinning ranks for two
     * cores and finish long after the row. Without the one-element calls, a table of long
     * messages (64 KiB-16 MiB: about 4,000 calls under the cap) left {@code Sharp4jBackend.reduce}
     * below C2's threshold: C2 compiled it during the first rows, about 4 ms on a rank's core
     * while both ranks spun (OSU port, 2 ranks, Reduce and Allreduce: the 64 KiB or 128 KiB row's average
     * 3.4-6.1x its P50 in 6 runs of 6, its P99 up to 745 us against a P50 of 16).
     */
    static void jitWarmupAll(OsuOptions o, Backend b, Buffers buf, List<Integer> counts, int typeBytes) {
        if (o.jitWarmup() == 0 || counts.isEmpty()) {
            return;
        }
        int[] plan = warmupPlan(o.jitWarmup(), counts, typeBytes);
        for (int round = 0; round < 2; round++) {
            for (int k = 0; k < counts.size(); k++) {
                jitWarmup(o, b, buf, counts.get(k), plan[k]);
            }
        }
        jitWarmup(o, b, buf, 1, plan[counts.size()]);
        jitSettle(b);
    }

    /**
     * {@link #jitWarmupAll}'s calls: per size and round (two rounds) {@code total / sizes / 2}, at
     * least 10 and at most 64 MiB of data; last, the one-element calls that make up {@code total}.
     */
    static int[] warmupPlan(int total, List<Integer> counts, int typeBytes) {
        int[] plan = new int[counts.size() + 1];
        int perSize = Math.max(1, total / counts.size());
        long made = 0;
        for (int k = 0; k < counts.size(); k++) {
            long bytes = Math.max(1L, (long) counts.get(k) * typeBytes);
            plan[k] = (int) Math.max(10, Math.min(perSize / 2, (64L << 20) / bytes));
            made += 2L * plan[k];
        }
        plan[counts.size()] = (int) Math.max(0, total - made);
        return plan;
    }

    /** Sleeps (not spins) until this JVM's JIT has been idle for 200 ms (at most 10 s), then a barrier. */
    static void jitSettle(Backend b) {
        jitSettle(b, 10_000, 200);
    }

    /** Sleeps until this JVM's JIT has been idle for {@code quietMs} (at most {@code maxMs}), then a barrier on {@code b}. */
    static void jitSettle(Backend b, long maxMs, long quietMs) {
        org.sharp4j.coll.JitIdle.await(maxMs, quietMs);
        b.barrier();
    }

    /**
     * Before each row ({@link #jitSettle} with these): the JIT idle for 20 ms (at most 500 ms), then a barrier.
     * The previous row's statistics (sorting every call's time) and printing are the harness's own
     * code, first run after the warm-up; the JIT compiles them while the next row's first backend
     * runs, on a core that a spinning rank needs. Without this wait the first backend of each row
     * took stalls of milliseconds that the second one did not (OSU port, 2 ranks, 10,000 calls per
     * row: sharp4j's average 2-10x its median at random rows, Open MPI's in the same processes 1.0x).
     */
    static final long ROW_SETTLE_MAX_MS = 500;
    static final long ROW_SETTLE_QUIET_MS = 20;

    static void jitWarmup(OsuOptions o, Backend b, Buffers buf, int count, int n) {
        Kind kind = o.kind();
        boolean inPlace = o.inPlace();
        int size = b.size();
        for (int i = 0; i < n; i++) {
            timedCall(kind, b, buf, count, kind == Kind.REDUCE ? o.rootFor(i, size) : 0, inPlace);
            if (kind != Kind.BARRIER) {
                b.barrier();
            }
        }
    }

    /**
     * The timed call itself, one method for the warm-up and the table, so that the JIT compiles
     * (during the warm-up) exactly the code the table times: {@link System#nanoTime()}, the call,
     * {@code nanoTime()} again; returns the nanoseconds between.
     */
    static long timedCall(Kind kind, Backend b, Buffers buf, int count, int root, boolean inPlace) {
        long t0;
        long t1;
        switch (kind) {
            case ALLREDUCE:
                t0 = System.nanoTime();
                b.allreduce(buf, count, inPlace);
                t1 = System.nanoTime();
                break;
            case REDUCE:
                t0 = System.nanoTime();
                b.reduce(buf, count, root, inPlace);
                t1 = System.nanoTime();
                break;
            default:
                t0 = System.nanoTime();
                b.barrier();
                t1 = System.nanoTime();
                break;
        }
        return t1 - t0;
    }

    /**
     * The table's own code before its first row: the timing loop, the statistics (a sort of every
     * call's time, reductions to rank 0) and the row's formatting, run over every size in a dry
     * pass (the row's iterations, at most 64 MiB of data per size) whose results are dropped, {@link #DRY_ROUNDS} times,
     * then the JIT settles.
     * Without it the JIT compiled them during the first rows (the timing loop reached C2 only at
     * the sixth row), on a core that a spinning rank needs. Barrier's single row ({@code counts}
     * {@code [0]}, no buffers) too: without it the timing loop ({@code runBlock}, OSR at tier 3 then
     * 4) and the sort of each block's median were compiled during the row's own blocks, and each
     * rank's C2 thread, bound to the rank's core, took it a scheduler tick at a time: about ten
     * calls of 2-8 ms per 100,000, 20-45 ms in all ({@code -XX:+PrintCompilation} and
     * {@code perf sched timehist}: the C2 thread on the core during the stalls). OSU port, 2 ranks,
     * {@code -i 100000 -x 1000 -z --compare mpi --blocks 4}, 6 runs alternating with the build
     * before: sharp4j's average 1.03-1.09x its P50 in 5 runs, 1.20 in one, against 1.57-2.28x
     * before; Open MPI Java's in the same processes 1.05-1.34x against 1.41-2.32x.
     */
    static void harnessWarmup(OsuOptions o, List<Backend> backends, Buffers[] bufs, List<Integer> counts, int typeBytes, Table table,
            boolean compare) {
        if (o.jitWarmup() == 0) {
            return;
        }
        for (int round = 0; round < DRY_ROUNDS; round++) {
            for (int count : counts) {
                long bytes = (long) count * typeBytes;
                int iters = (int) Math.max(2, Math.min(o.iterationsFor(bytes), (64L << 20) / Math.max(1L, bytes)));
                // OMB's untimed calls too: a dry pass without them let C2 drop their branch, and the first row deoptimized the loop
                Measured m = measure(o, backends, bufs, count, iters, Math.min(o.warmupFor(bytes), iters));
                Stats[] st = m.stats();
                table.row(bytes, st[0], compare ? st[1] : null, m.ratio()); // formatted and dropped
                table.csvRow("", bytes, st[0], compare ? st[1] : null, m.ratio());
            }
        }
        jitSettle(backends.get(0));
    }

    /**
     * {@link #harnessWarmup}'s dry passes. Why four, not two: C2 compiles the timing loop with loop
     * predicates taken from its profile; a predicate that fails at a block's entry deoptimizes the loop
     * (an uncommon trap, "profile_predicate" at {@code runBlock}'s loop head in LogCompilation), and after
     * four such traps C2 recompiles it. A pass took one or two traps, so after two passes the recompile
     * fell into the first row, on a core a spinning rank needs. OSU port, 2 ranks, Allreduce 64-256 B,
     * {@code -i 10000 -x 20 -z --compare mpi --blocks 4}, alternating: with two passes the first row's
     * average 3.1-5.7x its P50 in 4 runs of 4 (Open MPI Java's in the same processes 1.3-2.2x), with four
     * 1.02-1.07x (1.08-1.11x); with three or four passes 1.04-1.15x in 10 runs of 10; with two passes and
     * {@code -XX:-UseProfiledLoopPredicate} 1.00-1.08x. Every pass still compiles something (the JIT's
     * total time grew 7-35 ms per pass through eight passes), so "until a pass compiles nothing" does not end.
     */
    static final int DRY_ROUNDS = 4;

    /** The statistics of one message size on each backend (valid on rank 0), and the ratio of the first to the second. */
    record Measured(Stats[] stats, double ratio) {
    }

    /** One backend's timing of one message size on this rank, accumulated over its blocks. */
    private static final class Timing {
        final double[] lat;
        final double[] blockUs;
        /** The current block's calls (us), for its median; null with one block. */
        final double[] block;
        long totalNanos;
        int timed;
        int calls;
        int errors;

        Timing(int iters, int blocks, boolean perIteration) {
            lat = perIteration ? new double[iters] : null;
            blockUs = new double[blocks];
            block = blocks > 1 ? new double[(iters + blocks - 1) / blocks] : null;
        }
    }

    /**
     * OMB's timing loop for one message size on each of {@code backends}, in {@code blocks} alternating
     * blocks (one backend's calls, then the other's; the order reverses from one block to the next: A B, B A,
     * A B ...), and the statistics of each (valid on rank 0). Each backend's iterations are split over the
     * blocks; its first block runs OMB's {@code skip} untimed calls first, every later one {@code skip / blocks}
     * (at least 1 unless skip is 0), since the other backend's calls ran in between. A backend's statistics are
     * OMB's over all its timed calls. The ratio (two backends): with one block the ratio of OMB's averages (the
     * old loop: all of one, then all of the other); with several, the median over blocks of the ratio of the two
     * sides' block figures, a block's figure being its median call averaged over ranks. Both sides of a block
     * pair run in the same phase of the machine, and the medians keep a stalled call or a stalled block (a
     * descheduled rank: milliseconds among 100 us calls) from deciding the ratio.
     */
    static Measured measure(OsuOptions o, List<Backend> backends, Buffers[] bufs, int count, int iters, int skip) {
        int n = backends.size();
        int blocks = Math.max(1, Math.min(o.blocks(), iters));
        boolean perIteration = o.percentiles().length > 0;
        Timing[] t = new Timing[n];
        for (int j = 0; j < n; j++) {
            t[j] = new Timing(iters, blocks, perIteration);
        }
        for (int k = 0; k < blocks; k++) {
            int blockIters = iters / blocks + (k < iters % blocks ? 1 : 0);
            int blockSkip = k == 0 ? skip : skip == 0 ? 0 : Math.max(1, skip / blocks);
            for (int q = 0; q < n; q++) {
                int j = k % 2 == 0 ? q : n - 1 - q;
                runBlock(o, backends.get(j), bufs == null ? null : bufs[j], count, blockIters, blockSkip, t[j], k);
            }
        }
        Stats[] st = new Stats[n];
        double[][] blockAvg = new double[n][];
        for (int j = 0; j < n; j++) {
            Backend b = backends.get(j);
            int size = b.size();
            double latency = t[j].totalNanos / 1e3 / iters;
            double[] in = {latency};
            double[] min = new double[1];
            double[] max = new double[1];
            double[] sum = new double[1];
            b.reduceToZero(in, min, StatOp.MIN);
            b.reduceToZero(in, max, StatOp.MAX);
            b.reduceToZero(in, sum, StatOp.SUM);
            double[] tails = new double[o.percentiles().length];
            if (perIteration) {
                double[] total = new double[iters];
                b.reduceToZero(t[j].lat, total, StatOp.SUM);
                if (b.rank() == 0) {
                    tails = tailLatencies(total, o.percentiles(), size);
                }
            }
            int errors = t[j].errors;
            if (o.validation()) {
                errors = b.allreduceSum(errors);
            }
            st[j] = new Stats(sum[0] / size, min[0], max[0], iters, errors, tails);
            if (n > 1) {
                blockAvg[j] = new double[blocks];
                if (blocks == 1) {
                    blockAvg[j][0] = st[j].avg(); // the same figure: one block is OMB's loop
                } else {
                    b.reduceToZero(t[j].blockUs, blockAvg[j], StatOp.SUM);
                }
            }
        }
        double ratio = Double.NaN;
        if (n > 1) {
            double[] r = new double[blocks];
            for (int k = 0; k < blocks; k++) {
                r[k] = blockAvg[1][k] > 0 ? blockAvg[0][k] / blockAvg[1][k] : Double.NaN;
            }
            ratio = median(r);
        }
        return new Measured(st, ratio);
    }

    /** The median of {@code xs} (the mean of the two middle values for an even count). */
    static double median(double[] xs) {
        double[] s = xs.clone();
        Arrays.sort(s);
        int m = s.length;
        return m % 2 == 1 ? s[m / 2] : (s[m / 2 - 1] + s[m / 2]) / 2;
    }

    /** One block of OMB's loop on one backend: {@code skip} untimed calls, then {@code iters} timed ones, into {@code t}. */
    private static void runBlock(OsuOptions o, Backend b, Buffers buf, int count, int iters, int skip, Timing t, int block) {
        Kind kind = o.kind();
        int rank = b.rank();
        int size = b.size();
        boolean validate = o.validation();
        boolean inPlace = o.inPlace();
        long blockNanos = 0;
        b.barrier();
        for (int i = 0; i < iters + skip; i++, t.calls++) {
            long dt;
            switch (kind) {
                case ALLREDUCE:
                    if (validate) {
                        buf.fillValidation(t.calls, count, inPlace);
                        b.barrier();
                    }
                    dt = timedCall(kind, b, buf, count, 0, inPlace);
                    b.barrier();
                    if (validate) {
                        t.errors += buf.checkReduction(t.calls, count, size);
                    }
                    break;
                case REDUCE: {
                    int root = o.rootFor(t.calls, size);
                    if (validate) {
                        buf.fillValidation(t.calls, count, inPlace);
                    }
                    b.barrier();
                    dt = timedCall(kind, b, buf, count, root, inPlace);
                    if (validate && rank == root) {
                        t.errors += buf.checkReduction(t.calls, count, size);
                    }
                    break;
                }
                default:
                    dt = timedCall(kind, b, buf, count, 0, inPlace);
                    break;
            }
            if (i >= skip) {
                blockNanos += dt;
                if (t.lat != null) {
                    t.lat[t.timed] = dt / 1e3;
                }
                if (t.block != null) {
                    t.block[i - skip] = dt / 1e3;
                }
                t.timed++;
            }
        }
        if (kind == Kind.BARRIER) {
            b.barrier();
        }
        t.totalNanos += blockNanos;
        if (t.block != null) {
            t.blockUs[block] = iters == 0 ? 0 : median(java.util.Arrays.copyOf(t.block, iters));
        }
    }

    /**
     * OMB's omb_calculate_tail_lat: sort the per-iteration latencies summed over ranks, take element
     * {@code iterations * p / 100 - 1} (integer arithmetic as in OMB, clamped to the array), divide by the ranks.
     */
    static double[] tailLatencies(double[] summed, int[] percentiles, int ranks) {
        double[] s = summed.clone();
        Arrays.sort(s);
        double[] out = new double[percentiles.length];
        for (int k = 0; k < percentiles.length; k++) {
            int idx = (int) ((long) s.length * percentiles[k] / 100) - 1;
            idx = Math.max(0, Math.min(s.length - 1, idx));
            out[k] = s[idx] / ranks;
        }
        return out;
    }
}
