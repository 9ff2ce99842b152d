package org.sharp4j.coll;

import java.nio.ByteBuffer;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.shm.Flags;

/**
 * The data moves of a call whose payload fits a control line ({@link ShmLevel#INLINE_BYTES}):
 * the user's input into this rank's line, and the fold of two members' lines straight into the
 * user's output, element by element, with no private accumulator and no kernel dispatch.
 *
 * <p>Why a class of its own: at one to ten elements the general path's layers (the kernel's
 * form checks, three address checks, a copy into the accumulator and one out of it) cost
 * more than the arithmetic; on a one-rank communicator they took 40 of the 50 ns of an 8-byte
 * exchange. Here an element is read as its bit pattern, combined by {@link #op8}/{@link #op4}
 * and stored once.
 *
 * <p>The same bits as {@link Reductions}: each op is the kernels' expression on the same Java
 * types ({@code a + b}, {@code a * b}, {@link Math#min}/{@link Math#max} with NaN and -0.0 as
 * theirs, {@code (a != 0 && b != 0) ? 1 : 0} for LAND, ...); bit patterns move through
 * {@code Double.longBitsToDouble}/{@code doubleToRawLongBits} and the float pair, which copy
 * the bits unchanged (NaN payloads too), as the kernels' loads and stores do.
 */
final class InlineData {
    private InlineData() {
    }

    /** {@code src}'s elements {@code [0, count)} (its offset applied) into {@code line} at {@code at}. */
    static void copyIn(Payload src, ByteBuffer line, int at, DataType t, int count) {
        final int off = src.off;
        switch (src.kind) {
            case Payload.ARRAY:
                switch (t) {
                    case DOUBLE: {
                        double[] a = (double[]) src.array;
                        for (int i = 0; i < count; i++) {
                            Flags.put(line, at + 8 * i, Double.doubleToRawLongBits(a[off + i]));
                        }
                        return;
                    }
                    case LONG: {
                        long[] a = (long[]) src.array;
                        for (int i = 0; i < count; i++) {
                            Flags.put(line, at + 8 * i, a[off + i]);
                        }
                        return;
                    }
                    case FLOAT: {
                        float[] a = (float[]) src.array;
                        for (int i = 0; i < count; i++) {
                            Flags.putInt(line, at + 4 * i, Float.floatToRawIntBits(a[off + i]));
                        }
                        return;
                    }
                    default: {
                        int[] a = (int[]) src.array;
                        for (int i = 0; i < count; i++) {
                            Flags.putInt(line, at + 4 * i, a[off + i]);
                        }
                        return;
                    }
                }
            case Payload.BUFFER:
                copyWords(line, at, src.buffer, off * t.size, t.size, count);
                return;
            case Payload.SHARED:
                copyWords(line, at, src.sharedLevel.buf, src.sharedOff, t.size, count);
                return;
            default:
                throw new IllegalStateException("no input buffer");
        }
    }

    private static void copyWords(ByteBuffer d, int dOff, ByteBuffer s, int sOff, int size, int count) {
        if (size == 8) {
            for (int i = 0; i < count; i++) {
                Flags.put(d, dOff + 8 * i, Flags.plain(s, sOff + 8 * i));
            }
        } else {
            for (int i = 0; i < count; i++) {
                Flags.putInt(d, dOff + 4 * i, Flags.plainInt(s, sOff + 4 * i));
            }
        }
    }

