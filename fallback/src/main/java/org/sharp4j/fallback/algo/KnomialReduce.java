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
 * <p>{@link #run} runs on data rounds only, after a spine that ended ok (so every rank agrees on the
 * root). A vector of one fragment to node 0 runs {@link #runMerged} instead: the tree to node 0
 * inside the spine's own rounds, so the argument check costs no round of its own; to another root
 * the host path runs the merged recursive k-ing (every node learns the status in the same
 * messages). No allocation per call.
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

    /**
     * Spine form of a reduce to node 0 of at most one fragment ({@code count * t.size <=
     * x.fragBytes()}): the spine's rounds of pattern {@code p} (recursive k-ing), so every node still
     * merges every header and ends with the same status, but the data goes only up the k-nomial tree
     * those rounds contain:
     * <pre>
     *   fold-in (round 0):    an EXTRA sends its vector to its PROXY, which computes proxy op extra
     *   iteration i (round 1+i), a group whose members lead at i (loop rank mod k^i == 0):
     *                         positions 1..g-1 send their vector to position 0, which computes
     *                         ((p0 op p1) op p2) ... op p(g-1) by position
     *   every other message:  a header only (a group that does not lead, the headers to positions
     *                         other than 0, the fold-out to the extras)
     * </pre>
     * A member that leads at i holds the combination of its block (the k^i loop ranks that share its
     * digits from i up), bracketed as recursive k-ing brackets it, since the groups and positions are
     * the same: so node 0 (loop rank 0) ends with the bits {@link KnomialAllreduce#runMerged} gives
     * every node. Each other node sends its vector once, in the first iteration where its digit is
     * not 0, and then headers only; node 0 receives (k-1) vectors per iteration. Against the merged
     * allreduce a non-root node neither receives nor folds a vector, and waits only for headers:
     * with 2 nodes the root's node waits for one message carrying data and the other node for a
     * header, where both waited for the other's data.
     *
     * <p>Leaders that disagree on the root send data where the others send headers: receives take
     * a whole slot and the headers say what each leader called, so the spine ends in a mismatch on
     * every node as for any disagreement. Nodes other than 0 end with partial combinations in
     * {@code u}: only node 0's result is the reduction.
     */
    public void runMerged(KnomialPattern p, ByteBuffer u, int off, int count, DataType t, Op op) {
        final int last = p.iterations + 1;
        if (p.role == KnomialPattern.EXTRA) {
            x.group(2, 1);
            x.member(0, p.partner);
            x.sendTo(0, 0, count);
            x.spineRound(0, u, off, t, op, false);       // this node's vector to its proxy
            x.group(2, 1);
            x.member(0, p.partner);
            x.recvFrom(0, 0, 0);
            x.spineRound(last, u, off, t, op, true);     // the proxy's header: the status
            return;
        }
        if (p.role == KnomialPattern.PROXY) {
            x.group(2, 0);
            x.member(1, p.partner);
            x.recvFrom(1, 0, count);
            x.spineRound(0, u, off, t, op, false);       // proxy op extra
        }
        for (int i = 0; i < p.iterations; i++) {
            final int g = p.groupSize(i);
            final int mp = p.position(i);
            final boolean leads = p.leads(i);
            x.group(g, mp);
            for (int pos = 0; pos < g; pos++) {
                if (pos != mp) {
                    x.member(pos, p.peer(i, pos));
                    x.sendTo(pos, 0, leads && pos == 0 ? count : 0);
                    x.recvFrom(pos, 0, leads && mp == 0 ? count : 0);
                }
            }
            x.spineRound(1 + i, u, off, t, op, false);   // at a leading position 0: p0 op p1 op ... by position
        }
        if (p.role == KnomialPattern.PROXY) {
            x.group(2, 0);
            x.member(1, p.partner);
            x.sendTo(1, 0, 0);
            x.spineRound(last, u, off, t, op, false);    // the status to the extra
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
