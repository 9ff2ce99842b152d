package mpiapps;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.IntBuffer;
import java.util.Arrays;
import mpi.Datatype;
import mpi.Intercomm;
import mpi.Intracomm;
import mpi.MPI;
import mpi.MPIException;
import mpi.Op;
import mpi.Request;
import mpi.UserFunction;

/**
 * A plain Open MPI Java program (it knows nothing of sharp4j) that calls allReduce, reduce and
 * barrier in many ways and checks every result against the value computed from the ranks'
 * inputs: arrays, heap buffers with an array offset, direct ByteBuffers, direct Int/DoubleBuffers
 * (also big-endian ones, whose raw memory MPI reduces), mixed forms, in place, send == recv, every
 * op on int and long, a reduce to the last rank, a split communicator in reverse rank order; and
 * what must reach MPI: a user-defined op, a derived datatype, an inter-communicator, non-blocking
 * calls, MPI.COMM_SELF, count 0, MPI.SHORT, MPI.LXOR. Needs 2 ranks or more. Rank 0 prints
 * "ALL OK" at the end; any wrong value throws.
 */
public final class MpiCases {
    private static int rank;
    private static int size;

    private MpiCases() {
    }

    public static void main(String[] args) throws MPIException {
        MPI.Init(args);
        Intracomm w = MPI.COMM_WORLD;
        rank = w.getRank();
        size = w.getSize();
        if (size < 2) {
            throw new IllegalStateException("run with 2 ranks or more");
        }
        w.barrier();
        long tri = (long) size * (size + 1) / 2; // sum of rank + 1

        // arrays, MPI.DOUBLE, MPI.SUM
        double[] a = {rank + 1, 2.0 * (rank + 1), 3.0 * (rank + 1)};
        double[] out = new double[3];
        w.allReduce(a, out, 3, MPI.DOUBLE, MPI.SUM);
        check("array sum", out, tri, 2 * tri, 3 * tri);

        // direct ByteBuffers
        ByteBuffer bs = MPI.newByteBuffer(24);
        ByteBuffer br = MPI.newByteBuffer(24);
        for (int i = 0; i < 3; i++) {
            bs.putDouble(8 * i, (i + 1.0) * (rank + 1));
        }
        w.allReduce(bs, br, 3, MPI.DOUBLE, MPI.SUM);
        check("direct ByteBuffer sum", new double[] {br.getDouble(0), br.getDouble(8), br.getDouble(16)}, tri, 2 * tri, 3 * tri);

        // heap DoubleBuffers over arrays, data from arrayOffset() on
        double[] hs = new double[6];
        double[] hr = new double[6];
        Arrays.fill(hr, -1);
        for (int i = 0; i < 3; i++) {
            hs[2 + i] = (i + 1.0) * (rank + 1);
        }
        DoubleBuffer hsb = DoubleBuffer.wrap(hs, 2, 3).slice();
        DoubleBuffer hrb = DoubleBuffer.wrap(hr, 1, 3).slice();
        w.allReduce(hsb, hrb, 3, MPI.DOUBLE, MPI.SUM);
        check("heap DoubleBuffer sum", hr, -1, tri, 2 * tri, 3 * tri, -1, -1);

        // direct DoubleBuffers (native order views, as MPI.newDoubleBuffer makes them)
        DoubleBuffer ds = MPI.newDoubleBuffer(3);
        DoubleBuffer dr = MPI.newDoubleBuffer(3);
        for (int i = 0; i < 3; i++) {
            ds.put(i, (i + 1.0) * (rank + 1));
        }
        w.allReduce(ds, dr, 3, MPI.DOUBLE, MPI.SUM);
        check("direct DoubleBuffer sum", new double[] {dr.get(0), dr.get(1), dr.get(2)}, tri, 2 * tri, 3 * tri);

        // a big-endian direct IntBuffer: MPI reduces the raw memory in the machine's order
        IntBuffer be = ByteBuffer.allocateDirect(8).asIntBuffer();
        IntBuffer beOut = ByteBuffer.allocateDirect(8).asIntBuffer();
        be.put(0, rank + 1).put(1, 1000 * (rank + 1));
        w.allReduce(be, beOut, 2, MPI.INT, MPI.SUM);
        int raw0 = 0;
        int raw1 = 0;
        for (int r = 0; r < size; r++) {
            raw0 += order(r + 1);
            raw1 += order(1000 * (r + 1));
        }
        check("big-endian direct IntBuffer sum", new double[] {beOut.get(0), beOut.get(1)}, order(raw0), order(raw1));

        // mixed: array in, direct ByteBuffer out
        ByteBuffer mixed = ByteBuffer.allocateDirect(24).order(ByteOrder.nativeOrder());
        w.allReduce(a, mixed, 3, MPI.DOUBLE, MPI.SUM);
        check("array to direct ByteBuffer", new double[] {mixed.getDouble(0), mixed.getDouble(8), mixed.getDouble(16)}, tri, 2 * tri,
                3 * tri);

        // send == recv
        double[] same = {rank + 1};
        w.allReduce(same, same, 1, MPI.DOUBLE, MPI.SUM);
        check("send == recv", same, tri);

        // a null send buffer: Open MPI Java's MPI_IN_PLACE (allReduce everywhere; reduce: in place at the root,
        // the receive buffer is the send buffer elsewhere)
        int[] nullSend = {rank + 1, 2 * (rank + 1)};
        w.allReduce(null, nullSend, 2, MPI.INT, MPI.SUM);
        check("null send buffer allReduce", nullSend, tri, 2 * tri);
        double[] nullRed = {rank + 1};
        w.reduce(null, nullRed, 1, MPI.DOUBLE, MPI.MAX, size - 1);
        check("null send buffer reduce", nullRed, rank == size - 1 ? size : rank + 1);

        // every op on ints
        int[] iv = {rank + 1, rank % 2, 1 << rank};
        int[] io = new int[3];
        w.allReduce(iv, io, 3, MPI.INT, MPI.BAND);
        int band0 = -1;
        int band1 = -1;
        int bor2 = 0;
        int bxor0 = 0;
        int prod0 = 1;
        for (int r = 0; r < size; r++) {
            band0 &= r + 1;
            band1 &= r % 2;
            bor2 |= 1 << r;
            bxor0 ^= r + 1;
            prod0 *= r + 1;
        }
        check("int BAND", io, band0, band1, size == 1 ? 1 : 0);
        w.allReduce(iv, io, 3, MPI.INT, MPI.BOR);
        check("int BOR", io, orAll(), 1, bor2);
        w.allReduce(iv, io, 3, MPI.INT, MPI.BXOR);
        check("int BXOR", io, bxor0, (size / 2) % 2, bor2);
        w.allReduce(iv, io, 3, MPI.INT, MPI.LAND);
        check("int LAND", io, 1, 0, 1);
        w.allReduce(iv, io, 3, MPI.INT, MPI.LOR);
        check("int LOR", io, 1, 1, 1);
        w.allReduce(iv, io, 3, MPI.INT, MPI.MIN);
        check("int MIN", io, 1, 0, 1);
        w.allReduce(iv, io, 3, MPI.INT, MPI.MAX);
        check("int MAX", io, size, size > 1 ? 1 : 0, 1 << (size - 1));
        w.allReduce(iv, io, 3, MPI.INT, MPI.PROD);
        check("int PROD", io, prod0, 0, 1 << (size * (size - 1) / 2));

        // longs
        long[] lv = {rank + 1L, (long) (rank + 1) << 40, 3L << (rank * 2)};
        long[] lo = new long[3];
        w.allReduce(lv, lo, 3, MPI.LONG, MPI.SUM);
        check("long SUM", lo, tri, tri << 40, sumShifts());
        w.allReduce(lv, lo, 3, MPI.LONG, MPI.PROD);
        long lprod = 1;
        for (int r = 0; r < size; r++) {
            lprod *= r + 1;
        }
        check("long PROD", new long[] {lo[0]}, lprod);
        w.allReduce(lv, lo, 3, MPI.LONG, MPI.MAX);
        check("long MAX", lo, size, (long) size << 40, 3L << ((size - 1) * 2));
        w.allReduce(lv, lo, 3, MPI.LONG, MPI.BXOR);
        long lx = 0;
        for (int r = 0; r < size; r++) {
            lx ^= 3L << (r * 2);
        }
        check("long BXOR", new long[] {lo[2]}, lx);

        // floats, in place
        float[] fv = {0.5f * (rank + 1)};
        w.allReduce(fv, 1, MPI.FLOAT, MPI.SUM);
        check("float SUM in place", new double[] {fv[0]}, 0.5 * tri);

        // reduce to the last rank, recv null elsewhere
        int last = size - 1;
        double[] red = rank == last ? new double[3] : null;
        w.reduce(a, red, 3, MPI.DOUBLE, MPI.SUM, last);
        if (rank == last) {
            check("reduce to last", red, tri, 2 * tri, 3 * tri);
        }
        // in-place reduce at root 0 (the other ranks' buffers are their send buffers, left unchanged)
        int[] ip = {rank + 1, 7};
        w.reduce(ip, 2, MPI.INT, MPI.MAX, 0);
        if (rank == 0) {
            check("in-place reduce root", ip, size, 7);
        } else {
            check("in-place reduce non-root unchanged", ip, rank + 1, 7);
        }
        // reduce on direct ByteBuffers
        ByteBuffer rb = MPI.newByteBuffer(8);
        rb.putLong(0, rank + 1L);
        ByteBuffer rbo = MPI.newByteBuffer(8);
        w.reduce(rb, rbo, 1, MPI.LONG, MPI.SUM, 0);
        if (rank == 0) {
            check("direct reduce", new long[] {rbo.getLong(0)}, tri);
        }

        // a split communicator with the ranks reversed, then freed
        Intracomm rev = w.split(0, size - rank);
        int rr = rev.getRank();
        if (rr != size - 1 - rank) {
            throw new IllegalStateException("split: rank " + rr);
        }
        int[] rs = {rr * 10 + rank};
        int[] rso = new int[1];
        rev.allReduce(rs, rso, 1, MPI.INT, MPI.SUM);
        check("reversed comm sum", rso, 10 * (size * (size - 1) / 2) + size * (size - 1) / 2);
        int[] rro = new int[1];
        rev.reduce(new int[] {rank}, rro, 1, MPI.INT, MPI.MIN, 0); // root: rev rank 0 = world rank size-1
        if (rr == 0) {
            check("reversed comm reduce to its rank 0", rro, 0);
        }
        rev.barrier();
        rev.free();
        say("routed-eligible calls");

        // ---- what must reach MPI ----
        // a user-defined op (Open MPI hands it arrays of the base type): element-wise sum
        Op plus = new Op(new UserFunction() {
            @Override
            public void call(Object in, Object inOut, int count, Datatype type) {
                if (in instanceof int[]) {
                    int[] x = (int[]) in;
                    int[] y = (int[]) inOut;
                    for (int i = 0; i < y.length; i++) {
                        y[i] += x[i];
                    }
                } else {
                    double[] x = (double[]) in;
                    double[] y = (double[]) inOut;
                    for (int i = 0; i < y.length; i++) {
                        y[i] += x[i];
                    }
                }
            }
        }, true);
        int[] uv = {(rank + 1) * (rank + 1)};
        int[] uo = new int[1];
        w.allReduce(uv, uo, 1, MPI.INT, plus);
        long squares = 0;
        for (int r = 1; r <= size; r++) {
            squares += (long) r * r;
        }
        check("user-defined op allReduce", uo, squares);
        // (no reduce with a user-defined op: Open MPI 4.1's Java reduce calls the op on a null mpi.Op)

        // a derived datatype, pairs of doubles (Open MPI reduces derived datatypes with user-defined ops only)
        Datatype pair = Datatype.createContiguous(2, MPI.DOUBLE);
        pair.commit();
        double[] pv = {rank + 1, -(rank + 1), 10 * (rank + 1), 0};
        double[] po = new double[4];
        w.allReduce(pv, po, 2, pair, plus);
        check("derived datatype allReduce", po, tri, -tri, 10 * tri, 0);
        pair.free();
        plus.free();

        // an inter-communicator between the even and the odd ranks
        int colour = rank % 2;
        Intracomm half = w.split(colour, rank);
        Intercomm inter = w.createIntercomm(half, 0, colour == 0 ? 1 : 0, 77);
        int[] iv2 = {rank + 1};
        int[] io2 = new int[1];
        inter.allReduce(iv2, io2, 1, MPI.INT, MPI.SUM); // each group gets the other group's sum
        long other = 0;
        for (int r = 0; r < size; r++) {
            if (r % 2 != colour) {
                other += r + 1;
            }
        }
        check("inter-communicator allReduce", io2, other);
        inter.barrier();
        inter.free();
        half.free();

        // non-blocking calls
        DoubleBuffer ns = MPI.newDoubleBuffer(1).put(0, rank + 1);
        DoubleBuffer nr = MPI.newDoubleBuffer(1);
        Request q = w.iAllReduce(ns, nr, 1, MPI.DOUBLE, MPI.SUM);
        q.waitFor();
        q.free();
        check("iAllReduce", new double[] {nr.get(0)}, tri);
        DoubleBuffer nro = MPI.newDoubleBuffer(1);
        q = w.iReduce(ns, nro, 1, MPI.DOUBLE, MPI.MAX, 0);
        q.waitFor();
        q.free();
        if (rank == 0) {
            check("iReduce", new double[] {nro.get(0)}, size);
        }
        q = w.iBarrier();
        q.waitFor();
        q.free();

        // MPI.COMM_SELF, count 0, a type and an op sharp4j does not reduce
        double[] self = {rank + 1};
        double[] selfOut = new double[1];
        MPI.COMM_SELF.allReduce(self, selfOut, 1, MPI.DOUBLE, MPI.SUM);
        check("COMM_SELF", selfOut, rank + 1);
        w.allReduce(new double[1], new double[1], 0, MPI.DOUBLE, MPI.SUM);
        short[] sv = {(short) (rank + 1)};
        short[] so = new short[1];
        w.allReduce(sv, so, 1, MPI.SHORT, MPI.SUM);
        check("short SUM", new double[] {so[0]}, tri);
        int[] xv = {rank % 2};
        int[] xo = new int[1];
        w.allReduce(xv, xo, 1, MPI.INT, MPI.LXOR);
        check("int LXOR", xo, (size / 2) % 2);
        say("pass-through calls");

        w.barrier();
        if (rank == 0) {
            System.out.println("ALL OK");
        }
        MPI.Finalize();
    }

