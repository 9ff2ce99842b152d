package mpiapps;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import mpi.Intracomm;
import mpi.MPI;
import mpi.MPIException;

/**
 * A plain Open MPI Java program (it knows nothing of sharp4j): conjugate gradients for the 2-D
 * Poisson equation -u'' = f on an n x n interior grid (5-point stencil, zero boundary), rows
 * distributed in blocks over the ranks of MPI.COMM_WORLD, halo rows exchanged with sendRecv.
 *
 * <p>Per iteration: two {@code allReduce} of one double (p.Ap and r.r, MPI.SUM on arrays); every
 * 25 iterations an in-place {@code allReduce} (MPI.MAX) of the largest residual entry. Around the
 * timed solves: {@code barrier}s. At the end: int (MIN and MAX, the iteration count agrees), long
 * (SUM, the unknowns), float (MAX, in place) allReduces, a {@code reduce} of the true residual
 * b - Ax to rank 0 on arrays and a {@code reduce} of two checksums of x to rank 0 on direct
 * ByteBuffers.
 *
 * <p>Arguments: n (64), max iterations (5000), relative tolerance (1e-10), solves (1; with more
 * than one the first is a warm-up and the rest are timed). Rank 0 prints the results with full
 * precision ({@code Double.toString} and the bit pattern) and, on separate "timing" lines, the time
 * per iteration.
 */
public final class CgSolver {
    private CgSolver() {
    }

    public static void main(String[] args) throws MPIException {
        MPI.Init(args);
        Intracomm world = MPI.COMM_WORLD;
        int rank = world.getRank();
        int size = world.getSize();
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 64;
        int maxIter = args.length > 1 ? Integer.parseInt(args[1]) : 5000;
        double tol = args.length > 2 ? Double.parseDouble(args[2]) : 1e-10;
        int solves = args.length > 3 ? Integer.parseInt(args[3]) : 1;

        int base = n / size;
        int extra = n % size;
        int lo = rank * base + Math.min(rank, extra);
        int rows = base + (rank < extra ? 1 : 0);
        Problem pb = new Problem(world, n, lo, rows, rank, size);

        Result res = pb.solve(maxIter, tol); // the first solve: the result, and the JIT warm-up
        long timedIters = 0;
        long timedNanos = 0;
        long[] solveNanos = new long[Math.max(0, solves - 1)];
        for (int s = 1; s < solves; s++) {
            world.barrier();
            long t0 = System.nanoTime();
            Result again = pb.solve(maxIter, tol);
            world.barrier();
            solveNanos[s - 1] = System.nanoTime() - t0;
            timedNanos += solveNanos[s - 1];
            timedIters += again.iterations;
            if (again.iterations != res.iterations || Double.doubleToRawLongBits(again.rr) != Double.doubleToRawLongBits(res.rr)) {
                throw new IllegalStateException("solve " + s + " differs from the first: " + again.iterations + " " + again.rr + " vs " + res.iterations + " " + res.rr);
            }
        }

        // iteration counts agree on all ranks (int MIN and MAX)
        int[] it = {res.iterations};
        int[] itMin = new int[1];
        int[] itMax = new int[1];
        world.allReduce(it, itMin, 1, MPI.INT, MPI.MIN);
        world.allReduce(it, itMax, 1, MPI.INT, MPI.MAX);
        // unknowns (long SUM)
        long[] unknowns = {(long) rows * n};
        world.allReduce(unknowns, 1, MPI.LONG, MPI.SUM);
        // largest |x| in single precision (float MAX, in place)
        float[] xmax = {0f};
        for (double v : pb.x) {
            xmax[0] = Math.max(xmax[0], (float) Math.abs(v));
        }
        world.allReduce(xmax, 1, MPI.FLOAT, MPI.MAX);

        // true residual ||b - Ax||^2, reduced to rank 0 (arrays)
        double[] trueRes = {pb.trueResidualSquared()};
        double[] trueResSum = new double[1];
        world.reduce(trueRes, trueResSum, 1, MPI.DOUBLE, MPI.SUM, 0);

        // checksums of x: sum x and sum (global index + 1) * x, reduced to rank 0 on direct buffers
        ByteBuffer sums = ByteBuffer.allocateDirect(16).order(ByteOrder.nativeOrder());
        ByteBuffer sumsOut = ByteBuffer.allocateDirect(16).order(ByteOrder.nativeOrder());
        double s1 = 0;
        double s2 = 0;
        for (int k = 0; k < pb.x.length; k++) {
            s1 += pb.x[k];
            s2 += ((double) lo * n + k + 1) * pb.x[k];
        }
        sums.putDouble(0, s1).putDouble(8, s2);
        world.reduce(sums, sumsOut, 2, MPI.DOUBLE, MPI.SUM, 0);
        world.barrier();

        if (rank == 0) {
            System.out.println("ranks=" + size + " n=" + n + " tol=" + tol);
            System.out.println("iterations=" + res.iterations + " (min " + itMin[0] + ", max " + itMax[0] + ")");
            System.out.println("unknowns=" + unknowns[0]);
            System.out.println("residual=" + Math.sqrt(res.rr) + " bits=" + Long.toHexString(Double.doubleToRawLongBits(res.rr)));
            System.out.println("true_residual=" + Math.sqrt(trueResSum[0]) + " bits=" + Long.toHexString(Double.doubleToRawLongBits(trueResSum[0])));
            System.out.println("max_residual_entry=" + res.maxEntry + " bits=" + Long.toHexString(Double.doubleToRawLongBits(res.maxEntry)));
            System.out.println("checksum_x=" + sumsOut.getDouble(0) + " bits=" + Long.toHexString(Double.doubleToRawLongBits(sumsOut.getDouble(0))));
            System.out.println("checksum_ix=" + sumsOut.getDouble(8) + " bits=" + Long.toHexString(Double.doubleToRawLongBits(sumsOut.getDouble(8))));
            System.out.println("max_abs_x_float=" + xmax[0]);
            if (timedIters > 0) {
                // the mean includes every stall (a rank descheduled by other load); the median solve shows the usual pace
                java.util.Arrays.sort(solveNanos);
                System.out.printf("timing: solves=%d iterations=%d time_per_iteration_us=%.3f median_solve_time_per_iteration_us=%.3f%n",
                        solves - 1, timedIters, timedNanos / 1e3 / timedIters, solveNanos[solveNanos.length / 2] / 1e3 / res.iterations);
            }
        }
        MPI.Finalize();
    }

