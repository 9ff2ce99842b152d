package org.sharp4j.fallback;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLongArray;
import org.junit.jupiter.api.Test;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.coll.CallStatus;
import org.sharp4j.coll.Desc;
import org.sharp4j.tuning.Collective;
import org.sharp4j.tuning.CompiledTable;

/**
 * The k-nomial algorithms through {@link HostStep} over {@link MemTransport}, against the
 * sequential reference of {@link Inputs}: node counts 1..8 (extras, partial last rounds, radix
 * clamped to n), radix 2, 3, 4, 8, both allreduce algorithms on both paths (merged with the spine
 * up to one fragment, pipelined data rounds above; a 256-byte fragment makes a few KiB many
 * fragments), every type and op, reduce to every root, barrier; 8 MiB with the real fragment
 * size; and the documented bracketing, bit for bit, with random doubles.
 */
class KnomialAlgorithmsTest {
    static final int SMALL_FRAG = 256;
    static final int GUARD = 64;
    static final int[] RADIXES = {2, 3, 4, 8};
    static final int[] COUNTS = {0, 1, 2, 3, 5, 7, 8, 13, 31, 32, 33, 64, 65, 100, 257, 1000};

    static final class Case {
        final Collective c;
        final DataType t;
        final Op op;
        final int count;
        final int root;
        final long seed;

        Case(Collective c, DataType t, Op op, int count, int root, long seed) {
            this.c = c;
            this.t = t;
            this.op = op;
            this.count = count;
            this.root = root;
            this.seed = seed;
        }

        long desc() {
            return c == Collective.BARRIER ? Desc.make(c, DataType.INT, Op.SUM, 0, 0) : Desc.make(c, t, op, root, count);
        }

        @Override
        public String toString() {
            return Desc.describe(desc()) + " seed " + seed;
        }
    }

    /** Every type and op at a few counts, one op per type at every count, reduce to every root, barriers. */
    static List<Case> fullProgram(int n) {
        List<Case> cs = new ArrayList<>();
        long seed = 1;
        int[] few = {0, 1, 7, 33, 300};
        for (DataType t : DataType.values()) {
            Op sweep = t == DataType.INT ? Op.BXOR : t == DataType.LONG ? Op.PROD : t == DataType.FLOAT ? Op.MAX : Op.SUM;
            for (Op op : Op.values()) {
                if (!op.validFor(t)) {
                    continue;
                }
                for (int count : op == sweep ? COUNTS : few) {
                    cs.add(new Case(Collective.ALLREDUCE, t, op, count, 0, seed++));
                }
                cs.add(new Case(Collective.BARRIER, null, null, 0, 0, seed++));
            }
        }
        int[] rcounts = {0, 1, 7, 33, 300};
        DataType[] rt = {DataType.DOUBLE, DataType.INT, DataType.LONG, DataType.FLOAT};
        Op[] rop = {Op.SUM, Op.BXOR, Op.MAX, Op.PROD};
        for (int root = 0; root < n; root++) {
            for (int j = 0; j < rcounts.length; j++) {
                int v = (root + j) % rt.length;
                cs.add(new Case(Collective.REDUCE, rt[v], rop[v], rcounts[j], root, seed++));
            }
        }
        return cs;
    }

    /** One op per type at a handful of counts, and reduce to every root. */
    static List<Case> shortProgram(int n) {
        List<Case> cs = new ArrayList<>();
        long seed = 1000;
        Op[] ops = {Op.BXOR, Op.MIN, Op.SUM, Op.PROD};
        int[] counts = {0, 1, 9, 40, 700};
        for (int j = 0; j < DataType.values().length; j++) {
            for (int count : counts) {
                cs.add(new Case(Collective.ALLREDUCE, DataType.values()[j], ops[j], count, 0, seed++));
            }
        }
        cs.add(new Case(Collective.BARRIER, null, null, 0, 0, seed++));
        for (int root = 0; root < n; root++) {
            cs.add(new Case(Collective.REDUCE, DataType.LONG, Op.SUM, 1 + 97 * root, root, seed++));
        }
        return cs;
    }

