package org.sharp4j.mpi;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicBoolean;
import mpi.Intracomm;
import mpi.MPI;
import mpi.MPIException;
import org.sharp4j.Communicator;
import org.sharp4j.Config;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.Sharp4j;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the router keeps per Open MPI intra-communicator: the sharp4j {@link Communicator}
 * bootstrapped over it (or why there is none), the routed-call counters, which first calls were
 * logged, a scratch buffer for staged buffer forms and the buffer duplicates of {@link Forms.Whole}.
 * Set up collectively by the first call that is routed on the communicator; closed when the
 * communicator is freed or at MPI.Finalize / exit. Used by one thread at a time, as sharp4j's
 * communicators are.
 */
final class CommState {
    private static final Logger LOG = LoggerFactory.getLogger(CommState.class);
    private static final DataType[] TYPES = MpiRouter.TYPES;

    /** The Open MPI communicator; null in the shared pass-through markers. */
    final Intracomm mpiComm;
    final int id;
    /** Set once {@link #setUp()} ended (successfully or not); guarded by this. */
    private boolean done;
    private Thread creator;
    private MPIException setUpError;
    private RuntimeException setUpFailure;

    String name = "?";
    int rank;
    int size;
    /** The sharp4j communicator, or null when calls pass through ({@link #passReason}). */
    Communicator communicator;
    /** For a single-rank communicator: the one {@link Sharp4jMpi#of} made (routing still passes to MPI). */
    Communicator ownCommunicator;
    PassReason passReason;
    String unavailableDetail;
    boolean closed;
    /** sharp4j.warmup of the set-up's configuration: the {@link WarmUp} that follows it runs as many rounds. */
    int warmupRounds;

    /** Routed calls per {@link Call} (the first three): plain fields, one thread at a time. */
    final long[] routed = new long[3];
    /**
     * Which (call, type, op) were routed here: bit {@code call * 36 + type * 9 + op} for allReduce
     * and reduce (72 bits), bit 63 of {@link #seenHi} for barrier. Plain fields, written by the
     * calling thread; read by {@link #routedKinds} at MPI.Finalize (the same thread, as MPI requires)
     * or at exit (the shutdown hook: the program's threads have stopped calling by then, or their
     * calls race with the exit anyway, and the line only reports).
     */
    private long seenLo;
    private long seenHi;
    /**
     * Set by {@link #quiet}: first calls are not logged. C2 compiles a branch its profile never
     * saw taken as a trap: with the marks all set during the warm-up (as they were), a program's
     * first routed call threw the compiled routed path away (LogCompilation: unstable_if in
     * first() at the program's first call) and its next calls ran in the interpreter and C1
     * (first 1,000 calls at 4 B: 0.7 us instead of 0.3). So the warm-up forgets the marks
     * between its rounds ({@link #forgetFirstCalls}), which takes the "first call" branch as
     * often as the other, and the rare path, whose {@code quiet} test would be just such a
     * branch, is called through {@link #FIRST_SEEN}: a handle in a non-final field, which is no
     * constant to C2, so the call is never inlined into the routed path and whatever the rare
     * path compiles to stays in its own code.
     */
    private boolean quiet;
    private static MethodHandle FIRST_SEEN = firstSeenHandle(); // not final on purpose: see quiet

    /** The staged forms' scratch buffer and views, grown on demand. */
    private Forms.Scratch scratch;
    /** Full-limit, native-order duplicates of the user's buffers that need one, made once per buffer object. */
    final Forms.Whole whole = new Forms.Whole();

    CommState(Intracomm mpiComm, int id) {
        this.mpiComm = mpiComm;
        this.id = id;
        this.creator = Thread.currentThread();
    }

    /** A shared marker: calls on it pass through for {@code why}. */
    static CommState passing(PassReason why) {
        CommState s = new CommState(null, -1);
        s.passReason = why;
        s.done = true;
        s.creator = null;
        return s;
    }

