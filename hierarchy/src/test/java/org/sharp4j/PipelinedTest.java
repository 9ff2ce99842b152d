package org.sharp4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
 * The pipelined algorithm ({@code org.sharp4j.coll.PipelinedAlgorithm}): bit-exact against the
 * documented order (left to right over members) for every type x op, counts around chunk and tile
 * boundaries and far past the slot sets (so every reuse gate and the trailing arrivals run),
 * every root, every buffer form, 1-8 ranks, Allreduce and Reduce; the tiled fallback on 2 sockets
 * and 2 nodes; back-to-back with every other algorithm; mismatches and missing peers.
 */
class PipelinedTest {
    static final String RULE = "allreduce,reduce:0-inf:pipelined";
    /** 4 KiB slots, pipelined from 0 bytes: many chunks on small data. */
    static final Config PIPE = CollectiveCorrectnessTest.SMALL.withTuneOverride(RULE);
    /** 1 KiB chunks: tiles of one or two cache lines, many more chunks than slot sets. */
    static final Config PIPE_1K = CollectiveCorrectnessTest.SMALL.withTuneOverride(RULE + ":chunk=1k");
    /** The default 64 KiB slot. */
    static final Config PIPE_64K = CollectiveCorrectnessTest.DEFAULT.withSharedBytes(1024 * 1024).withTuneOverride(RULE);

    static Stream<Arguments> shapes() {
        List<Arguments> out = new ArrayList<>();
        for (int ranks = 1; ranks <= 8; ranks++) {
            out.add(Arguments.of(ranks, 1, 1, "4k"));
            out.add(Arguments.of(ranks, 1, 1, "1k"));
            if (ranks == 2 || ranks == 3 || ranks == 4 || ranks == 8) {
                out.add(Arguments.of(ranks, 1, 1, "64k"));
            }
            if (ranks >= 2 && ranks % 3 != 0) { // tiled stands in: same bits
                out.add(Arguments.of(ranks, 1, 2, "4k"));
                out.add(Arguments.of(ranks, 2, 1, "1k"));
            }
        }
        return out.stream();
    }

    static Config config(String chunk) {
        return chunk.equals("1k") ? PIPE_1K : chunk.equals("64k") ? PIPE_64K : PIPE;
    }

