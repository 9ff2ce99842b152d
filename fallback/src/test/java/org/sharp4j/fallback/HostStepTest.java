package org.sharp4j.fallback;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.PeerFailureException;
import org.sharp4j.Sharp4jException;
import org.sharp4j.coll.CallStatus;
import org.sharp4j.coll.Desc;
import org.sharp4j.fallback.algo.KnomialPattern;
import org.sharp4j.tuning.Collective;
import org.sharp4j.tuning.CompiledTable;

/** HostStep: the table's choice, argument mismatches between nodes, truncation, dead peers, aborts, allocation. */
class HostStepTest {
    static final long LONG_TIMEOUT = 20_000_000_000L;

    static long ar(DataType t, Op op, int count) {
        return Desc.make(Collective.ALLREDUCE, t, op, 0, count);
    }

    static long red(DataType t, Op op, int count, int root) {
        return Desc.make(Collective.REDUCE, t, op, root, count);
    }

    static final long BARRIER = Desc.make(Collective.BARRIER, DataType.INT, Op.SUM, 0, 0);

    static ByteBuffer buf(int bytes) {
        return ByteBuffer.allocateDirect(Math.max(8, bytes)).order(ByteOrder.nativeOrder());
    }

    /** Runs an allreduce of DOUBLE SUM with checked inputs; returns the status. */
    static CallStatus checkedAllreduce(HostStep s, int n, int node, int count, long seed) {
        ByteBuffer b = buf(count * 8);
        Inputs.fill(b, 0, DataType.DOUBLE, Op.SUM, seed, node, count);
        CallStatus st = new CallStatus();
        s.allreduce(b, 0, count, DataType.DOUBLE, Op.SUM, ar(DataType.DOUBLE, Op.SUM, count), st);
        assertTrue(st.ok(), () -> st.toException().getMessage());
        assertNull(Inputs.check(b, 0, DataType.DOUBLE, Op.SUM, seed, n, count), "node " + node);
        return st;
    }

    /** Messages and bytes one node sends for a call tell which algorithm and radix ran. */
    /**
     * A posted part's fragment: as large as its scratch ({@code 2 (k-1)} fragments, k up to 8) allows
     * within 2 MiB, capped at 512 KiB, never below the blocking rounds' fragment, in whole pages (a
     * multiple of every type's size), and the same for the same team size.
     */
    @Test
    void postedPartsTakeTheLargestFragmentTheirScratchAllows() {
        int f = HostStep.DEFAULT_FRAG_BYTES;
        assertEquals(512 * 1024, HostStep.partFragBytes(2, f));
        assertEquals(512 * 1024, HostStep.partFragBytes(3, f));
        assertEquals(340 * 1024, HostStep.partFragBytes(4, f));
        assertEquals(144 * 1024, HostStep.partFragBytes(8, f));
        assertEquals(144 * 1024, HostStep.partFragBytes(8192, f));
        for (int n = 2; n <= 64; n++) {
            int p = HostStep.partFragBytes(n, f);
            int others = Math.min(8, n) - 1;
            assertTrue(p >= f && p <= HostStep.MAX_PART_FRAG_BYTES && p % 4096 == 0, n + " nodes: " + p);
            assertTrue(2L * others * p <= HostStep.PART_SCRATCH_BYTES, n + " nodes: scratch " + 2L * others * p);
        }
        assertEquals(4 * 1024 * 1024, HostStep.partFragBytes(2, 4 * 1024 * 1024), "never below the blocking rounds' fragment");
    }

    @Test
    void theTableChoosesAlgorithmAndRadix() {
        final int n = 4;
        final int frag = 1024;
        CompiledTable table = Team.table("allreduce:0-4k:knomial:radix=4#allreduce:4k-inf:sra:radix=2"
                + "#reduce:0-inf:knomial:radix=4#barrier:0-inf:knomial:radix=8", n);
        CompiledTable builtIn = Team.table(null, n); // SHARP below 2 KiB from 4 nodes: the host path runs k-nomial radix 4
        MemTransport.Mesh mesh = MemTransport.Mesh.of(n);
        MemTransport.Mesh mesh2 = MemTransport.Mesh.of(n);
        long[][] sent = new long[n][];
        Team.runOk(n, 60_000, node -> {
            MemTransport t = mesh.end(node);
            long[] s = new long[12];
            try (HostStep step = new HostStep(t, table, Team.waiter(LONG_TIMEOUT, null, node), "t", frag)) {
                assertEquals(4, step.spineRadix());
                long m0 = t.sends;
                long b0 = t.bytesSent;
                checkedAllreduce(step, n, node, 128, 1); // 1 KiB: merged recursive 4-ing, one round of 3 messages
                s[0] = t.sends - m0;
                s[1] = t.bytesSent - b0;
                m0 = t.sends;
                b0 = t.bytesSent;
                checkedAllreduce(step, n, node, 1024, 2); // 8 KiB: spine (radix 4) then SRA radix 2, 8 fragments per 8 KiB
                s[2] = t.sends - m0;
                s[3] = t.bytesSent - b0;
                m0 = t.sends;
                b0 = t.bytesSent;
                CallStatus st = new CallStatus();
                step.barrier(BARRIER, st); // the spine: radix 4, not the table's 8
                s[4] = t.sends - m0;
                s[5] = t.bytesSent - b0;
                m0 = t.sends;
                b0 = t.bytesSent;
                ByteBuffer b = buf(8 * 1024);
                Inputs.fill(b, 0, DataType.DOUBLE, Op.SUM, 3, node, 1024);
                step.reduce(b, 0, 1024, DataType.DOUBLE, Op.SUM, 2, red(DataType.DOUBLE, Op.SUM, 1024, 2), st);
                assertTrue(st.ok());
                if (node == 2) {
                    assertNull(Inputs.check(b, 0, DataType.DOUBLE, Op.SUM, 3, n, 1024));
                }
                s[6] = t.sends - m0;
                s[7] = t.bytesSent - b0;
            }
            MemTransport t2 = mesh2.end(node);
            try (HostStep step = new HostStep(t2, builtIn, Team.waiter(LONG_TIMEOUT, null, node), "t", frag)) {
                long m0 = t2.sends;
                long b0 = t2.bytesSent;
                checkedAllreduce(step, n, node, 100, 4);
                s[8] = t2.sends - m0;
                s[9] = t2.bytesSent - b0;
            }
            sent[node] = s;
        });
        final int h = 48;
        for (int node = 0; node < n; node++) {
            long[] s = sent[node];
            assertEquals(3, s[0], "1 KiB allreduce: one round to 3 peers");
            assertEquals(3 * (h + 1024), s[1]);
            // 8 KiB SRA radix 2 on 4 nodes: reduce-scatter 4 KiB + 2 KiB, allgather 2 KiB + 4 KiB, in 1 KiB fragments
            assertEquals(3 + 12, s[2], "spine then SRA radix 2");
            assertEquals(3 * h + 12 * 1024, s[3]);
            assertEquals(3, s[4]);
            assertEquals(3 * h, s[5]);
            // reduce of 8 KiB (above one fragment): spine, then the radix-4 tree to node 2: every other node sends 8 fragments
            assertEquals(node == 2 ? 3 : 3 + 8, s[6], "node " + node);
            assertEquals(3 * h + (node == 2 ? 0 : 8 * 1024), s[7]);
            assertEquals(3, s[8], "SHARP's range on the host path: merged k-nomial radix 4");
            assertEquals(3 * (h + 800), s[9]);
        }
    }

