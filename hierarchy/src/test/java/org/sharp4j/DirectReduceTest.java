package org.sharp4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.sharp4j.CollectiveCorrectnessTest.Api;
import org.sharp4j.tuning.Collective;
import org.sharp4j.tuning.IntraNodeAlgorithm;

/**
 * The direct Reduce ({@code org.sharp4j.coll.DirectReduceAlgorithm}) and the cma Reduce (the same
 * with the members' direct-buffer inputs read by the root from their memory): bit-exact against
 * the documented order (left to right over members) for every type x op, counts around chunk and
 * read boundaries, every root, every buffer form and members mixing them, 1-8 ranks; the tiled
 * fallback on 2 sockets and 2 nodes; mismatches and missing peers.
 */
class DirectReduceTest {
    /** 4 KiB slots, the direct Reduce from 0 bytes: many chunks on small data. */
    static final Config DIRECT = CollectiveCorrectnessTest.SMALL.withTuneOverride("reduce:0-inf:direct");
    /** 1 KiB chunks: more chunks than slot sets within a few KiB, so slot reuse runs in every call. */
    /** The default table with a 256 KiB slot: chunks of several pieces (4 of 64 KiB). */
    static final Config DIRECT_256K = CollectiveCorrectnessTest.DEFAULT.withSlotBytes(256 * 1024).withSharedBytes(1024 * 1024)
            .withTuneOverride("reduce:0-inf:direct");
    static final Config DIRECT_1K = CollectiveCorrectnessTest.SMALL.withTuneOverride("reduce:0-inf:direct:chunk=1k");

    static Stream<Arguments> shapes() {
        List<Arguments> out = new ArrayList<>();
        for (String alg : new String[] {"direct", "cma", "cma_split"}) {
            for (int ranks = 1; ranks <= 8; ranks++) {
                if (alg.equals("cma_split") && ranks != 2 && ranks != 3 && ranks != 8) {
                    continue;
                }
                out.add(Arguments.of(ranks, 1, 1, "4k", alg));
                if (alg.equals("direct") || ranks == 2 || ranks == 5) {
                    out.add(Arguments.of(ranks, 1, 1, "1k", alg));
                }
                if (ranks == 2 || ranks == 3 || ranks == 4 || ranks == 8) {
                    out.add(Arguments.of(ranks, 1, 1, "256k", alg)); // 4 pieces of 64 KiB per chunk
                }
                if (ranks >= 2 && ranks % 3 != 0 && (alg.equals("direct") || ranks == 4)) { // tiled stands in: same bits
                    out.add(Arguments.of(ranks, 1, 2, "4k", alg));
                    out.add(Arguments.of(ranks, 2, 1, "1k", alg));
                }
            }
        }
        return out.stream();
    }

    /** The test's configuration: the slot of {@code chunk} and a rule giving Reduce to {@code alg} from 0 bytes. */
    static Config config(String chunk, String alg) {
        Config base = chunk.equals("1k") ? DIRECT_1K : chunk.equals("256k") ? DIRECT_256K : DIRECT;
        return alg.equals("direct") ? base : base.withTuneOverride("reduce:0-inf:" + alg + (chunk.equals("1k") ? ":chunk=1k" : ""));
    }

    /**
     * The algorithm a Reduce of one node and one socket runs for rule {@code alg}: cma (cma_split) where the
     * ranks read each other's memory, which ranks that are threads of one process always can where
     * the native kernels are loaded (any other reason is a bug).
     */
    static IntraNodeAlgorithm oneSocket(Communicator comm, String alg) {
        if (alg.equals("direct")) {
            return IntraNodeAlgorithm.DIRECT;
        }
        String why = comm.engine().peerReadsWhyNot();
        if (comm.size() == 1) {
            assertEquals("one rank on the socket", why);
            return IntraNodeAlgorithm.DIRECT;
        }
        assertTrue(why == null || why.startsWith("the native kernels are not loaded"), why);
        boolean nativeBuilt = org.sharp4j.coll.Engine.class.getResource("native/libsharp4j_kernels-linux-amd64.so") != null;
        if (nativeBuilt && System.getProperty("sharp4j.kernels") == null && Runtime.version().feature() < 24) {
            assertNull(why, "the jar has the native kernels: ranks that are threads read each other");
        }
        return why != null ? IntraNodeAlgorithm.DIRECT : alg.equals("cma_split") ? IntraNodeAlgorithm.CMA_SPLIT : IntraNodeAlgorithm.CMA;
    }