    @ParameterizedTest(name = "{0} ranks, {1} node(s) x {2} socket(s), chunk {3}")
    @MethodSource("shapes")
    void everyTypeOpCountRootAndForm(int ranks, int nodes, int sockets, String chunk) {
        Config cfg = config(chunk).withSimulatedTopology(nodes, sockets);
        int chunkBytes = chunk.equals("1k") ? 1024 : chunk.equals("64k") ? 65536 : 4096;
        ThreadRanks.run(ranks, cfg, comm -> {
            IntraNodeAlgorithm expect = nodes == 1 && sockets == 1 ? IntraNodeAlgorithm.PIPELINED : IntraNodeAlgorithm.TILED;
            assertEquals(expect, comm.engine().algorithm(Collective.REDUCE, 100_000));
            assertEquals(expect, comm.engine().algorithm(Collective.ALLREDUCE, 100_000));
            long seed = 31;
            for (DataType t : DataType.values()) {
                int c = chunkBytes / t.size;
                int line = 64 / t.size;
                // 1 element, one line per member and one less (members without a tile), chunk
                // boundaries, 2-5 chunks (the gates' first uses) and 9+ (every set reused twice).
                int[] counts = chunkBytes > 4096 ? new int[] {1, 17, c - 1, c, c + 1, 3 * c + 7, 5 * c + 3}
                        : new int[] {0, 1, 15, line * comm.size() - 1, line * comm.size() + 1, c - 1, c, c + 1, 2 * c,
                            4 * c + 3, 5 * c, 9 * c + 1};
                for (Op op : Op.values()) {
                    if (!op.validFor(t)) {
                        continue;
                    }
                    for (int count : counts) {
                        seed++;
                        Api api = Api.values()[(int) (seed % 4)];
                        CollectiveCorrectnessTest.check(comm, Collective.ALLREDUCE, t, op, count, 0, seed, api);
                        CollectiveCorrectnessTest.check(comm, Collective.REDUCE, t, op, count, (int) (seed % comm.size()),
                                seed + 1_000_000, Api.values()[(int) ((seed + 1) % 4)]);
                    }
                }
                // Every root and every form on a count that is not a chunk multiple.
                for (int root = 0; root < comm.size(); root++) {
                    for (Api api : Api.values()) {
                        seed++;
                        CollectiveCorrectnessTest.check(comm, Collective.REDUCE, t, Op.SUM, 6 * c + 5, root, seed, api);
                    }
                    DirectReduceTest.inPlaceDirectBuffer(comm, t, 5 * c + 3, root, seed++);
                }
                // From 64 KiB each member folds its tile into its output before it streams the tile to the
                // others; in place, only members 0 and 1 may (their input is one of the fold's first two operands).
                for (Op op : new Op[] {Op.SUM, Op.PROD}) {
                    DirectReduceTest.inPlaceDirectBuffer(comm, Collective.ALLREDUCE, t, op, 5 * c + 3, 0, seed++);
                }
                for (Api api : Api.values()) {
                    seed++;
                    CollectiveCorrectnessTest.check(comm, Collective.ALLREDUCE, t, Op.MAX, 7 * c + 9, 0, seed, api);
                }
            }
            if (expect == IntraNodeAlgorithm.PIPELINED && comm.size() > 1) {
                assertTrue(comm.engine().calls(IntraNodeAlgorithm.PIPELINED) > 0);
            }
        });
    }

    /**
     * Streaming and ordinary stores ({@code sharp4j.stores}, chosen per call by each rank under
     * auto) write the same bytes: the pipelined Allreduce and Reduce and the direct Reduce, from the
     * streaming threshold (16 KiB) to several chunks, every form, bit for bit. Under auto, 40 calls
     * of one size make each rank take both kinds (it measures both, then explores one call in 32).
     */
    @ParameterizedTest(name = "{0} ranks, stores {1}")
    @CsvSource({"2, streaming", "2, ordinary", "2, auto", "4, streaming", "4, ordinary", "4, auto"})
    void everyKindOfStoreGivesTheSameBits(int ranks, String stores) {
        Config cfg = PIPE_64K.withTuneOverride("allreduce:0-inf:pipelined#reduce:0-inf:direct#reduce:100000-200000:pipelined")
                .withStores(stores);
        ThreadRanks.run(ranks, cfg, comm -> {
            assertEquals(IntraNodeAlgorithm.DIRECT, comm.engine().algorithm(Collective.REDUCE, 16 * 1024));
            assertEquals(IntraNodeAlgorithm.PIPELINED, comm.engine().algorithm(Collective.REDUCE, 150_000));
            long seed = 91_000;
            for (DataType t : DataType.values()) {
                int c = 65536 / t.size;
                for (int count : new int[] {16 * 1024 / t.size, c + 1, 150_000 / t.size, 3 * c + 7}) {
                    for (Op op : new Op[] {Op.SUM, Op.MAX}) {
                        for (Api api : Api.values()) {
                            seed++;
                            CollectiveCorrectnessTest.check(comm, Collective.ALLREDUCE, t, op, count, 0, seed, api);
                            CollectiveCorrectnessTest.check(comm, Collective.REDUCE, t, op, count, (int) (seed % comm.size()),
                                    seed + 1_000_000, api);
                        }
                    }
                }
            }
            for (int i = 0; i < 40; i++) {
                CollectiveCorrectnessTest.check(comm, Collective.ALLREDUCE, DataType.DOUBLE, Op.SUM, 40_000, 0, seed++, Api.BUFFERS);
                CollectiveCorrectnessTest.check(comm, Collective.REDUCE, DataType.FLOAT, Op.SUM, 40_000, i % comm.size(), seed++,
                        Api.BUFFERS);
            }
        });
    }

