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
 * root). A vector of one fragment runs {@link #runMerged} instead: the tree inside the spine's own
 * rounds, so the argument check costs no round of its own. No allocation per call.
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
     * Spine form of a reduce of at most one fragment ({@code count * t.size <= x.fragBytes()}): the
     * spine's rounds of pattern {@code p} (recursive k-ing), so every node still merges every header
     * and ends with the same status, but the data goes only up the k-nomial tree those rounds
     * contain towards the root. With {@code R} the root's loop rank (its proxy's for an extra):
     * <pre>
     *   fold-in (round 0):    an EXTRA sends its vector to its PROXY, which computes proxy op extra
     *   iteration i (round 1+i), a group whose members have R's digits below i (lr mod k^i == R mod k^i):
     *                         every position but R's digit i (floor(R / k^i) mod k) sends its vector
     *                         to that position, which computes ((p0 op p1) op p2) ... op p(g-1)
     *   fold-out (round L+1): a PROXY whose extra is the root sends it the result
     *   every other message:  a header only
     * </pre>
     * A member on the tree at i holds the combination of its block (the k^i loop ranks that share its
     * digits from i up), bracketed as recursive k-ing brackets it, since the groups and positions are
     * the same: so the root ends with the bits {@link KnomialAllreduce#runMerged} gives every node.
     * Each other node sends one vector, then headers only: an extra in the fold-in, a loop rank in the
     * first iteration where its digit is not R's, and the proxy of an extra root its result in the
     * fold-out. Against the merged allreduce a node neither receives nor folds a vector it
     * does not need, and a non-root node waits only for headers: with 2 nodes the root waits for one
     * message carrying data and the other node for a header, where both waited for the other's data.
     *
     * <p>Every node sends to and receives from every member of its groups, whatever the root, with a
     * header or a vector: leaders that disagree on the root (or anything else) exchange the same
     * messages, each matched by a receive of a whole slot, and the headers end the spine in a
     * mismatch on every node. Nodes other than the root end with partial combinations in {@code u}.
     */
    public void runMerged(KnomialPattern p, int root, ByteBuffer u, int off, int count, DataType t, Op op) {
        final int last = p.iterations + 1;
        final int rootExtra = p.loopRankOf(root) < 0 ? root : -1;
        final int rl = p.loopRankOf(rootExtra >= 0 ? root - 1 : root);
        if (p.role == KnomialPattern.EXTRA) {
            x.group(2, 1);
            x.member(0, p.partner);
            x.sendTo(0, 0, count);
            x.spineRound(0, u, off, t, op, false);       // this node's vector to its proxy
            x.group(2, 1);
            x.member(0, p.partner);
            x.recvFrom(0, 0, p.rank == rootExtra ? count : 0);
            x.spineRound(last, u, off, t, op, true);     // the proxy's header (and the result, to the root)
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
            final boolean onTree = p.sameDigitsBelow(i, rl);
            final int to = p.positionOf(i, rl);
            x.group(g, mp);
            for (int pos = 0; pos < g; pos++) {
                if (pos != mp) {
                    x.member(pos, p.peer(i, pos));
                    x.sendTo(pos, 0, onTree && pos == to ? count : 0);
                    x.recvFrom(pos, 0, onTree && mp == to ? count : 0);
                }
            }
            x.spineRound(1 + i, u, off, t, op, false);   // at the receiving position: p0 op p1 op ... by position
        }
        if (p.role == KnomialPattern.PROXY) {
            x.group(2, 0);
            x.member(1, p.partner);
            x.sendTo(1, 0, p.partner == rootExtra ? count : 0);
            x.spineRound(last, u, off, t, op, false);    // the status (and the result) to the extra
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
