package org.sharp4j;

import java.util.SplittableRandom;
import org.sharp4j.topology.Topology;

/**
 * The documented reduction order, written independently of the library, plus the test inputs.
 *
 * <p>Tree algorithm: inside a socket a k-nomial fold over the socket's ranks (member m's
 * children are m + j k^l for positions l below m's lowest non-zero base-k digit, folded in
 * increasing distance), the same fold over the node's sockets, then over the nodes. Tiled
 * algorithm: left-to-right over the socket's ranks, left-to-right over the sockets, then the
 * k-nomial fold over nodes.
 */
public final class Reference {
    private Reference() {
    }

    /** Input element i of rank r for a call seeded with {@code seed}, as a double (exact in every type). */
    public static double input(DataType t, Op op, long seed, int rank, int i) {
        SplittableRandom rnd = new SplittableRandom(seed * 1_000_003L + rank * 7_919L + i);
        switch (op) {
            case LAND:
            case LOR:
                return rnd.nextInt(3) == 0 ? 0 : rnd.nextInt(1, 3); // a mix of false and "true" values
            case PROD:
                if (t.integral) {
                    return rnd.nextInt(-3, 4); // wraps on purpose for INT with many ranks
                }
                return (float) (0.5 + rnd.nextDouble() * 1.5);
            default:
                if (t.integral) {
                    return t == DataType.INT ? rnd.nextInt() : (double) rnd.nextInt(1 << 30) * (rnd.nextBoolean() ? 1 : -1);
                }
                return t == DataType.FLOAT ? (float) ((rnd.nextDouble() - 0.5) * 1e3) : (rnd.nextDouble() - 0.5) * 1e6;
        }
    }

    /** Exact long input for LONG (full 64-bit range for bitwise ops). */
    public static long inputLong(Op op, long seed, int rank, int i) {
        if (op == Op.BAND || op == Op.BOR || op == Op.BXOR || op == Op.MIN || op == Op.MAX || op == Op.SUM) {
            return new SplittableRandom(seed * 1_000_003L + rank * 7_919L + i).nextLong();
        }
        return (long) input(DataType.LONG, op, seed, rank, i);
    }

    static double opD(Op op, double a, double b, boolean isFloat) {
        double r;
        switch (op) {
            case SUM: r = a + b; break;
            case PROD: r = a * b; break;
            case MIN: r = Math.min(a, b); break;
            case MAX: r = Math.max(a, b); break;
            default: throw new IllegalArgumentException(op.toString());
        }
        return isFloat ? (float) r : r;
    }

    public static long opL(Op op, long a, long b, boolean isInt) {
        long r;
        switch (op) {
            case SUM: r = a + b; break;
            case PROD: r = a * b; break;
            case MIN: r = Math.min(a, b); break;
            case MAX: r = Math.max(a, b); break;
            case BAND: r = a & b; break;
            case BOR: r = a | b; break;
            case BXOR: r = a ^ b; break;
            case LAND: r = a != 0 && b != 0 ? 1 : 0; break;
            case LOR: r = a != 0 || b != 0 ? 1 : 0; break;
            default: throw new IllegalArgumentException(op.toString());
        }
        return isInt ? (int) r : r;
    }

    interface Fold {
        long combine(long a, long b); // values carried as raw bits for doubles
    }

    /** k-nomial fold of vals[] in the documented order. */
    static long knomial(long[] vals, int k, Fold f) {
        return sub(vals, 0, vals.length, k, f);
    }

    private static long sub(long[] v, int i, long limit, int k, Fold f) {
        long acc = v[i];
        for (long pow = 1; pow < limit && pow < v.length; pow *= k) {
            for (int j = 1; j < k; j++) {
                long c = i + j * pow;
                if (c < v.length) {
                    acc = f.combine(acc, sub(v, (int) c, pow, k, f));
                }
            }
        }
        return acc;
    }

    static long sequential(long[] vals, Fold f) {
        long acc = vals[0];
        for (int i = 1; i < vals.length; i++) {
            acc = f.combine(acc, vals[i]);
        }
        return acc;
    }

    /**
     * Expected element {@code i}, as raw bits (Double.doubleToRawLongBits / float bits / integer value).
     *
     * @param values value of element i on each rank, as raw bits of the type
     */
    public static long expected(Topology topo, boolean tree, int k, DataType t, Op op, long[] values) {
        Fold f;
        if (t.integral) {
            f = (a, b) -> opL(op, a, b, t == DataType.INT);
        } else if (t == DataType.FLOAT) {
            f = (a, b) -> Float.floatToRawIntBits((float) opD(op, Float.intBitsToFloat((int) a), Float.intBitsToFloat((int) b), true));
        } else {
            f = (a, b) -> Double.doubleToRawLongBits(opD(op, Double.longBitsToDouble(a), Double.longBitsToDouble(b), false));
        }
        long[] nodeVals = new long[topo.nodeCount()];
        for (int n = 0; n < topo.nodeCount(); n++) {
            long[] sockVals = new long[topo.socketCount(n)];
            for (int s = 0; s < sockVals.length; s++) {
                int[] ranks = topo.socketRanks(n, s);
                long[] v = new long[ranks.length];
                for (int j = 0; j < ranks.length; j++) {
                    v[j] = values[ranks[j]];
                }
                sockVals[s] = tree ? knomial(v, k, f) : sequential(v, f);
            }
            nodeVals[n] = tree ? knomial(sockVals, k, f) : sequential(sockVals, f);
        }
        return knomial(nodeVals, k, f);
    }
}