    @ParameterizedTest(name = "{0} ranks, {1} node(s) x {2} socket(s), chunk {3}, {4}")
    @MethodSource("shapes")
    void everyTypeOpCountRootAndForm(int ranks, int nodes, int sockets, String chunk, String alg) {
        Config cfg = config(chunk, alg).withSimulatedTopology(nodes, sockets);
        int chunkBytes = chunk.equals("1k") ? 1024 : chunk.equals("256k") ? 262144 : 4096;
        ThreadRanks.run(ranks, cfg, comm -> {
            IntraNodeAlgorithm expect = nodes == 1 && sockets == 1 ? oneSocket(comm, alg) : IntraNodeAlgorithm.TILED;
            assertEquals(expect, comm.engine().algorithm(Collective.REDUCE, 100_000));
            // the built-in table (256k: no legacy threshold) gives one node's Allreduce from 64 KiB to the pipelined algorithm,
            // with 2 ranks to the split cma one where they read each other and that is cheap enough (PeerReads.pairSplitGate)
            IntraNodeAlgorithm allreduce = !chunk.equals("256k") || nodes > 1 || sockets > 1 ? IntraNodeAlgorithm.TILED
                    : comm.size() == 2 && comm.engine().builtInPairSplitWhyNot() == null ? IntraNodeAlgorithm.CMA_SPLIT : IntraNodeAlgorithm.PIPELINED;
            long splitsBefore = comm.engine().cmaSplitCalls(); // the heating's (Allreduce among them)
            assertEquals(allreduce, comm.engine().algorithm(Collective.ALLREDUCE, 100_000));
            long seed = 77;
            for (DataType t : DataType.values()) {
                int c = chunkBytes / t.size;
                int p = 65536 / t.size; // a piece
                int[] counts = chunkBytes > 65536 ? new int[] {1, p - 1, p, p + 1, 3 * p + 7, c - 1, c, c + 1, 5 * c + 3}
                        : new int[] {0, 1, 15, 16, 17, c - 1, c, c + 1, 2 * c, 4 * c + 3, 9 * c + 1};
                for (Op op : Op.values()) {
                    if (!op.validFor(t)) {
                        continue;
                    }
                    for (int count : counts) {
                        seed++;
                        Api api = Api.values()[(int) (seed % 4)];
                        CollectiveCorrectnessTest.check(comm, Collective.REDUCE, t, op, count, (int) (seed % comm.size()), seed, api);
                    }
                }
                // Every root with every form, on a count that is not a chunk multiple.
                for (int root = 0; root < comm.size(); root++) {
                    for (Api api : Api.values()) {
                        seed++;
                        CollectiveCorrectnessTest.check(comm, Collective.REDUCE, t, Op.SUM, 3 * c + 5, root, seed, api);
                    }
                    inPlaceDirectBuffer(comm, t, 2 * c + 3, root, seed++);
                }
            }
            if (expect != IntraNodeAlgorithm.TILED && comm.size() > 1) {
                assertTrue(comm.engine().calls(expect) > 0);
            }
            // every rank passing direct buffers (Api.BUFFERS, the in-place direct buffer at roots 0 and 1): split
            assertEquals(expect == IntraNodeAlgorithm.CMA_SPLIT, comm.engine().cmaSplitCalls() > splitsBefore);
        });
    }

