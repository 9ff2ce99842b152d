package org.sharp4j.fallback;

import java.nio.ByteBuffer;
import org.sharp4j.DataType;
import org.sharp4j.Op;

/**
 * Test inputs and the independent sequential reference: element i of node r for a call seeded
 * with {@code seed}, and {@code x0 op x1 op ... op x(n-1)} folded left to right in the type's
 * own Java arithmetic. Floating-point inputs make every order give the same bits (small integers
 * for SUM, powers of two for PROD, any value for MIN/MAX); integer arithmetic wraps, which is
 * associative, so full-range random values are exact too.
 */
final class Inputs {
    private Inputs() {
    }

    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    static long raw(long seed, int rank, int i) {
        return mix(seed * 0x9E3779B97F4A7C15L + rank * 0x632BE59BD9B4E019L + i);
    }

    private static final double[] POW2 = {-2, -1, -0.5, 0.5, 1, 2};

    /** Integer input (INT uses the low 32 bits). */
    static long integral(Op op, long seed, int rank, int i) {
        long h = raw(seed, rank, i);
        if (op == Op.LAND || op == Op.LOR) {
            return Long.remainderUnsigned(h, 3) == 0 ? 0 : (h >> 60); // 0 or a small non-zero (either sign)
        }
        return h;
    }

    static double floating(Op op, long seed, int rank, int i) {
        long h = raw(seed, rank, i);
        switch (op) {
            case SUM:
                return (double) (Long.remainderUnsigned(h, 129) - 64);
            case PROD:
                return POW2[(int) Long.remainderUnsigned(h, POW2.length)];
            default: // MIN, MAX: any value, and both zeros
                long s = Long.remainderUnsigned(h, 16);
                return s == 0 ? -0.0 : s == 1 ? 0.0 : (h >> 11) * 0x1.0p-40;
        }
    }

    /** Writes node {@code rank}'s input. */
    static void fill(ByteBuffer b, int off, DataType t, Op op, long seed, int rank, int count) {
        for (int i = 0; i < count; i++) {
            int at = off + i * t.size;
            switch (t) {
                case INT: b.putInt(at, (int) integral(op, seed, rank, i)); break;
                case LONG: b.putLong(at, integral(op, seed, rank, i)); break;
                case FLOAT: b.putFloat(at, (float) floating(op, seed, rank, i)); break;
                default: b.putDouble(at, floating(op, seed, rank, i)); break;
            }
        }
    }

    static long opL(Op op, long a, long b) {
        switch (op) {
            case SUM: return a + b;
            case PROD: return a * b;
            case MIN: return Math.min(a, b);
            case MAX: return Math.max(a, b);
            case BAND: return a & b;
            case BOR: return a | b;
            case BXOR: return a ^ b;
            case LAND: return a != 0 && b != 0 ? 1 : 0;
            case LOR: return a != 0 || b != 0 ? 1 : 0;
            default: throw new AssertionError(op);
        }
    }

    static int opI(Op op, int a, int b) {
        switch (op) {
            case SUM: return a + b;
            case PROD: return a * b;
            case MIN: return Math.min(a, b);
            case MAX: return Math.max(a, b);
            case BAND: return a & b;
            case BOR: return a | b;
            case BXOR: return a ^ b;
            case LAND: return a != 0 && b != 0 ? 1 : 0;
            case LOR: return a != 0 || b != 0 ? 1 : 0;
            default: throw new AssertionError(op);
        }
    }

    static double opD(Op op, double a, double b) {
        switch (op) {
            case SUM: return a + b;
            case PROD: return a * b;
            case MIN: return Math.min(a, b);
            case MAX: return Math.max(a, b);
            default: throw new AssertionError(op);
        }
    }

    static float opF(Op op, float a, float b) {
        switch (op) {
            case SUM: return a + b;
            case PROD: return a * b;
            case MIN: return Math.min(a, b);
            case MAX: return Math.max(a, b);
            default: throw new AssertionError(op);
        }
    }

    /** Raw bits of the reference result for element i over n nodes. */
    static long expected(DataType t, Op op, long seed, int n, int i) {
        switch (t) {
            case INT: {
                int acc = (int) integral(op, seed, 0, i);
                for (int r = 1; r < n; r++) {
                    acc = opI(op, acc, (int) integral(op, seed, r, i));
                }
                return acc;
            }
            case LONG: {
                long acc = integral(op, seed, 0, i);
                for (int r = 1; r < n; r++) {
                    acc = opL(op, acc, integral(op, seed, r, i));
                }
                return acc;
            }
            case FLOAT: {
                float acc = (float) floating(op, seed, 0, i);
                for (int r = 1; r < n; r++) {
                    acc = opF(op, acc, (float) floating(op, seed, r, i));
                }
                return Float.floatToIntBits(acc);
            }
            default: {
                double acc = floating(op, seed, 0, i);
                for (int r = 1; r < n; r++) {
                    acc = opD(op, acc, floating(op, seed, r, i));
                }
                return Double.doubleToLongBits(acc);
            }
        }
    }

    static long actual(ByteBuffer b, int off, DataType t, int i) {
        int at = off + i * t.size;
        switch (t) {
            case INT: return b.getInt(at);
            case LONG: return b.getLong(at);
            case FLOAT: return Float.floatToIntBits(b.getFloat(at));
            default: return Double.doubleToLongBits(b.getDouble(at));
        }
    }

    /** Null when the buffer holds the reference, else a description of the first difference. */
    static String check(ByteBuffer b, int off, DataType t, Op op, long seed, int n, int count) {
        for (int i = 0; i < count; i++) {
            long want = expected(t, op, seed, n, i);
            long got = actual(b, off, t, i);
            if (want != got) {
                return "element " + i + " of " + count + ": expected " + show(t, want) + " got " + show(t, got);
            }
        }
        return null;
    }

    static String show(DataType t, long bits) {
        switch (t) {
            case FLOAT: return Float.toString(Float.intBitsToFloat((int) bits));
            case DOUBLE: return Double.toString(Double.longBitsToDouble(bits));
            default: return Long.toString(bits);
        }
    }
}
