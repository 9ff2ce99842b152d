package org.sharp4j.mpi;

import mpi.MPI;
import org.sharp4j.Sharp4jException;
import org.sharp4j.bootstrap.Bootstrap;
import org.sharp4j.spi.BootstrapProvider;

/**
 * {@code sharp4j.bootstrap=mpi}, and the second choice of {@code Sharp4j.init()} after PMIx: the
 * ranks of an Open MPI Java program that already called {@code MPI.Init} meet over
 * {@code MPI.COMM_WORLD}'s allGather. A world of one rank does not count (a process started
 * outside mpirun is an MPI singleton; under the embedded launcher the rendezvous is the right choice).
 */
public final class MpiBootstrapProvider implements BootstrapProvider {
    @Override
    public String name() {
        return "mpi";
    }

    @Override
    public String unavailableReason() {
        try {
            // Present without initialising it: only a program that has mpi.jar on its class path goes further.
            Class.forName("mpi.MPI", false, MpiBootstrapProvider.class.getClassLoader());
        } catch (ClassNotFoundException | LinkageError e) {
            return "Open MPI's mpi.jar is not on the class path";
        }
        try {
            if (!MPI.isInitialized() || MPI.isFinalized()) {
                return "MPI.Init has not been called (or MPI is finalized)";
            }
            if (MPI.COMM_WORLD.getSize() < 2) {
                return "MPI.COMM_WORLD has one rank (not started by mpirun)";
            }
            return null;
        } catch (Exception | LinkageError e) {
            // Not "catch (MPIException ...)": the verifier would load that class with this one, and
            // a class path without mpi.jar could not even instantiate the provider to be told so.
            return "the Open MPI Java bindings do not work here: " + e;
        }
    }

    @Override
    public Bootstrap create() {
        try {
            return new MpiBootstrap(MPI.COMM_WORLD);
        } catch (RuntimeException e) {
            throw new Sharp4jException("bootstrap over MPI.COMM_WORLD failed: " + e.getMessage(), e);
        }
    }
}