    /**
     * A reduce's later parts (blocking or posted) go up the tree at every size: for a part of one
     * fragment the root's node sends nothing and every other node its part once, as the first part
     * does inside the spine's rounds (with the spine's headers). The root's sums are right for the
     * whole call.
     */
    @Test
    void aReducesLaterPartsGoUpTheTreeEvenWhenTheyFitAFragment() {
        final int n = 4;
        final int frag = 1024;
        final int root = 2;
        final int count = 100; // 800 bytes: every part fits a fragment
        CompiledTable table = Team.table("allreduce,reduce:0-inf:knomial:radix=4", n);
        MemTransport.Mesh mesh = MemTransport.Mesh.of(n);
        long[][] sent = new long[n][];
        Team.runOk(n, 60_000, node -> {
            MemTransport t = mesh.end(node);
            long[] s = new long[6];
            try (HostStep step = new HostStep(t, table, Team.waiter(LONG_TIMEOUT, null, node), "t", frag, 2)) {
                ByteBuffer b = buf(3 * count * 8);
                Inputs.fill(b, 0, DataType.DOUBLE, Op.SUM, 11, node, 3 * count);
                long desc = Desc.make(Collective.REDUCE, DataType.DOUBLE, Op.SUM, root, 3 * count);
                CallStatus st = new CallStatus();
                long m0 = t.sends;
                long b0 = t.bytesSent;
                step.reduce(b, 0, count, DataType.DOUBLE, Op.SUM, root, desc, st, false); // the first part: merged
                s[0] = t.sends - m0;
                s[1] = t.bytesSent - b0;
                m0 = t.sends;
                b0 = t.bytesSent;
                step.reduce(b, count * 8, count, DataType.DOUBLE, Op.SUM, root, desc, st, true); // a later part, blocking
                s[2] = t.sends - m0;
                s[3] = t.bytesSent - b0;
                m0 = t.sends;
                b0 = t.bytesSent;
                step.await(step.post(Collective.REDUCE, b, 2 * count * 8, count, DataType.DOUBLE, Op.SUM, root, desc, st));
                s[4] = t.sends - m0;
                s[5] = t.bytesSent - b0;
                assertTrue(st.ok());
                if (node == root) {
                    assertNull(Inputs.check(b, 0, DataType.DOUBLE, Op.SUM, 11, n, 3 * count));
                }
            }
            sent[node] = s;
        });
        final int h = 48;
        for (int node = 0; node < n; node++) {
            long[] s = sent[node];
            assertEquals(3, s[0], "the first part: the spine's one round of radix 4, to 3 peers");
            assertEquals(3 * h + (node == root ? 0 : 800), s[1], "the first part: the vector up the tree, headers otherwise");
            for (int i = 2; i <= 4; i += 2) {
                String what = (i == 2 ? "the blocking" : "the posted") + " later part, node " + node;
                assertEquals(node == root ? 0 : 1, s[i], what);
                assertEquals(node == root ? 0 : 800, s[i + 1], what);
            }
        }
    }

    /**
     * A reduce of one fragment runs the tree to its root inside the spine's rounds: every node sends
     * exactly the spine's messages (those of a barrier), each node but the root its vector once and
     * headers otherwise, where the merged allreduce sent every vector to every peer; the root's sums
     * are right. 4 nodes radix 4 (one round), 6 nodes radix 2 (two extras folded in, a partial
     * tree), 7 nodes radix 3 (a partial last iteration); roots 0, 1 (an extra at 6 and 7 nodes: it
     * sends its vector to its proxy as every extra does, and the proxy sends it the result) and the
     * last node.
     */
    @Test
    void aReduceOfOneFragmentSendsEachVectorOnceInsideTheSpine() {
        final int frag = 1024;
        final int count = 100; // 800 bytes: one fragment
        for (int[] nk : new int[][] {{4, 4}, {6, 2}, {7, 3}}) {
            final int n = nk[0];
            final int[] roots = {0, 1, n - 1};
            CompiledTable table = Team.table("allreduce,reduce,barrier:0-inf:knomial:radix=" + nk[1], n);
            MemTransport.Mesh mesh = MemTransport.Mesh.of(n);
            long[][] sent = new long[n][];
            Team.runOk(n, 60_000, node -> {
                MemTransport t = mesh.end(node);
                long[] s = new long[2 + 2 * roots.length];
                try (HostStep step = new HostStep(t, table, Team.waiter(LONG_TIMEOUT, null, node), "t", frag)) {
                    CallStatus st = new CallStatus();
                    long m0 = t.sends;
                    long b0 = t.bytesSent;
                    step.barrier(BARRIER, st);
                    s[0] = t.sends - m0;
                    s[1] = t.bytesSent - b0;
                    for (int r = 0; r < roots.length; r++) {
                        int root = roots[r];
                        ByteBuffer b = buf(count * 8);
                        Inputs.fill(b, 0, DataType.DOUBLE, Op.SUM, 21 + root, node, count);
                        m0 = t.sends;
                        b0 = t.bytesSent;
                        step.reduce(b, 0, count, DataType.DOUBLE, Op.SUM, root, red(DataType.DOUBLE, Op.SUM, count, root), st);
                        s[2 + 2 * r] = t.sends - m0;
                        s[3 + 2 * r] = t.bytesSent - b0;
                        assertTrue(st.ok());
                        if (node == root) {
                            assertNull(Inputs.check(b, 0, DataType.DOUBLE, Op.SUM, 21 + root, n, count), n + " nodes, root " + root);
                        }
                    }
                }
                sent[node] = s;
            });
            for (int node = 0; node < n; node++) {
                long[] s = sent[node];
                for (int r = 0; r < roots.length; r++) {
                    String at = n + " nodes radix " + nk[1] + ", root " + roots[r] + ", node " + node;
                    boolean extraRoot = roots[r] == 1 && n != 4;
                    assertEquals(s[0], s[2 + 2 * r], at + ": the spine's messages");
                    assertEquals(s[1] + (node == roots[r] && !extraRoot ? 0 : 800), s[3 + 2 * r],
                            at + ": one vector (its own, or the result to an extra; a root that is no extra: none), headers otherwise");
                }
            }
        }
    }

