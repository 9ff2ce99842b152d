package org.sharp4j.fallback.algo;

import java.nio.ByteBuffer;
import org.sharp4j.DataType;
import org.sharp4j.Op;

/**
 * Reduce to any root by scatter-reduce-gather (Rabenseifner's reduce, generalised to radix k) over
 * a {@link KnomialPattern}: the fold-in and reduce-scatter of {@link SraAllreduce}, then a gather
 * of the reduced blocks towards the root only, where the allreduce's allgather sends them to
 * everyone.
 *
 * <ol>
 *   <li>fold-in and reduce-scatter (rounds 0..L): exactly {@link SraAllreduce}'s, so after them
 *       base rank b owns the fully reduced block {@code [lo[L], lo[L] + len[L])}, bracketed as the
 *       allreduce brackets it: the root ends with the allreduce's bits;</li>
 *   <li>gather, iterations i = L-1..0 (rounds L+1..2L), towards the <em>target</em> t: the root, or
 *       its proxy when the root is an extra. Let {@code S_i} be the loop ranks that share t's digits
 *       from i up ({@code floor(lr / k^i) == floor(lt / k^i)}): {@code S_0 = {t}}, {@code S_L} =
 *       every loop rank. In iteration i a member of {@code S_i} receives the level-(i+1) blocks of the
 *       other members of its group (each differs from it in digit i only, so each is in
 *       {@code S_(i+1)}) straight into place, which completes its level-i range; a member of
 *       {@code S_(i+1)} outside {@code S_i} sends its level-(i+1) range (block m of its level-i
 *       range) to the member at t's position, and is done. The ranges are those of the allgather,
 *       so every block lands where the allreduce would put it; t ends with the whole vector;</li>
 *   <li>fold-out (round 2L+1): when the root is an extra, its proxy sends it the result.</li>
 * </ol>
 * Costs, with N the vector and n base ranks: every rank sends about {@code (k-1)/k N} in the
 * reduce-scatter; in the gather the target receives {@code (1 - 1/n) N} over L iterations and every
 * other rank sends its range once ({@code N / k^(i+1)} at the iteration it leaves): about half the
 * allreduce's traffic, and, unlike a tree (where the root receives {@code (k-1) N} per level and
 * folds all of it), the folding spread over all ranks. MPICH's reduce for long messages; Open MPI's
 * "Rabenseifner" reduce. Non-root buffers end with partial sums (a reduce defines only the root's).
 *
 * <p>Data rounds only, after a spine that ended ok (the host path runs a reduce of one fragment as
 * the merged allreduce, whose bits are the same). No allocation per call.
 */
public final class SraReduce {
    /** Range of each level of the reduce-scatter (as {@link SraAllreduce}'s). */
    private final int[] lo = new int[Exchange.MAX_ROUND + 1];
    private final int[] len = new int[Exchange.MAX_ROUND + 1];

    /**
     * The rounds into {@code x} (run now by an Exchange, or recorded by a {@link Schedule});
     * {@code root} is a node index of the team.
     */
    public void run(RoundSink x, KnomialPattern p, int root, ByteBuffer u, int off, int count, DataType t, Op op) {
        final int L = p.iterations;
        SraAllreduce.foldInAndScatter(x, p, u, off, count, t, op, lo, len);
        final int target = p.loopRankOf(root) >= 0 ? root : root - 1; // an extra's proxy is the rank below it
        if (p.role == KnomialPattern.EXTRA) {
            if (p.rank == root) {
                x.group(2, 1);
                x.member(0, p.partner);
                x.recvFrom(0, 0, count);
                x.dataRound(2 * L + 1, u, off, t, op, false);
            }
            return;
        }
        final int lt = p.loopRankOf(target);
        for (int i = L - 1; i >= 0; i--) {
            final int g = p.groupSize(i);
            final int mp = p.position(i);
            final int l = lo[i];
            final int n = len[i];
            x.group(g, mp);
            if (p.sameDigitsFrom(i, lt)) {
                for (int pos = 0; pos < g; pos++) {
                    if (pos != mp) {
                        x.member(pos, p.peer(i, pos));
                        x.recvFrom(pos, SraAllreduce.blockOff(l, n, g, pos), SraAllreduce.blockLen(n, g, pos));
                    }
                }
                x.dataRound(L + 1 + (L - 1 - i), u, off, t, op, false);
            } else {
                // in S_(i+1) (every rank is in S_L, and a rank leaves at the iteration it sends in)
                final int to = p.positionOf(i, lt);
                x.member(to, p.peer(i, to));
                x.sendTo(to, SraAllreduce.blockOff(l, n, g, mp), SraAllreduce.blockLen(n, g, mp));
                x.dataRound(L + 1 + (L - 1 - i), u, off, t, op, false);
                return;
            }
        }
        if (target != root) {
            x.group(2, 0);
            x.member(1, p.partner);
            x.sendTo(1, 0, count);
            x.dataRound(2 * L + 1, u, off, t, op, false);
        }
    }
}
