package org.sharp4j.fallback.algo;

import java.nio.ByteBuffer;
import org.sharp4j.DataType;
import org.sharp4j.Op;

/**
 * Allreduce by scatter-reduce-allgather (Rabenseifner's algorithm generalised to radix k) over a
 * {@link KnomialPattern}, for any team size and any count (also count &lt; n and counts that do
 * not divide):
 *
 * <ol>
 *   <li>fold-in (round 0): each EXTRA sends its whole vector to its PROXY ({@code proxy op extra});</li>
 *   <li>reduce-scatter, iterations i = 0..L-1 (rounds 1..L): the members of a group share a range
 *       {@code [lo, lo+len)} (everyone starts with the whole vector). It is cut into g blocks by
 *       position, block b = {@code [lo + b*q + min(b, r), +q + (b < r ? 1 : 0))} with
 *       {@code q = len / g}, {@code r = len mod g}. A member at position m sends block b to position
 *       b and receives block m from everyone, reducing it in position order; its range becomes
 *       block m. After L iterations the base ranks own disjoint blocks that tile the vector, each
 *       fully reduced, bracketed exactly as recursive k-ing brackets it ({@link KnomialAllreduce});</li>
 *   <li>allgather, iterations i = L-1..0 (rounds L+1..2L): a member sends its level-(i+1) range
 *       (block m of the level-i range) to the other members and receives their blocks straight
 *       into the buffer, so the whole level-i range is complete;</li>
 *   <li>fold-out (round 2L+1): each PROXY sends the result to its EXTRA.</li>
 * </ol>
 * Each rank sends about {@code 2 (k-1)/k * bytes} in the two phases instead of
 * {@code L (k-1) * bytes}: the bandwidth-optimal choice above a few KiB. Empty blocks (count &lt;
 * group size) send nothing in data rounds.
 *
 * <p>{@link #runMerged} (vectors of at most one fragment) runs the fold-in, the reduce-scatter and
 * the fold-out on spine rounds, whose headers compare the call descriptors and merge the status
 * (the reduce-scatter visits every rank, so after it every base rank knows the global status), and
 * the allgather on data rounds only when that status is ok. {@link #run} is the pipelined form on
 * data rounds, after a spine that ended ok. No allocation per call.
 */
public final class SraAllreduce {
    private final Exchange x;
    /** Range of each level of the reduce-scatter: level i is the range shared by the group of iteration i. */
    private final int[] lo = new int[Exchange.MAX_ROUND + 1];
    private final int[] len = new int[Exchange.MAX_ROUND + 1];

    public SraAllreduce(Exchange x) {
        this.x = x;
    }

    static int blockOff(int lo, int len, int g, int b) {
        return lo + b * (len / g) + Math.min(b, len % g);
    }

    static int blockLen(int len, int g, int b) {
        return len / g + (b < len % g ? 1 : 0);
    }

    /** Spine form: {@code count * t.size <= x.fragBytes()}. */
    public void runMerged(KnomialPattern p, ByteBuffer u, int off, int count, DataType t, Op op) {
        final int L = p.iterations;
        if (p.role == KnomialPattern.EXTRA) {
            x.group(2, 1);
            x.member(0, p.partner);
            x.sendTo(0, 0, count);
            x.spineRound(0, u, off, t, op, false);
            x.group(2, 1);
            x.member(0, p.partner);
            x.recvFrom(0, 0, count);
            x.spineRound(L + 1, u, off, t, op, true);
            return;
        }
        if (p.role == KnomialPattern.PROXY) {
            x.group(2, 0);
            x.member(1, p.partner);
            x.recvFrom(1, 0, count);
            x.spineRound(0, u, off, t, op, false);
        }
        lo[0] = 0;
        len[0] = count;
        for (int i = 0; i < L; i++) {
            scatterGroup(x, p, i, lo, len);
            x.spineRound(1 + i, u, off, t, op, false);
        }
        if (x.ok()) {
            for (int j = 0; j < L; j++) { // i = L - 1 - j: the levels in reverse (an up-counting loop: see run below)
                gatherGroup(x, p, L - 1 - j);
                x.dataRound(L + 1 + j, u, off, t, op, false);
            }
        }
        if (p.role == KnomialPattern.PROXY) {
            x.group(2, 0);
            x.member(1, p.partner);
            x.sendTo(1, 0, count);
            x.spineRound(L + 1, u, off, t, op, false);
        }
    }

