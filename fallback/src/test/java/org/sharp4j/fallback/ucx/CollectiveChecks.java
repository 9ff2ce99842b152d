package org.sharp4j.fallback.ucx;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import org.sharp4j.Communicator;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.Reference;

/**
 * Allreduce, Reduce and Barrier checks that need no knowledge of the inter-node algorithm: inputs
 * are small integers (also as FLOAT and DOUBLE), so every reduction order gives the same bits and
 * the expected value is a plain fold; and random doubles, whose result must be bit-identical on
 * every rank (each reduces in the same order) and close to the sequential sum. Used by the
 * in-JVM tests and, as {@link CollectivesMain}, by the process and network-namespace tests.
 * Throws {@link AssertionError} naming the call on a wrong result.
 */
final class CollectiveChecks {
    private final Communicator comm;
    private final ByteBuffer send;
    private final ByteBuffer recv;
    private final int capacityElems8;
    long calls;

    CollectiveChecks(Communicator comm, int maxBytes) {
        this.comm = comm;
        this.send = ByteBuffer.allocateDirect(maxBytes + 64).order(ByteOrder.nativeOrder());
        this.recv = ByteBuffer.allocateDirect(maxBytes + 64).order(ByteOrder.nativeOrder());
        this.capacityElems8 = maxBytes / 8;
    }

    /** Input element i of rank r: small integers (exact in every type and order). */
    static long value(long seed, int rank, int i, Op op) {
        long h = (seed * 1_000_003L + rank) * 0x9E3779B97F4A7C15L + i * 0xBF58476D1CE4E5B9L;
        h ^= h >>> 31;
        switch (op) {
            case PROD:
                return new long[] {1, -1, 2, 1, -2, 1, 1, -1}[(int) Math.floorMod(h, 8)];
            case LAND:
            case LOR:
                return Math.floorMod(h, 3);
            default:
                return Math.floorMod(h, 2001) - 1000;
        }
    }

    /** One integer op as the documented reference computes it ({@link Reference#opL}). */
    static long apply(Op op, long a, long b, DataType t) {
        return Reference.opL(op, a, b, t == DataType.INT);
    }

    static void put(ByteBuffer b, DataType t, int i, long v) {
        switch (t) {
            case INT: b.putInt(4 * i, (int) v); break;
            case LONG: b.putLong(8 * i, v); break;
            case FLOAT: b.putFloat(4 * i, v); break;
            default: b.putDouble(8 * i, v);
        }
    }

    static long get(ByteBuffer b, DataType t, int i) {
        switch (t) {
            case INT: return b.getInt(4 * i);
            case LONG: return b.getLong(8 * i);
            case FLOAT: return (long) b.getFloat(4 * i);
            default: return (long) b.getDouble(8 * i);
        }
    }

    /** One allreduce (root &lt; 0) or reduce to {@code root}, checked on every rank that gets a result. */
    void exact(DataType t, Op op, int count, int root, long seed) {
        int me = comm.rank();
        int n = comm.size();
        for (int i = 0; i < count; i++) {
            put(send, t, i, value(seed, me, i, op));
            put(recv, t, i, 0x5a5a);
        }
        if (root < 0) {
            comm.allreduce(send, 0, recv, 0, count, t, op);
        } else {
            comm.reduce(send, 0, me == root ? recv : null, 0, count, t, op, root);
        }
        calls++;
        if (root >= 0 && me != root) {
            return;
        }
        for (int i = 0; i < count; i++) {
            long e = value(seed, 0, i, op);
            for (int r = 1; r < n; r++) {
                e = apply(op, e, value(seed, r, i, op), t);
            }
            long got = get(recv, t, i);
            if (got != e) {
                throw new AssertionError((root < 0 ? "allreduce" : "reduce to " + root) + " " + t + " " + op + " count "
                        + count + " seed " + seed + " on rank " + me + " of " + n + ": element " + i + " is " + got
                        + ", expected " + e);
            }
        }
    }

    /** Random doubles: the same bits on every rank, and within rounding of the sequential sum. */
    void bitIdentical(int count, long seed) {
        int me = comm.rank();
        int n = comm.size();
        count = Math.min(count, capacityElems8);
        for (int i = 0; i < count; i++) {
            send.putDouble(8 * i, random(seed, me, i));
        }
        comm.allreduce(send, 0, recv, 0, count, DataType.DOUBLE, Op.SUM);
        calls++;
        long hash = 17;
        for (int i = 0; i < count; i++) {
            double expect = 0;
            for (int r = 0; r < n; r++) {
                expect += random(seed, r, i);
            }
            double got = recv.getDouble(8 * i);
            if (Math.abs(got - expect) > 1e-9 * n * 1e6) {
                throw new AssertionError("allreduce DOUBLE SUM of random values, count " + count + " on rank " + me
                        + ": element " + i + " is " + got + ", expected about " + expect);
            }
            hash = hash * 31 + Double.doubleToRawLongBits(got);
        }
        long[] h = {hash};
        long[] lo = new long[1];
        long[] hi = new long[1];
        comm.allreduce(h, 0, lo, 0, 1, Op.MIN);
        comm.allreduce(h, 0, hi, 0, 1, Op.MAX);
        calls += 2;
        if (lo[0] != hi[0]) {
            throw new AssertionError("allreduce DOUBLE SUM of random values, count " + count
                    + ": the ranks got different bits (not bit-identical everywhere)");
        }
    }

    static double random(long seed, int rank, int i) {
        return (new SplittableRandom(seed * 7919 + rank * 1_000_003L + i).nextDouble() - 0.5) * 1e6;
    }

    /** Every type and op at small and medium counts, reduce to every root, barriers in between. */
    void everything(int[] counts, long seed) {
        int n = comm.size();
        for (DataType t : DataType.values()) {
            for (Op op : Op.values()) {
                if (!op.validFor(t)) {
                    continue;
                }
                for (int count : counts) {
                    if (count * t.size > capacityElems8 * 8) {
                        continue;
                    }
                    seed++;
                    exact(t, op, count, -1, seed);
                    exact(t, op, count, (int) (seed % n), seed + 1);
                }
                comm.barrier();
                calls++;
            }
        }
        for (int root = 0; root < n; root++) {
            for (int count : new int[] {1, 3000}) {
                exact(DataType.LONG, Op.SUM, count, root, seed + 100 + root);
                exact(DataType.DOUBLE, Op.MAX, count, root, seed + 200 + root);
            }
        }
    }
}
