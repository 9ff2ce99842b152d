package mpiapps;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import mpi.Intracomm;
import mpi.MPI;
import mpi.MPIException;
import org.sharp4j.Communicator;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.mpi.Sharp4jMpi;

/**
 * Calls back to back, as OSU's Java benchmarks make them (no barrier between calls, the whole loop
 * timed), on sharp4j and on Open MPI's Java bindings in the same processes: blocks of {@code calls}
 * Reduces (root 0) or Allreduces of {@code bytes} bytes of floats from direct buffers, or Barriers, sharp4j's
 * block then Open MPI's, {@code blocks} times, a barrier of the block's library before each block.
 * Rank 0 prints each block pair's time per call (its own loop: for a Reduce, the root's) and their
 * ratio, then the medians. Why: OSU's Java benchmarks run one library per process, and this VM's
 * fast and slow phases (a cache-line round trip of about 100 ns or up to 560 ns, switching every few
 * seconds) then decide a pair of runs more than the libraries do; two blocks side by side meet the
 * same phase (both change in the same block).
 *
 * <pre>
 * mpirun -np 2 java -cp test-classes:sharp4j-mpi-agent.jar:mpi.jar mpiapps.BackToBack [reduce|allreduce|barrier] [bytes] [calls] [blocks]
 * </pre>
 * Without the agent: {@code Sharp4jMpi.of} sets sharp4j up on {@code MPI.COMM_WORLD}, and
 * {@code Comm.reduce} stays Open MPI's. The result of the last call of each library is checked (the
 * sum of the ranks' contributions, exact in float for these values).
 */
public final class BackToBack {
    private BackToBack() {
    }

    public static void main(String[] args) throws MPIException {
        String coll = Args.at(args, 0, "reduce");
        int bytes = Args.intAt(args, 1, 64);
        int calls = Args.intAt(args, 2, 50_000);
        int blocks = Args.intAt(args, 3, 60);
        boolean barrier = coll.equals("barrier");
        boolean reduce = !barrier && Args.isReduce(coll);
        if (bytes < 4 || bytes % 4 != 0 || calls < 1 || blocks < 1) {
            throw new IllegalArgumentException("bytes must be a positive multiple of 4 and calls and blocks positive, got "
                    + bytes + " " + calls + " " + blocks);
        }
        MPI.Init(args);
        Intracomm w = MPI.COMM_WORLD;
        int rank = w.getRank();
        int size = w.getSize();
        Communicator c = Sharp4jMpi.of(w);
        int n = bytes / 4;
        ByteBuffer s = MPI.newByteBuffer(bytes).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer r = MPI.newByteBuffer(bytes).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < n; i++) {
            s.putFloat(4 * i, rank + i);
        }
        // untimed: both libraries' paths compiled before the first block
        for (int i = 0; i < 4 * calls; i++) {
            call(c, w, true, barrier, reduce, s, r, n);
            call(c, w, false, barrier, reduce, s, r, n);
        }
        double[] ours = new double[blocks];
        double[] theirs = new double[blocks];
        for (int b = 0; b < blocks; b++) {
            c.barrier();
            long t0 = System.nanoTime();
            for (int i = 0; i < calls; i++) {
                call(c, w, true, barrier, reduce, s, r, n);
            }
            ours[b] = (System.nanoTime() - t0) / 1e3 / calls;
            if (!barrier) {
                check(r, n, size, rank, reduce, "sharp4j");
            }
            w.barrier();
            t0 = System.nanoTime();
            for (int i = 0; i < calls; i++) {
                call(c, w, false, barrier, reduce, s, r, n);
            }
            theirs[b] = (System.nanoTime() - t0) / 1e3 / calls;
            if (!barrier) {
                check(r, n, size, rank, reduce, "Open MPI");
            }
        }
        if (rank == 0) {
            StringBuilder out = new StringBuilder(String.format("# %s of %d B, %d ranks, blocks of %d calls back to back; us per call%n"
                    + "block  sharp4j  OpenMPI  ratio%n", coll, bytes, size, calls));
            double[] ratio = new double[blocks];
            for (int b = 0; b < blocks; b++) {
                ratio[b] = ours[b] / theirs[b];
                out.append(String.format("%5d %8.3f %8.3f %6.2f%n", b, ours[b], theirs[b], ratio[b]));
            }
            out.append(String.format("median %7.3f %8.3f %6.2f%n", median(ours), median(theirs), median(ratio)));
            System.out.print(out);
        }
        c.close();
        MPI.Finalize();
    }

    private static void call(Communicator c, Intracomm w, boolean sharp4j, boolean barrier, boolean reduce, ByteBuffer s, ByteBuffer r,
            int n) throws MPIException {
        if (barrier) {
            if (sharp4j) {
                c.barrier();
            } else {
                w.barrier();
            }
        } else if (sharp4j) {
            if (reduce) {
                c.reduce(s, 0, r, 0, n, DataType.FLOAT, Op.SUM, 0);
            } else {
                c.allreduce(s, 0, r, 0, n, DataType.FLOAT, Op.SUM);
            }
        } else if (reduce) {
            w.reduce(s, r, n, MPI.FLOAT, MPI.SUM, 0);
        } else {
            w.allReduce(s, r, n, MPI.FLOAT, MPI.SUM);
        }
    }

    private static void check(ByteBuffer r, int n, int size, int rank, boolean reduce, String who) {
        if (reduce && rank != 0) {
            return;
        }
        for (int i = 0; i < n; i++) {
            float want = size * (size - 1) / 2f + (float) size * i;
            float got = r.getFloat(4 * i);
            if (got != want) {
                throw new IllegalStateException(who + ": element " + i + " is " + got + ", expected " + want);
            }
            r.putFloat(4 * i, -1f); // the next block must write it again
        }
    }

    private static double median(double[] v) {
        double[] x = v.clone();
        java.util.Arrays.sort(x);
        return x.length % 2 == 1 ? x[x.length / 2] : (x[x.length / 2 - 1] + x[x.length / 2]) / 2;
    }
}