    /**
     * Runs {@code cases} in order on n node threads, each with its own HostStep; checks every result
     * and the guard bytes around it, and that a barrier returns only after every node entered it.
     */
    static void runProgram(int n, CompiledTable table, int frag, List<Case> cases) {
        int maxBytes = 0;
        for (Case c : cases) {
            maxBytes = Math.max(maxBytes, c.count * (c.t == null ? 0 : c.t.size));
        }
        final int size = maxBytes + 2 * GUARD;
        MemTransport.Mesh mesh = MemTransport.Mesh.of(n);
        HostStep[] steps = new HostStep[n];
        AtomicLongArray entered = new AtomicLongArray(n);
        Team.runOk(n, 120_000, node -> {
            try (HostStep step = new HostStep(mesh.end(node), table, Team.waiter(30_000_000_000L, steps, node), "test", frag)) {
                steps[node] = step;
                ByteBuffer b = ByteBuffer.allocateDirect(size).order(ByteOrder.nativeOrder());
                CallStatus st = new CallStatus();
                for (int ci = 0; ci < cases.size(); ci++) {
                    Case c = cases.get(ci);
                    String at = "n=" + n + " node " + node + " call " + ci + " " + c;
                    st.reset();
                    if (c.c == Collective.BARRIER) {
                        entered.set(node, ci);
                        step.barrier(c.desc(), st);
                        for (int q = 0; q < n; q++) {
                            assertTrue(entered.get(q) >= ci, at + ": left the barrier before node " + q + " entered");
                        }
                        assertTrue(st.ok(), at);
                        continue;
                    }
                    int bytes = c.count * c.t.size;
                    for (int i = 0; i < GUARD; i++) {
                        b.put(i, (byte) 0x5A);
                        b.put(GUARD + bytes + i, (byte) 0x5A);
                    }
                    Inputs.fill(b, GUARD, c.t, c.op, c.seed, node, c.count);
                    if (c.c == Collective.ALLREDUCE) {
                        step.allreduce(b, GUARD, c.count, c.t, c.op, c.desc(), st);
                    } else {
                        step.reduce(b, GUARD, c.count, c.t, c.op, c.root, c.desc(), st);
                    }
                    assertTrue(st.ok(), at + ": status " + (st.ok() ? "" : st.toException().getMessage()));
                    if (c.c == Collective.ALLREDUCE || node == c.root) {
                        assertNull(Inputs.check(b, GUARD, c.t, c.op, c.seed, n, c.count), at);
                    }
                    for (int i = 0; i < GUARD; i++) {
                        if (b.get(i) != 0x5A || b.get(GUARD + bytes + i) != 0x5A) {
                            throw new AssertionError(at + ": a byte outside the vector changed");
                        }
                    }
                }
                assertEquals(n > 1 ? 1 : 0, mesh.end(node).inUse(), "only the one abort receive stays posted");
            }
        });
    }

    static String rules(String alg, int k) {
        return rules(alg, "knomial", k);
    }

    static String rules(String alg, String reduceAlg, int k) {
        return "allreduce:0-inf:" + alg + ":radix=" + k + "#reduce:0-inf:" + reduceAlg + ":radix=" + k + "#barrier:0-inf:knomial:radix=" + k;
    }

