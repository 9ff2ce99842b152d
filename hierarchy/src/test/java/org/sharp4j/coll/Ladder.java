package org.sharp4j.coll;

import java.lang.reflect.Field;
import java.util.Arrays;
import org.sharp4j.Communicator;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.Sharp4j;
import org.sharp4j.shm.Flags;
import org.sharp4j.tuning.Collective;

/**
 * Attribution ladder for the small-message hot path (issue 13; a measuring tool, not a test):
 * in the same processes, interleaved in blocks, an 8-byte Allreduce timed as OSU times it
 * (nanoTime around the call, an untimed {@code comm.barrier()} after it) at each layer:
 * RAW (the exchange's flag protocol alone on the real segment, spin loop), RAWcas (the same
 * between two compare-and-sets, as Engine's enter and exit), ALG ({@code runInline}), ENG
 * ({@code Engine.run}), API ({@code Communicator.allreduce}), BAR ({@code comm.barrier()} timed).
 * Per block the latencies of all ranks are summed per iteration and the P50 and P99 of the
 * sum divided by the ranks are printed (OSU's figure), then the median over rounds.
 * {@code bin/sharp4j-run -np 2 --cp hierarchy/target/test-classes org.sharp4j.coll.Ladder [rounds] [calls]}
 */
public final class Ladder {
    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        int calls = args.length > 1 ? Integer.parseInt(args[1]) : 20000;
        try (Communicator comm = Sharp4j.init()) {
            Engine e = comm.engine();
            Field f = Engine.class.getDeclaredField("exchange");
            f.setAccessible(true);
            ExchangeAlgorithm x = (ExchangeAlgorithm) f.get(e);
            String[] names = {"RAW", "RAWcas", "ALG", "ENG", "API", "BAR", "RAWbb", "APIbb", "BUFbb", "RAWown"};
            double[][] p50 = new double[names.length][rounds];
            double[][] p99 = new double[names.length][rounds];
            double[] lat = new double[calls];
            double[] sum = new double[calls];
            double[] in = {1.0 + e.rank};
            double[] out = new double[1];
            java.nio.ByteBuffer bin = java.nio.ByteBuffer.allocateDirect(64).order(java.nio.ByteOrder.nativeOrder());
            java.nio.ByteBuffer bout = java.nio.ByteBuffer.allocateDirect(64).order(java.nio.ByteOrder.nativeOrder());
            long desc = Desc.make(Collective.ALLREDUCE, DataType.DOUBLE, Op.SUM, 0, 1);
            int radix = e.table.treeRadixAt(Collective.ALLREDUCE, e.table.intraIndex(Collective.ALLREDUCE, 8));
            for (int r = -1; r < rounds; r++) {
                for (int l = 0; l < names.length; l++) {
                    comm.barrier();
                    for (int i = 0; i < calls; i++) {
                        long t0 = System.nanoTime();
                        switch (l) {
                            case 0: raw(e); break;
                            case 1:
                                if (!ST.compareAndSet(0, 1)) {
                                    throw new IllegalStateException();
                                }
                                raw(e);
                                if (!ST.compareAndSet(1, 0)) {
                                    throw new IllegalStateException();
                                }
                                break;
                            case 2:
                                e.src.array(in, 0);
                                e.dst.array(out, 0);
                                x.runInline(Collective.ALLREDUCE, DataType.DOUBLE, Op.SUM, 0, 1, desc, radix);
                                break;
                            case 3:
                                e.src.array(in, 0);
                                e.dst.array(out, 0);
                                e.run(Collective.ALLREDUCE, DataType.DOUBLE, Op.SUM, 0, 1);
                                break;
                            case 4: comm.allreduce(in, 0, out, 0, 1, Op.SUM); break;
                            case 5: comm.barrier(); break;
                            case 6: raw(e); break;
                            case 7: comm.allreduce(in, 0, out, 0, 1, Op.SUM); break;
                            case 8: comm.allreduce(bin, 0, bout, 0, 1, DataType.FLOAT, Op.SUM); break;
                            default: rawOwn(e); break;
                        }
                        long t1 = System.nanoTime();
                        lat[i] = t1 - t0;
                        if (l < 6 || l >= 9) {
                            comm.barrier(); // OSU: an untimed barrier after each call; the "bb" rows run back to back
                        }
                    }
                    comm.reduce(lat, 0, sum, 0, calls, Op.SUM, 0);
                    if (r < 0) {
                        continue;
                    }
                    Arrays.sort(sum);
                    p50[l][r] = sum[calls / 2] / e.size;
                    p99[l][r] = sum[calls * 99 / 100 - 1] / e.size;
                }
            }
            if (e.rank == 0) {
                StringBuilder sb = new StringBuilder();
                sb.append("ns, OSU P50 (P99) per round\n");
                for (int l = 0; l < names.length; l++) {
                    sb.append(String.format("%-7s", names[l]));
                    double[] m = p50[l].clone();
                    Arrays.sort(m);
                    for (int r = 0; r < rounds; r++) {
                        sb.append(String.format(" %5.0f(%5.0f)", p50[l][r], p99[l][r]));
                    }
                    sb.append(String.format("   median %5.0f%n", m[rounds / 2]));
                }
                System.out.print(sb);
            }
        }
    }

    /** The exchange's flag protocol alone on the real segment: publish seq (+8 B), spin on the peers'. */
    private static void raw(Engine e) {
        ShmLevel sock = e.sock;
        long s = e.nextSeq();
        int set = ShmLevel.set(s);
        int ctl = sock.ctl(set, sock.me);
        Flags.put(sock.buf, ctl + ShmLevel.INLINE, s);
        long target = ShmLevel.enc(s, ShmLevel.ARRIVED);
        Flags.release(sock.buf, ctl + ShmLevel.STATE, target);
        long acc = 0;
        for (int m = 0; m < sock.members; m++) {
            if (m == sock.me) {
                continue;
            }
            int oc = sock.ctl(set, m);
            while (Flags.acquire(sock.buf, oc + ShmLevel.STATE) < target) {
                Thread.onSpinWait();
            }
            acc += Flags.plain(sock.buf, oc + ShmLevel.INLINE);
        }
        sink += acc;
    }

    /** RAW, then a read of this rank's own published line (as a fold that takes its own input from the segment does). */
    private static void rawOwn(Engine e) {
        raw(e);
        ShmLevel sock = e.sock;
        sink += Flags.plain(sock.buf, sock.ctl(ShmLevel.set(e.seqForTests()), sock.me) + ShmLevel.INLINE);
    }

    static long sink;
    static volatile int state;
    static final java.lang.invoke.VarHandle ST;

    static {
        try {
            ST = java.lang.invoke.MethodHandles.lookup().findStaticVarHandle(Ladder.class, "state", int.class);
        } catch (ReflectiveOperationException x) {
            throw new ExceptionInInitializerError(x);
        }
    }
}
