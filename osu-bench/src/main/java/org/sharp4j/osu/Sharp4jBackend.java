package org.sharp4j.osu;

import java.nio.ByteBuffer;
import org.sharp4j.Communicator;
import org.sharp4j.DataType;
import org.sharp4j.Op;

/** The benchmark loop on a sharp4j {@link Communicator}. */
public final class Sharp4jBackend implements Backend {
    /** Why -T char cannot run on sharp4j. */
    public static final String NO_CHAR =
            "sharp4j has no 1-byte type, so -T char (OMB's MPI_CHAR) runs only with --backend mpi; use -T int, long, float or double";

    private final Communicator comm;
    private final boolean owns;

    /** @param owns whether {@link #close()} closes the communicator */
    public Sharp4jBackend(Communicator comm, boolean owns) {
        this.comm = comm;
        this.owns = owns;
    }

    public Communicator communicator() {
        return comm;
    }

    @Override
    public String name() {
        return "sharp4j";
    }

    @Override
    public int rank() {
        return comm.rank();
    }

    @Override
    public int size() {
        return comm.size();
    }

    @Override
    public int nodes() {
        return comm.topology().nodeCount();
    }

    @Override
    public String unsupported(ElemType type) {
        return type.sharp4j() == null ? NO_CHAR : null;
    }

    @Override
    public void barrier() {
        comm.barrier();
    }

    @Override
    public void allreduce(Buffers b, int count, boolean inPlace) {
        if (!b.arrays) {
            DataType t = b.type.sharp4j();
            ByteBuffer r = b.recvBuffer();
            if (inPlace) {
                comm.allreduce(r, 0, count, t, Op.SUM);
            } else {
                comm.allreduce(b.sendBuffer(), 0, r, 0, count, t, Op.SUM);
            }
            return;
        }
        Object s = b.send();
        Object r = b.recv();
        switch (b.type) {
            case INT:
                if (inPlace) {
                    comm.allreduce((int[]) r, 0, count, Op.SUM);
                } else {
                    comm.allreduce((int[]) s, 0, (int[]) r, 0, count, Op.SUM);
                }
                break;
            case LONG:
                if (inPlace) {
                    comm.allreduce((long[]) r, 0, count, Op.SUM);
                } else {
                    comm.allreduce((long[]) s, 0, (long[]) r, 0, count, Op.SUM);
                }
                break;
            case FLOAT:
                if (inPlace) {
                    comm.allreduce((float[]) r, 0, count, Op.SUM);
                } else {
                    comm.allreduce((float[]) s, 0, (float[]) r, 0, count, Op.SUM);
                }
                break;
            case DOUBLE:
                if (inPlace) {
                    comm.allreduce((double[]) r, 0, count, Op.SUM);
                } else {
                    comm.allreduce((double[]) s, 0, (double[]) r, 0, count, Op.SUM);
                }
                break;
            default:
                throw new IllegalArgumentException(unsupported(b.type));
        }
    }

    @Override
    public void reduce(Buffers b, int count, int root, boolean inPlace) {
        if (!b.arrays) {
            DataType t = b.type.sharp4j();
            ByteBuffer r = b.recvBuffer();
            if (inPlace) {
                comm.reduce(r, 0, count, t, Op.SUM, root);
            } else {
                comm.reduce(b.sendBuffer(), 0, r, 0, count, t, Op.SUM, root);
            }
            return;
        }
        Object s = b.send();
        Object r = b.recv();
        switch (b.type) {
            case INT:
                if (inPlace) {
                    comm.reduce((int[]) r, 0, count, Op.SUM, root);
                } else {
                    comm.reduce((int[]) s, 0, (int[]) r, 0, count, Op.SUM, root);
                }
                break;
            case LONG:
                if (inPlace) {
                    comm.reduce((long[]) r, 0, count, Op.SUM, root);
                } else {
                    comm.reduce((long[]) s, 0, (long[]) r, 0, count, Op.SUM, root);
                }
                break;
            case FLOAT:
                if (inPlace) {
                    comm.reduce((float[]) r, 0, count, Op.SUM, root);
                } else {
                    comm.reduce((float[]) s, 0, (float[]) r, 0, count, Op.SUM, root);
                }
                break;
            case DOUBLE:
                if (inPlace) {
                    comm.reduce((double[]) r, 0, count, Op.SUM, root);
                } else {
                    comm.reduce((double[]) s, 0, (double[]) r, 0, count, Op.SUM, root);
                }
                break;
            default:
                throw new IllegalArgumentException(unsupported(b.type));
        }
    }

    @Override
    public void reduceToZero(double[] in, double[] out, StatOp op) {
        Op o = op == StatOp.MIN ? Op.MIN : op == StatOp.MAX ? Op.MAX : Op.SUM;
        comm.reduce(in, 0, rank() == 0 ? out : null, 0, in.length, o, 0);
    }

    @Override
    public int allreduceSum(int v) {
        int[] in = {v};
        int[] out = new int[1];
        comm.allreduce(in, 0, out, 0, 1, Op.SUM);
        return out[0];
    }

    @Override
    public void abort(String reason) {
        comm.abort(reason);
    }

    @Override
    public void close() {
        if (owns) {
            comm.close();
        }
    }
}
