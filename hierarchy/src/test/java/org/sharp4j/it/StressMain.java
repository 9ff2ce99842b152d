package org.sharp4j.it;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import org.sharp4j.Communicator;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.SharedBuffer;
import org.sharp4j.Sharp4j;

/**
 * A rank of the multi-process tests: {@code StressMain ITERATIONS SEED} runs that many mixed
 * back-to-back collectives (random kind, type, op, size, root and API, the same sequence on every
 * rank) and checks every result; ITERATIONS &lt; 0 loops until something fails. Inputs are small
 * integers so that every reduction is exact in every type and any order: the check needs no
 * knowledge of the algorithm. Exit code 3 on a wrong result.
 */
public final class StressMain {
    private StressMain() {
    }

    public static void main(String[] args) {
        long iterations = Long.parseLong(args[0]);
        long seed = Long.parseLong(args[1]);
        try (Communicator comm = Sharp4j.init()) {
            int me = comm.rank();
            int n = comm.size();
            String whyNot = comm.engine().peerReadsWhyNot();
            System.out.println("rank " + me + " peer reads: " + (whyNot == null ? "yes" : "no (" + whyNot + ")"));
            System.out.println("rank " + me + " pid " + ProcessHandle.current().pid() + " ready");
            System.out.flush();
            SplittableRandom rnd = new SplittableRandom(seed);
            SharedBuffer shared = comm.sharedBuffer();
            ByteBuffer send = ByteBuffer.allocateDirect(8 * 40_000).order(ByteOrder.nativeOrder());
            ByteBuffer recv = ByteBuffer.allocateDirect(8 * 40_000).order(ByteOrder.nativeOrder());
            long[] in = new long[40_000];
            long[] out = new long[40_000];
            long[] expect = new long[40_000];
            for (long it = 0; iterations < 0 || it < iterations; it++) {
                int kind = rnd.nextInt(10); // 0-5 allreduce, 6-8 reduce, 9 barrier
                int pick = rnd.nextInt(100);
                int count = pick < 90 ? rnd.nextInt(64) : pick < 99 ? rnd.nextInt(64, 4096) : rnd.nextInt(4096, 40_000);
                DataType t = DataType.values()[rnd.nextInt(4)];
                Op[] ops = t.integral ? Op.values() : new Op[] {Op.SUM, Op.MIN, Op.MAX};
                Op op = ops[rnd.nextInt(ops.length)];
                int root = rnd.nextInt(n);
                int api = rnd.nextInt(3); // arrays, buffers, shared
                if (kind == 9) {
                    comm.barrier();
                    continue;
                }
                boolean reduce = kind >= 6;
                for (int i = 0; i < count; i++) {
                    in[i] = value(it, me, i, op);
                    long e = value(it, 0, i, op);
                    for (int r = 1; r < n; r++) {
                        e = apply(op, e, value(it, r, i, op), t);
                    }
                    expect[i] = e;
                }
                boolean gets = !reduce || me == root;
                if (api == 0) {
                    runArrays(comm, reduce, t, op, count, root, in, out);
                } else {
                    ByteBuffer s = api == 2 ? shared.buffer() : send;
                    for (int i = 0; i < count; i++) {
                        putValue(s, t, i, in[i]);
                    }
                    if (api == 2) {
                        if (reduce) {
                            comm.reduce(shared, count, t, op, root);
                        } else {
                            comm.allreduce(shared, count, t, op);
                        }
                    } else if (reduce) {
                        comm.reduce(send, 0, gets ? recv : null, 0, count, t, op, root);
                    } else {
                        comm.allreduce(send, 0, recv, 0, count, t, op);
                    }
                    ByteBuffer r = api == 2 ? shared.buffer() : recv;
                    for (int i = 0; gets && i < count; i++) {
                        out[i] = getValue(r, t, i);
                    }
                }
                for (int i = 0; gets && i < count; i++) {
                    if (out[i] != expect[i]) {
                        System.out.println("rank " + me + ": WRONG RESULT at collective " + it + " (" + (reduce ? "reduce root " + root : "allreduce")
                                + " " + t + " " + op + " count " + count + " api " + api + ") element " + i + ": got " + out[i]
                                + " expected " + expect[i]);
                        System.exit(3);
                    }
                }
            }
            System.out.println("rank " + me + ": " + iterations + " collectives OK");
            System.out.println("rank " + me + ": split cma calls: " + comm.engine().cmaSplitCalls());
        }
    }

