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

    /**
     * Drives the communication library this bootstrap runs over, if the program also talks through
     * it, or null. A rank that waits in a sharp4j collective calls it every
     * {@link org.sharp4j.shm.Waiter#OUTSIDE_PROGRESS_NANOS} once its wait has spun its budget
     * (never on a fast call): an MPI library without a progress thread moves data only inside its
     * own calls, so what an earlier MPI call of this rank left queued (a collective's last
     * segments, returned as sent once copied) would otherwise stay queued while this rank waits
     * for a peer that waits in MPI for that data: both libraries stall until sharp4j's timeout
     * (seen with Open MPI's Reduce and sharp4j's alternating on 3 hosts over TCP). What HCOLL and
     * UCC do inside Open MPI (they call opal_progress while they wait). Called only by the thread
     * that waits; the implementation decides which threads may call into the library.
     */
    default Runnable progress() {
        return null;
    }

    /** Short name for logs and {@code sharp4j info}. */
    String name();

    @Override
    void close();
}
