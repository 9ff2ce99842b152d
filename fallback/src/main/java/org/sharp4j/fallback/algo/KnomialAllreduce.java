package org.sharp4j.fallback.algo;

import java.nio.ByteBuffer;
import org.sharp4j.DataType;
import org.sharp4j.Op;

/**
 * Allreduce by recursive k-ing over a {@link KnomialPattern}, radix 2..8, any team size:
 *
 * <ol>
 *   <li>fold-in (round 0): each EXTRA sends its vector to its PROXY, which computes
 *       {@code proxy op extra};</li>
 *   <li>iterations i = 0..L-1 (round 1+i): every base rank sends its whole current vector to the
 *       other g-1 members of its group and receives theirs, then every member computes the same
 *       {@code ((p0 op p1) op ...) op p(g-1)} by group position (see {@link Exchange}); the last
 *       iteration is partial (g = n_full) when n is not n_full times a power of k;</li>
 *   <li>fold-out (round L+1): each PROXY sends the result to its EXTRA.</li>
 * </ol>
 * L = ceil(log_k(n - n_extra)) rounds of (k-1) full-vector messages per rank, plus one before and
 * one after for the extras: the latency-optimal choice for small vectors (UCC's default below
 * 4 KiB, radix 4).
 *
 * <p>{@link #runMerged} is the form for vectors of at most one fragment: it runs on spine rounds,
 * so its headers also compare the call descriptors and merge the status (this is how the smallest,
 * most latency-bound calls pay nothing extra for argument checking). {@link #run} is the pipelined
 * form on data rounds for any size, run after a spine that ended ok; the two bracket identically.
 * No allocation per call.
 */
public final class KnomialAllreduce {
    private final Exchange x;

    public KnomialAllreduce(Exchange x) {
        this.x = x;
    }

    /** Spine form: {@code count * t.size <= x.fragBytes()}; {@code t} may be null with count 0 (a barrier). */
    public void runMerged(KnomialPattern p, ByteBuffer u, int off, int count, DataType t, Op op) {
        walk(x, p, u, off, count, t, op, true); // the Exchange runs spine rounds itself
    }

    /** Data form, any count, pipelined by fragments; only after a spine that ended ok. */
    public void run(KnomialPattern p, ByteBuffer u, int off, int count, DataType t, Op op) {
        walk(x, p, u, off, count, t, op, false);
    }

    /** The data form's rounds into {@code s} (a {@link Schedule} records them for {@link PostedRounds}). */
    public void run(RoundSink s, KnomialPattern p, ByteBuffer u, int off, int count, DataType t, Op op) {
        walk(s, p, u, off, count, t, op, false);
    }

    /** The pattern's rounds, each as a spine round ({@code merged}) or a data round. */
    private void walk(RoundSink s, KnomialPattern p, ByteBuffer u, int off, int count, DataType t, Op op, boolean merged) {
        final int last = p.iterations + 1;
        if (p.role == KnomialPattern.EXTRA) {
            s.group(2, 1);
            s.member(0, p.partner);
            s.sendTo(0, 0, count);
            round(s, merged, 0, u, off, t, op, false, false);      // hand this node's data to the proxy
            s.group(2, 1);
            s.member(0, p.partner);
            s.recvFrom(0, 0, count);
            round(s, merged, last, u, off, t, op, true, false);    // adopt the proxy's result
            return;
        }
        if (p.role == KnomialPattern.PROXY) {
            s.group(2, 0);
            s.member(1, p.partner);
            s.recvFrom(1, 0, count);
            round(s, merged, 0, u, off, t, op, false, true);       // proxy (+) extra
        }
        for (int i = 0; i < p.iterations; i++) {
            int g = p.groupSize(i);
            int mp = p.position(i);
            s.group(g, mp);
            for (int pos = 0; pos < g; pos++) {
                if (pos != mp) {
                    s.member(pos, p.peer(i, pos));
                    s.sendTo(pos, 0, count);
                    s.recvFrom(pos, 0, count);
                }
            }
            round(s, merged, 1 + i, u, off, t, op, false, true);   // p0 (+) p1 (+) ... by group position
        }
        if (p.role == KnomialPattern.PROXY) {
            s.group(2, 0);
            s.member(1, p.partner);
            s.sendTo(1, 0, count);
            round(s, merged, last, u, off, t, op, false, false);   // the result back to the extra
        }
    }

    /** {@code take} is the spine's fold-out flag, {@code combine} the data round's (a spine round always merges). */
    private void round(RoundSink s, boolean merged, int r, ByteBuffer u, int off, DataType t, Op op, boolean take, boolean combine) {
        if (merged) {
            x.spineRound(r, u, off, t, op, take); // merged runs on the Exchange itself (s == x)
        } else {
            s.dataRound(r, u, off, t, op, combine);
        }
    }
}
