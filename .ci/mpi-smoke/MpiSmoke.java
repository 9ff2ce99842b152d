import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import mpi.Intracomm;
import mpi.MPI;
import mpi.MPIException;

/**
 * CI smoke test for the Open MPI Java bindings (mpi.jar + libmpi_java.so), run by
 * .ci/setup-mpi.sh under {@code mpirun -np 2}. Every rank contributes {@code rank + 1} to a
 * SUM allReduce of one double, once from a heap {@code double[]} (the bindings copy it
 * through JNI) and once from a direct ByteBuffer (zero-copy path). Rank 0 prints
 * {@code mpi-smoke: OK} on success; every rank exits 1 if any rank saw a wrong value.
 */
public final class MpiSmoke {
    public static void main(String[] args) throws MPIException {
        MPI.Init(args);
        Intracomm world = MPI.COMM_WORLD;
        int rank = world.getRank();
        int size = world.getSize();
        double expected = size * (size + 1) / 2.0;

        double[] in = {rank + 1};
        double[] out = new double[1];
        world.allReduce(in, out, 1, MPI.DOUBLE, MPI.SUM);

        ByteBuffer bin = ByteBuffer.allocateDirect(Double.BYTES).order(ByteOrder.nativeOrder());
        ByteBuffer bout = ByteBuffer.allocateDirect(Double.BYTES).order(ByteOrder.nativeOrder());
        bin.putDouble(0, rank + 1);
        world.allReduce(bin, bout, 1, MPI.DOUBLE, MPI.SUM);

        boolean ok = size >= 2 && out[0] == expected && bout.getDouble(0) == expected;
        if (size < 2) {
            System.err.println("mpi-smoke: FAILED: needs at least 2 ranks (mpirun -np 2)");
        } else if (!ok) {
            System.err.printf("mpi-smoke: FAILED on rank %d of %d: array=%s buffer=%s expected=%s%n",
                    rank, size, out[0], bout.getDouble(0), expected);
        }
        // Agree on the verdict (in-place MAX) so all ranks exit with the same status.
        int[] failed = {ok ? 0 : 1};
        world.allReduce(failed, 1, MPI.INT, MPI.MAX);
        if (rank == 0 && failed[0] == 0) {
            System.out.println("mpi-smoke: OK");
        }
        MPI.Finalize();
        System.exit(failed[0]);
    }
}
