package org.sharp4j.mpi;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLongArray;
import mpi.Comm;
import mpi.Datatype;
import mpi.Intracomm;
import mpi.MPI;
import mpi.MPIException;
import org.sharp4j.DataType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The routing rules, shared by the {@code -javaagent} (its advice, inlined into {@code mpi.Comm},
 * calls these methods first and skips MPI's body when one returns true) and by
 * {@link Sharp4jMpi}'s helpers. Not an API: public only because the inlined advice lives in package
 * {@code mpi}.
 *
 * <p>A call is routed through sharp4j when the communicator is an intra-communicator of more than
 * one rank on which sharp4j could be set up, the datatype is {@code MPI.INT}, {@code LONG},
 * {@code FLOAT} or {@code DOUBLE} itself (not a derived type), the op is one of MPI's predefined
 * {@code SUM}, {@code PROD}, {@code MIN}, {@code MAX} (any of the four types) or {@code BAND},
 * {@code BOR}, {@code BXOR}, {@code LAND}, {@code LOR} (INT and LONG), the count is positive and a
 * reduce's root is in range. Each condition is one MPI requires to match on all ranks, so every rank
 * takes the same path; buffers (arrays, heap or direct buffers, in any mix) are served whatever
 * their form. Everything else returns false and goes to MPI untouched, counted by reason.
 */
public final class MpiRouter {
    private static final Logger LOG = LoggerFactory.getLogger(MpiRouter.class);

    /** sharp4j's types by the router's type index (MPI.INT, LONG, FLOAT, DOUBLE). */
    static final DataType[] TYPES = {DataType.INT, DataType.LONG, DataType.FLOAT, DataType.DOUBLE};

    private static final CommState INTERCOMM = CommState.passing(PassReason.INTERCOMM);
    private static final CommState FINALIZED = CommState.passing(PassReason.FINALIZED);
    private static final CommState NESTED = CommState.passing(PassReason.NESTED);

    /** World rank from the launcher's environment: rank 0 logs at INFO, the others at DEBUG. */
    static final int WORLD_RANK = envInt("OMPI_COMM_WORLD_RANK", envInt("PMIX_RANK", 0));

    private static final Object LOCK = new Object();
    /** Live states by communicator object; guarded by LOCK. */
    private static final Map<Comm, CommState> STATES = new IdentityHashMap<>();
    /** Every state ever made, for the summary; guarded by LOCK. */
    private static final List<CommState> HISTORY = new ArrayList<>();
    private static int nextId = 1;
    /**
     * The last state looked up: calls on one communicator in a row skip the map. Volatile so that a
     * thread reading it sees the state's set-up (on x86 a volatile read is a plain load).
     */
    private static volatile CommState last;
    private static volatile boolean finalized;
    /** Whether this JVM ran {@link WarmUp} (on any communicator). */
    private static volatile boolean warmed;
    private static boolean summaryLogged;

    private static final int REASONS = PassReason.ALL.length;
    private static final AtomicLongArray PASSED = new AtomicLongArray(Call.ALL.length * REASONS);
    private static final boolean[] PASS_LOGGED = new boolean[Call.ALL.length * REASONS];

    static {
        try {
            Runtime.getRuntime().addShutdownHook(new Thread(MpiRouter::atExit, "sharp4j-mpi-exit"));
        } catch (IllegalStateException e) {
            // first used while the JVM shuts down: nothing left to close at exit
        }
    }

    private MpiRouter() {
    }

    // ---- entry points (the agent's advice and Sharp4jMpi) ----

    /** {@code Comm.allReduce(sendbuf, recvbuf, count, type, op)}: true when sharp4j did it. */
    public static boolean allReduce(Comm comm, Object send, Object recv, int count, Datatype type, mpi.Op op) throws MPIException {
        int t = typeIndex(type);
        org.sharp4j.Op o = sharpOp(op);
        if (t < 0 || o == null || count <= 0 || !o.validFor(TYPES[t])) {
            return pass(Call.ALLREDUCE, argReason(t, o, count, type, op));
        }
        CommState s = state(comm);
        if (s.communicator == null) {
            return pass(Call.ALLREDUCE, s.passReason);
        }
        try {
            s.allReduce(send, recv, count, t, o, o.ordinal());
        } catch (RuntimeException e) {
            throw failed(Call.ALLREDUCE, s, e);
        }
        return true;
    }

    /** {@code Comm.allReduce(buf, count, type, op)} (MPI_IN_PLACE). */
    public static boolean allReduce(Comm comm, Object buf, int count, Datatype type, mpi.Op op) throws MPIException {
        int t = typeIndex(type);
        org.sharp4j.Op o = sharpOp(op);
        if (t < 0 || o == null || count <= 0 || !o.validFor(TYPES[t])) {
            return pass(Call.ALLREDUCE, argReason(t, o, count, type, op));
        }
        CommState s = state(comm);
        if (s.communicator == null) {
            return pass(Call.ALLREDUCE, s.passReason);
        }
        try {
            s.allReduceInPlace(buf, count, t, o, o.ordinal());
        } catch (RuntimeException e) {
            throw failed(Call.ALLREDUCE, s, e);
        }
        return true;
    }

    /** {@code Comm.reduce(sendbuf, recvbuf, count, type, op, root)}. */
    public static boolean reduce(Comm comm, Object send, Object recv, int count, Datatype type, mpi.Op op, int root)
            throws MPIException {
        int t = typeIndex(type);
        org.sharp4j.Op o = sharpOp(op);
        if (t < 0 || o == null || count <= 0 || !o.validFor(TYPES[t])) {
            return pass(Call.REDUCE, argReason(t, o, count, type, op));
        }
        CommState s = state(comm);
        if (s.communicator == null) {
            return pass(Call.REDUCE, s.passReason);
        }
        if (root < 0 || root >= s.size) {
            return pass(Call.REDUCE, PassReason.BAD_ROOT); // MPI reports it
        }
        try {
            s.reduce(send, recv, count, t, o, o.ordinal(), root);
        } catch (RuntimeException e) {
            throw failed(Call.REDUCE, s, e);
        }
        return true;
    }

    /** {@code Comm.reduce(buf, count, type, op, root)} (MPI_IN_PLACE at the root; the send buffer elsewhere). */
    public static boolean reduce(Comm comm, Object buf, int count, Datatype type, mpi.Op op, int root) throws MPIException {
        int t = typeIndex(type);
        org.sharp4j.Op o = sharpOp(op);
        if (t < 0 || o == null || count <= 0 || !o.validFor(TYPES[t])) {
            return pass(Call.REDUCE, argReason(t, o, count, type, op));
        }
        CommState s = state(comm);
        if (s.communicator == null) {
            return pass(Call.REDUCE, s.passReason);
        }
        if (root < 0 || root >= s.size) {
            return pass(Call.REDUCE, PassReason.BAD_ROOT);
        }
        try {
            s.reduceInPlace(buf, count, t, o, o.ordinal(), root);
        } catch (RuntimeException e) {
            throw failed(Call.REDUCE, s, e);
        }
        return true;
    }

    /** {@code Comm.barrier()}. */
    public static boolean barrier(Comm comm) throws MPIException {
        CommState s = state(comm);
        if (s.communicator == null) {
            return pass(Call.BARRIER, s.passReason);
        }
        try {
            s.barrier();
        } catch (RuntimeException e) {
            throw failed(Call.BARRIER, s, e);
        }
        return true;
    }

    /** A non-blocking {@code iAllReduce}, {@code iReduce} or {@code iBarrier}: always MPI's; counted. */
    public static void nonBlocking(String method) {
        Call c = method.equals("iAllReduce") ? Call.IALLREDUCE : method.equals("iReduce") ? Call.IREDUCE : Call.IBARRIER;
        pass(c, PassReason.NON_BLOCKING);
    }

    /** Before {@code Comm.free()} / {@code disconnect()}: drops the communicator's sharp4j state (local). */
    public static void freeing(Comm comm) {
        CommState s;
        synchronized (LOCK) {
            s = STATES.remove(comm);
            if (last == s) {
                last = null;
            }
        }
        if (s != null) {
            s.close();
            LOG.debug("sharp4j-mpi: {} freed: its sharp4j communicator is closed", s.name);
        }
    }

    /** Before {@code MPI.Finalize()}: closes every sharp4j communicator and logs the summary. */
    public static void finalizing() {
        closeAll(true);
        logSummary("at MPI.Finalize");
    }

    // ---- state ----

    /** The state of {@code comm}, set up (collectively) on the first routed call; a pass-through marker otherwise. */
    static CommState state(Comm comm) throws MPIException {
        CommState s = last;
        if (s != null && s.mpiComm == comm && !s.closed) {
            return s;
        }
        return lookup(comm);
    }

    private static CommState lookup(Comm comm) throws MPIException {
        if (finalized) {
            return FINALIZED;
        }
        if (!(comm instanceof Intracomm)) {
            return INTERCOMM;
        }
        CommState s;
        boolean create = false;
        synchronized (LOCK) {
            s = STATES.get(comm);
            if (s == null) {
                s = new CommState((Intracomm) comm, nextId++);
                STATES.put(comm, s);
                create = true;
            }
        }
        if (create) {
            try {
                s.setUp();
            } catch (MPIException | RuntimeException e) {
                synchronized (LOCK) {
                    STATES.remove(comm); // e.g. MPI not initialised yet: the next call tries again
                }
                if (e instanceof MPIException) {
                    throw (MPIException) e;
                }
                MPIException m = new MPIException("sharp4j set-up on a communicator failed: " + e);
                m.initCause(e);
                throw m;
            }
            synchronized (LOCK) {
                HISTORY.add(s);
            }
            if (s.communicator != null) {
                last = s;
                warmUp(s);
            }
        } else {
            CommState w = s.awaitSetUp();
            if (w == null) {
                return NESTED;
            }
        }
        last = s;
        return s;
    }

    /**
     * {@link WarmUp} right after set-up, on every rank alike; a failure there is the first call's
     * failure. The JIT's code serves every communicator, so a JVM warms once: the ranks of a new
     * communicator agree (one allreduce on its sharp4j communicator, not counted) to skip the
     * warm-up when every one of them has run it already, and to run it together otherwise.
     */
    private static void warmUp(CommState s) throws MPIException {
        if (s.warmupRounds <= 0) {
            return; // sharp4j.warmup=0
        }
        long t0 = System.nanoTime();
        long jit;
        try {
            int[] all = {warmed ? 1 : 0};
            s.communicator.allreduce(all, 0, 1, org.sharp4j.Op.MIN);
            if (all[0] == 1) {
                LOG.debug("sharp4j-mpi: routed paths on {}: warm already on every rank", s.name);
                return;
            }
            jit = WarmUp.run(s, s.warmupRounds);
            warmed = true;
        } catch (MPIException | RuntimeException e) {
            MPIException m = new MPIException("sharp4j warm-up on " + s.name + " failed: " + e.getMessage());
            m.initCause(e);
            throw m;
        }
        LOG.debug("sharp4j-mpi: routed paths on {} warmed up in {} ms ({} ms of it leaving the cores to the JIT compiler)",
                s.name, (System.nanoTime() - t0) / 1_000_000, jit);
    }

    /**
     * The explicit API's communicator for {@code comm} (collective on first use): the router's, or
     * for a single-rank communicator one of its own.
     */
    static org.sharp4j.Communicator communicator(Intracomm comm) throws MPIException {
        if (finalized) {
            throw new IllegalStateException("MPI.Finalize was called: no sharp4j communicator for " + comm);
        }
        CommState s = state(comm);
        if (s.communicator == null) {
            if (s.passReason == PassReason.SINGLE_RANK) {
                // a communicator of its own for the caller; the router still passes this communicator's calls to MPI
                synchronized (LOCK) {
                    if (s.ownCommunicator == null && !s.closed) {
                        s.ownCommunicator = org.sharp4j.Sharp4j.create(new MpiBootstrap(comm), org.sharp4j.Config.fromSystemProperties());
                    }
                }
                if (s.ownCommunicator != null) {
                    return s.ownCommunicator;
                }
            }
            throw new org.sharp4j.Sharp4jException("sharp4j is not available on " + (s.mpiComm == null ? comm.toString() : s.name) + ": "
                    + s.passReason.text + (s.unavailableDetail == null ? "" : " (" + s.unavailableDetail + ")"));
        }
        return s.communicator;
    }

    static void closeAll(boolean atFinalize) {
        List<CommState> open;
        synchronized (LOCK) {
            if (atFinalize) {
                finalized = true;
            }
            last = null;
            open = new ArrayList<>(STATES.values());
            STATES.clear();
        }
        for (CommState s : open) {
            s.close();
        }
    }

    private static void atExit() {
        closeAll(false);
        logSummary("at exit");
    }

    // ---- decisions and counting ----

    static int typeIndex(Datatype type) {
        if (type == MPI.DOUBLE) {
            return 3;
        } else if (type == MPI.INT) {
            return 0;
        } else if (type == MPI.LONG) {
            return 1;
        } else if (type == MPI.FLOAT) {
            return 2;
        }
        return -1;
    }

    static org.sharp4j.Op sharpOp(mpi.Op op) {
        if (op == MPI.SUM) {
            return org.sharp4j.Op.SUM;
        } else if (op == MPI.MAX) {
            return org.sharp4j.Op.MAX;
        } else if (op == MPI.MIN) {
            return org.sharp4j.Op.MIN;
        } else if (op == MPI.PROD) {
            return org.sharp4j.Op.PROD;
        } else if (op == MPI.BAND) {
            return org.sharp4j.Op.BAND;
        } else if (op == MPI.BOR) {
            return org.sharp4j.Op.BOR;
        } else if (op == MPI.BXOR) {
            return org.sharp4j.Op.BXOR;
        } else if (op == MPI.LAND) {
            return org.sharp4j.Op.LAND;
        } else if (op == MPI.LOR) {
            return org.sharp4j.Op.LOR;
        }
        return null;
    }

    private static PassReason argReason(int t, org.sharp4j.Op o, int count, Datatype type, mpi.Op op) {
        if (t < 0) {
            return predefined(type) ? PassReason.UNSUPPORTED_DATATYPE : PassReason.DERIVED_DATATYPE;
        }
        if (o == null) {
            return predefined(op) ? PassReason.UNSUPPORTED_OP : PassReason.USER_OP;
        }
        if (!o.validFor(TYPES[t])) {
            return PassReason.UNSUPPORTED_OP;
        }
        return PassReason.NO_ELEMENTS;
    }

    private static boolean predefined(Datatype type) {
        return type == MPI.BYTE || type == MPI.CHAR || type == MPI.SHORT || type == MPI.BOOLEAN || type == MPI.PACKED
                || type == MPI.INT2 || type == MPI.SHORT_INT || type == MPI.LONG_INT || type == MPI.FLOAT_INT
                || type == MPI.DOUBLE_INT || type == MPI.FLOAT_COMPLEX || type == MPI.DOUBLE_COMPLEX;
    }

    static boolean predefined(mpi.Op op) {
        return op == MPI.LXOR || op == MPI.MINLOC || op == MPI.MAXLOC || op == MPI.REPLACE || op == MPI.NO_OP;
    }

    private static boolean pass(Call c, PassReason why) {
        int i = c.ordinal() * REASONS + why.ordinal();
        PASSED.incrementAndGet(i);
        if (!PASS_LOGGED[i]) {
            PASS_LOGGED[i] = true;
            String msg = "sharp4j-mpi: {} passed to MPI: {} (first such call; the summary counts them)";
            if (WORLD_RANK == 0) {
                LOG.info(msg, c.method, why.text);
            } else {
                LOG.debug(msg, c.method, why.text);
            }
        }
        return false;
    }

    private static MPIException failed(Call c, CommState s, RuntimeException e) {
        MPIException m = new MPIException("sharp4j " + c.method + " on " + s.name + " failed: " + e.getMessage());
        m.initCause(e);
        return m;
    }

    // ---- counters and the summary ----

    /** Routed calls so far of {@code call} (allReduce, reduce, barrier), over all communicators. */
    static long routed(Call call) {
        if (call.ordinal() > 2) {
            return 0;
        }
        long n = 0;
        synchronized (LOCK) {
            for (CommState s : HISTORY) {
                n += s.routed[call.ordinal()];
            }
        }
        return n;
    }

    /** Calls of {@code call} passed to MPI so far, for all reasons (why == null) or one. */
    static long passed(Call call, PassReason why) {
        if (why != null) {
            return PASSED.get(call.ordinal() * REASONS + why.ordinal());
        }
        long n = 0;
        for (int r = 0; r < REASONS; r++) {
            n += PASSED.get(call.ordinal() * REASONS + r);
        }
        return n;
    }

    /** One line: routed and passed-through counts per call, with the reasons; null when nothing was called. */
    static String summary() {
        StringBuilder sb = new StringBuilder();
        for (Call c : Call.ALL) {
            long r = routed(c);
            long p = passed(c, null);
            boolean blocking = c.ordinal() <= 2;
            if (!blocking && p == 0) {
                continue; // non-blocking calls only when there were any
            }
            if (sb.length() > 0) {
                sb.append("; ");
            }
            sb.append(c.method).append(": ");
            if (blocking) {
                sb.append(r).append(" routed, ");
            }
            sb.append(p).append(" passed to MPI");
            if (p > 0) {
                sb.append(" (");
                boolean firstReason = true;
                for (PassReason why : PassReason.ALL) {
                    long n = passed(c, why);
                    if (n > 0) {
                        sb.append(firstReason ? "" : ", ").append(why.text).append(": ").append(n);
                        firstReason = false;
                    }
                }
                sb.append(')');
            }
        }
        return sb.toString();
    }

    private static void logSummary(String when) {
        boolean any = false;
        for (Call c : Call.ALL) {
            any |= routed(c) > 0 || passed(c, null) > 0;
        }
        synchronized (LOCK) {
            if (summaryLogged || !any) {
                return;
            }
            summaryLogged = true;
        }
        String msg = "sharp4j-mpi summary {} (world rank {}): {}";
        if (WORLD_RANK == 0) {
            LOG.info(msg, when, WORLD_RANK, summary());
        } else {
            LOG.debug(msg, when, WORLD_RANK, summary());
        }
        List<CommState> all;
        synchronized (LOCK) {
            all = new ArrayList<>(HISTORY);
        }
        for (CommState s : all) {
            s.logRoutedKinds(when); // which calls were routed: listed here, not at their first call (CommState.logFirst says why)
        }
    }

    private static int envInt(String name, int otherwise) {
        String v = System.getenv(name);
        if (v == null) {
            return otherwise;
        }
        try {
            return Integer.parseInt(v.trim());
        } catch (NumberFormatException e) {
            return otherwise;
        }
    }
}