    /**
     * Collective over the communicator: every rank's first routed call on it gets here, at the same
     * call. Builds sharp4j over an {@link MpiBootstrap}, then all ranks agree (one allgather) that
     * every rank succeeded; if any failed, all close what they built and pass this communicator's
     * calls to MPI from now on, so the ranks never disagree about the path.
     */
    void setUp() throws MPIException {
        try {
            size = mpiComm.getSize();
            rank = mpiComm.getRank();
            name = describe();
            if (size == 1) {
                passReason = PassReason.SINGLE_RANK;
                return;
            }
            long t0 = System.nanoTime();
            MpiBootstrap boot = new MpiBootstrap(mpiComm);
            Communicator c = null;
            String error = null;
            try {
                Config cfg = Config.fromSystemProperties();
                warmupRounds = cfg.warmupRounds(); // the same on every rank: sharp4j.create checks it
                c = Sharp4j.create(boot, cfg);
            } catch (RuntimeException | LinkageError e) {
                error = e.toString();
                LOG.debug("sharp4j-mpi: rank {} of {}: sharp4j set-up failed", rank, name, e);
            }
            byte[][] said = boot.allgather(error == null ? new byte[0] : error.getBytes(StandardCharsets.UTF_8));
            for (int r = 0; r < said.length && unavailableDetail == null; r++) {
                if (said[r].length > 0) {
                    unavailableDetail = "rank " + r + ": " + new String(said[r], StandardCharsets.UTF_8);
                }
            }
            if (unavailableDetail != null) {
                if (c != null) {
                    c.close();
                }
                passReason = PassReason.UNAVAILABLE;
                log(rank == 0, "sharp4j-mpi: sharp4j could not be set up on {} ({}); its calls go to MPI", name, unavailableDetail);
                return;
            }
            communicator = c;
            collectSetUpGarbage();
            log(rank == 0, "sharp4j-mpi: sharp4j communicator on {}: {} ranks, {} node(s), inter-node step: {}; set up in {} ms",
                    name, size, c.topology().nodeCount(), c.interNode(), (System.nanoTime() - t0) / 1_000_000);
        } catch (MPIException e) {
            setUpError = e;
            throw e;
        } catch (RuntimeException e) {
            setUpFailure = e;
            throw e;
        } finally {
            synchronized (this) {
                done = true;
                creator = null;
                notifyAll();
            }
        }
    }

    /** Set by the first set-up that gets to {@link #collectSetUpGarbage} (any thread's: compareAndSet). */
    private static final AtomicBoolean SET_UP_COLLECTED = new AtomicBoolean();

    /** The heap in use (bytes) above which {@link #collectSetUpGarbage} leaves the collector alone: 512 MiB. */
    static final long GC_AFTER_SET_UP_MAX_USED = 512L << 20;

    /**
     * Once per process, at the end of the first successful set-up: {@link System#gc()}, unless
     * {@value Sharp4jAgent#GC_AFTER_SET_UP_PROPERTY} is {@code false} (with
     * {@code -XX:+DisableExplicitGC} it does nothing; with G1's {@code -XX:+ExplicitGCInvokesConcurrent}
     * it is a concurrent cycle). Why: installing the agent (Byte Buddy parsing and rewriting
     * {@code mpi.Comm}), loading sharp4j's classes and warming the engine leave about 65 MB of garbage
     * (JFR allocation samples, 2026-12-06: class bytes read from the jar, Byte Buddy's type pool,
     * the warm-up's arrays), where Open MPI's bindings alone leave almost none. A young generation
     * sized for a small heap (Serial, {@code -Xmx256m}: a 68 MB eden) then fills in the program's
     * first timed loop and stops every thread there, once per rank: 24-35 ms on JDK 17, 27-79 ms on
     * Temurin 25 ({@code mpiapps.OsuDirect allreduce float bytebuffer 4 4096 5000} with
     * {@code -Xlog:gc}), while Open MPI alone ran the whole benchmark without a collection. Spread
     * over one row of 5,000 calls of 0.2-0.4 us, one such pause adds 5-16 us to its average.
     * Collected here, inside the first collective call that already takes a second or more to set
     * up, the pause is paid where nobody times it (measured there: a full collection of 58 MB to
     * 4 MB, 45-50 ms, and none in the timed loops). Rank by rank: no rank waits for another's
     * collection here (the next collective does, once). Only while at most
     * {@link #GC_AFTER_SET_UP_MAX_USED} of heap is in use: a program that has already filled a large
     * heap before its first collective would pay a full collection of all of it, and the set-up's
     * garbage is then a small part of what its own young collections handle anyway.
     */
    private static void collectSetUpGarbage() {
        if (System.getProperty(Sharp4jAgent.GC_AFTER_SET_UP_PROPERTY, "true").trim().equalsIgnoreCase("false")
                || !SET_UP_COLLECTED.compareAndSet(false, true)) {
            return;
        }
        Runtime rt = Runtime.getRuntime();
        long used = rt.totalMemory() - rt.freeMemory();
        if (used <= GC_AFTER_SET_UP_MAX_USED) {
            System.gc();
        } else {
            LOG.debug("sharp4j-mpi: no collection after set-up: {} MB of heap in use", used >> 20);
        }
    }