    /**
     * The cma Reduce with every member passing its own form in the same call (arrays, direct
     * buffers at an offset, in place, the shared buffer): members read by the root, members that
     * copy into their slots and members read in place in one fold, bit-exact; with reads of several
     * steps per chunk (256 KiB chunks, reads of 64-256 KiB: 4 ranks read 168 KiB per step, 8 ranks 72 KiB).
     */
    @ParameterizedTest(name = "{0} ranks, chunk {1}, {2}")
    @CsvSource({"2,4k,cma", "3,4k,cma", "4,256k,cma", "8,256k,cma", "5,1k,cma", "2,4k,cma_split", "4,256k,cma_split", "5,1k,cma_split"})
    void membersMixTheirFormsInOneCmaReduce(int ranks, String chunk, String alg) {
        int chunkBytes = chunk.equals("1k") ? 1024 : chunk.equals("256k") ? 262144 : 4096;
        ThreadRanks.run(ranks, config(chunk, alg), comm -> {
            assertEquals(oneSocket(comm, alg), comm.engine().algorithm(Collective.REDUCE, 100_000));
            long seed = 4242;
            int k = 0;
            for (DataType t : DataType.values()) {
                int c = chunkBytes / t.size;
                for (int count : new int[] {1, c - 1, c + 1, 3 * c + 5, 70_000 / t.size, 300_000 / t.size}) {
                    for (Op op : new Op[] {Op.SUM, Op.MAX}) {
                        int root = k % comm.size();
                        Api mine = Api.values()[(comm.rank() + k) % Api.values().length];
                        if (mine == Api.SHARED && (long) count * t.size > comm.sharedBuffer().capacity()) {
                            mine = Api.BUFFERS; // check() skips a call its shared buffer cannot hold: every rank must call
                        }
                        CollectiveCorrectnessTest.check(comm, Collective.REDUCE, t, op, count, root, seed++, mine);
                        k++;
                    }
                }
            }
        });
    }

    /**
     * The split cma Reduce ({@code cma_split}): every rank folds its slice of all inputs, read from
     * the others' memory, and writes it into the root's output. Bit-exact for every type x op at
     * counts around the slices' line boundaries and with slices of two read steps, every root; the
     * root's output at an odd offset inside a larger buffer whose other elements must keep their
     * sentinel; in place (a root from 2 on copies its own operand before the fold, whose passes before
     * its own write the output); an array output (cma). Every rank counts exactly the calls that split.
     */
    @ParameterizedTest(name = "{0} ranks")
    @CsvSource({"2", "3", "4", "8"})
    void theSplitCmaReduce(int ranks) {
        ThreadRanks.run(ranks, config("256k", "cma_split"), comm -> {
            IntraNodeAlgorithm alg = oneSocket(comm, "cma_split");
            assertEquals(alg, comm.engine().algorithm(Collective.REDUCE, 1 << 20));
            boolean splits = alg == IntraNodeAlgorithm.CMA_SPLIT;
            int n = comm.size();
            long expectSplits = comm.engine().cmaSplitCalls(); // the communicator's heating may have split some
            long seed = 3100;
            for (DataType t : DataType.values()) {
                int line = 64 / t.size;
                int twoSteps = n * (300_000 / t.size) + 5; // slices of 300 KB: two read steps of at most 256 KiB
                for (int count : new int[] {1, line - 1, n * line - 1, n * line + 1, 1000 * n + 7, twoSteps}) {
                    for (Op op : Op.values()) {
                        if (!op.validFor(t) || (count == twoSteps && op != Op.SUM && op != Op.MAX)) {
                            continue;
                        }
                        int root = (int) (seed % n);
                        splitCall(comm, t, op, count, root, seed++, false);
                        expectSplits += splits ? 1 : 0;
                        inPlaceDirectBuffer(comm, Collective.REDUCE, t, op, count, root, seed++);
                        expectSplits += splits ? 1 : 0;
                        CollectiveCorrectnessTest.check(comm, Collective.REDUCE, t, op, count, (root + 1) % n, seed++, Api.IN_PLACE);
                    }
                }
                for (int root = 0; root < n; root++) {
                    splitCall(comm, t, Op.SUM, 3 * n * line + 1, root, seed++, false);
                    expectSplits += splits ? 1 : 0;
                    splitCall(comm, t, Op.SUM, 3 * n * line + 1, root, seed++, true);
                }
            }
            assertEquals(expectSplits, comm.engine().cmaSplitCalls());
        });
    }

