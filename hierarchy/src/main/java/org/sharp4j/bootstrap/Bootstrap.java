package org.sharp4j.bootstrap;

/**
 * How a job's ranks find each other: rank, size, a job id and an allgather of bytes. Used only
 * while a communicator is set up (and for errors), never on the collective hot path.
 *
 * <p>Implementations: {@link ThreadBootstrap} (ranks as threads of one JVM, for tests),
 * {@link RendezvousBootstrap} (processes of the embedded launcher {@code bin/sharp4j-run}),
 * {@link SingletonBootstrap} (one rank); PMIx and MPI-communicator bootstraps plug in here.
 */
public interface Bootstrap extends AutoCloseable {
    int rank();

    int size();

    /** The same on every rank of the job, unique among concurrent jobs on a host, usable in file names. */
    String jobId();

    /** Every rank passes its bytes; every rank gets all of them indexed by rank. Collective. */
    byte[][] allgather(byte[] mine);

    /** A collective that returns once every rank called it. */
    default void barrier() {
        allgather(new byte[0]);
    }

    /** Short name for logs and {@code sharp4j info}. */
    String name();

    @Override
    void close();
}