    /**
     * Pipelined calls between every other algorithm, roots changing, forms changing: a Reduce's
     * non-roots leave as soon as they folded, and the next call (an exchange Reduce that goes ahead,
     * the tree, the direct Reduce, tiled) must wait for the trailing arrivals where it would write a
     * set the slower ranks still read.
     */
    @ParameterizedTest(name = "{0} ranks")
    @CsvSource({"2", "3", "4", "7"})
    void backToBackWithEveryOtherAlgorithm(int ranks) {
        Config cfg = CollectiveCorrectnessTest.SMALL.withTuneOverride(
                "allreduce,reduce,barrier:0-41:exchange#allreduce,reduce:41-512:tree#allreduce,reduce:512-3000:pipelined:chunk=1k"
                        + "#reduce:3000-6000:direct:chunk=1k#allreduce,reduce:6000-inf:pipelined:chunk=1k"
                        + "#allreduce:3000-6000:tiled:chunk=1k");
        ThreadRanks.run(ranks, cfg, comm -> {
            assertEquals(IntraNodeAlgorithm.DIRECT, comm.engine().algorithm(Collective.REDUCE, 4000));
            assertEquals(IntraNodeAlgorithm.TILED, comm.engine().algorithm(Collective.ALLREDUCE, 4000));
            assertEquals(IntraNodeAlgorithm.PIPELINED, comm.engine().algorithm(Collective.REDUCE, 2000));
            long seed = 4000;
            for (int i = 0; i < 40; i++) {
                int root = i % comm.size();
                Api api = Api.values()[i % 4];
                CollectiveCorrectnessTest.check(comm, Collective.REDUCE, DataType.DOUBLE, Op.SUM, 1100 + i * 41, root, seed++, api);
                CollectiveCorrectnessTest.check(comm, Collective.REDUCE, DataType.LONG, Op.BXOR, 3, (root + 1) % comm.size(),
                        seed++, Api.ARRAYS); // the exchange: goes ahead
                CollectiveCorrectnessTest.check(comm, Collective.REDUCE, DataType.FLOAT, Op.MAX, 300 + i, root, seed++, api);
                CollectiveCorrectnessTest.check(comm, Collective.ALLREDUCE, DataType.INT, Op.SUM, 200 + 7 * i, 0, seed++,
                        Api.values()[(i + 1) % 4]);
                CollectiveCorrectnessTest.check(comm, Collective.REDUCE, DataType.INT, Op.MIN, 1000 + 3 * i, (root + 2) % comm.size(),
                        seed++, Api.BUFFERS); // direct
                CollectiveCorrectnessTest.check(comm, Collective.REDUCE, DataType.LONG, Op.SUM, 20, root, seed++, Api.ARRAYS); // tree
                CollectiveCorrectnessTest.check(comm, Collective.ALLREDUCE, DataType.LONG, Op.PROD, 600 + i, 0, seed++, api);
                if (i % 3 == 0) {
                    CollectiveCorrectnessTest.check(comm, Collective.ALLREDUCE, DataType.DOUBLE, Op.SUM, 500, 0, seed++, Api.BUFFERS);
                }
                if (i % 5 == 0) {
                    comm.barrier();
                }
            }
        });
    }

    /** Several MiB with the default slot: 48+ chunks of 64 KiB, every set reused a dozen times. */
    @ParameterizedTest(name = "{0} ranks")
    @CsvSource({"2", "3", "4"})
    void severalMebibytes(int ranks) {
        ThreadRanks.run(ranks, PIPE_64K, comm -> {
            int i = 0;
            for (DataType t : DataType.values()) {
                Op op = new Op[] {Op.SUM, Op.MIN, Op.MAX, Op.PROD}[i++];
                int count = 3 * 1024 * 1024 / t.size + 3;
                CollectiveCorrectnessTest.check(comm, Collective.ALLREDUCE, t, op, count, 0, 300 + i, Api.values()[i % 3]);
                CollectiveCorrectnessTest.check(comm, Collective.REDUCE, t, op, count, ranks - 1, 400 + i, Api.values()[(i + 1) % 3]);
            }
        });
    }

