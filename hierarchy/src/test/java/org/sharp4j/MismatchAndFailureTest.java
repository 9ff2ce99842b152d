package org.sharp4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.sharp4j.tuning.IntraNodeTuning;

/** Ranks that disagree on a call, a rank that never comes, a rank that aborts. */
class MismatchAndFailureTest {
    static final Config SMALL = Config.defaults().withSlotBytes(4096).withTuning(new IntraNodeTuning(2, 256))
            .withTimeoutNanos(5_000_000_000L);

    /**
     * The odd rank is a member (1), a leader of everything (0), or a socket leader that is not the
     * node leader (2 with 2 sockets). Splits between the tree and the tiled algorithm must not make
     * a rank wait for a stage only the other algorithm publishes (that hung until the timeout).
     */
    @ParameterizedTest(name = "{0} node(s) x {1} socket(s): {2}, odd rank {3}")
    @CsvSource({
        "1,1,count,2", "1,2,count,2", "2,1,count,2", "2,2,count,2", "1,1,count,0",
        "1,1,op,3", "2,2,op,3", "1,2,root,1", "2,1,root,1", "1,1,kind,0", "2,2,kind,0", "1,2,kind,2",
        "1,1,tiled-count,3", "2,2,tiled-count,3", "1,1,tiled-count,0",
        "1,1,tree-vs-tiled,1", "1,2,tree-vs-tiled,1", "2,1,tree-vs-tiled,1",
        "1,1,tree-vs-tiled,0", "1,2,tree-vs-tiled,0", "2,1,tree-vs-tiled,0", "2,2,tree-vs-tiled,0",
        "1,2,tree-vs-tiled,2", "2,2,tree-vs-tiled,2", "1,1,tree-vs-tiled,3",
        "1,1,tiled-vs-tree,0", "1,2,tiled-vs-tree,2", "1,1,multi-chunk,0", "1,2,multi-chunk,2", "1,1,multi-chunk,1",
        "1,1,reduce-tiled-vs-tree,0", "1,2,reduce-tiled-vs-tree,3", "1,1,barrier-vs-tiled,0", "1,2,barrier-vs-tiled,2"})
    void everyRankGetsTheMismatchAndTheCommunicatorStaysUsable(int nodes, int sockets, String what, int odd) {
        ThreadRanks.run(4, SMALL.withSimulatedTopology(nodes, sockets), comm -> {
            int r = comm.rank();
            boolean o = r == odd;
            long[] in = new long[2000];
            long[] out = new long[2000];
            int myRoot = what.equals("root") ? (o ? 0 : 2) : what.startsWith("reduce") ? 1 : -1;
            boolean goesAhead = nodes == 1 && sockets == 1 && myRoot >= 0 && r != 0 && r != myRoot;
            expectMismatch(comm, goesAhead, () -> {
                switch (what) {
                    case "count": comm.allreduce(in, 0, out, 0, o ? 3 : 4, Op.SUM); break;
                    case "op": comm.allreduce(in, 0, out, 0, 4, o ? Op.MAX : Op.SUM); break;
                    case "root": comm.reduce(in, 0, out, 0, 4, Op.SUM, o ? 0 : 2); break;
                    case "tiled-vs-tree": comm.allreduce(in, 0, out, 0, o ? 8 : 1500, Op.SUM); break; // only the odd rank on the tree
                    case "multi-chunk": comm.allreduce(in, 0, out, 0, o ? 1900 : 8, Op.SUM); break; // 4 chunks of 4 KiB against one tree call
                    case "reduce-tiled-vs-tree": comm.reduce(in, 0, out, 0, o ? 1500 : 8, Op.MAX, 1); break;
                    case "barrier-vs-tiled": if (o) {
                            comm.barrier();
                        } else {
                            comm.allreduce(in, 0, out, 0, 1500, Op.SUM);
                        }
                        break;
                    case "kind": if (o) {
                            comm.barrier();
                        } else {
                            comm.allreduce(in, 0, out, 0, 1, Op.SUM);
                        }
                        break;
                    case "tiled-count": comm.allreduce(in, 0, out, 0, o ? 1500 : 1700, Op.SUM); break;
                    default: comm.allreduce(in, 0, out, 0, o ? 1500 : 8, Op.SUM); break; // tree on some ranks, tiled on one
                }
            });
        });
    }

