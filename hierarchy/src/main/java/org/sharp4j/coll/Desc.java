package org.sharp4j.coll;

import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.tuning.Collective;

/**
 * A call's signature in one 64-bit word, published next to each arrival flag so that a parent
 * can see in the same cache line whether its child called the same collective:
 *
 * <pre>
 *   bits 62-63 collective + 1   bits 60-61 type   bits 56-59 op   bits 32-55 root (mod 2^24)
 *   bit  31    contribution lies in the rank's shared buffer (not compared)
 *   bits 0-30  count
 * </pre>
 */
public final class Desc {
    public static final long SHARED = 1L << 31;

    private Desc() {
    }

    public static long make(Collective c, DataType t, Op op, int root, int count) {
        return ((long) (c.ordinal() + 1) << 62) | ((long) t.ordinal() << 60) | ((long) op.ordinal() << 56)
                | ((long) (root & 0xFFFFFF) << 32) | (count & 0x7FFFFFFFL);
    }

    /**
     * Bytes of the user's call a phase-3 part of {@code count} elements belongs to (the call's
     * count is in its descriptor): the size the tuning table's inter-node rules are keyed by, the
     * same on every node leader for every part of the call. A long call reaches phase 3 a slot or a
     * unit of slots at a time; looked up at the part's size, no rule above a slot would apply.
     */
    public static long callBytes(long desc, int count, DataType t) {
        return t == null ? 0 : Math.max((long) count, desc & 0x7FFFFFFFL) * t.size;
    }

    public static boolean differs(long a, long b) {
        return ((a ^ b) & ~SHARED) != 0;
    }

    public static boolean shared(long d) {
        return (d & SHARED) != 0;
    }

    /** Human form: {@code allreduce(count=5, DOUBLE, SUM)}, {@code reduce(count=1, INT, MAX, root=2)}, {@code barrier()}. */
    public static String describe(long d) {
        int c = (int) (d >>> 62) - 1;
        if (c < 0 || c >= Collective.values().length) {
            return "nothing (desc " + Long.toHexString(d) + ")";
        }
        Collective coll = Collective.values()[c];
        if (coll == Collective.BARRIER) {
            return "barrier()";
        }
        DataType t = DataType.values()[(int) (d >>> 60) & 3];
        int opi = (int) (d >>> 56) & 15;
        String op = opi < Op.values().length ? Op.values()[opi].name() : "op#" + opi;
        String s = coll.name().toLowerCase() + "(count=" + (d & 0x7FFFFFFFL) + ", " + t + ", " + op;
        if (coll == Collective.REDUCE) {
            s += ", root=" + ((d >>> 32) & 0xFFFFFF);
        }
        return s + ")";
    }
}
