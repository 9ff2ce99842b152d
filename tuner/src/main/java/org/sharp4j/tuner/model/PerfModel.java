package org.sharp4j.tuner.model;

import org.sharp4j.tuning.Algorithm;

/**
 * Predicted latency (microseconds) of sharp4j's phases for {@code n} nodes, {@code ppn} ranks per
 * node and {@code m}-byte messages, from the parameters in {@link ModelParams}. The formulas (all
 * logarithms rounded up: {@code s = ceil(log_k n)} is the smallest s with {@code k^s >= n}):
 *
 * <h2>Host path between node leaders (LogGP: L, o, g, G; gamma per reduced byte)</h2>
 * <ul>
 *   <li><b>k-nomial (recursive k-ing) allreduce</b>, {@link #knomial}: {@code s = ceil(log_k n)}
 *       rounds; in a round a rank sends k-1 messages of m bytes back to back and receives and
 *       reduces k-1. In LogGP the last message arrives after
 *       {@code o + (k-2) g + (k-1) m G + L + o}, then the k-1 received vectors are reduced:
 *       <pre>  T_knomial(n, m, k) = s * [ L + 2o + (k-2) g + (k-1) m (G + gamma) ]</pre>
 *       Simplifications: a round with fewer than k-1 peers (n not a power of k) is charged in full,
 *       and the extra proxy steps of UCC's non-power-of-k handling are left out; so the time is
 *       non-decreasing in n and m. The k-nomial <b>reduce</b> to a root has the same critical path
 *       (the root receives and reduces k-1 vectors per level) and uses the same formula.</li>
 *   <li><b>SRA (scatter-reduce-allgather, Rabenseifner with radix k)</b>, {@link #sra}: a k-nomial
 *       reduce-scatter in s steps, step i (1..s) exchanging k-1 blocks of {@code m / k^i} bytes,
 *       then the mirror-image allgather. The bytes a rank sends in each half sum to
 *       {@code m (k-1) (1/k + 1/k^2 + ... + 1/k^s) = m (1 - k^-s)}, which is {@code m (1 - 1/n)} for
 *       {@code n = k^s} (and is taken as that for every n); only the reduce-scatter reduces:
 *       <pre>  T_sra(n, m, k) = 2 s [ L + 2o + (k-2) g ] + (1 - 1/n) m (2 G + gamma)</pre>
 *       Latency term twice the k-nomial's, bandwidth term bounded by {@code 2 m G} instead of
 *       growing with {@code s (k-1) m G}: SRA wins for large m, k-nomial for small.</li>
 *   <li><b>k-nomial barrier</b>, {@link #barrier}: {@code T = s [ L + 2o + (k-2) g ]} (zero-byte
 *       messages).</li>
 * </ul>
 * Growth: the host model is <b>logarithmic</b> in n. Paper 004 measured MVAPICH2-X growing about
 * <b>linearly</b> (Allreduce 2 KiB: 3.66 us at 4 nodes, 61 us at 7,861). LogGP leaves out what
 * grows with the machine rather than with the rounds: every round waits for the slowest of its
 * peers, so OS noise and arrival skew accumulate with the job size, and on a shared fat tree the
 * rounds with distant peers cross more, and more congested, switch levels. The model is thus a
 * lower bound for the host path at scale, which makes its choice of SHARP at large n conservative.
 *
 * <h2>SHARP (aggregation tree in the switches)</h2>
 * {@link #sharp}: levels {@code = ceil(log_R n)} for switches of R ports (R = 40: 1 level up to 40
 * nodes, 2 up to 1,600, 3 up to 64,000), and
 * <pre>  T_sharp(n, m) = base + levels(n) * per_level + m * G_sharp,   m &lt;= sharp.max.bytes</pre>
 * (not available above the payload limit: {@code +inf}). Nearly flat in n: it grows by one
 * {@code per_level} each time n passes a power of R.
 *
 * <h2>Inside a node (paper 001: touching m bytes costs a + b m)</h2>
 * <ul>
 *   <li>tree reduce, radix k over q = ppn ranks (paper 001 Sec. 2.2):
 *       {@code T = (k-1)(a + b m) ceil(log_k q)};</li>
 *   <li>tiled reduce (paper 001 eq. 8, congested link B): {@code T = a q + B q m};</li>
 *   <li>read-out (broadcast) of the result: every rank reads the leader's vector once,
 *       {@code T = a + b m} (congestion ignored).</li>
 * </ul>
 * A hierarchical allreduce is intra reduce (the cheaper of tree and tiled) + inter-node phase +
 * read-out ({@link #allreduce}); all terms are 0 for one rank per node or one node.
 */