    /**
     * A posted part whose own data is read from a source ({@code post}'s source form, the
     * one-rank-per-node path's input read in place) gives exactly the bits of the same part copied
     * into the buffer first, and never writes the source: the output starts as NaN garbage, so a
     * round that read the buffer before it was written, or a later round that read the source
     * instead of the folded data, shows. Recursive doubling with extra nodes (3, 5 nodes), radix 3,
     * SRA (several reduce-scatter rounds at 4 nodes) and the tree with inner nodes (5 nodes, radix
     * 2), Allreduce and Reduce; fragments of 64 doubles so that every round has several.
     */
    @Test
    void aPartWithASourceGivesTheCopiedPartsBitsAndLeavesTheSourceAlone() {
        final int frag = 512;
        final int count = 301;
        String[] rules = {"allreduce,reduce:0-inf:knomial:radix=2", "allreduce,reduce:0-inf:knomial:radix=3",
            "allreduce,reduce:0-inf:sra:radix=2"};
        for (int n : new int[] {2, 3, 4, 5}) {
            for (String rule : rules) {
                for (Collective c : new Collective[] {Collective.ALLREDUCE, Collective.REDUCE}) {
                    final int root = c == Collective.REDUCE ? n - 1 : 0;
                    CompiledTable table = Team.table(rule, n);
                    MemTransport.Mesh mesh = MemTransport.Mesh.of(n);
                    String what = n + " nodes, " + rule + ", " + c;
                    Team.runOk(n, 60_000, node -> {
                        try (HostStep step = new HostStep(mesh.end(node), table, Team.waiter(LONG_TIMEOUT, null, node), "t", frag, 2)) {
                            long desc = c == Collective.REDUCE ? red(DataType.DOUBLE, Op.SUM, 3 * count, root)
                                    : ar(DataType.DOUBLE, Op.SUM, 3 * count);
                            CallStatus st = new CallStatus();
                            ByteBuffer first = buf(count * 8);
                            Inputs.fill(first, 0, DataType.DOUBLE, Op.SUM, 5, node, count);
                            if (c == Collective.REDUCE) {
                                step.reduce(first, 0, count, DataType.DOUBLE, Op.SUM, root, desc, st, false);
                            } else {
                                step.allreduce(first, 0, count, DataType.DOUBLE, Op.SUM, desc, st, false);
                            }
                            assertTrue(st.ok(), what);
                            ByteBuffer src = buf((count + 3) * 8);
                            Inputs.fill(src, 3 * 8, DataType.DOUBLE, Op.SUM, 6 + n, node, count);
                            ByteBuffer before = buf((count + 3) * 8);
                            before.put(0, src, 0, src.capacity());
                            ByteBuffer copied = buf(count * 8);
                            copied.put(0, src, 3 * 8, count * 8);
                            ByteBuffer out = buf((count + 5) * 8);
                            for (int i = 0; i < count + 5; i++) {
                                out.putLong(i * 8, 0x7ff8deadbeef0000L + i); // NaNs: garbage that a sum would carry
                            }
                            int h1 = step.post(c, copied, 0, count, DataType.DOUBLE, Op.SUM, root, desc, st);
                            int h2 = step.post(c, src, 3 * 8, out, 5 * 8, count, DataType.DOUBLE, Op.SUM, root, desc, st);
                            step.await(h1);
                            step.await(h2);
                            assertTrue(st.ok(), what);
                            assertEquals(0, src.compareTo(before), what + ": the source was written, node " + node);
                            if (c == Collective.ALLREDUCE || node == root) {
                                for (int i = 0; i < count; i++) {
                                    assertEquals(copied.getLong(i * 8), out.getLong((i + 5) * 8), what + ", node " + node + ", element " + i);
                                }
                                assertNull(Inputs.check(out, 5 * 8, DataType.DOUBLE, Op.SUM, 6 + n, n, count), what);
                            }
                        }
                    });
                }
            }
        }
    }

