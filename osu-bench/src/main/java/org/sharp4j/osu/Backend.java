package org.sharp4j.osu;

/**
 * A collective library the benchmark loop runs on: sharp4j ({@link Sharp4jBackend}) or Open MPI's
 * Java bindings ({@code org.sharp4j.osu.mpi.MpiBackend}, compiled only where mpi.jar exists). The
 * timing statistics go through the backend's own reduce, as OMB gathers them with MPI_Reduce.
 */
public interface Backend extends AutoCloseable {
    /** Operators of the statistics reductions. */
    enum StatOp {
        MIN, MAX, SUM
    }

    /** Short name: {@code sharp4j} or {@code mpi}. */
    String name();

    int rank();

    int size();

    /** Nodes (hosts) the job spans as this library sees them, or -1 when it cannot tell. */
    default int nodes() {
        return -1;
    }

    /** Null when this backend reduces {@code type}, else why not. */
    default String unsupported(ElemType type) {
        return null;
    }

    void barrier();

    /** Sum-allreduce of the first {@code count} elements of {@code b} (in place in its receive buffer if asked). */
    void allreduce(Buffers b, int count, boolean inPlace);

    /** Sum-reduce to {@code root}; in place the root's receive buffer gets the result, the others send from theirs. */
    void reduce(Buffers b, int count, int root, boolean inPlace);

    /** Element-wise {@code op} of {@code in} over all ranks into {@code out} on rank 0 ({@code out} is ignored elsewhere). */
    void reduceToZero(double[] in, double[] out, StatOp op);

    /** Sum of {@code v} over all ranks, on every rank. */
    int allreduceSum(int v);

    /** Gives up on the job so that peers fail promptly instead of waiting for this rank. */
    default void abort(String reason) {
    }

    @Override
    void close();
}
