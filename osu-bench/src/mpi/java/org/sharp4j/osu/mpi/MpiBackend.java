package org.sharp4j.osu.mpi;

import mpi.Datatype;
import mpi.Intracomm;
import mpi.MPI;
import mpi.MPIException;
import mpi.Op;
import org.sharp4j.osu.Backend;
import org.sharp4j.osu.Buffers;
import org.sharp4j.osu.ElemType;

/**
 * The benchmark loop on Open MPI's Java bindings: {@code allReduce}, {@code reduce} and
 * {@code barrier} of an {@link Intracomm} on the same direct ByteBuffers or arrays sharp4j gets.
 * -T char is MPI.BYTE (one byte, as OMB's MPI_CHAR; Open MPI Java's MPI.CHAR is Java's char).
 */
public final class MpiBackend implements Backend {
    private final Intracomm comm;
    private final boolean finalizeOnClose;
    private final int rank;
    private final int size;

    public MpiBackend(Intracomm comm, boolean finalizeOnClose) throws MPIException {
        this.comm = comm;
        this.finalizeOnClose = finalizeOnClose;
        this.rank = comm.getRank();
        this.size = comm.getSize();
    }

    static Datatype type(ElemType t) {
        switch (t) {
            case CHAR:
                return MPI.BYTE;
            case INT:
                return MPI.INT;
            case LONG:
                return MPI.LONG;
            case FLOAT:
                return MPI.FLOAT;
            default:
                return MPI.DOUBLE;
        }
    }

    private static RuntimeException wrap(String what, MPIException e) {
        return new IllegalStateException("MPI " + what + " failed: " + e.getMessage() + " (error class " + e.getErrorClass() + ")", e);
    }

    @Override
    public String name() {
        return "mpi";
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return size;
    }

    /** Collective: counts the shared-memory domains (MPI_COMM_TYPE_SHARED), i.e. the hosts, of the communicator. */
    @Override
    public int nodes() {
        try {
            Intracomm local = comm.splitType(mpi.Comm.TYPE_SHARED, rank, MPI.INFO_NULL);
            int leader = local.getRank() == 0 ? 1 : 0;
            local.free();
            return allreduceSum(leader);
        } catch (MPIException e) {
            throw wrap("splitType", e);
        }
    }

    @Override
    public void barrier() {
        try {
            comm.barrier();
        } catch (MPIException e) {
            throw wrap("barrier", e);
        }
    }

    @Override
    public void allreduce(Buffers b, int count, boolean inPlace) {
        try {
            if (inPlace) {
                comm.allReduce(b.recv(), count, type(b.type), MPI.SUM);
            } else {
                comm.allReduce(b.send(), b.recv(), count, type(b.type), MPI.SUM);
            }
        } catch (MPIException e) {
            throw wrap("allReduce", e);
        }
    }

    @Override
    public void reduce(Buffers b, int count, int root, boolean inPlace) {
        try {
            if (!inPlace) {
                comm.reduce(b.send(), b.recv(), count, type(b.type), MPI.SUM, root);
            } else if (rank == root) {
                comm.reduce(b.recv(), count, type(b.type), MPI.SUM, root); // MPI_IN_PLACE at the root
            } else {
                comm.reduce(b.recv(), b.recv(), count, type(b.type), MPI.SUM, root); // as OMB: non-roots send from recvbuf
            }
        } catch (MPIException e) {
            throw wrap("reduce", e);
        }
    }

    @Override
    public void reduceToZero(double[] in, double[] out, StatOp op) {
        Op o = op == StatOp.MIN ? MPI.MIN : op == StatOp.MAX ? MPI.MAX : MPI.SUM;
        try {
            comm.reduce(in, rank == 0 ? out : new double[in.length], in.length, MPI.DOUBLE, o, 0);
        } catch (MPIException e) {
            throw wrap("reduce", e);
        }
    }

    @Override
    public int allreduceSum(int v) {
        int[] in = {v};
        int[] out = new int[1];
        try {
            comm.allReduce(in, out, 1, MPI.INT, MPI.SUM);
        } catch (MPIException e) {
            throw wrap("allReduce", e);
        }
        return out[0];
    }

    @Override
    public void abort(String reason) {
        try {
            comm.abort(1);
        } catch (MPIException ignored) {
            // already going down
        }
    }

    @Override
    public void close() {
        if (finalizeOnClose) {
            try {
                MPI.Finalize();
            } catch (MPIException e) {
                throw wrap("Finalize", e);
            }
        }
    }
}