    /**
     * The call throws the mismatch, then a correct allreduce follows on every rank (still in step).
     * A flat Reduce's member that is neither member 0 nor its root returns before the signatures
     * are compared: its call returns, and its next call (which observes every member) completes,
     * delivers its result and then throws the earlier call's mismatch.
     */
    interface Call {
        void run() throws Exception;
    }

    static void expectMismatch(Communicator comm, boolean goesAhead, Call call) throws Exception {
        long[] one = {comm.rank() + 1};
        long[] sum = new long[1];
        int n = comm.size();
        if (goesAhead) {
            call.run();
            ArgumentMismatchException later = assertThrows(ArgumentMismatchException.class,
                    () -> comm.allreduce(one, 0, sum, 0, 1, Op.SUM));
            assertTrue(later.getMessage().contains("an earlier call") && later.getMessage().contains("different arguments"),
                    later.getMessage());
        } else {
            ArgumentMismatchException e = assertThrows(ArgumentMismatchException.class, call::run);
            assertTrue(e.getMessage().contains("different arguments"), e.getMessage());
            assertTrue(!e.getMessage().contains("an earlier call"), e.getMessage());
            comm.allreduce(one, 0, sum, 0, 1, Op.SUM);
        }
        assertArrayEquals(new long[] {n * (n + 1L) / 2}, sum); // delivered also where it threw the earlier mismatch
    }

    /** SMALL with the exchange up to 40 bytes: 1-5 longs exchange, 8 longs tree, 1500 tiled. */
    static final Config WITH_EXCHANGE = SMALL.withTuneOverride("allreduce,reduce,barrier:0-41:exchange");

    /** Splits between the exchange and the other algorithms, the odd rank in every role. */
    @ParameterizedTest(name = "{0} node(s) x {1} socket(s): {2}, odd rank {3}")
    @CsvSource({
        "1,1,exchange-count,1", "1,1,exchange-count,0", "2,2,exchange-count,2", "1,2,exchange-count,3",
        "1,1,exchange-vs-tree,0", "1,1,exchange-vs-tree,3", "1,2,exchange-vs-tree,2", "2,1,exchange-vs-tree,1", "2,2,exchange-vs-tree,0",
        "1,1,tree-vs-exchange,0", "1,2,tree-vs-exchange,2", "2,2,tree-vs-exchange,3",
        "1,1,exchange-vs-tiled,0", "1,1,exchange-vs-tiled,2", "1,2,exchange-vs-tiled,2", "2,2,exchange-vs-tiled,0",
        "1,1,tiled-vs-exchange,0", "1,2,tiled-vs-exchange,3", "2,1,tiled-vs-exchange,2",
        "1,1,barrier-vs-exchange,0", "1,2,barrier-vs-exchange,2", "2,2,barrier-vs-exchange,1",
        "1,1,exchange-root,1", "2,2,exchange-root,2", "1,1,exchange-op,0"})
    void exchangeSplitsEndWithTheMismatchEverywhere(int nodes, int sockets, String what, int odd) {
        ThreadRanks.run(4, WITH_EXCHANGE.withSimulatedTopology(nodes, sockets), comm -> {
            boolean o = comm.rank() == odd;
            long[] in = new long[2000];
            long[] out = new long[2000];
            int myRoot = what.equals("exchange-root") ? (o ? 0 : 3) : -1;
            boolean goesAhead = nodes == 1 && sockets == 1 && myRoot >= 0 && comm.rank() != 0 && comm.rank() != myRoot;
            expectMismatch(comm, goesAhead, () -> {
                switch (what) {
                    case "exchange-count": comm.allreduce(in, 0, out, 0, o ? 3 : 4, Op.SUM); break;
                    case "exchange-vs-tree": comm.allreduce(in, 0, out, 0, o ? 4 : 8, Op.SUM); break;
                    case "tree-vs-exchange": comm.allreduce(in, 0, out, 0, o ? 8 : 4, Op.SUM); break;
                    case "exchange-vs-tiled": comm.allreduce(in, 0, out, 0, o ? 4 : 1500, Op.SUM); break;
                    case "tiled-vs-exchange": comm.allreduce(in, 0, out, 0, o ? 1500 : 4, Op.SUM); break;
                    case "exchange-root": comm.reduce(in, 0, out, 0, 2, Op.SUM, o ? 0 : 3); break;
                    case "exchange-op": comm.allreduce(in, 0, out, 0, 2, o ? Op.MIN : Op.SUM); break;
                    default: if (o) { // barrier-vs-exchange
                            comm.barrier();
                        } else {
                            comm.allreduce(in, 0, out, 0, 1, Op.SUM);
                        }
                        break;
                }
            });
            comm.barrier();
        });
    }

