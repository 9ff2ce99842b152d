package mpiapps;

import mpi.MPI;
import mpi.MPIException;
import org.sharp4j.mpi.Sharp4jMpi;

/**
 * Runs Allreduces until killed (the fault-injection tests signal it): small ones and, every 16th,
 * one of 4096 doubles (the tiled path). {@code explicit} uses Sharp4jMpi's helpers instead of
 * Comm.allReduce (which the agent routes). Prints {@code rank R pid P ready} once sharp4j is set up.
 */
public final class SpinForever {
    private SpinForever() {
    }

    public static void main(String[] args) throws MPIException {
        MPI.Init(args);
        boolean explicit = args.length > 0 && args[0].equals("explicit");
        int rank = MPI.COMM_WORLD.getRank();
        double[] in = new double[4096];
        double[] out = new double[4096];
        for (long i = 0; ; i++) {
            int n = (i & 15) == 15 ? 4096 : 1;
            in[0] = i;
            if (explicit) {
                Sharp4jMpi.allReduce(MPI.COMM_WORLD, in, out, n, MPI.DOUBLE, MPI.SUM);
            } else {
                MPI.COMM_WORLD.allReduce(in, out, n, MPI.DOUBLE, MPI.SUM);
            }
            if (i == 0) {
                System.out.println("rank " + rank + " pid " + ProcessHandle.current().pid() + " ready");
                System.out.flush();
            }
        }
    }
}