    /**
     * Reduce by scatter-reduce-gather ({@code SraReduce}) to every root on 1..8 nodes, every radix
     * (roots that are extras, proxies and base ranks; partial last iterations), merged with the spine
     * up to one fragment and on data rounds above, with and without the spine's radix.
     */
    @Test
    void sraReduceToEveryRootOnOneToEightNodes() {
        for (int n = 1; n <= 8; n++) {
            for (int k : RADIXES) {
                if (k > Math.max(2, n) && k != 8) {
                    continue;
                }
                runProgram(n, Team.table(rules("sra", "sra", k), n), SMALL_FRAG, fullProgram(n));
                if (n >= 3) {
                    String r = "allreduce:0-1:knomial:radix=2#allreduce:1-inf:knomial:radix=" + k + "#reduce:0-inf:sra:radix=" + k;
                    runProgram(n, Team.table(r, n), SMALL_FRAG, shortProgram(n));
                }
            }
        }
    }

    @Test
    void everyTypeOpAndCountOnOneToEightNodes() {
        for (int n = 1; n <= 8; n++) {
            for (int k : RADIXES) {
                if (k > Math.max(2, n) && k != 8) {
                    continue; // clamped to n: the same as a smaller radix already run (8 stays, to test the clamp)
                }
                for (String alg : new String[] {"knomial", "sra"}) {
                    runProgram(n, Team.table(rules(alg, k), n), SMALL_FRAG, n <= 6 || k != 3 ? fullProgram(n) : shortProgram(n));
                }
            }
        }
    }

    /**
     * The spine radix (a 0-byte allreduce's) differs from the call's: every call with data runs a
     * header-only spine, then the pipelined data algorithm, reduce by the tree, at every size.
     */
    @Test
    void dataPathAfterSpineWhenTheRadixDiffers() {
        for (int n : new int[] {3, 5, 6, 7, 8}) {
            for (int k : new int[] {3, 8}) {
                for (String alg : new String[] {"knomial", "sra"}) {
                    String r = "allreduce:0-1:knomial:radix=2#allreduce:1-inf:" + alg + ":radix=" + k
                            + "#reduce:0-inf:knomial:radix=" + k;
                    runProgram(n, Team.table(r, n), SMALL_FRAG, shortProgram(n));
                }
            }
        }
    }

    /** 8 MiB of doubles (64 fragments of the real size) on every node count and radix; reduce to the last node. */
    @Test
    void eightMebibytes() {
        int count = 1 << 20;
        for (int n = 2; n <= 8; n++) {
            for (int k : RADIXES) {
                if (k > n && k != 8) {
                    continue;
                }
                for (String alg : new String[] {"knomial", "sra"}) {
                    if (alg.equals("knomial") && n % 3 != 2 && k != 4) {
                        continue; // recursive k-ing moves L*(k-1) vectors: a representative subset keeps this short
                    }
                    List<Case> cs = new ArrayList<>();
                    cs.add(new Case(Collective.ALLREDUCE, DataType.DOUBLE, Op.SUM, count, 0, 77));
                    if (alg.equals("sra")) {
                        cs.add(new Case(Collective.REDUCE, DataType.DOUBLE, Op.SUM, count, n - 1, 78));
                    }
                    runProgram(n, Team.table(rules(alg, alg, k), n), HostStep.DEFAULT_FRAG_BYTES, cs);
                }
            }
        }
    }