    /**
     * {@code dst[i] = line[a + i] op line[b + i]} for i in [0, count): the fold of two members
     * (a is the left operand), stored into the user's output; nothing if {@code dst} is none.
     * The output's form and type are chosen once, outside the loops: a switch on them inside a
     * loop let C2 hoist it as a profiled loop predicate, which trapped (and recompiled the
     * exchange) whenever a program changed buffer forms.
     */
    static void fold2(Payload dst, DataType t, Op op, ByteBuffer line, int a, int b, int count) {
        switch (dst.kind) {
            case Payload.ARRAY: {
                final int o = dst.off;
                switch (t) {
                    case DOUBLE: {
                        double[] out = (double[]) dst.array;
                        for (int i = 0; i < count; i++) {
                            out[o + i] = Double.longBitsToDouble(op8(t, op, Flags.plain(line, a + 8 * i), Flags.plain(line, b + 8 * i)));
                        }
                        return;
                    }
                    case LONG: {
                        long[] out = (long[]) dst.array;
                        for (int i = 0; i < count; i++) {
                            out[o + i] = op8(t, op, Flags.plain(line, a + 8 * i), Flags.plain(line, b + 8 * i));
                        }
                        return;
                    }
                    case FLOAT: {
                        float[] out = (float[]) dst.array;
                        for (int i = 0; i < count; i++) {
                            out[o + i] = Float.intBitsToFloat(op4(t, op, Flags.plainInt(line, a + 4 * i), Flags.plainInt(line, b + 4 * i)));
                        }
                        return;
                    }
                    default: {
                        int[] out = (int[]) dst.array;
                        for (int i = 0; i < count; i++) {
                            out[o + i] = op4(t, op, Flags.plainInt(line, a + 4 * i), Flags.plainInt(line, b + 4 * i));
                        }
                        return;
                    }
                }
            }
            case Payload.BUFFER:
                fold2Words(dst.buffer, dst.off * t.size, t, op, line, a, b, count);
                return;
            case Payload.SHARED:
                fold2Words(dst.sharedLevel.buf, dst.sharedOff, t, op, line, a, b, count);
                return;
            default:
                return; // no output on this rank
        }
    }

    private static void fold2Words(ByteBuffer d, int dOff, DataType t, Op op, ByteBuffer line, int a, int b, int count) {
        if (t.size == 8) {
            for (int i = 0; i < count; i++) {
                Flags.put(d, dOff + 8 * i, op8(t, op, Flags.plain(line, a + 8 * i), Flags.plain(line, b + 8 * i)));
            }
        } else {
            for (int i = 0; i < count; i++) {
                Flags.putInt(d, dOff + 4 * i, op4(t, op, Flags.plainInt(line, a + 4 * i), Flags.plainInt(line, b + 4 * i)));
            }
        }
    }

    /** {@code a op b} on 8-byte elements (DOUBLE or LONG) given as bit patterns, as {@link Reductions} computes it. */
    static long op8(DataType t, Op op, long a, long b) {
        if (t == DataType.DOUBLE) {
            double x = Double.longBitsToDouble(a);
            double y = Double.longBitsToDouble(b);
            switch (op) {
                case SUM: return Double.doubleToRawLongBits(x + y);
                case PROD: return Double.doubleToRawLongBits(x * y);
                case MIN: return Double.doubleToRawLongBits(Math.min(x, y));
                case MAX: return Double.doubleToRawLongBits(Math.max(x, y));
                default: throw new IllegalArgumentException("op " + op + " is not defined for DOUBLE");
            }
        }
        switch (op) {
            case SUM: return a + b;
            case PROD: return a * b;
            case MIN: return Math.min(a, b);
            case MAX: return Math.max(a, b);
            case BAND: return a & b;
            case BOR: return a | b;
            case BXOR: return a ^ b;
            case LAND: return (a != 0 && b != 0) ? 1 : 0;
            case LOR: return (a != 0 || b != 0) ? 1 : 0;
            default: throw new IllegalArgumentException("op " + op + " is not defined for LONG");
        }
    }

    /** {@code a op b} on 4-byte elements (FLOAT or INT) given as bit patterns, as {@link Reductions} computes it. */
    static int op4(DataType t, Op op, int a, int b) {
        if (t == DataType.FLOAT) {
            float x = Float.intBitsToFloat(a);
            float y = Float.intBitsToFloat(b);
            switch (op) {
                case SUM: return Float.floatToRawIntBits(x + y);
                case PROD: return Float.floatToRawIntBits(x * y);
                case MIN: return Float.floatToRawIntBits(Math.min(x, y));
                case MAX: return Float.floatToRawIntBits(Math.max(x, y));
                default: throw new IllegalArgumentException("op " + op + " is not defined for FLOAT");
            }
        }
        switch (op) {
            case SUM: return a + b;
            case PROD: return a * b;
            case MIN: return Math.min(a, b);
            case MAX: return Math.max(a, b);
            case BAND: return a & b;
            case BOR: return a | b;
            case BXOR: return a ^ b;
            case LAND: return (a != 0 && b != 0) ? 1 : 0;
            case LOR: return (a != 0 || b != 0) ? 1 : 0;
            default: throw new IllegalArgumentException("op " + op + " is not defined for INT");
        }
    }
}