    static final class Result {
        int iterations;
        double rr;
        double maxEntry;
    }

    /** One rank's rows of the system and the CG vectors. */
    static final class Problem {
        final Intracomm comm;
        final int n;
        final int lo;
        final int rows;
        final int up;
        final int down;
        final double[] b;
        final double[] x;
        final double[] r;
        /** p with a ghost row above and below. */
        final double[] p;
        final double[] ap;
        final double[] sendUp;
        final double[] sendDown;
        final double[] recvUp;
        final double[] recvDown;
        final double[] one = new double[1];
        final double[] oneOut = new double[1];

        Problem(Intracomm comm, int n, int lo, int rows, int rank, int size) {
            this.comm = comm;
            this.n = n;
            this.lo = lo;
            this.rows = rows;
            this.up = rank == 0 ? MPI.PROC_NULL : rank - 1;
            this.down = rank == size - 1 ? MPI.PROC_NULL : rank + 1;
            int m = rows * n;
            b = new double[m];
            x = new double[m];
            r = new double[m];
            p = new double[m + 2 * n];
            ap = new double[m];
            sendUp = new double[n];
            sendDown = new double[n];
            recvUp = new double[n];
            recvDown = new double[n];
            double h2 = 1.0 / ((double) (n + 1) * (n + 1));
            for (int i = 0; i < rows; i++) {
                for (int j = 0; j < n; j++) {
                    int gi = lo + i;
                    b[i * n + j] = h2 * (1 + (gi * 7 + j * 3) % 5);
                }
            }
        }

