package org.sharp4j.it;

import org.sharp4j.Communicator;
import org.sharp4j.Op;
import org.sharp4j.Sharp4j;

/**
 * A launcher rank for the close tests: {@code CloseLagMain LAGGARD SECONDS} makes one checked
 * Allreduce; then rank LAGGARD sleeps SECONDS before it closes, the others close at once. Every
 * rank prints {@code rank R closed in S s} (or the close's exception, then exits 1).
 */
public final class CloseLagMain {
    private CloseLagMain() {
    }

    public static void main(String[] args) throws Exception {
        int laggard = Integer.parseInt(args[0]);
        long sleepMs = Long.parseLong(args[1]) * 1000;
        Communicator c = Sharp4j.init();
        int[] in = {c.rank() + 1};
        int[] out = new int[1];
        c.allreduce(in, out, Op.SUM);
        int n = c.size();
        if (out[0] != n * (n + 1) / 2) {
            throw new AssertionError("rank " + c.rank() + ": allreduce gave " + out[0]);
        }
        if (c.rank() == laggard) {
            Thread.sleep(sleepMs);
        }
        long t0 = System.nanoTime();
        c.close();
        System.out.printf("rank %d closed in %.1f s%n", c.rank(), (System.nanoTime() - t0) / 1e9);
    }
}
