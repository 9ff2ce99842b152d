package org.sharp4j.coll;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.sharp4j.DataType;
import org.sharp4j.Op;

/**
 * The exchange's inline data moves against the kernels: {@link InlineData#load} then {@link InlineData#fold2} into every
 * output form (arrays of each type, direct buffers at an element offset, none) gives the bits
 * {@link Reductions#combine} gives for every type x op, 1 to a line's worth of elements, with the
 * values that tell the ops apart (NaN, -0.0, 0, negative numbers, extremes); and
 * {@link InlineData#copyIn} copies arrays and buffers at their offsets bit for bit (NaN payloads too).
 */
class InlineDataTest {
    private static final ByteOrder NATIVE = ByteOrder.nativeOrder();

    @Test
    void fold2GivesTheKernelsBitsForEveryTypeOpCountAndOutputForm() {
        SplittableRandom rnd = new SplittableRandom(13);
        long[] r8 = new long[ShmLevel.INLINE_BYTES / 8];
        int[] r4 = new int[ShmLevel.INLINE_BYTES / 4];
        long[] a8 = new long[ShmLevel.INLINE_BYTES / 8];
        int[] a4 = new int[ShmLevel.INLINE_BYTES / 4];
        long[] b8 = new long[ShmLevel.INLINE_BYTES / 8];
        int[] b4 = new int[ShmLevel.INLINE_BYTES / 4];
        for (DataType t : DataType.values()) {
            for (Op op : Op.values()) {
                if (!op.validFor(t)) {
                    continue;
                }
                for (int count = 1; count <= ShmLevel.INLINE_BYTES / t.size; count++) {
                    for (int rep = 0; rep < 20; rep++) {
                        ByteBuffer line = ByteBuffer.allocateDirect(256).order(NATIVE);
                        int a = 24;
                        int b = 128 + 24;
                        for (int i = 0; i < count; i++) {
                            put(line, t, a + i * t.size, value(t, rnd));
                            put(line, t, b + i * t.size, value(t, rnd));
                        }
                        InlineData.load(line, a, t, count, a8, a4);
                        InlineData.load(line, b, t, count, b8, b4);
                        ByteBuffer want = ByteBuffer.allocateDirect(count * t.size).order(NATIVE);
                        Reductions.combine(t, op, want, 0, line, a, line, b, count);
                        int off = rep % 3;
                        // a direct buffer at an element offset
                        ByteBuffer out = ByteBuffer.allocateDirect((off + count) * t.size).order(NATIVE);
                        Payload p = new Payload();
                        p.buffer(out, off);
                        InlineData.fold2(p, t, op, a8, b8, a4, b4, count, r8, r4);
                        for (int i = 0; i < count; i++) {
                            assertEquals(bits(want, t, i * t.size), bits(out, t, (off + i) * t.size),
                                    t + " " + op + " count " + count + " element " + i + " (buffer)");
                        }
                        // an array of the type at an offset, with guard elements around it
                        Object arr = newArray(t, off + count + 1);
                        p.array(arr, off);
                        InlineData.fold2(p, t, op, a8, b8, a4, b4, count, r8, r4);
                        for (int i = 0; i < count; i++) {
                            assertEquals(bits(want, t, i * t.size), arrayBits(arr, t, off + i),
                                    t + " " + op + " count " + count + " element " + i + " (array)");
                        }
                        assertEquals(0L, arrayBits(arr, t, off + count), "wrote past the count");
                        if (off > 0) {
                            assertEquals(0L, arrayBits(arr, t, off - 1), "wrote before the offset");
                        }
                        p.none();
                        InlineData.fold2(p, t, op, a8, b8, a4, b4, count, r8, r4); // no output on this rank: nothing to write, no error
                    }
                }
            }
        }
    }

