package org.sharp4j.it;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.sharp4j.Communicator;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.Sharp4j;

/**
 * A launcher rank for {@link FirstCallsTest}: after {@code Sharp4j.init()} (which heats the paths),
 * a program's first calls in every form the heating covers, on this program's own arrays and
 * buffers, while a JFR stream records the JIT's deoptimizations ({@link DeoptRecorder}). Prints {@code rank R deopt
 * METHOD@BCI REASON ACTION} for each one in {@code org.sharp4j} code, then {@code rank R calls N}.
 *
 * <p>A deoptimization here means C2 compiled a branch of the hot path as a trap because the heating
 * never took it, and the program's first calls throw the compiled code away and run interpreted
 * while it recompiles, on the rank's core (the first 1,000 calls at 1.2-2.5x their steady state).
 */
public final class FirstCallsMain {
    /** The closing run of Reduces: C2 compiles a method after about 5,000 calls of C1's profiling version. */
    static final int REDUCE_RUN_CALLS = 8_000;

    private FirstCallsMain() {
    }

    public static void main(String[] args) throws Exception {
        int calls = Integer.parseInt(args[0]);
        try (DeoptRecorder deopts = new DeoptRecorder(); Communicator c = Sharp4j.init()) {
            run(c, calls, deopts);
        }
    }

    private static void run(Communicator c, int calls, DeoptRecorder deopts) throws Exception {
        // As the OSU ports do before their first table: the JIT idle for 200 ms, so that what the
        // heating queued is compiled (from the heating's profile) before the first call.
        org.sharp4j.coll.JitIdle.await(10_000, 200);
        c.barrier();
        deopts.countFromNow();
        // this program's own memory, not the heating's
        ByteBuffer in = ByteBuffer.allocateDirect(4096).order(ByteOrder.nativeOrder());
        ByteBuffer out = ByteBuffer.allocateDirect(4096).order(ByteOrder.nativeOrder());
        float[] fa = new float[1024];
        float[] fb = new float[1024];
        double[] da = new double[512];
        int[] ia = new int[1024];
        long[] la = new long[512];
        long[] lb = new long[512];
        int root = c.size() - 1;
        int n = 0;
        for (int bytes : new int[] {8, 256}) {
            int k4 = bytes / 4;
            int k8 = bytes / 8;
            for (int i = 0; i < calls; i++, n++) {
                c.allreduce(in, 0, out, 0, k4, DataType.FLOAT, Op.SUM);
                c.reduce(in, 0, out, 0, k4, DataType.FLOAT, Op.SUM, root);
                c.allreduce(in, 0, k8, DataType.DOUBLE, Op.MAX);
                c.reduce(in, 0, k8, DataType.DOUBLE, Op.MAX, root);
                c.allreduce(fa, 0, fb, 0, k4, Op.SUM);
                c.reduce(la, 0, lb, 0, k8, Op.MIN, root);
                c.allreduce(ia, 0, k4, Op.BOR);
                c.reduce(da, 0, k8, Op.PROD, root);
                c.barrier();
            }
        }
        // Then a program's first long calls (one of each path the built-in table gives this job: for
        // two ranks the exchange up to 16 KiB, the tree's Reduce at 16 KiB, tiled, pipelined and the
        // direct Reduce above), and small calls again: the dispatch they share with the small calls
        // must have seen every algorithm in the heating (Communicator.PathProbes), or C2 compiled the
        // others as traps and the first long call throws Engine.run away.
        ByteBuffer bigIn = ByteBuffer.allocateDirect(256 * 1024).order(ByteOrder.nativeOrder());
        ByteBuffer bigOut = ByteBuffer.allocateDirect(256 * 1024).order(ByteOrder.nativeOrder());
        for (int bytes : new int[] {16384, 32768, 65536, 262144}) {
            for (int i = 0; i < 3; i++, n++) {
                c.allreduce(bigIn, 0, bigOut, 0, bytes / 8, DataType.DOUBLE, Op.SUM);
                c.reduce(bigIn, 0, bigOut, 0, bytes / 8, DataType.DOUBLE, Op.SUM, root);
            }
        }
        for (int i = 0; i < calls; i++, n++) {
            c.allreduce(in, 0, out, 0, 2, DataType.FLOAT, Op.SUM);
            c.reduce(in, 0, out, 0, 2, DataType.FLOAT, Op.SUM, root);
            c.barrier();
        }
        // Then a run of Reduces to one root and nothing between them, as an OSU Reduce table makes: from the
        // SETS-th on (ShmLevel.SETS), a non-root waits at the reuse gate before every call, which none of the calls above did
        // (Communicator.REDUCE_RUN). Enough of them for C2 to have compiled what the heating left to it.
        for (int i = 0; i < REDUCE_RUN_CALLS; i++, n++) {
            c.reduce(in, 0, out, 0, 2, DataType.FLOAT, Op.SUM, root);
        }
        deopts.print(c.rank());
        c.barrier();
        System.out.println("rank " + c.rank() + " calls " + n);
    }
}