    /**
     * A reduce merged into the spine's rounds up to the spine's slot ({@code HostStep}'s "Merged
     * reduce"), its payloads split above the fragment, with this node's data read from a separate
     * source ({@link HostStep#run(Collective, ByteBuffer, int, ByteBuffer, int, int, DataType, Op, int, long, CallStatus)}):
     * the root gets the exact sums and the same bits as the call on the buffer itself (where a node
     * is an extra, 3, 5 and 6 nodes at radix 2, 4 and 5 at radix 3, only up to a fragment); the source
     * is never written; with 2 nodes the root receives a split payload into the result; a node that only sends (2 nodes, an extra) neither copies its source into
     * its buffer nor writes it; every node sends its vector once (an extra root's proxy: the result). Sizes inside the header (a
     * fragment), split, and above the slot (spine, then the tree, copied); 2-6 nodes, radix 2 and
     * 3, roots at the first and the last node.
     */
    @Test
    void aMergedReduceReadsItsSourceInPlaceAndGivesTheBuffersBits() {
        final int frag = 512;
        final int partFrag = 4096;
        for (int n = 2; n <= 6; n++) {
            for (int k : new int[] {2, 3}) {
                final int nodes = n;
                CompiledTable table = Team.table("allreduce,reduce:0-inf:knomial:radix=" + k, n);
                for (int root : new int[] {0, n - 1}) {
                    MemTransport.Mesh mesh = MemTransport.Mesh.of(n);
                    String what = n + " nodes, radix " + k + ", root " + root;
                    Team.runOk(n, 60_000, node -> {
                        try (HostStep step = new HostStep(mesh.end(node), table, Team.waiter(LONG_TIMEOUT, null, node), "t", frag,
                                HostStep.DEFAULT_PARTS, partFrag)) {
                            // merged up to the slot where no node is an extra, else up to a fragment (and not whole)
                            boolean noExtras = new KnomialPattern(nodes, k, 0).nExtra == 0;
                            assertEquals(noExtras ? partFrag : 0, step.mergedReduceBytes(partFrag), what);
                            for (int count : new int[] {40, 301, 512, 600}) {
                                String w = what + ", " + count + " doubles";
                                long desc = red(DataType.DOUBLE, Op.SUM, count, root);
                                ByteBuffer copied = buf(count * 8);
                                Inputs.fill(copied, 0, DataType.DOUBLE, Op.SUM, 13 + count, node, count);
                                CallStatus st = new CallStatus();
                                step.reduce(copied, 0, count, DataType.DOUBLE, Op.SUM, root, desc, st, false);
                                assertTrue(st.ok(), w);
                                ByteBuffer src = buf((count + 3) * 8);
                                Inputs.fill(src, 3 * 8, DataType.DOUBLE, Op.SUM, 13 + count, node, count);
                                ByteBuffer before = buf((count + 3) * 8);
                                before.put(0, src, 0, src.capacity());
                                ByteBuffer out = buf((count + 5) * 8);
                                for (int i = 0; i < count + 5; i++) {
                                    out.putLong(i * 8, 0x7ff8deadbeef0000L + i); // NaNs: garbage that a sum would carry
                                }
                                long m0 = mesh.end(node).sendCount();
                                mesh.end(node).watched = out;
                                int into0 = mesh.end(node).recvsIntoWatched;
                                step.run(Collective.REDUCE, src, 3 * 8, out, 5 * 8, count, DataType.DOUBLE, Op.SUM, root, desc, st);
                                long sent = mesh.end(node).sendCount() - m0;
                                assertTrue(st.ok(), w);
                                assertEquals(0, src.compareTo(before), w + ": the source was written, node " + node);
                                boolean merged = count * 8 <= (noExtras ? partFrag : frag);
                                if (node == root && nodes == 2) { // one peer, a separate source: its payload lands in the result
                                    assertEquals(merged && count * 8 > frag ? 1 : 0, mesh.end(node).recvsIntoWatched - into0, w);
                                }
                                if (node == root) {
                                    for (int i = 0; i < count; i++) {
                                        assertEquals(copied.getLong(i * 8), out.getLong((i + 5) * 8), w + ", element " + i);
                                    }
                                    assertNull(Inputs.check(out, 5 * 8, DataType.DOUBLE, Op.SUM, 13 + count, nodes, count), w);
                                } else if (merged && (nodes == 2 || new KnomialPattern(nodes, k, node).role == KnomialPattern.EXTRA)) {
                                    for (int i = 0; i < count + 5; i++) {
                                        assertEquals(0x7ff8deadbeef0000L + i, out.getLong(i * 8), w + ": a leaf wrote its buffer, node " + node);
                                    }
                                }
                                if (merged) { // spine messages: a header to each peer of each round, and this node's vector once
                                    boolean rootExtra = new KnomialPattern(nodes, k, root).role == KnomialPattern.EXTRA;
                                    int vectors = (node != root || rootExtra) && count * 8 > frag ? 1 : 0; // an extra root sends to its proxy
                                    assertEquals(spineSends(nodes, k, node) + vectors, sent, w + ": messages of node " + node);
                                }
                            }
                        }
                    });
                }
            }
        }
    }

    /**
     * The root of a 2-node merged reduce with a separate source receives the other node's split
     * payload straight into its buffer, a receive of exactly the length it expects: a node that
     * sends a longer payload (its receive truncates, whether the payload comes after the receive's
     * post or was there before it) or a shorter one is a mismatch on both nodes,
     * nothing is left behind and the next call is exact. Both orders of the two lengths.
     */
    @Test
    void aSplitPayloadOfAnotherLengthThanTheBufferExpectsIsAMismatch() {
        final int frag = 512;
        for (int c = 0; c < 4; c++) {
            final int other = c % 2 == 0 ? 400 : 200;
            final boolean atPost = c >= 2; // the payload there before the root posts its receive
            MemTransport.Mesh mesh = MemTransport.Mesh.of(2);
            String[] msg = new String[2];
            CountDownLatch sent = new CountDownLatch(1);
            Team.runOk(2, 60_000, node -> {
                try (HostStep step = new HostStep(mesh.end(node), Team.table("allreduce,reduce:0-inf:knomial:radix=2", 2),
                        Team.waiter(LONG_TIMEOUT, null, node), "t", frag, HostStep.DEFAULT_PARTS, 4096)) {
                    int count = node == 0 ? 300 : other; // doubles: 2400 B at the root, both above the fragment (split)
                    ByteBuffer src = buf(count * 8);
                    Inputs.fill(src, 0, DataType.DOUBLE, Op.SUM, 3, node, count);
                    ByteBuffer out = buf(count * 8);
                    CallStatus st = new CallStatus();
                    if (atPost && node == 0) {
                        assertTrue(sent.await(10, java.util.concurrent.TimeUnit.SECONDS)); // node 1's messages are there
                    }
                    if (node == 1) {
                        mesh.end(1).onSend = tag -> {
                            if ((tag & 0x3FFF) == 1) { // fragment 1 of a spine round: a split payload
                                sent.countDown();
                            }
                        };
                    }
                    step.run(Collective.REDUCE, src, 0, out, 0, count, DataType.DOUBLE, Op.SUM, 0, red(DataType.DOUBLE, Op.SUM, count, 0), st);
                    assertFalse(st.ok(), other + " doubles against 300: node " + node + " missed the mismatch");
                    msg[node] = st.toException().getMessage();
                    checkedAllreduce(step, 2, node, 350, 5);
                    assertEquals(1, mesh.end(node).inUse(), "a mismatch leaves no request behind (the one abort receive stays)");
                }
            });
            assertTrue(msg[0].contains("rank " + mesh.globalRanks[1] + " "), msg[0]);
            assertEquals(msg[0], msg[1], "both nodes report the same pair");
        }
    }

    /** Sends of a node in the spine's rounds of pattern (n, k): one per peer of each of its groups. */
    private static int spineSends(int n, int k, int node) {
        KnomialPattern p = new KnomialPattern(n, k, node);
        if (p.role == KnomialPattern.EXTRA) {
            return 1;
        }
        int sends = p.role == KnomialPattern.PROXY ? 1 : 0;
        for (int i = 0; i < p.iterations; i++) {
            sends += p.groupSize(i) - 1;
        }
        return sends;
    }

