package org.sharp4j.mpi;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.ThreadLocalRandom;
import mpi.Intracomm;
import mpi.MPI;
import mpi.MPIException;
import org.sharp4j.Sharp4jException;
import org.sharp4j.bootstrap.Bootstrap;

/**
 * A sharp4j {@link Bootstrap} over an Open MPI Java intra-communicator, so that sharp4j runs under
 * mpirun next to Open MPI, on exactly that communicator's ranks: allgather of byte arrays as an MPI
 * {@code allGather} of the lengths, then of the arrays padded to the longest; the job id is the
 * communicator's rank 0's random id, broadcast. Used only while a communicator is set up.
 *
 * <p>Only {@code bcast} and {@code allGather} are called (the barrier is an allgather of nothing),
 * never {@code allReduce}, {@code reduce} or {@code barrier}, so it runs unchanged inside the
 * {@code -javaagent} that routes those. Closing it leaves MPI running: MPI_Finalize belongs to
 * whoever called MPI_Init.
 */
public final class MpiBootstrap implements Bootstrap {
    private final Intracomm comm;
    private final int rank;
    private final int size;
    private final String jobId;

    /** Collective over {@code comm}. */
    public MpiBootstrap(Intracomm comm) {
        this.comm = comm;
        try {
            this.rank = comm.getRank();
            this.size = comm.getSize();
            byte[] id = new byte[32];
            if (rank == 0) {
                String mine = "m" + ProcessHandle.current().pid() + "-" + Long.toHexString(ThreadLocalRandom.current().nextLong());
                byte[] b = mine.getBytes(StandardCharsets.US_ASCII);
                System.arraycopy(b, 0, id, 0, Math.min(b.length, id.length));
            }
            comm.bcast(id, id.length, MPI.BYTE, 0);
            int n = 0;
            while (n < id.length && id[n] != 0) {
                n++;
            }
            this.jobId = new String(id, 0, n, StandardCharsets.US_ASCII);
        } catch (MPIException e) {
            throw new Sharp4jException("MPI bootstrap: " + e.getMessage(), e);
        }
    }

    /** Over MPI_COMM_WORLD. */
    public static MpiBootstrap world() {
        return new MpiBootstrap(MPI.COMM_WORLD);
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return size;
    }

    @Override
    public String jobId() {
        return jobId;
    }

    @Override
    public byte[][] allgather(byte[] mine) {
        try {
            int[] len = {mine.length};
            int[] lens = new int[size];
            comm.allGather(len, 1, MPI.INT, lens, 1, MPI.INT);
            int max = Arrays.stream(lens).max().orElse(0);
            byte[][] out = new byte[size][];
            if (max == 0) {
                for (int r = 0; r < size; r++) {
                    out[r] = new byte[0];
                }
                return out;
            }
            byte[] padded = Arrays.copyOf(mine, max);
            byte[] all = new byte[max * size];
            comm.allGather(padded, max, MPI.BYTE, all, max, MPI.BYTE);
            for (int r = 0; r < size; r++) {
                out[r] = Arrays.copyOfRange(all, r * max, r * max + lens[r]);
            }
            return out;
        } catch (MPIException e) {
            throw new Sharp4jException("MPI bootstrap allgather: " + e.getMessage(), e);
        }
    }

    /**
     * MPI's progress for sharp4j's long waits ({@link Bootstrap#progress}): an {@code MPI_Iprobe}
     * on {@code MPI_COMM_WORLD} (Open MPI's progress is the process's, whatever the communicator;
     * the world communicator outlives any other the program may free), only from the thread that
     * set the communicator up unless MPI runs {@code MPI_THREAD_MULTIPLE}, never after
     * {@code MPI_Finalize}. It matches nothing sharp4j sends and consumes nothing: a probe leaves a
     * message where it is. A failing call turns it off.
     */
    @Override
    public Runnable progress() {
        return new MpiProgress();
    }

    static final class MpiProgress implements Runnable {
        /** The tag probed for; a program's message of this tag is only looked at, never taken. */
        static final int TAG = 32_767;
        private final Thread owner = Thread.currentThread();
        private final boolean anyThread;
        /** Set once MPI is finalized or a call failed; read and written by the waiting threads only. */
        private volatile boolean off;

        MpiProgress() {
            boolean multiple;
            try {
                multiple = MPI.queryThread() == MPI.THREAD_MULTIPLE;
            } catch (MPIException e) {
                multiple = false;
            }
            this.anyThread = multiple;
        }

        @Override
        public void run() {
            if (off || !anyThread && Thread.currentThread() != owner) {
                return;
            }
            try {
                if (MPI.isFinalized()) {
                    off = true;
                    return;
                }
                MPI.COMM_WORLD.iProbe(MPI.ANY_SOURCE, TAG);
            } catch (MPIException | RuntimeException e) {
                off = true;
            }
        }
    }

    /** The communicator this bootstrap exchanges over. */
    public Intracomm comm() {
        return comm;
    }

    @Override
    public String name() {
        return "mpi";
    }

    @Override
    public void close() {
    }
}