    @Test
    void copyInMovesArraysAndBuffersAtTheirOffsetsBitForBit() {
        SplittableRandom rnd = new SplittableRandom(7);
        for (DataType t : DataType.values()) {
            for (int count = 1; count <= ShmLevel.INLINE_BYTES / t.size; count++) {
                int off = count % 3;
                Object arr = newArray(t, off + count);
                ByteBuffer src = ByteBuffer.allocateDirect((off + count) * t.size).order(NATIVE);
                for (int i = 0; i < off + count; i++) {
                    long v = value(t, rnd);
                    setArray(arr, t, i, v);
                    put(src, t, i * t.size, v);
                }
                Payload p = new Payload();
                ByteBuffer line = ByteBuffer.allocateDirect(128).order(NATIVE);
                p.array(arr, off);
                InlineData.copyIn(p, line, 24, t, count);
                for (int i = 0; i < count; i++) {
                    assertEquals(arrayBits(arr, t, off + i), bits(line, t, 24 + i * t.size), t + " array element " + i);
                }
                ByteBuffer line2 = ByteBuffer.allocateDirect(128).order(NATIVE);
                p.buffer(src, off);
                InlineData.copyIn(p, line2, 24, t, count);
                for (int i = 0; i < count; i++) {
                    assertEquals(bits(src, t, (off + i) * t.size), bits(line2, t, 24 + i * t.size), t + " buffer element " + i);
                }
            }
        }
    }

    /** A random bit pattern of the type, often one of the values that tell the ops apart. */
    private static long value(DataType t, SplittableRandom rnd) {
        int pick = rnd.nextInt(10);
        switch (t) {
            case DOUBLE: {
                double[] special = {Double.NaN, -0.0, 0.0, -1.5, Double.MAX_VALUE, Double.MIN_VALUE, Double.NEGATIVE_INFINITY};
                double v = pick < special.length ? special[pick] : rnd.nextDouble() * 200 - 100;
                long bits = Double.doubleToRawLongBits(v);
                return pick == 0 && rnd.nextBoolean() ? bits | 0x5L : bits; // a NaN with another payload
            }
            case FLOAT: {
                float[] special = {Float.NaN, -0.0f, 0.0f, -1.5f, Float.MAX_VALUE, Float.MIN_VALUE, Float.NEGATIVE_INFINITY};
                float v = pick < special.length ? special[pick] : (float) (rnd.nextDouble() * 200 - 100);
                int bits = Float.floatToRawIntBits(v);
                return pick == 0 && rnd.nextBoolean() ? bits | 0x5 : bits;
            }
            case LONG: {
                long[] special = {0, -1, 1, Long.MIN_VALUE, Long.MAX_VALUE};
                return pick < special.length ? special[pick] : rnd.nextLong();
            }
            default: {
                int[] special = {0, -1, 1, Integer.MIN_VALUE, Integer.MAX_VALUE};
                return pick < special.length ? special[pick] : rnd.nextInt();
            }
        }
    }

    private static void put(ByteBuffer b, DataType t, int at, long bits) {
        if (t.size == 8) {
            b.putLong(at, bits);
        } else {
            b.putInt(at, (int) bits);
        }
    }

    /** The element's bits; a NaN counts as the canonical NaN (Java leaves a NaN result's payload open, as ReductionsTest says). */
    private static long bits(ByteBuffer b, DataType t, int at) {
        switch (t) {
            case DOUBLE: {
                double v = b.getDouble(at);
                return Double.isNaN(v) ? Double.doubleToLongBits(Double.NaN) : Double.doubleToRawLongBits(v);
            }
            case FLOAT: {
                float v = b.getFloat(at);
                return Float.isNaN(v) ? Float.floatToIntBits(Float.NaN) : Float.floatToRawIntBits(v);
            }
            case LONG:
                return b.getLong(at);
            default:
                return b.getInt(at);
        }
    }

    private static Object newArray(DataType t, int n) {
        switch (t) {
            case DOUBLE: return new double[n];
            case FLOAT: return new float[n];
            case LONG: return new long[n];
            default: return new int[n];
        }
    }

    private static void setArray(Object a, DataType t, int i, long bits) {
        switch (t) {
            case DOUBLE: ((double[]) a)[i] = Double.longBitsToDouble(bits); break;
            case FLOAT: ((float[]) a)[i] = Float.intBitsToFloat((int) bits); break;
            case LONG: ((long[]) a)[i] = bits; break;
            default: ((int[]) a)[i] = (int) bits; break;
        }
    }

    private static long arrayBits(Object a, DataType t, int i) {
        switch (t) {
            case DOUBLE: {
                double v = ((double[]) a)[i];
                return Double.isNaN(v) ? Double.doubleToLongBits(Double.NaN) : Double.doubleToRawLongBits(v);
            }
            case FLOAT: {
                float v = ((float[]) a)[i];
                return Float.isNaN(v) ? Float.floatToIntBits(Float.NaN) : Float.floatToRawIntBits(v);
            }
            case LONG: return ((long[]) a)[i];
            default: return ((int[]) a)[i];
        }
    }
}
