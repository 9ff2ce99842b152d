package org.sharp4j.coll;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.ReadOnlyBufferException;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.Reference;

/**
 * The kernels in every form (native, raw addresses, VarHandles, staged through raw addresses on JDK 17-21
 * or through segments on JDK 22+) against a scalar reference written
 * independently here: every type x op, counts around the loop's edges, unaligned offsets, in place,
 * and the values that tell MIN/MAX and the logical ops apart (NaN, -0.0, 0, negative numbers).
 * Results are compared bit for bit, except that any NaN equals any NaN: Java leaves the payload of
 * a NaN result open, and the interpreter and C2's MIN/MAX intrinsics may differ in it.
 */
class ReductionsTest {
    interface Kernel {
        void run(DataType t, Op op, ByteBuffer d, int dOff, ByteBuffer a, int aOff, ByteBuffer b, int bOff, int n);
    }

    static final int[] COUNTS = {0, 1, 2, 3, 7, 8, 17, 64, 1000, 4099};
    static final int[] OFFSETS = {0, 8, 3, 128};

    /**
     * COUNTS and, for {@code t}, the counts around the staged forms' edges: the scalar thresholds
     * (where combine switches form) and one, two and a half blocks (a full last block, a short one).
     */
    static int[] counts(DataType t) {
        int blk = Staging.BLOCK_BYTES / t.size;
        int min = Staging.MIN_BYTES / t.size;
        int min8 = Staging.MIN_BYTES_8 / t.size;
        int[] edges = {min - 1, min, min + 1, blk - 1, blk, blk + 1, 2 * blk, 2 * blk + blk / 2 + 1, min8 - 1, min8};
        int[] all = java.util.Arrays.copyOf(COUNTS, COUNTS.length + edges.length);
        System.arraycopy(edges, 0, all, COUNTS.length, edges.length);
        return all;
    }

    @Test
    void rawFormMatchesTheReferenceForEveryTypeAndOp() {
        assumeTrue(RawMemory.Holder.U != null, "sun.misc.Unsafe unavailable: the raw form is off");
        check(Reductions::combineRaw, true);
    }

    @Test
    void varHandleFormMatchesTheReferenceOnDirectAndHeapBuffers() {
        check(Reductions::combineVarHandle, true);
        check(Reductions::combineVarHandle, false);
    }

    @Test
    void stagedRawFormMatchesTheReferenceForEveryTypeAndOp() {
        assumeTrue(RawMemory.Holder.U != null, "sun.misc.Unsafe unavailable: the raw form is off");
        Staging s = new Staging();
        check((t, op, d, dOff, a, aOff, b, bOff, n) -> Reductions.combineStaged(t, op, d, dOff, null, 0, a, aOff, b, bOff, n, s), true);
    }

    /** The native kernels (where this build made and loaded them; NativeKernelsTest requires that where gcc is). */
    @Test
    void nativeFormMatchesTheReferenceForEveryTypeAndOp() {
        assumeTrue(NativeKernels.AVAILABLE, () -> "native kernels not loaded: " + NativeKernels.whyNot);
        check((t, op, d, dOff, a, aOff, b, bOff, n) -> Reductions.combineNative(t, op, d, dOff, null, 0, a, aOff, b, bOff, n), true);
    }

    @Test
    void stagedSegmentFormMatchesTheReferenceOnDirectAndHeapBuffers() {
        assumeTrue(Segments.AVAILABLE, "java.lang.foreign needs JDK 22+");
        Staging s = new Staging();
        Kernel k = (t, op, d, dOff, a, aOff, b, bOff, n) -> Reductions.combineSegments(t, op, d, dOff, null, 0, a, aOff, b, bOff, n, s);
        check(k, true);
        check(k, false);
    }