    /**
     * A posted round that folds with one peer and reads this node's data from a separate source
     * receives the peer's fragments into the buffer and folds there (PostedRounds' "One peer's
     * fragments straight into the result"); a source that is another view of the buffer's memory
     * (an in-place call the identity check cannot see) must not: the receive would overwrite data
     * this node still sends and folds. Both give the exact sums, the first with receives into the
     * buffer, the second with none there.
     */
    @Test
    void onePeersFragmentsLandInTheBufferOnlyWhenTheSourceSharesNoMemoryWithIt() {
        final int frag = 512;
        final int count = 700; // several fragments of doubles, a partial last one
        for (Collective c : new Collective[] {Collective.ALLREDUCE, Collective.REDUCE}) {
            for (boolean aliased : new boolean[] {false, true}) {
                MemTransport.Mesh mesh = MemTransport.Mesh.of(2);
                String what = c + (aliased ? ", source a view of the buffer" : ", separate source");
                Team.runOk(2, 60_000, node -> {
                    try (HostStep step = new HostStep(mesh.end(node), Team.table("allreduce,reduce:0-inf:knomial:radix=2", 2),
                            Team.waiter(LONG_TIMEOUT, null, node), "t", frag, 2)) {
                        long desc = c == Collective.REDUCE ? red(DataType.DOUBLE, Op.SUM, 2 * count, 0) : ar(DataType.DOUBLE, Op.SUM, 2 * count);
                        CallStatus st = new CallStatus();
                        ByteBuffer first = buf(count * 8);
                        Inputs.fill(first, 0, DataType.DOUBLE, Op.SUM, 9, node, count);
                        if (c == Collective.REDUCE) {
                            step.reduce(first, 0, count, DataType.DOUBLE, Op.SUM, 0, desc, st, false);
                        } else {
                            step.allreduce(first, 0, count, DataType.DOUBLE, Op.SUM, desc, st, false);
                        }
                        ByteBuffer out = buf((count + 5) * 8);
                        ByteBuffer src;
                        int srcOff;
                        if (aliased) {
                            src = out.duplicate().order(out.order()); // the same memory, another object
                            srcOff = 5 * 8;
                        } else {
                            src = buf((count + 3) * 8);
                            srcOff = 3 * 8;
                            for (int i = 0; i < count + 5; i++) {
                                out.putLong(i * 8, 0x7ff8deadbeef0000L + i); // NaNs: garbage that a sum would carry
                            }
                        }
                        Inputs.fill(src, srcOff, DataType.DOUBLE, Op.SUM, 11, node, count);
                        mesh.end(node).watched = out;
                        int h = step.post(c, src, srcOff, out, 5 * 8, count, DataType.DOUBLE, Op.SUM, 0, desc, st);
                        step.await(h);
                        assertTrue(st.ok(), what);
                        if (aliased) {
                            assertEquals(0, mesh.end(node).recvsIntoWatched, what + ": a receive into the buffer, node " + node);
                        } else if (c == Collective.ALLREDUCE || node == 0) { // a Reduce's leaf only sends
                            assertTrue(mesh.end(node).recvsIntoWatched > 0, what + ": no receive into the buffer, node " + node);
                        }
                        if (c == Collective.ALLREDUCE || node == 0) {
                            assertNull(Inputs.check(out, 5 * 8, DataType.DOUBLE, Op.SUM, 11, 2, count), what + ", node " + node);
                        }
                    }
                });
            }
        }
    }

    /** Node {@code odd} calls something else than the others; every node must end with the same mismatch. */
    interface Call {
        void run(HostStep s, int node, CallStatus st);
    }

    static Call allreduceOf(DataType t, Op op, int count) {
        return (s, node, st) -> s.allreduce(buf(count * t.size), 0, count, t, op, ar(t, op, count), st);
    }

    static Call reduceOf(DataType t, Op op, int count, int root) {
        return (s, node, st) -> s.reduce(buf(count * t.size), 0, count, t, op, root, red(t, op, count, root), st);
    }

    static final Call BARRIER_CALL = (s, node, st) -> s.barrier(BARRIER, st);