    /**
     * The Barrier's own line (ExchangeAlgorithm): a Barrier takes a member's Barrier word as its arrival only when
     * it equals this call's sequence number. Here the late rank's Barrier meets members that made a Reduce at that
     * call and, when the late rank is member 0, all went on into the next Barrier before it came (the Reduce's
     * leaves go ahead), so every word it reads is past its call: a Barrier that took "at least" for "equal" would
     * end without the mismatch on that rank alone. Every rank gets it (the leaves from their next call, as "an
     * earlier call"), and the communicator stays in step.
     */
    @ParameterizedTest(name = "{0} ranks, the Barrier on rank {1}, 200 ms late")
    @CsvSource({"2,0", "3,0", "4,0", "2,1", "4,2"})
    void aLateBarrierAmongReducesGetsTheMismatch(int n, int late) {
        ThreadRanks.run(n, WITH_EXCHANGE.withSimulatedTopology(1, 1), comm -> {
            int r = comm.rank();
            long[] in = {r + 1};
            long[] out = new long[1];
            comm.barrier();
            if (r == late) {
                Thread.sleep(200);
                ArgumentMismatchException e = assertThrows(ArgumentMismatchException.class, comm::barrier);
                assertTrue(e.getMessage().contains("different arguments") && !e.getMessage().contains("an earlier call"), e.getMessage());
                comm.barrier();
            } else if (r == 0) { // member 0 never goes ahead: it compares the signatures at the call
                ArgumentMismatchException e = assertThrows(ArgumentMismatchException.class, () -> comm.reduce(in, 0, out, 0, 1, Op.SUM, 0));
                assertTrue(!e.getMessage().contains("an earlier call"), e.getMessage());
                comm.barrier();
            } else { // a leaf: returns at once, into the next Barrier, which ends and then throws the earlier call's mismatch
                comm.reduce(in, 0, out, 0, 1, Op.SUM, 0);
                ArgumentMismatchException e = assertThrows(ArgumentMismatchException.class, comm::barrier);
                assertTrue(e.getMessage().contains("an earlier call"), e.getMessage());
            }
            long[] sum = new long[1];
            comm.allreduce(in, 0, sum, 0, 1, Op.SUM);
            assertEquals(n * (n + 1L) / 2, sum[0]);
        });
    }

