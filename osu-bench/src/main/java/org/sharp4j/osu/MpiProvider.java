package org.sharp4j.osu;

import org.sharp4j.bootstrap.Bootstrap;

/**
 * What the core needs from Open MPI, implemented by {@code org.sharp4j.osu.mpi.OpenMpiProvider} in
 * src/mpi/java (compiled only where mpi.jar exists) and loaded by name only when a run asks for MPI,
 * so that the sharp4j backend runs without mpi.jar.
 */
public interface MpiProvider {
    /** Calls MPI_Init and returns the backend on MPI_COMM_WORLD; closing it calls MPI_Finalize. */
    Backend open(String[] args) throws Exception;

    /** A sharp4j bootstrap over MPI_COMM_WORLD (after {@link #open}); closing it leaves MPI running. */
    Bootstrap bootstrap();
}