    @Test
    void mismatchesAreDetectedOnEveryNodeWithoutHangAndTheStepStaysUsable() {
        Call dsum10 = allreduceOf(DataType.DOUBLE, Op.SUM, 10);
        // spine radix 4 on 6 nodes: nodes 0 and 2 are proxies of the extras 1 and 3
        mismatches("allreduce:0-1k:knomial:radix=4#allreduce:1k-inf:sra:radix=2#reduce:0-inf:knomial:radix=3", 1024,
                new Object[][] {
            // odd node, its call, everyone else's call
            {3, allreduceOf(DataType.DOUBLE, Op.MAX, 10), dsum10, "another op"},
            {5, BARRIER_CALL, dsum10, "barrier against allreduce"},
            {1, allreduceOf(DataType.DOUBLE, Op.SUM, 200), dsum10, "an extra with a count on the SRA data path"},
            {4, allreduceOf(DataType.DOUBLE, Op.SUM, 5000), dsum10, "pipelined (above a fragment) against merged"},
            {0, reduceOf(DataType.LONG, Op.SUM, 300, 2), reduceOf(DataType.LONG, Op.SUM, 300, 4), "another root of the tree"},
            {4, allreduceOf(DataType.INT, Op.SUM, 10), reduceOf(DataType.INT, Op.SUM, 10, 0), "allreduce against reduce"},
            {2, allreduceOf(DataType.FLOAT, Op.SUM, 10), dsum10, "another type"},
            {1, allreduceOf(DataType.DOUBLE, Op.PROD, 0), allreduceOf(DataType.DOUBLE, Op.SUM, 0), "zero count, another op"},
            {5, allreduceOf(DataType.INT, Op.SUM, 600), allreduceOf(DataType.INT, Op.SUM, 601), "data path, one element more"},
        });
        // both algorithms on the spine radix: merged SRA meets merged recursive k-ing
        mismatches("allreduce:0-1k:knomial:radix=4#allreduce:1k-inf:sra:radix=4", 4096, new Object[][] {
            {1, allreduceOf(DataType.DOUBLE, Op.SUM, 200), dsum10, "merged SRA against merged k-nomial"},
            {4, allreduceOf(DataType.DOUBLE, Op.SUM, 300), allreduceOf(DataType.DOUBLE, Op.SUM, 301), "merged SRA, other counts"},
            {0, allreduceOf(DataType.DOUBLE, Op.SUM, 1000), allreduceOf(DataType.DOUBLE, Op.SUM, 200), "SRA data path against merged"},
        });
        // reduce on the spine radix: the tree to the root inside the spine
        Call lsum0 = reduceOf(DataType.LONG, Op.SUM, 100, 0);
        mismatches("allreduce,reduce:0-inf:knomial:radix=4", 1024, new Object[][] {
            {3, lsum0, reduceOf(DataType.LONG, Op.SUM, 100, 2), "the tree to node 0 against the tree to node 2"},
            {0, reduceOf(DataType.LONG, Op.SUM, 100, 1), lsum0, "node 0 reduces to node 1, the others to node 0"},
            {1, reduceOf(DataType.LONG, Op.SUM, 101, 0), lsum0, "an extra with one element more"},
            {1, reduceOf(DataType.LONG, Op.SUM, 100, 1), lsum0, "an extra reduces to itself, the others to node 0"},
            {2, reduceOf(DataType.LONG, Op.SUM, 100, 3), reduceOf(DataType.LONG, Op.SUM, 100, 1), "a proxy says its extra, the others another extra"},
            {5, reduceOf(DataType.LONG, Op.SUM, 1000, 0), lsum0, "above a fragment (spine, then the tree) against the tree in the spine"},
            {2, allreduceOf(DataType.LONG, Op.SUM, 100), lsum0, "allreduce against the tree in the spine"},
            {4, reduceOf(DataType.LONG, Op.MAX, 100, 0), lsum0, "another op"},
        });
        // reduces merged up to the spine's slot of 4 KiB, split above the 1 KiB fragment (Exchange's "Split
        // spine messages"; 8 nodes at radix 2: no extras, three rounds): payloads announced and not
        // expected, expected and not sent, sent inside the header
        Call split0 = reduceOf(DataType.LONG, Op.SUM, 300, 0);
        mismatches(8, "allreduce,reduce:0-inf:knomial:radix=2", 1024, 4096, new Object[][] {
            {3, split0, reduceOf(DataType.LONG, Op.SUM, 300, 2), "split: the tree to node 0 against the tree to node 2"},
            {0, reduceOf(DataType.LONG, Op.SUM, 300, 1), split0, "split: node 0 reduces to node 1, the others to node 0"},
            {1, reduceOf(DataType.LONG, Op.SUM, 301, 0), split0, "split: an extra with one element more"},
            {5, lsum0, split0, "a payload inside the header against split ones"},
            {2, split0, lsum0, "a split payload against ones inside the header"},
            {4, reduceOf(DataType.LONG, Op.SUM, 1000, 0), split0, "above the spine's slot (spine, then the tree) against split"},
            {1, allreduceOf(DataType.LONG, Op.SUM, 300), split0, "an allreduce above a fragment against a split reduce"},
            {3, reduceOf(DataType.LONG, Op.MAX, 300, 0), split0, "split, another op"},
            {0, split0, reduceOf(DataType.LONG, Op.SUM, 300, 7), "split: node 0 reduces to node 0, the others to node 7"},
            {6, reduceOf(DataType.LONG, Op.SUM, 299, 0), split0, "split: a leaf with one element less"},
        });
    }

    private static void mismatches(String rules, int frag, Object[][] scenarios) {
        mismatches(6, rules, frag, frag, scenarios);
    }

    /** n nodes, a posted part's fragment of {@code partFrag} bytes: the spine's slot ({@code HostStep}'s "Merged reduce"). */
    private static void mismatches(int n, String rules, int frag, int partFrag, Object[][] scenarios) {
        CompiledTable table = Team.table(rules, n);
        MemTransport.Mesh mesh = MemTransport.Mesh.of(n);
        String[][] messages = new String[scenarios.length][n];
        Team.runOk(n, 60_000, node -> {
            try (HostStep step = new HostStep(mesh.end(node), table, Team.waiter(LONG_TIMEOUT, null, node), "t", frag,
                    HostStep.DEFAULT_PARTS, partFrag)) {
                for (int sc = 0; sc < scenarios.length; sc++) {
                    Call c = (Call) scenarios[sc][node == (int) scenarios[sc][0] ? 1 : 2];
                    CallStatus st = new CallStatus();
                    c.run(step, node, st);
                    assertFalse(st.ok(), scenarios[sc][3] + ": node " + node + " missed the mismatch");
                    messages[sc][node] = st.toException().getMessage();
                    // usable afterwards: a matching call is correct
                    checkedAllreduce(step, n, node, 10 + 300 * (sc % 3), sc);
                }
                assertEquals(n > 1 ? 1 : 0, mesh.end(node).inUse(), "a mismatch leaves no request behind (the one abort receive stays)");
            }
        });
        for (int sc = 0; sc < scenarios.length; sc++) {
            int odd = (int) scenarios[sc][0];
            for (int node = 1; node < n; node++) {
                assertEquals(messages[sc][0], messages[sc][node], scenarios[sc][3] + ": every node reports the same pair");
            }
            assertTrue(messages[sc][0].contains("rank " + mesh.globalRanks[odd] + " "), scenarios[sc][3] + ": " + messages[sc][0]);
        }
    }

    /** A status that arrives not ok (a mismatch inside a node) reaches every node. */
    @Test
    void anIncomingMismatchReachesEveryNode() {
        final int n = 5;
        MemTransport.Mesh mesh = MemTransport.Mesh.of(n);
        String[] msgs = new String[n];
        Team.runOk(n, 60_000, node -> {
            try (HostStep step = new HostStep(mesh.end(node), Team.table(null, n), Team.waiter(LONG_TIMEOUT, null, node), "t")) {
                CallStatus st = new CallStatus();
                if (node == 3) {
                    st.mismatch(100, ar(DataType.INT, Op.SUM, 1), 101, ar(DataType.INT, Op.MAX, 1));
                }
                step.allreduce(buf(4), 0, 1, DataType.INT, Op.SUM, ar(DataType.INT, Op.SUM, 1), st);
                msgs[node] = st.ok() ? "ok" : st.toException().getMessage();
                checkedAllreduce(step, n, node, 7, 9);
            }
        });
        for (int node = 0; node < n; node++) {
            assertTrue(msgs[node].contains("rank 100 ") && msgs[node].contains("rank 101 "), msgs[node]);
        }
    }