    @Test
    void segmentsAreOnFromJdk22AndStagingCanBeTurnedOff() {
        assertEquals(Runtime.version().feature() >= 22, Segments.AVAILABLE, "java.lang.foreign's handles");
        assertTrue(Staging.decide("auto"));
        assertTrue(Staging.decide(" Auto "));
        assertFalse(Staging.decide("scalar"));
        assertFalse(Staging.decide("raw"));
        assertFalse(Staging.decide("varhandle"));
        assertTrue(Staging.decide("java"));
        assertEquals(RawMemory.decide("auto", 17), RawMemory.decide("java", 17));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Staging.decide("simd"));
        assertTrue(e.getMessage().contains("sharp4j.kernels") && e.getMessage().contains("simd"), e.getMessage());
        assertFalse(RawMemory.decide("scalar", 25));
        if (System.getProperty("sharp4j.kernels") == null) {
            assertTrue(Staging.ENABLED);
            assertEquals(Runtime.version().feature() >= 22, Staging.SEGMENTS);
        }
    }

    @Test
    void everyThreadHasItsOwnScratch() throws Exception {
        Staging mine = Staging.mine();
        assertSame(mine, Staging.mine());
        Staging[] other = new Staging[1];
        Thread th = new Thread(() -> other[0] = Staging.mine());
        th.start();
        th.join();
        assertNotNull(other[0]);
        assertNotSame(mine, other[0], "ranks as threads of one JVM must not share the staging arrays");
        assertNotSame(mine.floats1, other[0].floats1);
    }

    @Test
    void stagedFormsCheckBoundsAndWritabilityBeforeWriting() {
        for (boolean segments : new boolean[] {false, true}) {
            if (segments ? !Segments.AVAILABLE : RawMemory.Holder.U == null) {
                continue;
            }
            Staging st = new Staging();
            Kernel k = segments
                    ? (t, op, d, dOff, a, aOff, b, bOff, n) -> Reductions.combineSegments(t, op, d, dOff, null, 0, a, aOff, b, bOff, n, st)
                    : (t, op, d, dOff, a, aOff, b, bOff, n) -> Reductions.combineStaged(t, op, d, dOff, null, 0, a, aOff, b, bOff, n, st);
            int n = Staging.BLOCK_BYTES / 8 + 3; // more than a block: a refused call must not have written the first
            ByteBuffer d = alloc(n * 8, true);
            ByteBuffer s = alloc(n * 8, true);
            for (int i = 0; i < n; i++) {
                d.putDouble(i * 8, 1.0);
                s.putDouble(i * 8, 2.0);
            }
            String f = segments ? "segments" : "raw";
            assertThrows(IndexOutOfBoundsException.class, () -> k.run(DataType.DOUBLE, Op.SUM, d, 0, d, 0, s, 8, n), f);
            assertThrows(IndexOutOfBoundsException.class, () -> k.run(DataType.DOUBLE, Op.SUM, d, 8, d, 8, s, 8, n), f);
            assertThrows(IndexOutOfBoundsException.class, () -> k.run(DataType.DOUBLE, Op.SUM, d, -8, d, -8, s, 0, 1), f);
            ByteBuffer ro = d.asReadOnlyBuffer();
            assertThrows(ReadOnlyBufferException.class, () -> k.run(DataType.DOUBLE, Op.SUM, ro, 0, d, 0, s, 0, n), f);
            assertThrows(IllegalArgumentException.class, () -> k.run(DataType.DOUBLE, Op.BXOR, d, 0, d, 0, s, 0, n), f);
            for (int i = 0; i < n; i++) {
                assertEquals(1.0, d.getDouble(i * 8), f + ": nothing written by a refused call, element " + i);
            }
            k.run(DataType.DOUBLE, Op.SUM, d, 0, d, 0, s, 0, n);
            assertEquals(3.0, d.getDouble(0), f);
            assertEquals(3.0, d.getDouble((n - 1) * 8), f);
        }
    }

    /**
     * A segment of a buffer starts at its position: offsets are still absolute indices, as in the
     * VarHandle form, whatever the buffers' positions (past an offset, combine takes another form).
     * The same buffers and scratch across positions: a segment cached for one position must not
     * serve another.
     */
    @Test
    void buffersWithPositionsAreReadAtAbsoluteOffsets() {
        for (boolean direct : new boolean[] {true, false}) {
            int n = Staging.BLOCK_BYTES / 4 + 5;
            int off = 12;
            ByteBuffer a = alloc(off + n * 4, direct);
            ByteBuffer b = alloc(off + n * 4, direct);
            ByteBuffer d = alloc(off + n * 4, direct);
            ByteBuffer d2 = alloc(off + n * 4, direct);
            Staging st = new Staging();
            for (int pos : new int[] {0, 4, off, 0, off + 4, 8}) {
                a.clear();
                b.clear();
                for (int i = 0; i < n; i++) {
                    a.putInt(off + i * 4, i + pos);
                    b.putInt(off + i * 4, 1000 * i);
                }
                a.position(pos);
                b.position(pos);
                d.position(pos);
                Reductions.combine(DataType.INT, Op.SUM, d, off, a, off, b, off, n);
                for (int i = 0; i < n; i++) {
                    assertEquals(1001 * i + pos, d.getInt(off + i * 4), "position " + pos + " direct " + direct + " element " + i);
                }
                assertEquals(pos, d.position(), "the position is left alone");
                if (Segments.AVAILABLE && pos <= off) {
                    d2.position(pos);
                    Reductions.combineSegments(DataType.INT, Op.SUM, d2, off, null, 0, a, off, b, off, n, st);
                    for (int i = 0; i < n; i++) {
                        assertEquals(1001 * i + pos, d2.getInt(off + i * 4), "segments, position " + pos + " direct " + direct + " element " + i);
                    }
                }
            }
        }
    }

    /**
     * The two-destination fold (the tile owner's result area and its own output): both get the
     * reference's bits in every form, also when the second destination is the left operand itself
     * (an in-place call), and nothing outside the destinations is written.
     */
    @Test
    void twoDestinationsGetTheSameBitsInEveryForm() {
        Staging st = new Staging();
        for (String form : new String[] {"public", "staged", "segments", "native"}) {
            if (form.equals("staged") && RawMemory.Holder.U == null || form.equals("segments") && !Segments.AVAILABLE
                    || form.equals("native") && !NativeKernels.AVAILABLE) {
                continue;
            }
            for (boolean direct : form.equals("staged") || form.equals("native") ? new boolean[] {true} : new boolean[] {true, false}) {
                SplittableRandom rnd = new SplittableRandom(7);
                for (DataType t : DataType.values()) {
                    for (Op op : Op.values()) {
                        if (!op.validFor(t)) {
                            continue;
                        }
                        for (int n : counts(t)) {
                            int off = 8;
                            int bytes = off + n * t.size + 16;
                            ByteBuffer a = alloc(bytes, direct);
                            ByteBuffer b = alloc(bytes, direct);
                            ByteBuffer d = alloc(bytes, direct);
                            ByteBuffer d2 = alloc(bytes + 64, direct);
                            fill(a, t, rnd);
                            fill(b, t, rnd);
                            fill(d, t, rnd);
                            fill(d2, t, rnd);
                            byte[] want = reference(t, op, d, off, a, b, n);
                            byte[] before2 = bytes(d2);
                            two(form, st, t, op, d, off, d2, off + 64, a, off, b, off, n);
                            String what = form + " " + t + " " + op + " n=" + n + " direct=" + direct;
                            assertArrayEquals(canon(want, t, off, n), canon(bytes(d), t, off, n), what + ": dst");
                            byte[] got2 = bytes(d2);
                            int len = n * t.size;
                            assertArrayEquals(java.util.Arrays.copyOfRange(canon(want, t, off, n), off, off + len),
                                    java.util.Arrays.copyOfRange(canon(got2, t, 64 + off, n), 64 + off, 64 + off + len), what + ": dst2");
                            for (int i = 0; i < got2.length; i++) {
                                if (i < 64 + off || i >= 64 + off + len) {
                                    assertEquals(before2[i], got2[i], what + ": dst2 byte " + i + " outside its range written");
                                }
                            }
                            // in place: dst2 is a itself (the owner's own tile of its own buffer)
                            ByteBuffer a2 = copyOf(a, direct);
                            byte[] wantInPlace = reference(t, op, a, off, a, b, n);
                            two(form, st, t, op, d, off, a2, off, a2, off, b, off, n);
                            assertArrayEquals(canon(wantInPlace, t, off, n), canon(bytes(a2), t, off, n), what + ": dst2 = a");
                            assertArrayEquals(java.util.Arrays.copyOfRange(canon(wantInPlace, t, off, n), off, off + len),
                                    java.util.Arrays.copyOfRange(canon(bytes(d), t, off, n), off, off + len), what + ": dst with dst2 = a");
                            // in place on dst: dst is a, dst2 a buffer of its own (the native one-pass form for d == a)
                            ByteBuffer a3 = copyOf(a, direct);
                            ByteBuffer d3 = alloc(bytes, direct);
                            two(form, st, t, op, a3, off, d3, off, a3, off, b, off, n);
                            assertArrayEquals(canon(wantInPlace, t, off, n), canon(bytes(a3), t, off, n), what + ": dst = a");
                            assertArrayEquals(java.util.Arrays.copyOfRange(canon(wantInPlace, t, off, n), off, off + len),
                                    java.util.Arrays.copyOfRange(canon(bytes(d3), t, off, n), off, off + len), what + ": dst2 with dst = a");
                        }
                    }
                }
            }
        }
    }

    /**
     * The fold over k inputs (combineAll): the bits of k-1 pairwise combines left to right, staged
     * in one pass (direct buffers on JDK 17-21, any on 22+) or pairwise (heap buffers on 17-21),
     * with and without a second destination, and in place on x[0].
     */
    @Test
    void foldOverSeveralInputsGivesThePairwiseBits() {
        SplittableRandom rnd = new SplittableRandom(11);
        for (boolean direct : new boolean[] {true, false}) {
            for (DataType t : DataType.values()) {
                for (Op op : Op.values()) {
                    if (!op.validFor(t)) {
                        continue;
                    }
                    for (int n : counts(t)) {
                        for (int k = 2; k <= 5; k++) {
                            int off = 8;
                            int bytes = off + n * t.size + 16;
                            ByteBuffer[] x = new ByteBuffer[k];
                            int[] xo = new int[k];
                            for (int j = 0; j < k; j++) {
                                x[j] = alloc(bytes + 8 * j, direct);
                                fill(x[j], t, rnd);
                                xo[j] = off + 8 * j; // each input at its own offset
                            }
                            // the reference: ((x0 op x1) op x2) ..., element by element, in a heap copy of x0's bytes
                            ByteBuffer acc = alloc(bytes, false);
                            for (int i = 0; i < n * t.size; i++) {
                                acc.put(off + i, x[0].get(xo[0] + i));
                            }
                            for (int j = 1; j < k; j++) {
                                ByteBuffer xj = alloc(bytes, false);
                                for (int i = 0; i < n * t.size; i++) {
                                    xj.put(off + i, x[j].get(xo[j] + i));
                                }
                                acc = ByteBuffer.wrap(reference(t, op, acc, off, acc, xj, n)).order(ByteOrder.nativeOrder());
                            }
                            byte[] want = java.util.Arrays.copyOfRange(canon(bytes(acc), t, off, n), off, off + n * t.size);
                            ByteBuffer d = alloc(bytes, direct);
                            ByteBuffer d2 = alloc(bytes, direct);
                            Reductions.combineAll(t, op, d, off, d2, off, x, xo, k, n);
                            String what = t + " " + op + " n=" + n + " k=" + k + " direct=" + direct;
                            assertArrayEquals(want, java.util.Arrays.copyOfRange(canon(bytes(d), t, off, n), off, off + n * t.size), what);
                            assertArrayEquals(want, java.util.Arrays.copyOfRange(canon(bytes(d2), t, off, n), off, off + n * t.size), what + ": dst2");
                            // in place on x0, no second destination
                            Reductions.combineAll(t, op, x[0], xo[0], null, 0, x, xo, k, n);
                            assertArrayEquals(want, java.util.Arrays.copyOfRange(canon(bytes(x[0]), t, xo[0], n), xo[0], xo[0] + n * t.size),
                                    what + ": in place");
                            // the second destination is the last input itself (every input's block is read before it is
                            // written); x[0] holds the fold by now, so the reference is the pairwise fold of the inputs as they are
                            ByteBuffer e = alloc(bytes, direct);
                            Reductions.combineVarHandle(t, op, e, off, x[0], xo[0], x[1], xo[1], n);
                            for (int j = 2; j < k; j++) {
                                Reductions.combineVarHandle(t, op, e, off, e, off, x[j], xo[j], n);
                            }
                            byte[] want2 = java.util.Arrays.copyOfRange(canon(bytes(e), t, off, n), off, off + n * t.size);
                            Reductions.combineAll(t, op, d, off, x[k - 1], xo[k - 1], x, xo, k, n);
                            assertArrayEquals(want2, java.util.Arrays.copyOfRange(canon(bytes(d), t, off, n), off, off + n * t.size),
                                    what + ": dst with dst2 = x[k-1]");
                            assertArrayEquals(want2, java.util.Arrays.copyOfRange(canon(bytes(x[k - 1]), t, xo[k - 1], n), xo[k - 1],
                                    xo[k - 1] + n * t.size), what + ": dst2 = x[k-1]");
                        }
                    }
                }
            }
        }
        assertThrows(IllegalArgumentException.class, () -> Reductions.combineAll(DataType.INT, Op.SUM, alloc(8, true), 0, null, 0,
                new ByteBuffer[] {alloc(8, true)}, new int[] {0}, 1, 1));
    }

    private static void two(String form, Staging st, DataType t, Op op, ByteBuffer d, int dOff, ByteBuffer d2, int d2Off, ByteBuffer a,
            int aOff, ByteBuffer b, int bOff, int n) {
        switch (form) {
            case "public": Reductions.combine(t, op, d, dOff, d2, d2Off, a, aOff, b, bOff, n); break;
            case "staged": Reductions.combineStaged(t, op, d, dOff, d2, d2Off, a, aOff, b, bOff, n, st); break;
            case "native": Reductions.combineNative(t, op, d, dOff, d2, d2Off, a, aOff, b, bOff, n); break;
            default: Reductions.combineSegments(t, op, d, dOff, d2, d2Off, a, aOff, b, bOff, n, st); break;
        }
    }

    /**
     * The engine's heating runs every kernel entry on its own scratch buffers in this thread: the
     * kernels must still give the reference bits afterwards (a heating that left the thread's
     * staging arrays or segment cache in a state the next fold trusts would show here).
     */
    @Test
    void kernelsGiveTheReferenceAfterTheHeating() {
        Reductions.heatKernels(3);
        check(Reductions::combine, true);
    }

    @Test
    void publicEntryMatchesTheReference() {
        check(Reductions::combine, true);
        check(Reductions::combine, false);
    }

    private static void check(Kernel k, boolean direct) {
        SplittableRandom rnd = new SplittableRandom(20261124);
        for (DataType t : DataType.values()) {
            for (Op op : Op.values()) {
                if (!op.validFor(t)) {
                    continue;
                }
                for (int n : counts(t)) {
                    for (int off : OFFSETS) {
                        int bytes = off + n * t.size + 16;
                        ByteBuffer a = alloc(bytes, direct);
                        ByteBuffer b = alloc(bytes, direct);
                        ByteBuffer d = alloc(bytes, direct);
                        fill(a, t, rnd);
                        fill(b, t, rnd);
                        fill(d, t, rnd);
                        byte[] want = reference(t, op, d, off, a, b, n);
                        // dst = a op b, three buffers
                        k.run(t, op, d, off, a, off, b, off, n);
                        assertArrayEquals(canon(want, t, off, n), canon(bytes(d), t, off, n), t + " " + op + " n=" + n + " off=" + off + " direct=" + direct);
                        // in place: a = a op b, the other offsets differing from dst's
                        ByteBuffer a2 = copyOf(a, direct);
                        ByteBuffer b2 = alloc(bytes + 5, direct);
                        for (int i = 0; i < bytes; i++) {
                            b2.put(i + 5, b.get(i));
                        }
                        k.run(t, op, a2, off, a2, off, b2, off + 5, n);
                        byte[] got = bytes(a2);
                        byte[] wantInPlace = reference(t, op, a, off, a, b, n);
                        assertArrayEquals(canon(wantInPlace, t, off, n), canon(got, t, off, n), "in place " + t + " " + op + " n=" + n + " off=" + off);
                    }
                }
            }
        }
    }

    /** dst's bytes after {@code dst[off..] = a[off..] op b[off..]}, computed element by element in plain Java. */
    private static byte[] reference(DataType t, Op op, ByteBuffer dst, int off, ByteBuffer a, ByteBuffer b, int n) {
        ByteBuffer r = ByteBuffer.wrap(bytes(dst)).order(ByteOrder.nativeOrder());
        ByteBuffer x = a.duplicate().order(ByteOrder.nativeOrder());
        ByteBuffer y = b.duplicate().order(ByteOrder.nativeOrder());
        for (int i = 0; i < n; i++) {
            int at = off + i * t.size;
            switch (t) {
                case INT: r.putInt(at, (int) Reference.opL(op, x.getInt(at), y.getInt(at), true)); break;
                case LONG: r.putLong(at, Reference.opL(op, x.getLong(at), y.getLong(at), false)); break;
                case FLOAT: r.putFloat(at, (float) fpOp(op, x.getFloat(at), y.getFloat(at), true)); break;
                case DOUBLE: r.putDouble(at, fpOp(op, x.getDouble(at), y.getDouble(at), false)); break;
                default: throw new AssertionError(t);
            }
        }
        return r.array();
    }

    /**
     * Floating point, written out rather than through Math.min/max (which the kernels use), so that
     * MIN/MAX are checked against the rules themselves: NaN wins, -0.0 below +0.0.
     */
    private static double fpOp(Op op, double p, double q, boolean single) {
        switch (op) {
            case SUM: return single ? (float) p + (float) q : p + q;
            case PROD: return single ? (float) p * (float) q : p * q;
            case MIN:
                if (Double.isNaN(p) || Double.isNaN(q)) {
                    return Double.NaN;
                }
                if (p == 0 && q == 0) {
                    return Double.doubleToRawLongBits(p) != 0 ? p : q; // -0.0 if either is
                }
                return p < q ? p : q;
            case MAX:
                if (Double.isNaN(p) || Double.isNaN(q)) {
                    return Double.NaN;
                }
                if (p == 0 && q == 0) {
                    return Double.doubleToRawLongBits(p) == 0 ? p : q; // +0.0 if either is
                }
                return p > q ? p : q;
            default: throw new AssertionError(op);
        }
    }

    private static void fill(ByteBuffer buf, DataType t, SplittableRandom rnd) {
        ByteBuffer b = buf.duplicate().order(ByteOrder.nativeOrder());
        for (int at = 0; at + 8 <= b.capacity(); at += 4) {
            int k = rnd.nextInt(16);
            switch (t) {
                case INT: b.putInt(at, k < 3 ? k - 1 : k < 5 ? Integer.MIN_VALUE + k : rnd.nextInt()); break;
                case LONG: b.putInt(at, k < 4 ? 0 : rnd.nextInt()); break;
                case FLOAT: b.putFloat(at, k == 0 ? Float.NaN : k == 1 ? -0.0f : k == 2 ? 0.0f : (float) rnd.nextGaussian()); break;
                case DOUBLE: b.putInt(at, k == 0 ? 0 : rnd.nextInt()); break; // halves of doubles: NaNs, denormals, -0.0 among them
                default: throw new AssertionError(t);
            }
        }
        if (t == DataType.DOUBLE) {
            for (int at = 0; at + 8 <= b.capacity(); at += 40) {
                b.putDouble(at, new double[] {Double.NaN, -0.0, 0.0, 1.5, -1.5}[(at / 40) % 5]);
            }
        }
    }

    @Test
    void rawFormChecksBoundsAndWritabilityBeforeWriting() {
        assumeTrue(RawMemory.Holder.U != null, "sun.misc.Unsafe unavailable: the raw form is off");
        ByteBuffer d = ByteBuffer.allocateDirect(64).order(ByteOrder.nativeOrder());
        ByteBuffer s = ByteBuffer.allocateDirect(64).order(ByteOrder.nativeOrder());
        d.putDouble(0, 1.0);
        s.putDouble(0, 2.0);
        assertThrows(IndexOutOfBoundsException.class, () -> Reductions.combineRaw(DataType.DOUBLE, Op.SUM, d, 0, d, 0, s, 8, 8));
        assertThrows(IndexOutOfBoundsException.class, () -> Reductions.combineRaw(DataType.DOUBLE, Op.SUM, d, -8, d, -8, s, 0, 1));
        s.limit(32); // data must lie below the limit, as with the VarHandles
        assertThrows(IndexOutOfBoundsException.class, () -> Reductions.combineRaw(DataType.DOUBLE, Op.SUM, d, 0, d, 0, s, 0, 5));
        ByteBuffer ro = d.asReadOnlyBuffer();
        assertThrows(ReadOnlyBufferException.class, () -> Reductions.combineRaw(DataType.DOUBLE, Op.SUM, ro, 0, d, 0, s, 0, 1));
        assertThrows(IllegalArgumentException.class, () -> Reductions.combineRaw(DataType.DOUBLE, Op.BXOR, d, 0, d, 0, s, 0, 1));
        assertThrows(IllegalArgumentException.class,
                () -> Reductions.combineRaw(DataType.DOUBLE, Op.SUM, ByteBuffer.allocate(64), 0, d, 0, s, 0, 1));
        assertEquals(1.0, d.getDouble(0), "nothing written by a refused call");
        Reductions.combineRaw(DataType.DOUBLE, Op.SUM, d, 0, d, 0, s, 0, 4);
        assertEquals(3.0, d.getDouble(0));
    }

    @Test
    void theRawFormIsChosenOnlyBeforeJdk22AndCanBeTurnedOff() {
        assertFalse(RawMemory.decide("varhandle", 17));
        assertFalse(RawMemory.decide("auto", 22));
        assertFalse(RawMemory.decide("auto", 25));
        assertEquals(RawMemory.Holder.U != null, RawMemory.decide("auto", 17));
        assertEquals(RawMemory.Holder.U != null, RawMemory.decide(" RAW ", 25));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> RawMemory.decide("fast", 17));
        assertTrue(e.getMessage().contains("sharp4j.kernels"), e.getMessage());
        if (Runtime.version().feature() < 22 && System.getProperty("sharp4j.kernels") == null) {
            assertTrue(RawMemory.ENABLED, "JDK " + Runtime.version().feature() + ": the raw kernels should be on");
        }
    }

    /** The bytes with every NaN among the n elements from byte off made the canonical NaN. */
    private static byte[] canon(byte[] raw, DataType t, int off, int n) {
        if (t != DataType.FLOAT && t != DataType.DOUBLE) {
            return raw;
        }
        ByteBuffer b = ByteBuffer.wrap(raw.clone()).order(ByteOrder.nativeOrder());
        for (int at = off; at < off + n * t.size; at += t.size) {
            if (t == DataType.FLOAT && Float.isNaN(b.getFloat(at))) {
                b.putFloat(at, Float.NaN);
            } else if (t == DataType.DOUBLE && Double.isNaN(b.getDouble(at))) {
                b.putDouble(at, Double.NaN);
            }
        }
        return b.array();
    }

    private static ByteBuffer alloc(int bytes, boolean direct) {
        return (direct ? ByteBuffer.allocateDirect(bytes) : ByteBuffer.allocate(bytes)).order(ByteOrder.nativeOrder());
    }

    private static ByteBuffer copyOf(ByteBuffer b, boolean direct) {
        ByteBuffer c = alloc(b.capacity(), direct);
        for (int i = 0; i < b.capacity(); i++) {
            c.put(i, b.get(i));
        }
        return c;
    }

    private static byte[] bytes(ByteBuffer b) {
        byte[] out = new byte[b.capacity()];
        for (int i = 0; i < out.length; i++) {
            out[i] = b.get(i);
        }
        return out;
    }
}