    /** The int MPI reduces for a big-endian view's value v on a little-endian machine (identity on big-endian ones). */
    private static int order(int v) {
        return ByteOrder.nativeOrder() == ByteOrder.BIG_ENDIAN ? v : Integer.reverseBytes(v);
    }

    private static int orAll() {
        int o = 0;
        for (int r = 0; r < size; r++) {
            o |= r + 1;
        }
        return o;
    }

    private static long sumShifts() {
        long s = 0;
        for (int r = 0; r < size; r++) {
            s += 3L << (r * 2);
        }
        return s;
    }

    private static void say(String what) {
        if (rank == 0) {
            System.out.println("ok: " + what);
        }
    }

    private static void check(String what, double[] got, double... want) {
        if (got.length != want.length) {
            throw new IllegalStateException(what + ": length " + got.length);
        }
        for (int i = 0; i < want.length; i++) {
            if (Double.doubleToLongBits(got[i]) != Double.doubleToLongBits(want[i])) {
                throw new IllegalStateException("rank " + rank + ": " + what + ": got " + Arrays.toString(got) + ", want "
                        + Arrays.toString(want));
            }
        }
    }

    private static void check(String what, int[] got, long... want) {
        long[] g = new long[got.length];
        for (int i = 0; i < got.length; i++) {
            g[i] = got[i];
        }
        check(what, g, want);
    }

    private static void check(String what, long[] got, long... want) {
        if (!Arrays.equals(got, want)) {
            throw new IllegalStateException("rank " + rank + ": " + what + ": got " + Arrays.toString(got) + ", want " + Arrays.toString(want));
        }
    }
}