    /**
     * Two members of a level (two ranks on a socket, or two sockets' leaders on a node) whose calls
     * differ in size across the two-member exchange's boundaries: 40 B (inline in the flag's line,
     * {@code runInline}) against 64 B (the exchange area; arrays {@code runInline}, buffers
     * {@code runPair}), 96 B against 104 B (one data line against two), 104 B against 240 B (two
     * against four), 40 B against 256 B, 256 B (the exchange area's last size) against 264 B (the
     * slots). Arrays and direct buffers. Each rank reads the other's data from where its own call's size says: both
     * must end in the mismatch, and the next call on both must be right.
     */
    @ParameterizedTest(name = "{0} ranks, {1} socket(s): {2} vs {3} longs, buffers {4}")
    @CsvSource({
        "2,1,5,8,false", "2,1,8,5,false", "2,1,8,5,true", "2,1,12,13,false", "2,1,13,12,true", "2,1,12,13,true",
        "4,2,5,8,false", "4,2,12,13,true", "4,2,8,5,true",
        "2,1,5,32,true", "2,1,32,5,false", "2,1,13,30,true", "2,1,30,13,false", "2,1,32,33,true", "2,1,33,32,false"})
    void twoMembersAcrossTheExchangeLayoutsEndWithTheMismatch(int ranks, int sockets, int mine, int odd, boolean buffers) {
        ThreadRanks.run(ranks, CollectiveCorrectnessTest.EXCHANGE.withSimulatedTopology(1, sockets), comm -> {
            int n = comm.rank() == ranks - 1 ? odd : mine;
            long[] in = new long[40];
            long[] out = new long[40];
            java.nio.ByteBuffer bin = java.nio.ByteBuffer.allocateDirect(320).order(java.nio.ByteOrder.nativeOrder());
            java.nio.ByteBuffer bout = java.nio.ByteBuffer.allocateDirect(320).order(java.nio.ByteOrder.nativeOrder());
            expectMismatch(comm, false, () -> {
                if (buffers) {
                    comm.allreduce(bin, 0, bout, 0, n, DataType.LONG, Op.SUM);
                } else {
                    comm.allreduce(in, 0, out, 0, n, Op.SUM);
                }
            });
            // and the same call on both afterwards (96 B), exact
            for (int i = 0; i < 12; i++) {
                in[i] = (comm.rank() + 1L) * (i + 3);
            }
            comm.allreduce(in, 0, out, 0, 12, Op.SUM);
            for (int i = 0; i < 12; i++) {
                assertEquals(ranks * (ranks + 1L) / 2 * (i + 3), out[i], "element " + i);
            }
        });
    }

    /**
     * A Reduce's root publishes no data (ExchangeAlgorithm, "Who returns when"): a peer whose call
     * would read it (an Allreduce of the same size, or a Reduce that names itself root) must end in
     * the mismatch, never fold the root's stale or absent exchange area. Sizes of the exchange area
     * (64, 128 and 256 B: {@code runPair} for buffers; for arrays {@code runInline} at 64 B and
     * {@code run} above it, and {@code run} for every form with 4 ranks), 2 ranks (the
     * peer is member 0 or member 1) and 4 (the odd rank among leaves that go ahead); the next call
     * on every rank must be right.
     */
    @ParameterizedTest(name = "{0} ranks, root {1}, odd rank {2} ({3}), {4} longs, buffers {5}")
    @CsvSource({
        "2,0,1,allreduce,8,true", "2,1,0,allreduce,8,true", "2,0,1,allreduce,32,true", "2,1,0,allreduce,32,false",
        "2,0,1,allreduce,16,false", "2,0,1,root,8,true", "2,1,0,root,32,true", "2,0,1,root,32,false",
        "4,0,2,allreduce,32,true", "4,2,0,allreduce,8,true", "4,3,1,root,32,false", "4,1,3,root,16,true"})
    void aReduceRootsPeerThatWouldReadItsDataEndsWithTheMismatch(int ranks, int root, int odd, String what, int n, boolean buffers) {
        ThreadRanks.run(ranks, CollectiveCorrectnessTest.EXCHANGE, comm -> {
            int r = comm.rank();
            boolean o = r == odd;
            long[] in = new long[40];
            long[] out = new long[40];
            java.nio.ByteBuffer bin = java.nio.ByteBuffer.allocateDirect(320).order(java.nio.ByteOrder.nativeOrder());
            java.nio.ByteBuffer bout = java.nio.ByteBuffer.allocateDirect(320).order(java.nio.ByteOrder.nativeOrder());
            int myRoot = o && what.equals("root") ? odd : root;
            boolean allreduce = o && what.equals("allreduce");
            boolean goesAhead = !allreduce && r != 0 && r != myRoot;
            expectMismatch(comm, goesAhead, () -> {
                if (allreduce && buffers) {
                    comm.allreduce(bin, 0, bout, 0, n, DataType.LONG, Op.SUM);
                } else if (allreduce) {
                    comm.allreduce(in, 0, out, 0, n, Op.SUM);
                } else if (buffers) {
                    comm.reduce(bin, 0, bout, 0, n, DataType.LONG, Op.SUM, myRoot);
                } else {
                    comm.reduce(in, 0, out, 0, n, Op.SUM, myRoot);
                }
            });
            // the same Reduce on all afterwards, exact at the root
            for (int i = 0; i < n; i++) {
                bin.putLong(8 * i, (r + 1L) * (i + 3));
            }
            comm.reduce(bin, 0, bout, 0, n, DataType.LONG, Op.SUM, root);
            if (r == root) {
                for (int i = 0; i < n; i++) {
                    assertEquals(ranks * (ranks + 1L) / 2 * (i + 3), bout.getLong(8 * i), "element " + i);
                }
            }
        });
    }

