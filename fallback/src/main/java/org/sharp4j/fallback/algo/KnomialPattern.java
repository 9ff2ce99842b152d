package org.sharp4j.fallback.algo;

/**
 * The recursive k-nomial pattern for one rank of a team of {@code n}, radix {@code k}: who is an
 * extra, who is its proxy, and which peers a rank meets in each iteration. Immutable; built once
 * per radix at construction, so per-call code only reads ints.
 *
 * <h2>Math</h2>
 * <pre>
 *   full    = largest power of k with full &lt;= n
 *   n_full  = n / full                 (1 .. k-1)
 *   n_base  = n_full * full            ranks that take part in the iterations
 *   n_extra = n - n_base               (&lt; full &lt;= n_base, so 2*n_extra &lt;= n)
 * </pre>
 * Ranks {@code r < 2*n_extra} pair up: odd r is an EXTRA, even r its PROXY (partner r+1). An
 * extra hands its data to its proxy first (fold-in) and gets the result last (fold-out); every
 * other rank is BASE. Loop ranks number the n_base ranks that iterate:
 * <pre>
 *   lr(r)   = r &lt; 2*n_extra ? r/2 : r - n_extra        (proxies 0..n_extra-1, then the rest)
 *   real(l) = l &lt; n_extra   ? 2*l : l + n_extra         (inverse)
 * </pre>
 * Iteration i (0 .. L-1) with {@code rp = k^i}, {@code step = k^(i+1)}: the group of lr is
 * <pre>
 *   base     = floor(lr/step)*step + lr mod rp
 *   member s = base + s*rp     for s = 0 .. k-1, kept while &lt; n_base     (s is the group position)
 *   position of lr = floor(lr/rp) mod k
 * </pre>
 * (UCC writes member s of lr as {@code (lr + s*rp) mod step + floor(lr/step)*step}: the same
 * set, numbered from lr instead of from the group's base.) Every group of a full iteration has k
 * members; when n_full &gt; 1 there is one more, partial, iteration with {@code rp = full} whose
 * groups have n_full members. So {@code L = log_k(full) + (n_full > 1 ? 1 : 0)}, the smallest L
 * with {@code k^L >= n_base}. After iteration i every member of a group has combined the
 * contributions of the {@code k^(i+1)} (or n_base) loop ranks that share its digits of index
 * &gt; i, so after L iterations every base rank has everyone's.
 *
 * <p>Group positions are absolute (s above, not the distance from lr), which is what makes every
 * member reduce its group in the same order: see {@link Exchange} for the bracketing.
 */
public final class KnomialPattern {
    public static final int EXTRA = 0;
    public static final int PROXY = 1;
    public static final int BASE = 2;

    /** Team size, radix, this rank. */
    public final int n;
    public final int k;
    public final int rank;
    public final int full;
    public final int nFull;
    public final int nBase;
    public final int nExtra;
    /** Number of iterations L. */
    public final int iterations;
    /** {@link #EXTRA}, {@link #PROXY} or {@link #BASE}. */
    public final int role;
    /** The extra's proxy or the proxy's extra; -1 for BASE. */
    public final int partner;
    /** Loop rank, -1 for an EXTRA. */
    public final int loopRank;
    private final int[] rp;

    public KnomialPattern(int n, int k, int rank) {
        if (n < 1 || k < 2 || rank < 0 || rank >= n) {
            throw new IllegalArgumentException("bad k-nomial pattern: n=" + n + " k=" + k + " rank=" + rank);
        }
        this.n = n;
        this.k = k;
        this.rank = rank;
        int f = 1;
        int levels = 0;
        while ((long) f * k <= n) {
            f *= k;
            levels++;
        }
        this.full = f;
        this.nFull = n / f;
        this.nBase = nFull * f;
        this.nExtra = n - nBase;
        this.iterations = levels + (nFull > 1 ? 1 : 0);
        this.rp = new int[iterations + 1];
        long p = 1;
        for (int i = 0; i <= iterations; i++) {
            rp[i] = (int) Math.min(p, Integer.MAX_VALUE);
            p *= k;
        }
        if (rank < 2 * nExtra) {
            role = (rank & 1) == 1 ? EXTRA : PROXY;
            partner = role == EXTRA ? rank - 1 : rank + 1;
            loopRank = role == EXTRA ? -1 : rank / 2;
        } else {
            role = BASE;
            partner = -1;
            loopRank = rank - nExtra;
        }
    }

    /** Rank of loop rank {@code l}. */
    public int realRank(int l) {
        return l < nExtra ? 2 * l : l + nExtra;
    }

    /** Loop rank of rank {@code r}, -1 for an extra. */
    public int loopRankOf(int r) {
        if (r < 2 * nExtra) {
            return (r & 1) == 1 ? -1 : r / 2;
        }
        return r - nExtra;
    }

    private int base(int i) {
        long step = (long) rp[i] * k;
        return (int) ((loopRank / step) * step + loopRank % rp[i]);
    }

    /** Members of this rank's group in iteration i (k, or n_full in a partial last iteration). */
    public int groupSize(int i) {
        int b = base(i);
        int g = 0;
        while (g < k && (long) b + (long) g * rp[i] < nBase) {
            g++;
        }
        return g;
    }

    /** This rank's position in its group of iteration i. */
    public int position(int i) {
        return (loopRank / rp[i]) % k;
    }

    /** The rank at position {@code pos} of this rank's group in iteration i. */
    public int peer(int i, int pos) {
        return realRank(base(i) + pos * rp[i]);
    }

    /**
     * Whether loop rank {@code other} has this rank's digits from iteration i up: {@code
     * floor(lr / k^i) == floor(other / k^i)}, i.e. both sit in the same block of {@code k^i} loop
     * ranks, which the iterations below i combine (at i = L: every loop rank).
     */
    public boolean sameDigitsFrom(int i, int other) {
        return loopRank / rp[i] == other / rp[i];
    }

    /**
     * Whether this rank's loop-rank digits below iteration i are those of loop rank {@code other}
     * ({@code lr mod k^i == other mod k^i}): it is the one member of its block of {@code k^i} loop
     * ranks that the k-nomial tree to {@code other} keeps at iteration i (every member of its group
     * of iteration i shares those digits, so a group is on the tree or not as a whole). False for an
     * extra.
     */
    public boolean sameDigitsBelow(int i, int other) {
        return loopRank >= 0 && loopRank % rp[i] == other % rp[i];
    }

    /** The position loop rank {@code other} has in its group of iteration i: {@code floor(other / k^i) mod k}. */
    public int positionOf(int i, int other) {
        return (other / rp[i]) % k;
    }

    @Override
    public String toString() {
        return "k-nomial(n=" + n + ", k=" + k + ", full=" + full + ", n_extra=" + nExtra + ", L=" + iterations + ")";
    }
}