    /** Every split between the pipelined algorithm and other calls ends with the mismatch on every rank, after which all are in step. */
    @ParameterizedTest(name = "{0}, odd rank {1}")
    @CsvSource({"count,0", "count,2", "multi-vs-one,1", "multi-vs-one,0", "one-vs-multi,3", "root,0", "root,2", "op,1",
        "type,3", "vs-tree,0", "vs-tree,3", "tree-vs,1", "vs-reduce,0", "vs-reduce,2", "vs-barrier,1", "vs-barrier,0",
        "vs-exchange,0", "vs-exchange,2", "vs-direct,1", "vs-direct,0"})
    void everyRankGetsTheMismatch(String what, int odd) {
        Config cfg = PIPE.withTuneOverride(RULE + "#allreduce,reduce,barrier:0-41:exchange#allreduce,reduce:41-64:tree"
                + "#reduce:20000-30000:direct");
        ThreadRanks.run(4, cfg, comm -> {
            boolean o = comm.rank() == odd;
            long[] in = new long[3000];
            long[] out = new long[3000];
            int me = comm.rank();
            boolean goesAhead;
            switch (what) {
                // the others: binary tree Reduce, root 0; rank 2's subtree holds rank 3
                case "vs-tree": goesAhead = !o && me != 0 && !(me == 2 && odd == 3); break;
                case "tree-vs": goesAhead = o && me != 0; break;
                case "vs-exchange": goesAhead = !o && me != 0 && me != 1; break; // the others: exchange Reduce, root 1
                default: goesAhead = false;
            }
            MismatchAndFailureTest.expectMismatch(comm, goesAhead, () -> {
                switch (what) {
                    case "count": comm.allreduce(in, 0, out, 0, o ? 1500 : 1501, Op.SUM); break;
                    case "multi-vs-one": comm.allreduce(in, 0, out, 0, o ? 2900 : 100, Op.SUM); break; // 6 chunks against 1
                    case "one-vs-multi": comm.reduce(in, 0, out, 0, o ? 100 : 2900, Op.SUM, 3); break;
                    case "root": comm.reduce(in, 0, out, 0, 1500, Op.SUM, o ? 1 : 3); break;
                    case "op": comm.allreduce(in, 0, out, 0, 1500, o ? Op.MAX : Op.SUM); break;
                    case "type": if (o) {
                            comm.allreduce(new double[1500], 0, new double[1500], 0, 1500, Op.SUM);
                        } else {
                            comm.allreduce(in, 0, out, 0, 1500, Op.SUM);
                        }
                        break;
                    case "vs-tree": comm.reduce(in, 0, out, 0, o ? 1500 : 7, Op.SUM, 0); break; // 56 B: the tree on the others
                    case "tree-vs": comm.reduce(in, 0, out, 0, o ? 7 : 1500, Op.SUM, 0); break;
                    case "vs-exchange": comm.reduce(in, 0, out, 0, o ? 1500 : 2, Op.SUM, 1); break;
                    case "vs-direct": comm.reduce(in, 0, out, 0, o ? 1500 : 2900, Op.SUM, 2); break; // 23 KB: direct on the others
                    case "vs-reduce": if (o) {
                            comm.allreduce(in, 0, out, 0, 1500, Op.SUM);
                        } else {
                            comm.reduce(in, 0, out, 0, 1500, Op.SUM, 0);
                        }
                        break;
                    default: if (o) { // vs-barrier
                            comm.barrier();
                        } else {
                            comm.allreduce(in, 0, out, 0, 1500, Op.SUM);
                        }
                        break;
                }
            });
            CollectiveCorrectnessTest.check(comm, Collective.ALLREDUCE, DataType.LONG, Op.SUM, 2000, 0, 5, Api.ARRAYS);
            CollectiveCorrectnessTest.check(comm, Collective.REDUCE, DataType.LONG, Op.SUM, 2000, 1, 6, Api.BUFFERS);
        });
    }

