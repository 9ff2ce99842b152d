package org.sharp4j.fallback.ucx;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.locks.LockSupport;
import org.sharp4j.Communicator;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.Sharp4j;
import org.sharp4j.it.DeoptRecorder;

/**
 * A launcher rank of {@link FirstLongCallsTest}: a program's first long calls between nodes after
 * {@code Sharp4j.init()} (whose heating takes the long paths across nodes), 64 KiB to 4 MiB, as a program with
 * unequal work makes them: in turns, one rank computes (sleeps) before its call while the others
 * wait in theirs, for 3 ms (past the wait's yield window: it parks) or 30 ms (past the failure
 * probe's interval), and in between calls in lockstep. Prints {@code rank R deopt ...} for each
 * deoptimization in {@code org.sharp4j} code from the first call on ({@link DeoptRecorder}), then
 * {@code rank R calls N}.
 *
 * <p>Such a deoptimization is C2 throwing compiled code away because the program took a branch the
 * heating never took, here the branches whose outcome is timing: a wait that lasts, a send still
 * in flight when tested, parts already complete when awaited. The calls after it run interpreted
 * while C2 recompiles on the rank's core (the port's rows showed calls of 1-2 ms at P90 after one).
 */
public final class FirstLongCallsMain {
    private FirstLongCallsMain() {
    }

    public static void main(String[] args) throws Exception {
        int rounds = Integer.parseInt(args[0]);
        try (DeoptRecorder deopts = new DeoptRecorder(); Communicator c = Sharp4j.init()) {
            org.sharp4j.coll.JitIdle.await(10_000, 200); // as the OSU ports before their first table
            c.barrier();
            deopts.countFromNow();
            int n = run(c, rounds);
            deopts.print(c.rank());
            c.barrier();
            System.out.println("rank " + c.rank() + " calls " + n);
        }
    }

    private static int run(Communicator c, int rounds) {
        // 4 MiB and a line: more later parts than phase 3 keeps in flight (parts of 1 MiB at 64 KiB chunks)
        int[] sizes = {64 << 10, 256 << 10, 1 << 20, (4 << 20) + 64};
        int max = sizes[sizes.length - 1];
        ByteBuffer in = ByteBuffer.allocateDirect(max).order(ByteOrder.nativeOrder());
        ByteBuffer out = ByteBuffer.allocateDirect(max).order(ByteOrder.nativeOrder());
        float[] fa = new float[max / 4];
        float[] fb = new float[max / 4];
        int n = 0;
        for (int r = 0; r < rounds; r++) {
            for (int bytes : sizes) {
                for (int late = -1; late < c.size(); late++) { // -1: in lockstep
                    for (long computeNanos : late < 0 ? new long[] {0} : new long[] {3_000_000, 30_000_000}) {
                        int root = (r + late + 1) % c.size();
                        compute(c, late, computeNanos);
                        c.allreduce(in, 0, out, 0, bytes / 8, DataType.DOUBLE, Op.SUM);
                        compute(c, late, computeNanos);
                        c.reduce(in, 0, out, 0, bytes / 4, DataType.FLOAT, Op.SUM, root);
                        compute(c, late, computeNanos);
                        c.allreduce(fa, 0, fb, 0, bytes / 4, Op.MAX);
                        compute(c, late, computeNanos);
                        c.reduce(fa, 0, fb, 0, bytes / 4, Op.SUM, root);
                        n += 4;
                    }
                }
            }
        }
        return n;
    }

    /** Rank {@code late} works for {@code nanos} (sleeping, as a rank whose core does other work), the others go on. */
    private static void compute(Communicator c, int late, long nanos) {
        if (c.rank() == late && nanos > 0) {
            long end = System.nanoTime() + nanos;
            for (long left; (left = end - System.nanoTime()) > 0; ) {
                LockSupport.parkNanos(left);
            }
        }
    }
}
