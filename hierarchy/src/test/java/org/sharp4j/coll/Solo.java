package org.sharp4j.coll;

import java.lang.reflect.Field;
import org.sharp4j.Communicator;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.Sharp4j;
import org.sharp4j.tuning.Collective;

/**
 * Software cost per layer without any coherence traffic: a one-rank communicator (a measuring
 * tool, not a test). {@code java -cp ... org.sharp4j.coll.Solo [rounds]} prints ns per call.
 */
public final class Solo {
    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        System.setProperty("sharp4j.bootstrap", "singleton");
        try (Communicator comm = Sharp4j.init()) {
            Engine e = comm.engine();
            Field f = Engine.class.getDeclaredField("exchange");
            f.setAccessible(true);
            ExchangeAlgorithm x = (ExchangeAlgorithm) f.get(e);
            double[] in = {1.5};
            double[] out = new double[1];
            long desc = Desc.make(Collective.ALLREDUCE, DataType.DOUBLE, Op.SUM, 0, 1);
            String[] names = {"ALG", "ENG", "API", "ENGb", "APIb", "RAW", "RAWU"};
            int n = 2_000_000;
            for (int r = 0; r < rounds; r++) {
                StringBuilder sb = new StringBuilder();
                for (int l = 0; l < names.length; l++) {
                    if (args.length > 1 && !names[l].equals(args[1])) {
                        continue;
                    }
                    long t0 = System.nanoTime();
                    for (int i = 0; i < n; i++) {
                        switch (l) {
                            case 0:
                                e.src.array(in, 0);
                                e.dst.array(out, 0);
                                x.run(Collective.ALLREDUCE, DataType.DOUBLE, Op.SUM, 0, 1, desc, 2);
                                break;
                            case 1:
                                e.src.array(in, 0);
                                e.dst.array(out, 0);
                                e.run(Collective.ALLREDUCE, DataType.DOUBLE, Op.SUM, 0, 1);
                                break;
                            case 2: comm.allreduce(in, 0, out, 0, 1, Op.SUM); break;
                            case 3:
                                e.src.none();
                                e.dst.none();
                                e.run(Collective.BARRIER, null, null, 0, 0);
                                break;
                            case 4: comm.barrier(); break;
                            case 5: raw(e, in, out); break;
                            default: rawU(e, in, out); break;
                        }
                    }
                    sb.append(String.format("%s %.1f  ", names[l], (System.nanoTime() - t0) / (double) n));
                }
                System.out.println(sb);
            }
        }
    }

    static void raw(Engine e, double[] in, double[] out) {
        ShmLevel sock = e.sock;
        long s = e.nextSeq();
        int set = ShmLevel.set(s);
        int ctl = sock.ctl(set, sock.me);
        org.sharp4j.shm.Flags.put(sock.buf, ctl + ShmLevel.INLINE, Double.doubleToRawLongBits(in[0]));
        org.sharp4j.shm.Flags.put(sock.buf, ctl + ShmLevel.DESC, 5);
        long target = ShmLevel.enc(s, ShmLevel.ARRIVED);
        org.sharp4j.shm.Flags.release(sock.buf, ctl + ShmLevel.STATE, target);
        while (org.sharp4j.shm.Flags.acquire(sock.buf, ctl + ShmLevel.STATE) < target) {
            Thread.onSpinWait();
        }
        out[0] = Double.longBitsToDouble(org.sharp4j.shm.Flags.plain(sock.buf, ctl + ShmLevel.INLINE));
    }

    static void rawU(Engine e, double[] in, double[] out) {
        ShmLevel sock = e.sock;
        sun.misc.Unsafe u = RawMemory.Holder.U;
        long base = u.getLong(sock.buf, RawMemory.Holder.ADDRESS);
        long s = e.nextSeq();
        int set = ShmLevel.set(s);
        long ctl = base + sock.ctl(set, sock.me);
        u.putDouble(ctl + ShmLevel.INLINE, in[0]);
        u.putLong(ctl + ShmLevel.DESC, 5);
        long target = ShmLevel.enc(s, ShmLevel.ARRIVED);
        u.putOrderedLong(null, ctl + ShmLevel.STATE, target);
        while (u.getLongVolatile(null, ctl + ShmLevel.STATE) < target) {
            Thread.onSpinWait();
        }
        out[0] = u.getDouble(ctl + ShmLevel.INLINE);
        java.lang.ref.Reference.reachabilityFence(sock.buf);
    }
}