    /**
     * A peer sending more than the posted receive: the receiver records a mismatch naming it, the
     * call ends (no hang), and the next call works on both nodes.
     */
    @Test
    void aTruncatedReceiveIsAMismatchAndTheProtocolStaysAligned() {
        final int n = 2;
        MemTransport.Mesh mesh = MemTransport.Mesh.of(n);
        CompiledTable table = Team.table(null, n);
        String[] msg = new String[n];
        Team.runOk(n, 60_000, node -> {
            try (HostStep step = new HostStep(mesh.end(node), table, Team.waiter(LONG_TIMEOUT, null, node), "t", 256)) {
                checkedAllreduce(step, n, node, 5, 1);
                if (node == 1) {
                    mesh.end(1).oversizeSend(1, 1000); // its next message is 1000 bytes longer than any receive
                }
                CallStatus st = new CallStatus();
                step.allreduce(buf(40), 0, 5, DataType.DOUBLE, Op.SUM, ar(DataType.DOUBLE, Op.SUM, 5), st);
                msg[node] = st.ok() ? "ok" : st.toException().getMessage();
                checkedAllreduce(step, n, node, 5, 2);
                checkedAllreduce(step, n, node, 100, 3);
            }
        });
        assertTrue(msg[0].contains("rank " + mesh.globalRanks[1] + " "), msg[0]);
    }

    @Test
    void aDeadPeerFailsEveryNodeNamingItsGlobalRankQuickly() {
        for (int when = 0; when < 2; when++) {
            final int n = 5;
            final int dead = 2;
            final int deadWhen = when;
            MemTransport.Mesh mesh = MemTransport.Mesh.of(n);
            HostStep[] steps = new HostStep[n];
            CountDownLatch firstDone = new CountDownLatch(n);
            long[] took = new long[n];
            Throwable[] errors = Team.run(n, 30_000, node -> {
                try (HostStep step = new HostStep(mesh.end(node), Team.table(null, n), Team.waiter(LONG_TIMEOUT, steps, node), "t")) {
                    steps[node] = step;
                    if (deadWhen == 1) {
                        checkedAllreduce(step, n, node, 10, 1); // everyone completes one call first
                    }
                    firstDone.countDown();
                    firstDone.await();
                    if (node == dead) {
                        mesh.kill(dead);
                        return;
                    }
                    long t0 = System.nanoTime();
                    try {
                        checkedAllreduce(step, n, node, 3000, 2);
                    } finally {
                        took[node] = System.nanoTime() - t0;
                    }
                }
            });
            for (int node = 0; node < n; node++) {
                if (node == dead) {
                    continue;
                }
                Throwable e = errors[node];
                assertTrue(e instanceof PeerFailureException, "node " + node + ": " + e);
                int[] blamed = ((PeerFailureException) e).ranks();
                assertTrue(Arrays.stream(blamed).anyMatch(r -> r == mesh.globalRanks[dead]),
                        "node " + node + " blames " + Arrays.toString(blamed) + ": " + e.getMessage());
                assertTrue(took[node] < 5_000_000_000L, "node " + node + " took " + took[node] / 1e6 + " ms (the timeout is 20 s)");
            }
        }
    }

    @Test
    void afterAFailureTheStepRefusesCalls() {
        final int n = 3;
        MemTransport.Mesh mesh = MemTransport.Mesh.of(n);
        mesh.kill(1);
        HostStep step = new HostStep(mesh.end(0), Team.table(null, n), Team.waiter(LONG_TIMEOUT, null, 0), "t");
        CallStatus st = new CallStatus();
        assertThrows(PeerFailureException.class, () -> step.barrier(BARRIER, st));
        Sharp4jException e = assertThrows(Sharp4jException.class, () -> step.barrier(BARRIER, st));
        assertTrue(e.getMessage().contains("unusable"), e.getMessage());
        step.close();
    }

    @Test
    void abortReachesTheOtherLeadersAndTheirAbortWord() {
        final int n = 4;
        final int giver = 3;
        final int blamedNode = 1;
        MemTransport.Mesh mesh = MemTransport.Mesh.of(n);
        HostStep[] steps = new HostStep[n];
        long[] words = new long[n];
        long[] took = new long[n];
        Throwable[] errors = Team.run(n, 30_000, node -> {
            try (HostStep step = new HostStep(mesh.end(node), Team.table(null, n), Team.waiter(LONG_TIMEOUT, steps, node), "t")) {
                steps[node] = step;
                if (node == giver) {
                    Thread.sleep(100);
                    step.abort(mesh.globalRanks[giver], mesh.globalRanks[blamedNode]);
                    assertEquals(0, step.abortWord(), "its own abort is not reported to itself");
                    Thread.sleep(300); // the peers forward it, to this leader too (dissemination): still not reported
                    assertEquals(0, step.abortWord(), "its own abort, forwarded back, is not reported to itself");
                    return;
                }
                long t0 = System.nanoTime();
                try {
                    step.barrier(BARRIER, new CallStatus());
                } finally {
                    took[node] = System.nanoTime() - t0;
                    words[node] = step.abortWord();
                }
            }
        });
        long want = ((long) (mesh.globalRanks[blamedNode] + 1) << 32) | (mesh.globalRanks[giver] + 1);
        for (int node = 0; node < n; node++) {
            if (node == giver) {
                assertNull(errors[node]);
                continue;
            }
            assertTrue(errors[node] instanceof PeerFailureException, "node " + node + ": " + errors[node]);
            assertEquals(want, words[node], "node " + node);
            assertTrue(took[node] < 5_000_000_000L);
        }
    }

    @Test
    void anAbortFromAnotherThreadEndsTheCallOnItsOwnThreadAndReachesThePeers() throws Exception {
        final int n = 3;
        MemTransport.Mesh mesh = MemTransport.Mesh.of(n);
        HostStep[] steps = new HostStep[n];
        long[] words = new long[n];
        CountDownLatch inCall = new CountDownLatch(1);
        Throwable[] errors = Team.run(n, 30_000, node -> {
            try (HostStep step = new HostStep(mesh.end(node), Team.table(null, n), Team.waiter(LONG_TIMEOUT, steps, node), "t")) {
                steps[node] = step;
                if (node == 2) { // never joins the barrier: nodes 0 and 1 wait in it
                    inCall.await();
                    Thread.sleep(50);
                    long w = 0;
                    for (long end = System.nanoTime() + 5_000_000_000L; w == 0 && System.nanoTime() < end; ) {
                        w = step.abortWord();
                        Thread.sleep(1);
                    }
                    words[node] = w;
                    return;
                }
                if (node == 0) {
                    Thread other = new Thread(() -> {
                        try {
                            inCall.await();
                            Thread.sleep(100);
                        } catch (InterruptedException e) {
                            return;
                        }
                        step.abort(mesh.globalRanks[0], -1); // as Communicator.abort from an application thread
                    });
                    other.start();
                }
                inCall.countDown();
                try {
                    step.barrier(BARRIER, new CallStatus());
                } finally {
                    words[node] = step.abortWord();
                }
            }
        });
        Throwable e0 = errors[0];
        assertTrue(e0 instanceof Sharp4jException && e0.getMessage().contains("aborted"), "node 0: " + e0);
        long want = ((long) 0 << 32) | (mesh.globalRanks[0] + 1);
        assertTrue(errors[1] instanceof PeerFailureException, "node 1: " + errors[1]);
        assertEquals(want, words[1], "node 1 sees node 0's abort");
        assertEquals(want, words[2], "node 2 sees node 0's abort");
    }