    @Test
    void messageNamesBothCalls() {
        ThreadRanks.run(2, Config.defaults(), comm -> {
            double[] x = new double[5];
            ArgumentMismatchException e = assertThrows(ArgumentMismatchException.class,
                    () -> comm.allreduce(x, 0, new double[5], 0, comm.rank() == 1 ? 5 : 4, Op.SUM));
            assertTrue(e.getMessage().contains("allreduce(count=5, DOUBLE, SUM)"), e.getMessage());
            assertTrue(e.getMessage().contains("allreduce(count=4, DOUBLE, SUM)"), e.getMessage());
        });
    }

    @Test
    void aRankThatNeverArrivesIsNamedAfterTheTimeout() {
        Config cfg = Config.defaults().withSimulatedTopology(2, 1).withTimeoutNanos(1_000_000_000L);
        long t0 = System.nanoTime();
        Throwable[] errs = ThreadRanks.runCollect(4, cfg, comm -> {
            if (comm.rank() == 3) {
                return; // never calls the barrier
            }
            comm.barrier();
        }, 60_000);
        double secs = (System.nanoTime() - t0) / 1e9;
        assertTrue(secs < 30, "took " + secs + " s");
        for (int r = 0; r < 3; r++) {
            assertNotNull(errs[r], "rank " + r + " should have failed");
            assertTrue(errs[r] instanceof PeerFailureException, "rank " + r + ": " + errs[r]);
            PeerFailureException p = (PeerFailureException) errs[r];
            String m = p.getMessage();
            assertTrue(m.contains("did not arrive") || m.contains("because of rank 3"), "rank " + r + ": " + m);
            assertArrayEquals(new int[] {3}, p.ranks(), "rank " + r + ": " + m);
        }
        assertEquals(null, errs[3]);
    }

    @Test
    void abortReleasesWaitingPeersQuickly() {
        Config cfg = Config.defaults().withSimulatedTopology(2, 2).withTimeoutNanos(600_000_000_000L);
        long t0 = System.nanoTime();
        Throwable[] errs = ThreadRanks.runCollect(4, cfg, comm -> {
            if (comm.rank() == 2) {
                comm.abort("test");
                return;
            }
            comm.barrier();
        }, 60_000);
        double secs = (System.nanoTime() - t0) / 1e9;
        assertTrue(secs < 10, "peers took " + secs + " s to notice an abort (timeout is 600 s)");
        for (int r : new int[] {0, 1, 3}) {
            assertTrue(errs[r] instanceof PeerFailureException, "rank " + r + ": " + errs[r]);
        }
    }

    @Test
    void aFailedCommunicatorStaysFailed() {
        Config cfg = Config.defaults().withTimeoutNanos(500_000_000L);
        Throwable[] errs = ThreadRanks.runCollect(2, cfg, comm -> {
            if (comm.rank() == 0) {
                assertThrows(PeerFailureException.class, comm::barrier);
                Sharp4jException again = assertThrows(Sharp4jException.class, comm::barrier);
                assertTrue(again.getMessage().contains("unusable"), again.getMessage());
            }
        }, 60_000);
        assertEquals(null, errs[0]);
    }
}
