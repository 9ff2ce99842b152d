package org.sharp4j.mpi;

import mpi.MPI;
import mpi.MPIException;
import org.sharp4j.Communicator;
import org.sharp4j.Op;
import org.sharp4j.Sharp4j;

/**
 * An MPI program that lets {@code Sharp4j.init()} pick the bootstrap (run by ExplicitApiIT with
 * sharp4j.bootstrap forced or auto): checks the ranks against MPI.COMM_WORLD and one allreduce.
 */
public final class InitBootstrapMain {
    private InitBootstrapMain() {
    }

    public static void main(String[] args) throws MPIException {
        MPI.Init(args);
        int rank = MPI.COMM_WORLD.getRank();
        int size = MPI.COMM_WORLD.getSize();
        try (Communicator c = Sharp4j.init()) {
            if (c.rank() != rank || c.size() != size) {
                throw new IllegalStateException("sharp4j rank " + c.rank() + "/" + c.size() + " but MPI rank " + rank + "/" + size);
            }
            long[] v = {rank + 1};
            c.allreduce(v, 0, v, 0, 1, Op.SUM);
            if (v[0] != (long) size * (size + 1) / 2) {
                throw new IllegalStateException("allreduce gave " + v[0]);
            }
        }
        if (rank == 0) {
            System.out.println("INIT OK " + size);
        }
        MPI.Finalize();
    }
}