    /**
     * 3 nodes, radix 2: node 1 (node 0's extra) is dead; node 0 notices, sends its abort and exits
     * at once; node 2, which waits only for node 0, then sees node 0 vanish. It must still blame
     * node 1, from node 0's abort, not node 0. Its probe does not look at aborts here (null steps),
     * so only the step's own check can get it right.
     */
    @Test
    void aLeaderThatGivesUpAndExitsIsNotBlamedForItsOwnAbort() {
        final int n = 3;
        MemTransport.Mesh mesh = MemTransport.Mesh.of(n);
        mesh.kill(1);
        HostStep[] steps = new HostStep[n];
        Throwable[] errors = Team.run(n, 30_000, node -> {
            if (node == 1) {
                return;
            }
            HostStep step = new HostStep(mesh.end(node), Team.table(null, n), Team.waiter(LONG_TIMEOUT, node == 0 ? steps : null, node), "t");
            steps[node] = step;
            try {
                step.barrier(BARRIER, new CallStatus());
            } finally {
                if (node == 0) {
                    mesh.kill(0); // gave up and exited, right after telling the others
                }
            }
        });
        assertTrue(errors[0] instanceof PeerFailureException, "node 0: " + errors[0]);
        assertTrue(errors[2] instanceof PeerFailureException, "node 2: " + errors[2]);
        assertEquals(mesh.globalRanks[1], ((PeerFailureException) errors[2]).ranks()[0], "node 2 blames: " + errors[2].getMessage());
        assertTrue(errors[2].getMessage().contains("because of rank " + mesh.globalRanks[1]), errors[2].getMessage());
    }

    @Test
    void oneNodeIsANoOp() {
        MemTransport.Mesh mesh = MemTransport.Mesh.of(1);
        try (HostStep step = new HostStep(mesh.end(0), Team.table(null, 1), Team.waiter(LONG_TIMEOUT, null, 0), "t")) {
            ByteBuffer b = buf(8);
            b.putDouble(0, 3.5);
            CallStatus st = new CallStatus();
            step.allreduce(b, 0, 1, DataType.DOUBLE, Op.SUM, ar(DataType.DOUBLE, Op.SUM, 1), st);
            step.reduce(b, 0, 1, DataType.DOUBLE, Op.SUM, 0, red(DataType.DOUBLE, Op.SUM, 1, 0), st);
            step.barrier(BARRIER, st);
            assertTrue(st.ok());
            assertEquals(3.5, b.getDouble(0));
            assertEquals(0, mesh.end(0).sends);
        }
    }

    /**
     * A warm step allocates nothing per call (nor does MemTransport): 10,000 calls per node over
     * every path (merged k-nomial, spine + SRA data rounds, spine + reduce tree, barrier).
     */
    @Test
    void noAllocationPerCallOnAWarmStep() {
        final int n = 4;
        final int frag = 1024;
        CompiledTable table = Team.table("allreduce:0-1k:knomial:radix=4#allreduce:1k-inf:sra:radix=2"
                + "#reduce:0-inf:knomial:radix=3", n);
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        MemTransport.Mesh mesh = MemTransport.Mesh.of(n);
        long[] allocated = new long[n];
        Team.runOk(n, 120_000, node -> {
            try (HostStep step = new HostStep(mesh.end(node), table, Team.waiter(LONG_TIMEOUT, null, node), "t", frag)) {
                ByteBuffer b = buf(8 * 400);
                CallStatus st = new CallStatus();
                long d1 = ar(DataType.DOUBLE, Op.SUM, 10);
                long d2 = ar(DataType.DOUBLE, Op.SUM, 400);
                long[] dr = new long[n];
                for (int r = 0; r < n; r++) {
                    dr[r] = red(DataType.INT, Op.MAX, 700, r);
                }
                for (int round = 0; round < 2; round++) {
                    long before = mx.getCurrentThreadAllocatedBytes();
                    int calls = round == 0 ? 3000 : 10_000;
                    for (int i = 0; i < calls; i++) {
                        st.reset();
                        switch (i & 3) {
                            case 0: step.allreduce(b, 0, 10, DataType.DOUBLE, Op.SUM, d1, st); break;
                            case 1: step.allreduce(b, 0, 400, DataType.DOUBLE, Op.SUM, d2, st); break;
                            case 2: step.reduce(b, 0, 700, DataType.INT, Op.MAX, (i >> 2) % n, dr[(i >> 2) % n], st); break;
                            default: step.barrier(BARRIER, st); break;
                        }
                        if (!st.ok()) {
                            throw st.toException();
                        }
                    }
                    allocated[node] = mx.getCurrentThreadAllocatedBytes() - before;
                }
            }
        });
        for (int node = 0; node < n; node++) {
            assertTrue(allocated[node] < 2048, "node " + node + " allocated " + allocated[node] + " bytes in 10,000 warm calls");
        }
    }

    /**
     * A long call reaches phase 3 in parts (a slot, or a unit of slots); the table's rules are keyed
     * by the user's call, whose count the descriptor carries, so every part must be looked up at the
     * whole call's bytes (before, rules above the slot never applied, and sharp4j tune's
     * measurements of long calls were not what ran).
     */
    @Test
    void thePartsOfALongCallAreLookedUpAtTheWholeCallsSize() {
        long desc = ar(DataType.FLOAT, Op.SUM, 262_144); // a 1 MiB call
        assertEquals(1L << 20, HostStep.callBytes(desc, 16_384, DataType.FLOAT), "a 64 KiB part of a 1 MiB call");
        assertEquals(1L << 20, HostStep.callBytes(desc, 262_144, DataType.FLOAT), "the whole call at once");
        assertEquals(8L * 1000, HostStep.callBytes(ar(DataType.DOUBLE, Op.MAX, 1000), 1000, DataType.DOUBLE));
        assertEquals(0L, HostStep.callBytes(Desc.make(Collective.BARRIER, DataType.INT, Op.SUM, 0, 0), 0, null), "a barrier");
    }
}