    /**
     * A Reduce from direct buffers (the input at element 3 of its buffer) into the root's output at
     * element 5 of a buffer of count + 9 elements, every other element a sentinel that must stay;
     * {@code arrayOut}: the root's output is an array. Bit-exact against the documented order.
     */
    static void splitCall(Communicator comm, DataType t, Op op, int count, int root, long seed, boolean arrayOut) {
        int n = comm.size();
        int me = comm.rank();
        long sentinel = 0x5A5A5A5A5A5A5A5AL;
        ByteBuffer send = ByteBuffer.allocateDirect((count + 3) * t.size).order(ByteOrder.nativeOrder());
        ByteBuffer recv = ByteBuffer.allocateDirect((count + 9) * t.size).order(ByteOrder.nativeOrder());
        long[] expected = new long[count];
        long[] column = new long[n];
        for (int i = 0; i < count; i++) {
            for (int r = 0; r < n; r++) {
                column[r] = CollectiveCorrectnessTest.bits(t, op, seed, r, i);
            }
            expected[i] = Reference.expected(comm.topology(), false, comm.engine().tuning().treeRadix(), t, op, column);
            CollectiveCorrectnessTest.put(send, t, i + 3, column[me]);
        }
        for (int i = 0; i < count + 9; i++) {
            CollectiveCorrectnessTest.put(recv, t, i, sentinel);
        }
        String what = "split cma Reduce " + t + " " + op + " count " + count + " root " + root + " rank " + me;
        if (arrayOut) {
            Object out = CollectiveCorrectnessTest.toArray(t, new long[count]);
            CollectiveCorrectnessTest.reduceArrays(comm, t, CollectiveCorrectnessTest.toArray(t, bitsOf(send, t, 3, count)), me == root ? out : null,
                    count, op, root);
            if (me == root) {
                CollectiveCorrectnessTest.assertArrayBits(expected, CollectiveCorrectnessTest.fromArray(t, out), what + " (array output)");
            }
            return;
        }
        comm.reduce(send, 3, me == root ? recv : null, 5, count, t, op, root);
        long sentinelBits = CollectiveCorrectnessTest.get(recv, t, 0); // the sentinel as the type stores it
        for (int i = 0; i < count + 9; i++) {
            long want = me == root && i >= 5 && i < count + 5 ? expected[i - 5] : sentinelBits;
            long got = CollectiveCorrectnessTest.get(recv, t, i);
            if (want != got) {
                assertEquals(want, got, what + ": element " + (i - 5) + " of the output (sentinels around it)");
            }
        }
    }

    private static long[] bitsOf(ByteBuffer b, DataType t, int from, int count) {
        long[] v = new long[count];
        for (int i = 0; i < count; i++) {
            v[i] = CollectiveCorrectnessTest.get(b, t, from + i);
        }
        return v;
    }

    /**
     * Back-to-back direct Reduces with changing roots between other algorithms: non-roots run up to
     * two chunks ahead of the root and into the next calls, so every slot-reuse gate is exercised.
     */
    @ParameterizedTest(name = "{0} ranks")
    @CsvSource({"2", "3", "4", "7"})
    void backToBackWithOtherCollectives(int ranks) {
        ThreadRanks.run(ranks, DIRECT_1K, comm -> {
            long seed = 900;
            long[] huge = {Long.MAX_VALUE};
            long[] got = new long[1];
            for (int i = 0; i < 40; i++) {
                int root = i % comm.size();
                // Inline data of every rank (the tree's 8-byte allreduce) left in the control blocks
                // the next chunks reuse: the direct Reduce must not take it for its progress word.
                comm.allreduce(huge, 0, got, 0, 1, Op.MAX);
                CollectiveCorrectnessTest.check(comm, Collective.REDUCE, DataType.DOUBLE, Op.SUM, 1000 + i * 37, root, seed++,
                        Api.values()[i % 4]);
                CollectiveCorrectnessTest.check(comm, Collective.REDUCE, DataType.INT, Op.BXOR, 3, (root + 1) % comm.size(), seed++,
                        Api.ARRAYS);
                if (i % 3 == 0) {
                    CollectiveCorrectnessTest.check(comm, Collective.ALLREDUCE, DataType.LONG, Op.SUM, 700, 0, seed++, Api.BUFFERS);
                }
                if (i % 5 == 0) {
                    comm.barrier();
                }
            }
        });
    }