    /** A member that never comes: every other rank is held at the first chunk's verdict and names it. */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"allreduce", "reduce"})
    void aMissingMemberIsNamed(String kind) {
        Config cfg = PIPE.withTimeoutNanos(1_000_000_000L);
        Throwable[] errs = ThreadRanks.runCollect(3, cfg, comm -> {
            if (comm.rank() == 1) {
                return;
            }
            if (kind.equals("allreduce")) {
                comm.allreduce(new double[5000], 0, new double[5000], 0, 5000, Op.SUM);
            } else {
                comm.reduce(new double[5000], 0, new double[5000], 0, 5000, Op.SUM, 2);
            }
        }, 60_000);
        for (int r : new int[] {0, 2}) {
            assertTrue(errs[r] instanceof PeerFailureException, "rank " + r + ": " + errs[r]);
            assertArrayEquals(new int[] {1}, ((PeerFailureException) errs[r]).ranks(), errs[r].getMessage());
        }
        assertNull(errs[1]);
    }

    /**
     * A member that stops in the middle of a long call (its thread aborts the communicator after
     * some chunks: the closest a thread gets to a process that dies mid-call; the process case is
     * in LauncherFaultTest): every other rank fails naming it instead of waiting for its next chunk.
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"allreduce", "reduce"})
    void aMemberThatStopsMidCallIsNamed(String kind) {
        Config cfg = PIPE.withTimeoutNanos(2_000_000_000L);
        Throwable[] errs = ThreadRanks.runCollect(3, cfg, comm -> {
            double[] in = new double[200_000]; // 391 chunks of 4 KiB
            double[] out = new double[200_000];
            if (comm.rank() == 1) {
                Thread self = Thread.currentThread();
                Thread killer = new Thread(() -> {
                    try {
                        Thread.sleep(5);
                    } catch (InterruptedException e) {
                        return;
                    }
                    comm.abort("test: rank 1 stops mid-call (" + self.getName() + ")");
                });
                killer.start();
                try {
                    for (int i = 0; i < 1000; i++) {
                        call(comm, kind, in, out);
                    }
                } finally {
                    killer.join();
                }
                return;
            }
            for (int i = 0; i < 1000; i++) {
                call(comm, kind, in, out);
            }
        }, 60_000);
        assertTrue(errs[1] instanceof Sharp4jException, "rank 1: " + errs[1]);
        for (int r : new int[] {0, 2}) {
            assertTrue(errs[r] instanceof PeerFailureException, "rank " + r + ": " + errs[r]);
            assertTrue(errs[r].getMessage().contains("rank 1"), errs[r].getMessage());
        }
    }

    private static void call(Communicator comm, String kind, double[] in, double[] out) {
        if (kind.equals("allreduce")) {
            comm.allreduce(in, 0, out, 0, in.length, Op.SUM);
        } else {
            comm.reduce(in, 0, out, 0, in.length, Op.SUM, 0);
        }
    }

    /** The trailing arrivals: a call of K chunks takes K + 3 sequence numbers, the same on every rank. */
    @Test
    void aLongCallLeavesEveryRankInStep() {
        ThreadRanks.run(3, PIPE_1K, comm -> {
            for (int i = 0; i < 30; i++) {
                CollectiveCorrectnessTest.check(comm, Collective.REDUCE, DataType.INT, Op.SUM, 256 * (i % 7) + 1 + i, i % 3, 70 + i,
                        Api.values()[i % 4]);
                comm.barrier();
                CollectiveCorrectnessTest.check(comm, Collective.REDUCE, DataType.INT, Op.SUM, 5, (i + 1) % 3, 170 + i, Api.ARRAYS);
            }
        });
    }
}
