package org.sharp4j.fallback.algo;

import java.nio.ByteBuffer;
import org.sharp4j.DataType;
import org.sharp4j.Op;

/**
 * Reduce to any root by a k-nomial tree on virtual ranks {@code v = (r - root) mod n}, any team
 * size, radix 2..8:
 * <pre>
 *   for step = 1, k, k^2, ... while step &lt; n  (level = log_k step, the round of the tag):
 *     d = floor(v / step) mod k
 *     d != 0: send the vector to the parent v - d*step (this rank's position in its group is d); stop
 *     d == 0: receive from the children v + j*step, j = 1..k-1, those &lt; n, and fold them in:
 *             acc = ((acc op c1) op c2) ... by position j
 * </pre>
 * Every rank reaching a level has {@code v mod step == 0}, so its digits below the level are zero
 * and its children's subtrees (the ranks v + j*step + [0, step)) are complete before they send:
 * virtual rank 0, the root, ends with everyone's contribution after ceil(log_k n) levels, with
 * (k-1) receives per level at most, each pipelined by fragments.
 *
 * <p>Runs on data rounds only, after a spine that ended ok (so every rank agrees on the root); the
 * host path reduces vectors of one fragment with the merged recursive k-ing instead (same latency,
 * and every node learns the status in the same messages). No allocation per call.
 */
public final class KnomialReduce {
    private final Exchange x;

    public KnomialReduce(Exchange x) {
        this.x = x;
    }

    /** Tree reduce of {@code count} elements to {@code root}; {@code me} and {@code root} are node indices of a team of n. */
    public void run(int n, int k, int me, int root, ByteBuffer u, int off, int count, DataType t, Op op) {
        run(x, n, k, me, root, u, off, count, t, op);
    }

    /** The same rounds into {@code x} (run now by an Exchange, or recorded by a {@link Schedule}). */
    public void run(RoundSink x, int n, int k, int me, int root, ByteBuffer u, int off, int count, DataType t, Op op) {
        final int v = Math.floorMod(me - root, n);
        int level = 0;
        for (long step = 1; step < n; step *= k, level++) {
            int d = (int) ((v / step) % k);
            if (d != 0) {
                int parent = (int) (v - d * step);
                x.group(2, 1);
                x.member(0, (parent + root) % n);
                x.sendTo(0, 0, count);
                x.dataRound(level, u, off, t, op, false);
                return;
            }
            int g = 1;
            while (g < k && v + g * step < n) {
                g++;
            }
            x.group(g, 0);
            for (int j = 1; j < g; j++) {
                x.member(j, (int) ((v + j * step + root) % n));
                x.recvFrom(j, 0, count);
            }
            x.dataRound(level, u, off, t, op, true);
        }
    }

    /** The parent of {@code me} in the tree rooted at {@code root}, -1 for the root (for tests and diagnostics). */
    public static int parent(int n, int k, int me, int root) {
        int v = Math.floorMod(me - root, n);
        for (long step = 1; step < n; step *= k) {
            int d = (int) ((v / step) % k);
            if (d != 0) {
                return (int) ((v - d * step + root) % n);
            }
        }
        return -1;
    }
}
