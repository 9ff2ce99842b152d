package org.sharp4j.mpi;

import mpi.Comm;
import mpi.Datatype;
import mpi.Intracomm;
import mpi.MPIException;
import mpi.Op;
import org.sharp4j.Communicator;

/**
 * sharp4j for Open MPI Java programs that prefer a call to the {@code -javaagent}.
 *
 * <pre>{@code
 * MPI.Init(args);
 * Communicator s = Sharp4jMpi.of(MPI.COMM_WORLD);          // collective on first use, then cached
 * s.allreduce(in, 0, out, 0, n, org.sharp4j.Op.SUM);       // sharp4j's own API
 * Sharp4jMpi.allReduce(MPI.COMM_WORLD, in, out, n, MPI.DOUBLE, MPI.SUM);  // MPI's signature, the agent's rules
 * MPI.Finalize();
 * }</pre>
 *
 * <p>{@link #of} gives the sharp4j {@link Communicator} bootstrapped over an intra-communicator
 * (its ranks, in its rank order); it is cached per communicator object and closed by
 * {@link #release} (call it before {@code comm.free()}), {@link #closeAll}, or at exit; with the
 * agent also on {@code comm.free()} and {@code MPI.Finalize()}. Do not close it yourself.
 *
 * <p>The helpers {@link #allReduce}, {@link #reduce} and {@link #barrier} take Open MPI's
 * arguments and apply the agent's rules ({@link MpiRouter}): supported calls go through sharp4j,
 * the rest (user-defined ops, derived datatypes, inter-communicators, count 0) through MPI. With
 * the agent installed they simply call MPI's method, which the agent routes.
 */
public final class Sharp4jMpi {
    private Sharp4jMpi() {
    }

    /**
     * The sharp4j communicator over {@code comm}: built on the first call (collective: every rank
     * of {@code comm} must call it, or make its first routed call on it, at the same point), the
     * same object afterwards.
     *
     * @throws org.sharp4j.Sharp4jException if sharp4j could not be set up on it (the same on every rank)
     */
    public static Communicator of(Intracomm comm) throws MPIException {
        if (comm == null) {
            throw new NullPointerException("comm is null");
        }
        return MpiRouter.communicator(comm);
    }

    /** {@code comm.allReduce(send, recv, count, type, op)}, through sharp4j where the rules allow. */
    public static void allReduce(Comm comm, Object send, Object recv, int count, Datatype type, Op op) throws MPIException {
        if (AgentStatus.installed || !MpiRouter.allReduce(comm, send, recv, count, type, op)) {
            comm.allReduce(send, recv, count, type, op);
        }
    }

    /** {@code comm.allReduce(buf, count, type, op)} (in place), through sharp4j where the rules allow. */
    public static void allReduce(Comm comm, Object buf, int count, Datatype type, Op op) throws MPIException {
        if (AgentStatus.installed || !MpiRouter.allReduce(comm, buf, count, type, op)) {
            comm.allReduce(buf, count, type, op);
        }
    }

    /** {@code comm.reduce(send, recv, count, type, op, root)}, through sharp4j where the rules allow. */
    public static void reduce(Comm comm, Object send, Object recv, int count, Datatype type, Op op, int root) throws MPIException {
        if (AgentStatus.installed || !MpiRouter.reduce(comm, send, recv, count, type, op, root)) {
            comm.reduce(send, recv, count, type, op, root);
        }
    }

    /** {@code comm.reduce(buf, count, type, op, root)} (in place at the root), through sharp4j where the rules allow. */
    public static void reduce(Comm comm, Object buf, int count, Datatype type, Op op, int root) throws MPIException {
        if (AgentStatus.installed || !MpiRouter.reduce(comm, buf, count, type, op, root)) {
            comm.reduce(buf, count, type, op, root);
        }
    }

    /** {@code comm.barrier()}, through sharp4j on intra-communicators. */
    public static void barrier(Comm comm) throws MPIException {
        if (AgentStatus.installed || !MpiRouter.barrier(comm)) {
            comm.barrier();
        }
    }

    /** Closes the sharp4j communicator of {@code comm}, if any (local). Call it before {@code comm.free()}. */
    public static void release(Comm comm) {
        MpiRouter.freeing(comm);
    }

    /** Closes every sharp4j communicator made here (local); later calls set them up again. */
    public static void closeAll() {
        MpiRouter.closeAll(false);
    }

    /** Whether the {@code -javaagent} routes Open MPI's own methods in this JVM. */
    public static boolean agentInstalled() {
        return AgentStatus.installed;
    }

    /**
     * Calls of {@code method} ("allReduce", "reduce" or "barrier") that went through sharp4j in
     * this process, by the agent or the helpers.
     */
    public static long routedCalls(String method) {
        return MpiRouter.routed(call(method));
    }

    /** Calls of {@code method} ("allReduce", "reduce", "barrier", "iAllReduce", "iReduce", "iBarrier") that went to MPI. */
    public static long passedCalls(String method) {
        return MpiRouter.passed(call(method), null);
    }

    /** The routed and passed-through counts per call, with the reasons, as the summary line logs them. */
    public static String summary() {
        return MpiRouter.summary();
    }

    private static Call call(String method) {
        for (Call c : Call.ALL) {
            if (c.method.equals(method)) {
                return c;
            }
        }
        throw new IllegalArgumentException("unknown method " + method + ": allReduce, reduce, barrier, iAllReduce, iReduce or iBarrier");
    }
}