        double dot(double[] a, int aoff, double[] c, int m) {
            double s = 0;
            for (int k = 0; k < m; k++) {
                s += a[aoff + k] * c[k];
            }
            return s;
        }

        double allSum(double local) throws MPIException {
            one[0] = local;
            comm.allReduce(one, oneOut, 1, MPI.DOUBLE, MPI.SUM);
            return oneOut[0];
        }

        /** Fills p's ghost rows from the neighbours (zero at the domain's edges). */
        void halo() throws MPIException {
            int m = rows * n;
            if (rows > 0) {
                System.arraycopy(p, n, sendUp, 0, n);
                System.arraycopy(p, m, sendDown, 0, n);
            }
            comm.sendRecv(sendUp, n, MPI.DOUBLE, up, 1, recvDown, n, MPI.DOUBLE, down, 1);
            comm.sendRecv(sendDown, n, MPI.DOUBLE, down, 2, recvUp, n, MPI.DOUBLE, up, 2);
            // Open MPI Java copies its (uninitialised) native receive buffer back into the array even when the source
            // is MPI.PROC_NULL: the domain's edges are zeroed after the call, not before.
            if (up == MPI.PROC_NULL) {
                java.util.Arrays.fill(recvUp, 0);
            }
            if (down == MPI.PROC_NULL) {
                java.util.Arrays.fill(recvDown, 0);
            }
            System.arraycopy(recvUp, 0, p, 0, n);
            System.arraycopy(recvDown, 0, p, m + n, n);
        }

        /** ap = A p on the interior rows (p has its ghost rows). */
        void apply(double[] src, double[] dst) {
            for (int i = 0; i < rows; i++) {
                int row = (i + 1) * n;
                for (int j = 0; j < n; j++) {
                    double c = src[row + j];
                    double left = j > 0 ? src[row + j - 1] : 0;
                    double right = j < n - 1 ? src[row + j + 1] : 0;
                    dst[i * n + j] = 4 * c - left - right - src[row - n + j] - src[row + n + j];
                }
            }
        }

        Result solve(int maxIter, double tol) throws MPIException {
            int m = rows * n;
            java.util.Arrays.fill(x, 0);
            System.arraycopy(b, 0, r, 0, m);
            java.util.Arrays.fill(p, 0);
            System.arraycopy(r, 0, p, n, m);
            double rr = allSum(dot(r, 0, r, m));
            double rr0 = rr;
            Result res = new Result();
            double[] maxEntry = new double[1];
            int it = 0;
            while (it < maxIter && rr > tol * tol * rr0) {
                it++;
                halo();
                apply(p, ap);
                double pap = allSum(dot(p, n, ap, m));
                double alpha = rr / pap;
                for (int k = 0; k < m; k++) {
                    x[k] += alpha * p[n + k];
                    r[k] -= alpha * ap[k];
                }
                double rrNew = allSum(dot(r, 0, r, m));
                double beta = rrNew / rr;
                for (int k = 0; k < m; k++) {
                    p[n + k] = r[k] + beta * p[n + k];
                }
                rr = rrNew;
                if (it % 25 == 0) {
                    double mx = 0;
                    for (int k = 0; k < m; k++) {
                        mx = Math.max(mx, Math.abs(r[k]));
                    }
                    maxEntry[0] = mx;
                    comm.allReduce(maxEntry, 1, MPI.DOUBLE, MPI.MAX); // in place
                }
            }
            res.iterations = it;
            res.rr = rr;
            res.maxEntry = maxEntry[0];
            return res;
        }

        /** ||b - A x||^2 over this rank's rows. */
        double trueResidualSquared() throws MPIException {
            int m = rows * n;
            java.util.Arrays.fill(p, 0);
            System.arraycopy(x, 0, p, n, m);
            halo();
            apply(p, ap);
            double s = 0;
            for (int k = 0; k < m; k++) {
                double d = b[k] - ap[k];
                s += d * d;
            }
            return s;
        }
    }
}