    /** Data form, any count, pipelined; only after a spine that ended ok. */
    public void run(KnomialPattern p, ByteBuffer u, int off, int count, DataType t, Op op) {
        run(x, p, u, off, count, t, op);
    }

    /** The data form's rounds into {@code x} (run now by an Exchange, or recorded by a {@link Schedule}). */
    public void run(RoundSink x, KnomialPattern p, ByteBuffer u, int off, int count, DataType t, Op op) {
        final int L = p.iterations;
        foldInAndScatter(x, p, u, off, count, t, op, lo, len);
        if (p.role == KnomialPattern.EXTRA) {
            x.group(2, 1);
            x.member(0, p.partner);
            x.recvFrom(0, 0, count);
            x.dataRound(2 * L + 1, u, off, t, op, false);
            return;
        }
        // The allgather visits the levels in reverse, i = L - 1 - j, counted up in j: C2 compiled the
        // down-counting form (i = L - 1; i >= 0; i--) with a loop-limit-check predicate that failed at
        // a program's first calls after the heating (JFR on the 2-host rig: loop_limit_check at this
        // loop, then a recompile on the rank's core).
        for (int j = 0; j < L; j++) {
            gatherGroup(x, p, L - 1 - j);
            x.dataRound(L + 1 + j, u, off, t, op, false);
        }
        if (p.role == KnomialPattern.PROXY) {
            x.group(2, 0);
            x.member(1, p.partner);
            x.sendTo(1, 0, count);
            x.dataRound(2 * L + 1, u, off, t, op, false);
        }
    }

    /**
     * Steps 1 and 2 on data rounds (rounds 0..L): an extra sends its vector to its proxy and is done
     * here; a proxy folds its extra's vector in ({@code proxy op extra}); then every non-extra runs
     * the L reduce-scatter iterations, after which {@code lo[L], len[L]} is its fully reduced block.
     * {@link SraReduce} runs the same rounds, so its root's bits are the allreduce's.
     */
    static void foldInAndScatter(RoundSink x, KnomialPattern p, ByteBuffer u, int off, int count, DataType t, Op op, int[] lo,
            int[] len) {
        if (p.role == KnomialPattern.EXTRA) {
            x.group(2, 1);
            x.member(0, p.partner);
            x.sendTo(0, 0, count);
            x.dataRound(0, u, off, t, op, false);
            return;
        }
        if (p.role == KnomialPattern.PROXY) {
            x.group(2, 0);
            x.member(1, p.partner);
            x.recvFrom(1, 0, count);
            x.dataRound(0, u, off, t, op, true);
        }
        lo[0] = 0;
        len[0] = count;
        for (int i = 0; i < p.iterations; i++) {
            scatterGroup(x, p, i, lo, len);
            x.dataRound(1 + i, u, off, t, op, true);
        }
    }

    /**
     * Reduce-scatter iteration i: block b to position b, block m from everyone; level i+1 = block m
     * ({@code lo}, {@code len}: the caller's ranges per level; {@link SraReduce} runs the same rounds).
     */
    static void scatterGroup(RoundSink x, KnomialPattern p, int i, int[] lo, int[] len) {
        int g = p.groupSize(i);
        int mp = p.position(i);
        int l = lo[i];
        int n = len[i];
        x.group(g, mp);
        for (int pos = 0; pos < g; pos++) {
            if (pos != mp) {
                x.member(pos, p.peer(i, pos));
                x.sendTo(pos, blockOff(l, n, g, pos), blockLen(n, g, pos));
                x.recvFrom(pos, blockOff(l, n, g, mp), blockLen(n, g, mp));
            }
        }
        lo[i + 1] = blockOff(l, n, g, mp);
        len[i + 1] = blockLen(n, g, mp);
    }

    /** Allgather iteration i: my block of level i to everyone, their blocks into place. */
    private void gatherGroup(RoundSink x, KnomialPattern p, int i) {
        int g = p.groupSize(i);
        int mp = p.position(i);
        int l = lo[i];
        int n = len[i];
        x.group(g, mp);
        for (int pos = 0; pos < g; pos++) {
            if (pos != mp) {
                x.member(pos, p.peer(i, pos));
                x.sendTo(pos, blockOff(l, n, g, mp), blockLen(n, g, mp));
                x.recvFrom(pos, blockOff(l, n, g, pos), blockLen(n, g, pos));
            }
        }
    }
}