    /**
     * A root that comes late finds its members' pieces published already and folds every run of
     * them in one pass: bit-exact with every form (the shared buffer's members read in place, the
     * others in their slots), over several chunks of 4 pieces and a short last piece, every type;
     * and the root's count of such folds grew (a root that folded piece by piece, or a test whose
     * members were not ahead, fails here).
     */
    @ParameterizedTest(name = "{0} ranks")
    @CsvSource({"2", "3", "4"})
    void aLateRootFoldsThePublishedPiecesTogether(int ranks) {
        ThreadRanks.run(ranks, DIRECT_256K, comm -> {
            assertEquals(IntraNodeAlgorithm.DIRECT, comm.engine().algorithm(Collective.REDUCE, 1 << 20));
            long seed = 4400;
            long wideBefore = comm.engine().directWideFolds();
            int rootCalls = 0;
            for (DataType t : DataType.values()) {
                int c = 262144 / t.size; // a chunk: 4 pieces of 64 KiB
                for (int i = 0; i < Api.values().length; i++) {
                    int root = i % comm.size();
                    if (comm.rank() == root) {
                        rootCalls++;
                        try {
                            Thread.sleep(20); // the members copy meanwhile: up to two chunks ahead of this root
                        } catch (InterruptedException e) {
                            throw new AssertionError(e);
                        }
                    }
                    CollectiveCorrectnessTest.check(comm, Collective.REDUCE, t, Op.SUM, 3 * c + 4096 / t.size + 1, root, seed++,
                            Api.values()[i]);
                }
            }
            if (rootCalls > 0) {
                assertTrue(comm.engine().directWideFolds() > wideBefore,
                        "rank " + comm.rank() + " was root of " + rootCalls + " late Reduces and never folded pieces together");
            }
        });
    }

    /** {@code reduce(buf, off, ...)}: the root's input and output are one direct buffer. */
    static void inPlaceDirectBuffer(Communicator comm, DataType t, int count, int root, long seed) {
        inPlaceDirectBuffer(comm, Collective.REDUCE, t, Op.SUM, count, root, seed);
    }

    /**
     * An in-place Reduce or Allreduce on a direct buffer (offset 2 elements), bit-exact against the
     * documented order where the result lands, the input untouched on a Reduce's other ranks.
     */
    static void inPlaceDirectBuffer(Communicator comm, Collective kind, DataType t, Op op, int count, int root, long seed) {
        int n = comm.size();
        ByteBuffer buf = ByteBuffer.allocateDirect((count + 2) * t.size).order(ByteOrder.nativeOrder());
        long[] column = new long[n];
        long[] expected = new long[count];
        for (int i = 0; i < count; i++) {
            for (int r = 0; r < n; r++) {
                column[r] = CollectiveCorrectnessTest.bits(t, op, seed, r, i);
            }
            expected[i] = Reference.expected(comm.topology(), false, comm.engine().tuning().treeRadix(), t, op, column);
            CollectiveCorrectnessTest.put(buf, t, i + 2, column[comm.rank()]);
        }
        boolean gets = kind == Collective.ALLREDUCE || comm.rank() == root;
        if (kind == Collective.ALLREDUCE) {
            comm.allreduce(buf, 2, count, t, op);
        } else {
            comm.reduce(buf, 2, count, t, op, root);
        }
        for (int i = 0; i < count; i++) {
            long want = gets ? expected[i] : CollectiveCorrectnessTest.bits(t, op, seed, comm.rank(), i);
            long got = CollectiveCorrectnessTest.get(buf, t, i + 2);
            if (want != got) {
                assertEquals(want, got, "in-place direct buffer " + kind + ", " + t + " " + op + " count " + count + " root " + root
                        + " rank " + comm.rank() + " element " + i);
            }
        }
    }