    /**
     * Random doubles: every node ends with the same bits, equal to the bracketing documented in
     * {@code Exchange} (computed here from contiguous blocks of loop ranks, not from the pattern's
     * peer formula), for recursive k-ing and SRA, merged (20 elements) and pipelined (1000).
     */
    @Test
    void randomDoublesAreBitIdenticalToTheDocumentedBracketing() {
        int[] counts = {20, 1000};
        for (int n = 2; n <= 8; n++) {
            for (int k : RADIXES) {
                int kk = Math.min(k, n);
                for (String alg : new String[] {"knomial", "sra"}) {
                    final int nn = n;
                    long[][][] got = new long[counts.length][n][];
                    MemTransport.Mesh mesh = MemTransport.Mesh.of(n);
                    CompiledTable table = Team.table(rules(alg, k), n);
                    Team.runOk(n, 60_000, node -> {
                        try (HostStep step = new HostStep(mesh.end(node), table, Team.waiter(30_000_000_000L, null, node), "t",
                                SMALL_FRAG)) {
                            for (int j = 0; j < counts.length; j++) {
                                int count = counts[j];
                                ByteBuffer b = ByteBuffer.allocateDirect(count * 8).order(ByteOrder.nativeOrder());
                                for (int i = 0; i < count; i++) {
                                    b.putDouble(i * 8, randomDouble(node, i));
                                }
                                CallStatus st = new CallStatus();
                                step.allreduce(b, 0, count, DataType.DOUBLE, Op.SUM,
                                        Desc.make(Collective.ALLREDUCE, DataType.DOUBLE, Op.SUM, 0, count), st);
                                assertTrue(st.ok());
                                got[j][node] = doubleBits(b, count);
                            }
                        }
                    });
                    for (int j = 0; j < counts.length; j++) {
                        for (int i = 0; i < counts[j]; i++) {
                            long want = Double.doubleToRawLongBits(bracketed(nn, kk, i));
                            for (int node = 0; node < n; node++) {
                                assertEquals(want, got[j][node][i], "n=" + n + " k=" + k + " " + alg + " count " + counts[j]
                                        + " node " + node + " element " + i);
                            }
                        }
                    }
                }
            }
        }
    }

    /**
     * The scatter-reduce-gather Reduce gives its root the allreduce's documented bracketing, bit for
     * bit, for every root (extras, proxies, base ranks), merged (20 elements) and on data rounds
     * (1000 elements in 256-byte fragments).
     */
    @Test
    void sraReduceGivesEveryRootTheDocumentedBracketing() {
        int[] counts = {20, 1000};
        for (int n = 2; n <= 8; n++) {
            for (int k : RADIXES) {
                if (k > n && k != 8) {
                    continue;
                }
                int kk = Math.min(k, n);
                final int nn = n;
                long[][][] got = new long[n][counts.length][];
                MemTransport.Mesh mesh = MemTransport.Mesh.of(n);
                CompiledTable table = Team.table(rules("sra", "sra", k), n);
                Team.runOk(n, 60_000, node -> {
                    try (HostStep step = new HostStep(mesh.end(node), table, Team.waiter(30_000_000_000L, null, node), "t",
                            SMALL_FRAG)) {
                        for (int root = 0; root < nn; root++) {
                            for (int j = 0; j < counts.length; j++) {
                                int count = counts[j];
                                ByteBuffer b = reduceRandomDoubles(step, node, root, count);
                                if (node == root) {
                                    got[root][j] = doubleBits(b, count);
                                }
                            }
                        }
                    }
                });
                for (int root = 0; root < n; root++) {
                    for (int j = 0; j < counts.length; j++) {
                        for (int i = 0; i < counts[j]; i++) {
                            assertEquals(Double.doubleToRawLongBits(bracketed(nn, kk, i)), got[root][j][i],
                                    "n=" + n + " k=" + k + " root " + root + " count " + counts[j] + " element " + i);
                        }
                    }
                }
            }
        }
    }

