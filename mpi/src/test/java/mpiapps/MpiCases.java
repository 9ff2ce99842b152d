package mpiapps;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
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

        directForms(w, tri);

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
        Op plus = plusOp();
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
        // a second Op object: Open MPI 4.1's Java bindings keep the JNI local reference of an Op from its first use
        // (Op_getHandle -> ompi_op_set_java_callback) and call through it on later uses, when it may name another
        // object by then ("this.datatype is null" in mpi.Op.call): a user-defined Op object is used once here
        Op plus2 = plusOp();
        w.allReduce(pv, po, 2, pair, plus2);
        check("derived datatype allReduce", po, tri, -tri, 10 * tri, 0);
        pair.free();
        plus.free();
        plus2.free();

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

    /**
     * Direct buffers as programs pass them, each call made twice with new values (the router keeps
     * a duplicate of a buffer whose limit or order it cannot use: a stale one would show here):
     * OSU-style (LITTLE_ENDIAN set explicitly, send flipped, receive limit 0), a position MPI
     * ignores, slices (data from the slice's start), typed views of a buffer with a position, of a
     * slice and sliced themselves, big-endian byte buffers (MPI reduces their raw memory), in place,
     * and reduce. The element after the count must stay untouched.
     */
    private static void directForms(Intracomm w, long tri) throws MPIException {
        for (int round = 1; round <= 2; round++) {
            int k = 10 * round; // values rank + 1 + k, sums tri + size * k
            long sum = tri + (long) size * k;
            // OSU style: MPI.newByteBuffer, order set to LITTLE_ENDIAN explicitly, send flipped, recv limit 0
            ByteBuffer s = osu(0).order(ByteOrder.LITTLE_ENDIAN);
            ByteBuffer r = osu(1).order(ByteOrder.LITTLE_ENDIAN);
            s.clear();
            for (int i = 0; i < 3; i++) {
                s.putFloat((i + 1) * (rank + 1 + k));
            }
            s.flip();
            r.clear().putFloat(12, -7f).flip(); // limit 0: MPI writes the raw memory anyway
            w.allReduce(s, r, 3, MPI.FLOAT, MPI.SUM);
            check("OSU-style direct ByteBuffer allReduce", new double[] {abs(r, 0), abs(r, 4), abs(r, 8), abs(r, 12)},
                    sum, 2 * sum, 3 * sum, -7);
            r.clear().putFloat(0, -1f).putFloat(12, -7f).flip();
            w.reduce(s, r, 3, MPI.FLOAT, MPI.SUM, size - 1);
            if (rank == size - 1) {
                check("OSU-style direct ByteBuffer reduce", new double[] {abs(r, 0), abs(r, 4), abs(r, 8), abs(r, 12)}, sum, 2 * sum,
                        3 * sum, -7);
            } else {
                check("OSU-style reduce leaves a non-root's receive buffer", new double[] {abs(r, 0)}, -1);
            }
            // positions are ignored; slices start where they start
            ByteBuffer base = MPI.newByteBuffer(64);
            ByteBuffer baseOut = MPI.newByteBuffer(64);
            ByteBuffer sl = base.position(8).slice().order(ByteOrder.nativeOrder());
            ByteBuffer slOut = baseOut.position(16).slice().order(ByteOrder.nativeOrder());
            sl.putLong(0, rank + 1 + k).putLong(8, 2L * (rank + 1 + k));
            slOut.putLong(16, 99);
            sl.position(8);
            slOut.position(4).limit(4);
            w.allReduce(sl, slOut, 2, MPI.LONG, MPI.SUM);
            ByteBuffer so = slOut.duplicate().clear().order(ByteOrder.nativeOrder());
            check("sliced direct ByteBuffers with positions", new long[] {so.getLong(0), so.getLong(8), so.getLong(16), baseOut.getLong(8)},
                    sum, 2 * sum, 99, 0);
            // typed views: of a buffer with a position, of a slice, sliced themselves, with odd positions and limits
            ByteBuffer vb = MPI.newByteBuffer(64);
            IntBuffer iv = vb.position(4).slice().order(ByteOrder.nativeOrder()).asIntBuffer(); // starts at byte 4
            IntBuffer ivOut = MPI.newByteBuffer(64).asIntBuffer().position(2).slice(); // native view from element 2
            iv.put(0, rank + 1 + k).put(1, 3 * (rank + 1 + k)).put(2, 1234);
            ivOut.put(2, 55);
            iv.position(1).limit(2);
            ivOut.limit(0);
            w.allReduce(iv, ivOut, 2, MPI.INT, MPI.SUM);
            check("typed direct views (slices, position and limit ignored)", new long[] {absInt(ivOut, 0), absInt(ivOut, 1),
                    absInt(ivOut, 2)}, sum, 3 * sum, 55);
            DoubleBuffer dv = MPI.newDoubleBuffer(8);
            dv.put(3, rank + 1 + k).put(4, -(rank + 1 + k));
            DoubleBuffer dvs = dv.position(3).slice();
            DoubleBuffer dvOut = MPI.newDoubleBuffer(8);
            dvOut.put(2, 5);
            dvOut.limit(1);
            w.allReduce(dvs, dvOut, 2, MPI.DOUBLE, MPI.SUM);
            dvOut.clear();
            check("sliced DoubleBuffer view", new double[] {dvOut.get(0), dvOut.get(1), dvOut.get(2)}, sum, -sum, 5);
            // in place on a native LongBuffer view with limit 0, and a reduce on FloatBuffer views
            LongBuffer lb = MPI.newLongBuffer(4);
            lb.put(0, rank + 1 + k).put(1, 7).limit(0);
            w.allReduce(lb, 2, MPI.LONG, MPI.MAX);
            check("in-place LongBuffer view", new long[] {absLong(lb, 0), absLong(lb, 1)}, size + k, 7);
            FloatBuffer fs = MPI.newFloatBuffer(4).put(0, rank + 1 + k);
            FloatBuffer fo = MPI.newFloatBuffer(4).put(1, -3f);
            fo.limit(0);
            w.reduce(fs, fo, 1, MPI.FLOAT, MPI.SUM, 0);
            fo.clear();
            if (rank == 0) {
                check("reduce on FloatBuffer views", new double[] {fo.get(0), fo.get(1)}, sum, -3);
            }
            // big-endian direct ByteBuffers (allocateDirect's default): MPI reduces the raw memory in the machine's order
            ByteBuffer be = ByteBuffer.allocateDirect(16);
            ByteBuffer beOut = ByteBuffer.allocateDirect(16);
            be.putInt(0, rank + 1 + k).putInt(4, 1 << 20);
            beOut.putInt(8, 77).limit(0);
            w.allReduce(be, beOut, 2, MPI.INT, MPI.SUM);
            beOut.clear();
            int raw0 = 0;
            int raw1 = 0;
            for (int q = 0; q < size; q++) {
                raw0 += order(q + 1 + k);
                raw1 += order(1 << 20);
            }
            check("big-endian direct ByteBuffer (raw memory)", new long[] {beOut.getInt(0), beOut.getInt(4), beOut.getInt(8)},
                    order(raw0), order(raw1), 77);
            // the same big-endian ByteBuffer object again after its order was set to native: the same memory, as MPI
            be.order(ByteOrder.nativeOrder()).putInt(0, rank + 1).putInt(4, 0);
            beOut.clear();
            w.allReduce(be, beOut, 2, MPI.INT, MPI.SUM);
            beOut.order(ByteOrder.nativeOrder());
            check("a buffer whose order was changed", new long[] {beOut.getInt(0), beOut.getInt(4), beOut.getInt(8)}, tri, 0, order(77));
        }
        say("direct buffer forms");
    }

    /** Direct buffers that live across rounds, so the second round reuses the router's duplicates of them. */
    private static final ByteBuffer[] OSU = new ByteBuffer[2];

    private static ByteBuffer osu(int i) throws MPIException {
        if (OSU[i] == null) {
            OSU[i] = MPI.newByteBuffer(32);
        }
        return OSU[i];
    }

    private static double abs(ByteBuffer b, int at) {
        return b.duplicate().clear().order(b.order()).getFloat(at);
    }

    private static int absInt(IntBuffer b, int at) {
        return b.duplicate().clear().get(at);
    }

    private static long absLong(LongBuffer b, int at) {
        return b.duplicate().clear().get(at);
    }

    /** A user-defined op: element-wise sum of ints or doubles (Open MPI hands it arrays of the base type). */
    private static Op plusOp() throws MPIException {
        return new Op(new UserFunction() {
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