    static long value(long it, int rank, int i, Op op) {
        long h = (it * 31 + rank) * 1_000_003L + i;
        h ^= h >>> 29;
        h *= 0xBF58476D1CE4E5B9L;
        h ^= h >>> 32;
        if (op == Op.PROD || op == Op.LAND || op == Op.LOR) {
            return Math.floorMod(h, 3) - (op == Op.PROD ? 1 : 0); // -1..1 or 0..2
        }
        return Math.floorMod(h, 2001) - 1000;
    }

    static long apply(Op op, long a, long b, DataType t) {
        switch (op) {
            case SUM: return a + b;
            case PROD: return a * b;
            case MIN: return Math.min(a, b);
            case MAX: return Math.max(a, b);
            case BAND: return a & b;
            case BOR: return a | b;
            case BXOR: return a ^ b;
            case LAND: return a != 0 && b != 0 ? 1 : 0;
            default: return a != 0 || b != 0 ? 1 : 0;
        }
    }

    static void putValue(ByteBuffer b, DataType t, int i, long v) {
        switch (t) {
            case INT: b.putInt(4 * i, (int) v); break;
            case LONG: b.putLong(8 * i, v); break;
            case FLOAT: b.putFloat(4 * i, v); break;
            default: b.putDouble(8 * i, v);
        }
    }

    static long getValue(ByteBuffer b, DataType t, int i) {
        switch (t) {
            case INT: return b.getInt(4 * i);
            case LONG: return b.getLong(8 * i);
            case FLOAT: return (long) b.getFloat(4 * i);
            default: return (long) b.getDouble(8 * i);
        }
    }

    static void runArrays(Communicator comm, boolean reduce, DataType t, Op op, int count, int root, long[] in, long[] out) {
        boolean gets = !reduce || comm.rank() == root;
        switch (t) {
            case LONG:
                if (reduce) {
                    comm.reduce(in, 0, gets ? out : null, 0, count, op, root);
                } else {
                    comm.allreduce(in, 0, out, 0, count, op);
                }
                return;
            case INT: {
                int[] s = new int[count];
                int[] r = new int[count];
                for (int i = 0; i < count; i++) {
                    s[i] = (int) in[i];
                }
                if (reduce) {
                    comm.reduce(s, 0, gets ? r : null, 0, count, op, root);
                } else {
                    comm.allreduce(s, 0, r, 0, count, op);
                }
                for (int i = 0; i < count; i++) {
                    out[i] = r[i];
                }
                return;
            }
            case FLOAT: {
                float[] s = new float[count];
                float[] r = new float[count];
                for (int i = 0; i < count; i++) {
                    s[i] = in[i];
                }
                if (reduce) {
                    comm.reduce(s, 0, gets ? r : null, 0, count, op, root);
                } else {
                    comm.allreduce(s, 0, r, 0, count, op);
                }
                for (int i = 0; i < count; i++) {
                    out[i] = (long) r[i];
                }
                return;
            }
            default: {
                double[] s = new double[count];
                double[] r = new double[count];
                for (int i = 0; i < count; i++) {
                    s[i] = in[i];
                }
                if (reduce) {
                    comm.reduce(s, 0, gets ? r : null, 0, count, op, root);
                } else {
                    comm.allreduce(s, 0, r, 0, count, op);
                }
                for (int i = 0; i < count; i++) {
                    out[i] = (long) r[i];
                }
            }
        }
    }
}