    /**
     * A merged reduce (the tree to the root inside the spine's rounds, {@code KnomialReduce.runMerged})
     * gives its root the documented bracketing, bit for bit, which recursive k-ing gives every node:
     * every root (extras, proxies, base ranks) on 2..8 nodes (partial last iterations), every radix,
     * 20 doubles (one fragment); then 1000 to node n-1 (the spine, then the tree on data rounds)
     * are right too.
     */
    @Test
    void aMergedReduceGivesItsRootTheDocumentedBracketing() {
        for (int n = 2; n <= 8; n++) {
            for (int k : RADIXES) {
                int kk = Math.min(k, n);
                final int nn = n;
                long[][] got = new long[n][];
                MemTransport.Mesh mesh = MemTransport.Mesh.of(n);
                CompiledTable table = Team.table(rules("knomial", k), n);
                Team.runOk(n, 60_000, node -> {
                    try (HostStep step = new HostStep(mesh.end(node), table, Team.waiter(30_000_000_000L, null, node), "t",
                            SMALL_FRAG)) {
                        for (int root = 0; root <= nn; root++) {
                            int count = root < nn ? 20 : 1000;
                            int r = Math.min(root, nn - 1);
                            ByteBuffer b = reduceRandomDoubles(step, node, r, count);
                            if (node == r && count == 20) {
                                got[r] = doubleBits(b, count);
                            } else if (node == r) {
                                for (int i = 0; i < count; i++) {
                                    double want = 0;
                                    for (int q = 0; q < nn; q++) {
                                        want += randomDouble(q, i);
                                    }
                                    assertEquals(want, b.getDouble(i * 8), 1e-9 * nn, "n=" + nn + " k=" + k + " count 1000, element " + i);
                                }
                            }
                        }
                    }
                });
                for (int root = 0; root < n; root++) {
                    for (int i = 0; i < 20; i++) {
                        assertEquals(Double.doubleToRawLongBits(bracketed(nn, kk, i)), got[root][i],
                                "n=" + n + " k=" + k + " root " + root + " element " + i);
                    }
                }
            }
        }
    }

    /** A DOUBLE SUM reduce of {@code count} of {@link #randomDouble}s to {@code root} on this node's step, checked ok; its buffer. */
    static ByteBuffer reduceRandomDoubles(HostStep step, int node, int root, int count) {
        ByteBuffer b = ByteBuffer.allocateDirect(count * 8).order(ByteOrder.nativeOrder());
        for (int i = 0; i < count; i++) {
            b.putDouble(i * 8, randomDouble(node, i));
        }
        CallStatus st = new CallStatus();
        step.reduce(b, 0, count, DataType.DOUBLE, Op.SUM, root, Desc.make(Collective.REDUCE, DataType.DOUBLE, Op.SUM, root, count), st);
        assertTrue(st.ok());
        return b;
    }

    static long[] doubleBits(ByteBuffer b, int count) {
        long[] bits = new long[count];
        for (int i = 0; i < count; i++) {
            bits[i] = Double.doubleToRawLongBits(b.getDouble(i * 8));
        }
        return bits;
    }

    static double randomDouble(int node, int i) {
        long h = Inputs.raw(4242, node, i);
        return ((h >>> 11) * 0x1.0p-53 - 0.5) * Math.scalb(1.0, (int) (h & 15) - 4);
    }

    /**
     * The documented order, written independently of the pattern's peer formula: fold-in gives
     * loop rank l the value {@code x[2l] + x[2l+1]} for l &lt; n_extra and {@code x[l + n_extra]}
     * otherwise; the iterations fold digit 0 of the loop rank first, so the result is the nested
     * left fold over contiguous blocks: the top level folds n_full blocks of {@code full} loop
     * ranks (or is the one block), each block of size k^j folds its k sub-blocks of k^(j-1).
     */
    static double bracketed(int n, int k, int i) {
        int full = 1;
        while ((long) full * k <= n) {
            full *= k;
        }
        int nFull = n / full;
        int nExtra = n - nFull * full;
        double acc = block(0, full, k, nExtra, i);
        for (int s = 1; s < nFull; s++) {
            acc = acc + block(s * full, full, k, nExtra, i);
        }
        return acc;
    }

    private static double block(int start, int size, int k, int nExtra, int i) {
        if (size == 1) {
            return start < nExtra ? randomDouble(2 * start, i) + randomDouble(2 * start + 1, i) : randomDouble(start + nExtra, i);
        }
        int sub = size / k;
        double acc = block(start, sub, k, nExtra, i);
        for (int s = 1; s < k; s++) {
            acc = acc + block(start + s * sub, sub, k, nExtra, i);
        }
        return acc;
    }
}