public final class PerfModel {
    private final ModelParams p;

    public PerfModel(ModelParams p) {
        this.p = p;
    }

    public ModelParams params() {
        return p;
    }

    /** The smallest s with {@code k^s >= n} (0 for n <= 1). */
    public static int ceilLog(int k, long n) {
        if (k < 2) {
            throw new IllegalArgumentException("radix must be >= 2, got " + k);
        }
        int s = 0;
        long x = 1;
        while (x < n) {
            x = x > Long.MAX_VALUE / k ? Long.MAX_VALUE : x * k;
            s++;
        }
        return s;
    }

    private double hostRoundLatency(int k) {
        return p.hostL + 2 * p.hostO + (k - 2) * p.hostGap;
    }

    /** Host k-nomial allreduce (and reduce) between n node leaders. */
    public double knomial(long n, long m, int k) {
        return ceilLog(k, n) * (hostRoundLatency(k) + (k - 1) * m * (p.hostG + p.hostGamma));
    }

    /** Host SRA allreduce between n node leaders. */
    public double sra(long n, long m, int k) {
        if (n <= 1) {
            return 0;
        }
        return 2.0 * ceilLog(k, n) * hostRoundLatency(k) + (1 - 1.0 / n) * m * (2 * p.hostG + p.hostGamma);
    }

    /** Host k-nomial barrier between n node leaders. */
    public double barrier(long n, int k) {
        return ceilLog(k, n) * hostRoundLatency(k);
    }

    /** Aggregation levels of the SHARP tree for n nodes. */
    public int sharpLevels(long n) {
        return ceilLog(p.sharpRadix, n);
    }

    /**
     * sharp4j's SHARP allreduce/reduce/barrier (m = 0) between n node leaders: the switch tree plus
     * sharp4j's measured software cost per call; +inf above the payload limit.
     */
    public double sharp(long n, long m) {
        if (n <= 1) {
            return 0;
        }
        if (m > p.sharpMaxBytes) {
            return Double.POSITIVE_INFINITY;
        }
        return p.sharpBase + p.sharpSw + sharpLevels(n) * p.sharpLevel + m * p.sharpG;
    }

    /** The inter-node phase with {@code alg} ({@code radix} ignored for SHARP). */
    public double inter(Algorithm alg, long n, long m, int radix) {
        switch (alg) {
            case SHARP: return sharp(n, m);
            case KNOMIAL: return knomial(n, m, radix);
            case SRA: return sra(n, m, radix);
            default: throw new IllegalArgumentException(alg + " is not an inter-node algorithm");
        }
    }

    /** Intra-node tree reduce of radix k over ppn ranks. */
    public double intraTree(int ppn, long m, int k) {
        return (k - 1) * (p.intraA + p.intraB * m) * ceilLog(k, ppn);
    }

    /** Intra-node tiled reduce over ppn ranks (paper 001 eq. 8). */
    public double intraTiled(int ppn, long m) {
        return ppn <= 1 ? 0 : p.intraA * ppn + p.intraBCongested * ppn * m;
    }

    /** Read-out of the result by the other ranks of the node. */
    public double intraBcast(int ppn, long m) {
        return ppn <= 1 ? 0 : p.intraA + p.intraB * m;
    }

    /** The cheaper intra-node reduce (tree with {@code tree.radix} or tiled). */
    public double intraReduce(int ppn, long m) {
        return Math.min(intraTree(ppn, m, p.treeRadix), intraTiled(ppn, m));
    }

    /** Hierarchical allreduce: intra reduce + inter-node {@code alg} + read-out. */
    public double allreduce(Algorithm alg, long n, int ppn, long m, int radix) {
        return intraReduce(ppn, m) + inter(alg, n, m, radix) + intraBcast(ppn, m);
    }

    /** Least-squares line {@code {intercept, slope}} through (x, y). */
    static double[] leastSquares(double[] x, double[] y) {
        int n = x.length;
        double mx = 0;
        double my = 0;
        for (int i = 0; i < n; i++) {
            mx += x[i];
            my += y[i];
        }
        mx /= n;
        my /= n;
        double sxy = 0;
        double sxx = 0;
        for (int i = 0; i < n; i++) {
            sxy += (x[i] - mx) * (y[i] - my);
            sxx += (x[i] - mx) * (x[i] - mx);
        }
        if (sxx == 0) {
            throw new IllegalArgumentException("fitting a + b m needs at least 2 different sizes");
        }
        double slope = sxy / sxx;
        return new double[] {my - slope * mx, slope};
    }
}