    /**
     * Waits until the thread that set this up is done. Null when the caller is that thread (a call
     * made from inside the set-up itself), which then passes through.
     */
    CommState awaitSetUp() throws MPIException {
        synchronized (this) {
            if (!done && creator == Thread.currentThread()) {
                return null;
            }
            boolean interrupted = false;
            while (!done) {
                try {
                    wait();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
        if (setUpError != null) {
            throw setUpError;
        }
        if (setUpFailure != null) {
            throw setUpFailure;
        }
        return this;
    }

    private String describe() {
        if (mpiComm == MPI.COMM_WORLD) {
            return "MPI.COMM_WORLD";
        }
        if (mpiComm == MPI.COMM_SELF) {
            return "MPI.COMM_SELF";
        }
        String n;
        try {
            n = mpiComm.getName();
        } catch (MPIException | RuntimeException e) {
            n = null;
        }
        return "communicator #" + id + (n == null || n.isEmpty() ? "" : " (" + n + ")");
    }

    // ---- routed calls: validation first (sharp4j's own), then the collective ----

    void allReduce(Object send, Object recv, int count, int t, Op op, int opIndex) {
        first(Call.ALLREDUCE, t, op, opIndex);
        if (send == null || send == recv) { // Open MPI Java: a null send buffer is MPI_IN_PLACE
            allReduceInPlace(recv, count, t, op, -1);
            return;
        }
        DataType type = TYPES[t];
        Communicator c = communicator;
        int fs = Forms.classify(send, type);
        int fr = Forms.classify(recv, type);
        if (fs == Forms.ARRAY && fr == Forms.ARRAY) {
            Object s = Forms.array(send);
            Object r = Forms.array(recv);
            int so = Forms.offset(send);
            int ro = Forms.offset(recv);
            switch (t) {
                case 0:
                    c.allreduce((int[]) s, so, (int[]) r, ro, count, op);
                    break;
                case 1:
                    c.allreduce((long[]) s, so, (long[]) r, ro, count, op);
                    break;
                case 2:
                    c.allreduce((float[]) s, so, (float[]) r, ro, count, op);
                    break;
                default:
                    c.allreduce((double[]) s, so, (double[]) r, ro, count, op);
                    break;
            }
        } else if (fs == Forms.DIRECT && fr == Forms.DIRECT) {
            long bytes = (long) count * type.size;
            c.allreduce(Forms.direct(send, bytes, whole), 0, Forms.direct(recv, bytes, whole), 0, count, type, op);
        } else {
            int bytes = bytes(count, type);
            Forms.checkStaged("send buffer", send, fs, bytes, type, false);
            Forms.checkStaged("recv buffer", recv, fr, bytes, type, true);
            Forms.Scratch s = scratch(bytes);
            Forms.copyIn(send, fs, s, bytes, type, whole);
            c.allreduce(s.bytes, 0, count, type, op);
            Forms.copyOut(s, recv, fr, bytes, type, whole);
        }
        routed[0]++;
    }

    /** {@code opIndex} -1: called from {@link #allReduce} (send == recv), which logged already. */
    void allReduceInPlace(Object buf, int count, int t, Op op, int opIndex) {
        if (opIndex >= 0) {
            first(Call.ALLREDUCE, t, op, opIndex);
        }
        DataType type = TYPES[t];
        Communicator c = communicator;
        int f = Forms.classify(buf, type);
        if (f == Forms.ARRAY) {
            Object b = Forms.array(buf);
            int o = Forms.offset(buf);
            switch (t) {
                case 0:
                    c.allreduce((int[]) b, o, count, op);
                    break;
                case 1:
                    c.allreduce((long[]) b, o, count, op);
                    break;
                case 2:
                    c.allreduce((float[]) b, o, count, op);
                    break;
                default:
                    c.allreduce((double[]) b, o, count, op);
                    break;
            }
        } else if (f == Forms.DIRECT) {
            c.allreduce(Forms.direct(buf, (long) count * type.size, whole), 0, count, type, op);
        } else {
            int bytes = bytes(count, type);
            Forms.checkStaged("buffer", buf, f, bytes, type, true);
            Forms.Scratch s = scratch(bytes);
            Forms.copyIn(buf, f, s, bytes, type, whole);
            c.allreduce(s.bytes, 0, count, type, op);
            Forms.copyOut(s, buf, f, bytes, type, whole);
        }
        routed[0]++;
    }

    void reduce(Object send, Object recv, int count, int t, Op op, int opIndex, int root) {
        first(Call.REDUCE, t, op, opIndex);
        boolean isRoot = rank == root;
        if (send == null || send == recv) { // null: MPI_IN_PLACE at the root, recv is the send buffer elsewhere (Open MPI Java)
            reduceInPlace(recv, count, t, op, -1, root);
            return;
        }
        DataType type = TYPES[t];
        Communicator c = communicator;
        int fs = Forms.classify(send, type);
        int fr = isRoot ? Forms.classify(recv, type) : Forms.UNUSED;
        if (fs == Forms.ARRAY && (fr == Forms.ARRAY || fr == Forms.UNUSED)) {
            Object s = Forms.array(send);
            Object r = isRoot ? Forms.array(recv) : null;
            int so = Forms.offset(send);
            int ro = isRoot ? Forms.offset(recv) : 0;
            switch (t) {
                case 0:
                    c.reduce((int[]) s, so, (int[]) r, ro, count, op, root);
                    break;
                case 1:
                    c.reduce((long[]) s, so, (long[]) r, ro, count, op, root);
                    break;
                case 2:
                    c.reduce((float[]) s, so, (float[]) r, ro, count, op, root);
                    break;
                default:
                    c.reduce((double[]) s, so, (double[]) r, ro, count, op, root);
                    break;
            }
        } else if (fs == Forms.DIRECT && (fr == Forms.DIRECT || fr == Forms.UNUSED)) {
            long bytes = (long) count * type.size;
            c.reduce(Forms.direct(send, bytes, whole), 0, isRoot ? Forms.direct(recv, bytes, whole) : null, 0, count, type, op, root);
        } else {
            int bytes = bytes(count, type);
            Forms.checkStaged("send buffer", send, fs, bytes, type, false);
            Forms.checkStaged("recv buffer", recv, fr, bytes, type, true);
            Forms.Scratch s = scratch(bytes);
            Forms.copyIn(send, fs, s, bytes, type, whole);
            c.reduce(s.bytes, 0, count, type, op, root);
            if (isRoot) {
                Forms.copyOut(s, recv, fr, bytes, type, whole);
            }
        }
        routed[1]++;
    }

    /** Open MPI's in-place reduce: the root's buffer gets the result; elsewhere it is the (unchanged) send buffer. */
    void reduceInPlace(Object buf, int count, int t, Op op, int opIndex, int root) {
        if (opIndex >= 0) {
            first(Call.REDUCE, t, op, opIndex);
        }
        DataType type = TYPES[t];
        Communicator c = communicator;
        int f = Forms.classify(buf, type);
        if (f == Forms.ARRAY) {
            Object b = Forms.array(buf);
            int o = Forms.offset(buf);
            switch (t) {
                case 0:
                    c.reduce((int[]) b, o, count, op, root);
                    break;
                case 1:
                    c.reduce((long[]) b, o, count, op, root);
                    break;
                case 2:
                    c.reduce((float[]) b, o, count, op, root);
                    break;
                default:
                    c.reduce((double[]) b, o, count, op, root);
                    break;
            }
        } else if (f == Forms.DIRECT) {
            c.reduce(Forms.direct(buf, (long) count * type.size, whole), 0, count, type, op, root);
        } else {
            int bytes = bytes(count, type);
            Forms.checkStaged("buffer", buf, f, bytes, type, rank == root);
            Forms.Scratch s = scratch(bytes);
            Forms.copyIn(buf, f, s, bytes, type, whole);
            c.reduce(s.bytes, 0, count, type, op, root);
            if (rank == root) {
                Forms.copyOut(s, buf, f, bytes, type, whole);
            }
        }
        routed[1]++;
    }

    void barrier() {
        if ((seenHi & (1L << 63)) == 0) {
            seenHi |= 1L << 63;
            firstSeen(Call.BARRIER, -1, null);
        }
        communicator.barrier();
        routed[2]++;
    }

    private static int bytes(int count, DataType type) {
        long b = (long) count * type.size;
        if (b > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("count " + count + " of " + type + " exceeds 2 GiB per call");
        }
        return (int) b;
    }

    private Forms.Scratch scratch(int bytes) {
        Forms.Scratch s = scratch;
        if (s == null || s.capacity() < bytes) {
            int cap = Math.max(64, Integer.highestOneBit(Math.max(1, bytes - 1)) << 1);
            if (cap < bytes) { // above 1 GiB
                cap = bytes;
            }
            s = new Forms.Scratch(cap);
            scratch = s;
        }
        return s;
    }

    private void first(Call call, int t, Op op, int opIndex) {
        int bit = call.ordinal() * 36 + t * 9 + opIndex; // < 108
        if (bit < 64) {
            if ((seenLo & (1L << bit)) != 0) {
                return;
            }
            seenLo |= 1L << bit;
        } else {
            if ((seenHi & (1L << (bit - 64))) != 0) {
                return;
            }
            seenHi |= 1L << (bit - 64);
        }
        firstSeen(call, t, op);
    }

    /** The rare path: through {@link #FIRST_SEEN}, never inlined (see {@link #quiet}). */
    private void firstSeen(Call call, int t, Op op) {
        try {
            FIRST_SEEN.invokeExact(this, call, t, op);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) {
            throw new IllegalStateException(e);
        }
    }

    private static MethodHandle firstSeenHandle() {
        try {
            return MethodHandles.lookup().findVirtual(CommState.class, "logFirst",
                    MethodType.methodType(void.class, Call.class, int.class, Op.class));
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /**
     * Logs a first routed call (t = -1: a barrier) at DEBUG, unless the warm-up runs. At INFO the
     * calls routed are listed once, at MPI.Finalize or exit ({@link #routedKinds}), not here: a line
     * written during the program's calls cost the calling rank 150-900 us (Logback's layout and
     * date formatting still in the interpreter, the write to the launcher's pipe waking its daemon
     * on a core the ranks use), and its peers waited as long; every first call of a new type or op
     * paid it, wherever it fell in the program. Measured with mpiapps.OsuDirect (Reduce of floats,
     * direct buffers, 2 ranks, 5 runs each alternating with the build before and with Open MPI
     * alone): the root's first timed call, the run's first reduce, 38-60 us, against 161-228 with
     * the line and 116-503 for Open MPI alone.
     */
    private void logFirst(Call call, int t, Op op) {
        // The level first: false in the warm-up and in the program alike (unless DEBUG is on), so C2's code for this
        // method has no branch that the program's first call takes for the first time (quiet is true all through the
        // warm-up: tested first, the program's first call trapped to the interpreter here).
        if (!LOG.isDebugEnabled() || quiet) {
            return;
        }
        if (t < 0) {
            LOG.debug("sharp4j-mpi: first barrier on {} routed through sharp4j", name);
        } else {
            LOG.debug("sharp4j-mpi: first {} of MPI.{} with MPI.{} on {} routed through sharp4j", call.method, TYPES[t], op, name);
        }
    }

    /**
     * The calls routed on this communicator, one entry per (call, type, op) in call, type and op
     * order, then barrier: "allReduce of MPI.DOUBLE with MPI.SUM, ..., barrier"; null when none.
     */
    String routedKinds() {
        long lo = seenLo;
        long hi = seenHi;
        StringBuilder b = new StringBuilder();
        for (int bit = 0; bit < 2 * 36; bit++) {
            boolean seen = bit < 64 ? (lo & (1L << bit)) != 0 : (hi & (1L << (bit - 64))) != 0;
            if (seen) {
                b.append(b.length() == 0 ? "" : ", ").append(Call.ALL[bit / 36].method).append(" of MPI.").append(TYPES[bit % 36 / 9])
                        .append(" with MPI.").append(Op.values()[bit % 9]);
            }
        }
        if ((hi & (1L << 63)) != 0) {
            b.append(b.length() == 0 ? "" : ", ").append("barrier");
        }
        return b.length() == 0 ? null : b.toString();
    }

    /** Logs {@link #routedKinds} ({@code when}: "at MPI.Finalize", "at exit"; rank 0 of the communicator at INFO, the others at DEBUG); nothing when none were routed. */
    void logRoutedKinds(String when) {
        String kinds = routedKinds();
        if (kinds != null) {
            log(rank == 0, "sharp4j-mpi: routed through sharp4j on {} ({}): {}", name, when, kinds);
        }
    }

    /** For {@link WarmUp}, between its rounds: the next routed calls take the "first call" path again (see {@link #quiet}). */
    void forgetFirstCalls() {
        seenLo = 0;
        seenHi = 0;
    }

    /**
     * For {@link WarmUp}: from now on no routed call is logged as a first one; returns what
     * {@link #loud} restores (the routed counters and the first-call marks as they are now).
     */
    Object quiet() {
        long[] saved = new long[routed.length + 2];
        System.arraycopy(routed, 0, saved, 0, routed.length);
        saved[routed.length] = seenLo;
        saved[routed.length + 1] = seenHi;
        seenLo = 0;
        seenHi = 0;
        quiet = true;
        return saved;
    }

    /** Undoes {@link #quiet}: the counters and marks as they were, and no buffer of the warm-up remembered. */
    void loud(Object marks) {
        long[] saved = (long[]) marks;
        System.arraycopy(saved, 0, routed, 0, routed.length);
        seenLo = saved[routed.length];
        seenHi = saved[routed.length + 1];
        quiet = false;
        whole.clear();
    }

    private static void log(boolean loud, String format, Object... args) {
        if (loud) {
            LOG.info(format, args);
        } else {
            LOG.debug(format, args);
        }
    }

    /** Local: releases sharp4j's shared memory for this communicator. Calls after it pass to MPI or set up anew. */
    void close() {
        closed = true;
        for (Communicator c : new Communicator[] {communicator, ownCommunicator}) {
            if (c != null) {
                try {
                    c.close();
                } catch (RuntimeException e) {
                    LOG.debug("sharp4j-mpi: closing the sharp4j communicator of {}", name, e);
                }
            }
        }
        communicator = null;
        ownCommunicator = null;
        whole.clear();
        scratch = null;
    }
}
