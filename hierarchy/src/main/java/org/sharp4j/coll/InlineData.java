package org.sharp4j.coll;

import java.nio.ByteBuffer;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.shm.Flags;

/**
 * The data moves of a call whose payload fits a control line ({@link ShmLevel#INLINE_BYTES}), or
 * with two members a few lines of the slot ({@link ExchangeAlgorithm#PAIR_BYTES}): the user's
 * input into this rank's line or slot, and the fold of two members' contributions straight into
 * the user's output, element by element, with no private accumulator and no kernel dispatch.
 *
 * <p>Why a class of its own: at one to ten elements the general path's layers (the kernel's
 * form checks, three address checks, a copy into the accumulator and one out of it) cost
 * more than the arithmetic; on a one-rank communicator they took 40 of the 50 ns of an 8-byte
 * exchange. Here an element is read as its bit pattern into a private operand, combined by
 * one loop per type and op, and stored once.
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
     * {@code src}'s elements {@code [0, count)} (its offset applied) as bit patterns into
     * {@code to8} (8-byte types) or {@code to4} (4-byte ones): this rank's own operand, from its
     * input, which no other rank writes or reads.
     */
    static void loadFrom(Payload src, DataType t, int count, long[] to8, int[] to4) {
        final int off = src.off;
        switch (src.kind) {
            case Payload.ARRAY:
                switch (t) {
                    case DOUBLE: {
                        double[] a = (double[]) src.array;
                        for (int i = 0; i < count; i++) {
                            to8[i] = Double.doubleToRawLongBits(a[off + i]);
                        }
                        return;
                    }
                    case LONG: {
                        long[] a = (long[]) src.array;
                        for (int i = 0; i < count; i++) {
                            to8[i] = a[off + i];
                        }
                        return;
                    }
                    case FLOAT: {
                        float[] a = (float[]) src.array;
                        for (int i = 0; i < count; i++) {
                            to4[i] = Float.floatToRawIntBits(a[off + i]);
                        }
                        return;
                    }
                    default: {
                        int[] a = (int[]) src.array;
                        for (int i = 0; i < count; i++) {
                            to4[i] = a[off + i];
                        }
                        return;
                    }
                }
            case Payload.BUFFER:
                load(src.buffer, off * t.size, t, count, to8, to4);
                return;
            case Payload.SHARED:
                load(src.sharedLevel.buf, src.sharedOff, t, count, to8, to4);
                return;
            default:
                throw new IllegalStateException("no input buffer");
        }
    }

    /**
     * Reads {@code count} elements of {@code t} at {@code line[at]} as bit patterns into
     * {@code to8} (8-byte types) or {@code to4} (4-byte types): a member's contribution (or this
     * rank's input) into this rank's private operands.
     */
    static void load(ByteBuffer line, int at, DataType t, int count, long[] to8, int[] to4) {
        if (t.size == 8) {
            for (int i = 0; i < count; i++) {
                to8[i] = Flags.plain(line, at + 8 * i);
            }
        } else {
            for (int i = 0; i < count; i++) {
                to4[i] = Flags.plainInt(line, at + 4 * i);
            }
        }
    }

    /**
     * {@code dst[i] = a[i] op b[i]} for i in [0, count): the fold of two members' contributions
     * ({@code a} is the left operand: member 0's), given as bit patterns in private arrays
     * ({@code a8}/{@code b8} for 8-byte types, {@code a4}/{@code b4} for 4-byte ones), stored into
     * the user's output; nothing if {@code dst} is none. {@code r8} and {@code r4} are the
     * caller's scratch (as many elements). The operands are private because a rank's own
     * contribution must not be read back from its published line: once the peer has fetched that
     * line, reading it again may cost a cache-line transfer back (measured on this VM's slow
     * phase: +200 ns, as much as the exchange itself). Every choice (type, op, output form) is
     * made once, outside the loops, and every loop body is one operation: with the switches
     * inside the loops C2 hoisted them as profiled loop predicates, which trapped (and recompiled
     * the exchange) when a program's op or buffer form differed from the one that dominated the
     * profile (LogCompilation: profile_predicate in fold2 at an OSU table's first rows, whose
     * statistics run DOUBLE MIN and MAX reduces).
     */
    static void fold2(Payload dst, DataType t, Op op, long[] a8, long[] b8, int[] a4, int[] b4, int count, long[] r8,
            int[] r4) {
        if (dst.kind == Payload.NONE) {
            return; // no output on this rank
        }
        if (t.size == 8) {
            if (t == DataType.DOUBLE) {
                foldDouble(op, a8, b8, count, r8);
            } else {
                foldLong(op, a8, b8, count, r8);
            }
            store8(dst, t, r8, count);
        } else {
            if (t == DataType.FLOAT) {
                foldFloat(op, a4, b4, count, r4);
            } else {
                foldInt(op, a4, b4, count, r4);
            }
            store4(dst, t, r4, count);
        }
    }

    private static void foldDouble(Op op, long[] a, long[] b, int n, long[] r) {
        switch (op) {
            case SUM:
                for (int i = 0; i < n; i++) {
                    long x = a[i];
                    long y = b[i];
                    r[i] = Double.doubleToRawLongBits(Double.longBitsToDouble(x) + Double.longBitsToDouble(y));
                }
                return;
            case PROD:
                for (int i = 0; i < n; i++) {
                    long x = a[i];
                    long y = b[i];
                    r[i] = Double.doubleToRawLongBits(Double.longBitsToDouble(x) * Double.longBitsToDouble(y));
                }
                return;
            case MIN:
                for (int i = 0; i < n; i++) {
                    long x = a[i];
                    long y = b[i];
                    r[i] = Double.doubleToRawLongBits(Math.min(Double.longBitsToDouble(x), Double.longBitsToDouble(y)));
                }
                return;
            case MAX:
                for (int i = 0; i < n; i++) {
                    long x = a[i];
                    long y = b[i];
                    r[i] = Double.doubleToRawLongBits(Math.max(Double.longBitsToDouble(x), Double.longBitsToDouble(y)));
                }
                return;
            default:
                throw new IllegalArgumentException("op " + op + " is not defined for DOUBLE");
        }
    }

    private static void foldLong(Op op, long[] a, long[] b, int n, long[] r) {
        switch (op) {
            case SUM:
                for (int i = 0; i < n; i++) {
                    long x = a[i];
                    long y = b[i];
                    r[i] = x + y;
                }
                return;
            case PROD:
                for (int i = 0; i < n; i++) {
                    long x = a[i];
                    long y = b[i];
                    r[i] = x * y;
                }
                return;
            case MIN:
                for (int i = 0; i < n; i++) {
                    long x = a[i];
                    long y = b[i];
                    r[i] = Math.min(x, y);
                }
                return;
            case MAX:
                for (int i = 0; i < n; i++) {
                    long x = a[i];
                    long y = b[i];
                    r[i] = Math.max(x, y);
                }
                return;
            case BAND:
                for (int i = 0; i < n; i++) {
                    long x = a[i];
                    long y = b[i];
                    r[i] = x & y;
                }
                return;
            case BOR:
                for (int i = 0; i < n; i++) {
                    long x = a[i];
                    long y = b[i];
                    r[i] = x | y;
                }
                return;
            case BXOR:
                for (int i = 0; i < n; i++) {
                    long x = a[i];
                    long y = b[i];
                    r[i] = x ^ y;
                }
                return;
            case LAND:
                for (int i = 0; i < n; i++) {
                    long x = a[i];
                    long y = b[i];
                    r[i] = (x != 0 && y != 0) ? 1L : 0L;
                }
                return;
            case LOR:
                for (int i = 0; i < n; i++) {
                    long x = a[i];
                    long y = b[i];
                    r[i] = (x != 0 || y != 0) ? 1L : 0L;
                }
                return;
            default:
                throw new IllegalArgumentException("op " + op + " is not defined for LONG");
        }
    }

    private static void foldFloat(Op op, int[] a, int[] b, int n, int[] r) {
        switch (op) {
            case SUM:
                for (int i = 0; i < n; i++) {
                    int x = a[i];
                    int y = b[i];
                    r[i] = Float.floatToRawIntBits(Float.intBitsToFloat(x) + Float.intBitsToFloat(y));
                }
                return;
            case PROD:
                for (int i = 0; i < n; i++) {
                    int x = a[i];
                    int y = b[i];
                    r[i] = Float.floatToRawIntBits(Float.intBitsToFloat(x) * Float.intBitsToFloat(y));
                }
                return;
            case MIN:
                for (int i = 0; i < n; i++) {
                    int x = a[i];
                    int y = b[i];
                    r[i] = Float.floatToRawIntBits(Math.min(Float.intBitsToFloat(x), Float.intBitsToFloat(y)));
                }
                return;
            case MAX:
                for (int i = 0; i < n; i++) {
                    int x = a[i];
                    int y = b[i];
                    r[i] = Float.floatToRawIntBits(Math.max(Float.intBitsToFloat(x), Float.intBitsToFloat(y)));
                }
                return;
            default:
                throw new IllegalArgumentException("op " + op + " is not defined for FLOAT");
        }
    }

    /**
     * Rounds of {@link #heatFolds} per {@link Reductions#heatKernels} call: enough for each fold to
     * pass C2's thresholds on its own, with margin. Per round a fold runs once per valid op (4 for
     * DOUBLE and FLOAT, 9 for the integers), alternately over one element and over
     * {@link ExchangeAlgorithm#PAIR_BYTES}: DOUBLE's fold gets 10,000 invocations and about 45,000
     * loop iterations per call, against C2's defaults of 5,000 invocations, or 15,000 invocations
     * plus back-edges (Tier4InvocationThreshold, Tier4CompileThreshold), which C2 raises while its
     * queue is long. At the 160 rounds of before (640 invocations and about 3,000 iterations per call,
     * 2-4 calls per heating) the folds passed them only with the heating's own collectives, and C2
     * compiled {@code foldDouble} during an OSU-style Reduce of doubles through the agent on a loaded
     * machine (MpiAgentIT in CI on 3f55a59). Cost: about 60,000 short calls, milliseconds in the
     * interpreter and C1 the first time, well under one once compiled.
     */
    static final int HEAT_FOLD_ROUNDS = 2_500;

    /**
     * Runs the four typed folds of {@link #fold2} on private operands, every valid op, at one
     * element and at the pair path's most ({@link ExchangeAlgorithm#PAIR_BYTES}), {@code rounds}
     * times: local, no peer involved. For the engine's heating ({@link Reductions#heatKernels}), so
     * that C2 compiles them before the program's calls: through the collectives the heating reaches
     * each with a fraction of its calls (one type of four, the array and inline sizes only), and C2
     * compiled {@code foldInt} during an OSU-style Allreduce of int arrays through the agent, on the
     * rank's core (Deopts' C2 report after the timed start: 3 runs of 4).
     */
    static void heatFolds(int rounds) {
        int max = ExchangeAlgorithm.PAIR_BYTES / 4;
        long[] a8 = new long[max];
        long[] b8 = new long[max];
        long[] r8 = new long[max];
        int[] a4 = new int[max];
        int[] b4 = new int[max];
        int[] r4 = new int[max];
        // Normal numbers or zero whatever the type (no subnormal slow paths), a zero where bit 0 (a) or bit 1 (b) of
        // the index is clear: over 4 elements every pair of zero and non-zero operands, and a above b as well as below,
        // so that every branch a fold or Math.min/max takes has a count in the profile C2 compiles from. With operands
        // never zero, the first zero a program passed to LAND or LOR hit a branch compiled as a trap (LogCompilation:
        // unstable_if in foldInt and foldLong at the 'x != 0' test, during the heating's own collectives), and the
        // recompile could fall in the program's first calls.
        for (int i = 0; i < max; i++) {
            a8[i] = (i & 1) == 0 ? 0 : Double.doubleToRawLongBits(1.0 + i);
            b8[i] = (i & 2) == 0 ? 0 : Double.doubleToRawLongBits(2.0 + i);
            a4[i] = (i & 1) == 0 ? 0 : Float.floatToRawIntBits(1.0f + i);
            b4[i] = (i & 2) == 0 ? 0 : Float.floatToRawIntBits(2.0f + i);
        }
        DataType[] types = DataType.values();
        Op[] ops = Op.values();
        for (int r = 0; r < rounds; r++) {
            for (DataType t : types) {
                int n = (r & 1) == 0 ? 1 : ExchangeAlgorithm.PAIR_BYTES / t.size;
                for (Op op : ops) {
                    if (!op.validFor(t)) {
                        continue;
                    }
                    switch (t) {
                        case DOUBLE: foldDouble(op, a8, b8, n, r8); break;
                        case LONG: foldLong(op, a8, b8, n, r8); break;
                        case FLOAT: foldFloat(op, a4, b4, n, r4); break;
                        default: foldInt(op, a4, b4, n, r4); break;
                    }
                }
            }
        }
    }

    private static void foldInt(Op op, int[] a, int[] b, int n, int[] r) {
        switch (op) {
            case SUM:
                for (int i = 0; i < n; i++) {
                    int x = a[i];
                    int y = b[i];
                    r[i] = x + y;
                }
                return;
            case PROD:
                for (int i = 0; i < n; i++) {
                    int x = a[i];
                    int y = b[i];
                    r[i] = x * y;
                }
                return;
            case MIN:
                for (int i = 0; i < n; i++) {
                    int x = a[i];
                    int y = b[i];
                    r[i] = Math.min(x, y);
                }
                return;
            case MAX:
                for (int i = 0; i < n; i++) {
                    int x = a[i];
                    int y = b[i];
                    r[i] = Math.max(x, y);
                }
                return;
            case BAND:
                for (int i = 0; i < n; i++) {
                    int x = a[i];
                    int y = b[i];
                    r[i] = x & y;
                }
                return;
            case BOR:
                for (int i = 0; i < n; i++) {
                    int x = a[i];
                    int y = b[i];
                    r[i] = x | y;
                }
                return;
            case BXOR:
                for (int i = 0; i < n; i++) {
                    int x = a[i];
                    int y = b[i];
                    r[i] = x ^ y;
                }
                return;
            case LAND:
                for (int i = 0; i < n; i++) {
                    int x = a[i];
                    int y = b[i];
                    r[i] = (x != 0 && y != 0) ? 1 : 0;
                }
                return;
            case LOR:
                for (int i = 0; i < n; i++) {
                    int x = a[i];
                    int y = b[i];
                    r[i] = (x != 0 || y != 0) ? 1 : 0;
                }
                return;
            default:
                throw new IllegalArgumentException("op " + op + " is not defined for INT");
        }
    }

    private static void store8(Payload dst, DataType t, long[] r, int n) {
        switch (dst.kind) {
            case Payload.ARRAY: {
                final int o = dst.off;
                if (t == DataType.DOUBLE) {
                    double[] out = (double[]) dst.array;
                    for (int i = 0; i < n; i++) {
                        out[o + i] = Double.longBitsToDouble(r[i]);
                    }
                } else {
                    long[] out = (long[]) dst.array;
                    for (int i = 0; i < n; i++) {
                        out[o + i] = r[i];
                    }
                }
                return;
            }
            case Payload.BUFFER: {
                ByteBuffer d = dst.buffer;
                int at = dst.off * 8;
                for (int i = 0; i < n; i++) {
                    Flags.put(d, at + 8 * i, r[i]);
                }
                return;
            }
            default: {
                ByteBuffer d = dst.sharedLevel.buf;
                int at = dst.sharedOff;
                for (int i = 0; i < n; i++) {
                    Flags.put(d, at + 8 * i, r[i]);
                }
                return;
            }
        }
    }

    private static void store4(Payload dst, DataType t, int[] r, int n) {
        switch (dst.kind) {
            case Payload.ARRAY: {
                final int o = dst.off;
                if (t == DataType.FLOAT) {
                    float[] out = (float[]) dst.array;
                    for (int i = 0; i < n; i++) {
                        out[o + i] = Float.intBitsToFloat(r[i]);
                    }
                } else {
                    int[] out = (int[]) dst.array;
                    for (int i = 0; i < n; i++) {
                        out[o + i] = r[i];
                    }
                }
                return;
            }
            case Payload.BUFFER: {
                ByteBuffer d = dst.buffer;
                int at = dst.off * 4;
                for (int i = 0; i < n; i++) {
                    Flags.putInt(d, at + 4 * i, r[i]);
                }
                return;
            }
            default: {
                ByteBuffer d = dst.sharedLevel.buf;
                int at = dst.sharedOff;
                for (int i = 0; i < n; i++) {
                    Flags.putInt(d, at + 4 * i, r[i]);
                }
                return;
            }
        }
    }
}