    /** Every split between the direct Reduce and other calls ends with the mismatch on every rank, after which all are in step. */
    @ParameterizedTest(name = "{0}, odd rank {1}")
    @CsvSource({"count,0", "count,2", "multi-vs-one,1", "multi-vs-one,0", "one-vs-multi,3", "root,0", "root,2", "op,1",
        "vs-tree,0", "vs-tree,3", "tree-vs,1", "vs-allreduce,0", "vs-allreduce,2", "vs-barrier,1", "vs-barrier,0",
        "vs-exchange,0", "vs-exchange,2"})
    void everyRankGetsTheMismatch(String what, int odd) {
        Config cfg = DIRECT.withTuneOverride("reduce:0-inf:direct#allreduce,reduce,barrier:0-41:exchange#reduce:41-64:tree");
        ThreadRanks.run(4, cfg, comm -> {
            boolean o = comm.rank() == odd;
            long[] in = new long[3000];
            long[] out = new long[3000];
            // A rank whose own call is a Reduce on the tree or the exchange and that is neither rank 0
            // nor its root returns before the signatures are compared, and its next call throws
            // the earlier call's mismatch (ReduceGoesAheadTest); every other rank throws at once.
            int me = comm.rank();
            boolean goesAhead;
            switch (what) {
                // the others: binary tree, root 0; rank 2's subtree holds rank 3, so it sees an odd rank 3 and stays
                case "vs-tree": goesAhead = !o && me != 0 && !(me == 2 && odd == 3); break;
                case "tree-vs": goesAhead = o && me != 0; break;       // the odd rank: tree, root 0
                case "vs-exchange": goesAhead = !o && me != 0 && me != 1; break; // the others: exchange, root 1
                default: goesAhead = false;
            }
            MismatchAndFailureTest.expectMismatch(comm, goesAhead, () -> {
                switch (what) {
                    case "count": comm.reduce(in, 0, out, 0, o ? 1500 : 1501, Op.SUM, 1); break;
                    case "multi-vs-one": comm.reduce(in, 0, out, 0, o ? 2900 : 100, Op.SUM, 2); break; // 6 chunks against 1
                    case "one-vs-multi": comm.reduce(in, 0, out, 0, o ? 100 : 2900, Op.SUM, 3); break;
                    case "root": comm.reduce(in, 0, out, 0, 1500, Op.SUM, o ? 1 : 3); break;
                    case "op": comm.reduce(in, 0, out, 0, 1500, o ? Op.MAX : Op.SUM, 0); break;
                    case "vs-tree": comm.reduce(in, 0, out, 0, o ? 1500 : 7, Op.SUM, 0); break; // 56 B: the tree on the others
                    case "tree-vs": comm.reduce(in, 0, out, 0, o ? 7 : 1500, Op.SUM, 0); break;
                    case "vs-exchange": comm.reduce(in, 0, out, 0, o ? 1500 : 2, Op.SUM, 1); break;
                    case "vs-allreduce": if (o) {
                            comm.allreduce(in, 0, out, 0, 1500, Op.SUM);
                        } else {
                            comm.reduce(in, 0, out, 0, 1500, Op.SUM, 0);
                        }
                        break;
                    default: if (o) { // vs-barrier
                            comm.barrier();
                        } else {
                            comm.reduce(in, 0, out, 0, 1500, Op.SUM, 0);
                        }
                        break;
                }
            });
            CollectiveCorrectnessTest.check(comm, Collective.REDUCE, DataType.LONG, Op.SUM, 2000, 1, 5, Api.ARRAYS);
        });
    }

    /** A root that never comes: every non-root is stopped at the first chunk's verdict and names it. */
    @Test
    void aMissingRootIsNamed() {
        Config cfg = DIRECT.withTimeoutNanos(1_000_000_000L);
        Throwable[] errs = ThreadRanks.runCollect(3, cfg, comm -> {
            if (comm.rank() == 2) {
                return;
            }
            comm.reduce(new double[5000], 0, null, 0, 5000, Op.SUM, 2);
        }, 60_000);
        for (int r = 0; r < 2; r++) {
            assertTrue(errs[r] instanceof PeerFailureException, "rank " + r + ": " + errs[r]);
            assertArrayEquals(new int[] {2}, ((PeerFailureException) errs[r]).ranks(), errs[r].getMessage());
        }
        assertNull(errs[2]);
    }

    /**
     * A member that never comes: the root waits for its first chunk and names it, and so does the
     * other non-root (held at the first chunk's verdict). (Ranks are threads here: a process that
     * dies mid-call is found by the same waits' process probe, see MismatchAndFailureTest.)
     */
    @Test
    void aMissingMemberIsNamedByTheRootAndTheOthers() {
        Config cfg = DIRECT.withTimeoutNanos(1_000_000_000L);
        Throwable[] errs = ThreadRanks.runCollect(3, cfg, comm -> {
            if (comm.rank() == 1) {
                return;
            }
            comm.reduce(new float[20_000], 0, comm.rank() == 0 ? new float[20_000] : null, 0, 20_000, Op.SUM, 0);
        }, 60_000);
        for (int r : new int[] {0, 2}) {
            assertTrue(errs[r] instanceof PeerFailureException, "rank " + r + ": " + errs[r]);
            assertArrayEquals(new int[] {1}, ((PeerFailureException) errs[r]).ranks(), errs[r].getMessage());
        }
        assertNull(errs[1]);
    }
}
