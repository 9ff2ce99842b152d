package org.sharp4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.sharp4j.CollectiveCorrectnessTest.Api;
import org.sharp4j.coll.ShmLevel;
import org.sharp4j.tuning.Collective;
import org.sharp4j.tuning.IntraNodeAlgorithm;

/**
 * A flat Reduce (one socket, one node) whose members other than member 0 and the root publish
 * and return (ExchangeAlgorithm, "Who returns when"): long runs of them with changing roots,
 * interleaved with Allreduce and Barrier on every algorithm, bit-exact at the root; members that
 * run ahead of a root that has not come yet; mismatches reported by a later call or by close; a
 * root that never comes named at the timeout.
 */
class ReduceGoesAheadTest {
    /**
     * Exchange up to 256 B (inline up to 40, then slots); Reduce on the binary tree up to 4 KiB,
     * Allreduce on the radix-3 tree up to 512 B; tiled above (4 KiB slots).
     */
    static final Config CFG = CollectiveCorrectnessTest.SMALL
            .withTuneOverride("allreduce,reduce,barrier:0-257:exchange#reduce:257-4097:tree:radix=2").withSimulatedTopology(1, 1);

    /**
     * Runs of 1-9 Reduces, each with the next root, then an Allreduce or a Barrier (or nothing),
     * over sizes that take the exchange (inline and slot), the tree and the tiled algorithm;
     * every Reduce checked bit for bit at its root against the documented order.
     */
    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {1, 2, 3, 4, 5, 8})
    void longRunsWithChangingRootsInterleavedWithAllreduceAndBarrier(int ranks) {
        ThreadRanks.run(ranks, CFG, comm -> {
            int[] counts = {1, 5, 6, 20, 40, 100, 600};
            DataType[] types = DataType.values();
            Op[] ops = {Op.SUM, Op.PROD, Op.MAX, Op.SUM};
            long seed = 77;
            int call = 0;
            for (int round = 0; round < 60; round++) {
                int run = 1 + round % 9;
                for (int i = 0; i < run; i++, call++) {
                    DataType t = types[call % types.length];
                    int count = counts[(call / 3 + round) % counts.length];
                    int root = (call * 3 + round) % ranks;
                    CollectiveCorrectnessTest.check(comm, Collective.REDUCE, t, ops[call % ops.length], count, root, seed++,
                            Api.values()[call % 4]);
                }
                switch (round % 3) {
                    case 0:
                        CollectiveCorrectnessTest.check(comm, Collective.ALLREDUCE, DataType.DOUBLE, Op.SUM,
                                counts[round % counts.length], 0, seed++, Api.values()[round % 4]);
                        break;
                    case 1:
                        comm.barrier();
                        break;
                    default:
                        break; // reduce runs back to back
                }
            }
            // The path under test ran: members that are neither member 0 nor the root went ahead on the exchange and the tree.
            assertTrue(comm.engine().calls(IntraNodeAlgorithm.EXCHANGE) > 0 && comm.engine().calls(IntraNodeAlgorithm.TREE) > 0);
        });
    }

    /**
     * Long direct Reduces (several 4 KiB chunks: a non-root returns knowing only every member's
     * arrival two chunks back) followed by exchange Reduces whose non-roots go ahead: the engine's
     * reuse bookkeeping must not take the direct call's last chunk as seen by every member, or a
     * non-root writes a set the root still folds. Every Reduce checked bit for bit at its root.
     */
    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 3, 4})
    void directReducesThenExchangeReducesThatGoAhead(int ranks) {
        Config cfg = CollectiveCorrectnessTest.SMALL.withTuneOverride("allreduce,reduce,barrier:0-257:exchange#reduce:257-inf:direct")
                .withSimulatedTopology(1, 1);
        ThreadRanks.run(ranks, cfg, comm -> {
            long seed = 991;
            int[] counts = {2600, 5, 3100, 1, 20, 700};
            for (int call = 0; call < 240; call++) {
                DataType t = DataType.values()[call % 4];
                int count = counts[call % counts.length];
                int root = (call / 2 + call % 3) % ranks;
                CollectiveCorrectnessTest.check(comm, Collective.REDUCE, t, Op.SUM, count, root, seed++, Api.values()[call % 4]);
            }
            assertTrue(comm.engine().calls(IntraNodeAlgorithm.DIRECT) > 0 && comm.engine().calls(IntraNodeAlgorithm.EXCHANGE) > 0);
        });
    }

    /**
     * Two members, Reduces of 136-256 B on direct buffers back to back, the root late at first: the
     * leaf runs ahead, and the root loads the leaf's data lines before it looks at the call's flag
     * (ExchangeAlgorithm.runPair, "reads ahead"). Every call's data differs, and every 37th call the
     * leaf pauses first, so there the root's guess is wrong and its early loads see the set's previous
     * data (or lines being written): a root that folded anything it loaded before the acquire would
     * be wrong there. Bit-exact at the root on every call, and the read-ahead ran on most of them.
     */
    @ParameterizedTest(name = "{0} bytes")
    @ValueSource(ints = {136, 192, 256})
    void aRootReadsALeafAheadAndFoldsOnlyWhatTheLeafPublished(int bytes) {
        int calls = 600;
        int root = 0;
        CountDownLatch leafAhead = new CountDownLatch(1);
        ThreadRanks.run(2, CFG, comm -> {
            boolean leaf = comm.rank() != root;
            for (int i = 0; i < calls; i++) {
                if (!leaf && i == 0) {
                    assertTrue(leafAhead.await(60, TimeUnit.SECONDS), "the leaf waited for the root");
                }
                if (leaf && i % 37 == 36) {
                    Thread.sleep(1);
                }
                DataType t = DataType.values()[i % DataType.values().length];
                CollectiveCorrectnessTest.check(comm, Collective.REDUCE, t, i % 2 == 0 ? Op.SUM : Op.MAX, bytes / t.size, root, 4100 + i,
                        Api.BUFFERS);
                if (leaf && i == ShmLevel.SETS - 2) {
                    leafAhead.countDown();
                }
            }
            if (!leaf) {
                long ahead = comm.engine().readAheads();
                assertTrue(ahead > calls / 2 && ahead < calls, "calls read ahead: " + ahead + " of " + calls);
            }
            comm.barrier();
        });
    }

    /**
     * How far a member may run ahead: SETS - 1 on the exchange up to EXCHANGE_BYTES (inline at 8 B,
     * the exchange area at 160 B), SLOT_SETS - 1 on the tree (400 B with 4 ranks).
     */
    static int ahead(int bytes) {
        return bytes <= ShmLevel.EXCHANGE_BYTES ? ShmLevel.SETS - 1 : ShmLevel.SLOT_SETS - 1;
    }

    /**
     * The root comes only after the other members (but member 0) finished as many Reduces as they
     * may run ahead ({@link #ahead}). They must not wait for it (this would hang: the root waits
     * for them to count down first). Then the root's results are bit-exact: what the members ran
     * ahead with was not overwritten.
     */
    @ParameterizedTest(name = "{0} bytes")
    @ValueSource(ints = {8, 160, 400})
    void membersRunAheadOfALateRootAndTheirDataSurvives(int bytes) {
        int ranks = 4;
        int root = 1;
        int ahead = ahead(bytes);
        CountDownLatch leavesDone = new CountDownLatch(ranks - 2);
        ThreadRanks.run(ranks, CFG, comm -> {
            int r = comm.rank();
            if (r == root) {
                assertTrue(leavesDone.await(60, TimeUnit.SECONDS), "members other than 0 and the root waited for the root");
            }
            for (int i = 0; i < ahead; i++) {
                CollectiveCorrectnessTest.check(comm, Collective.REDUCE, DataType.LONG, Op.SUM, bytes / 8, root, 900 + i,
                        Api.ARRAYS);
            }
            if (r != root && r != 0) {
                leavesDone.countDown();
            }
            for (int i = 0; i < 2 * ahead; i++) { // and again, now with the root in the loop, then in step
                CollectiveCorrectnessTest.check(comm, Collective.REDUCE, DataType.DOUBLE, Op.SUM, bytes / 8, root, 950 + i,
                        Api.BUFFERS);
            }
            comm.barrier();
        });
    }

    /**
     * ... and no further: a member that made as many Reduces as it may run ahead waits in its next
     * one for the root (the reuse gate, Engine.run). The root comes only well after the members
     * counted down, and says so before its first call; a member whose extra call returned before
     * that went too far (its next writes could overwrite data the root has not read yet).
     */
    @ParameterizedTest(name = "{0} bytes")
    @ValueSource(ints = {8, 160, 400})
    void aMemberWaitsForTheLateRootOnceItsRunAheadIsSpent(int bytes) {
        int ranks = 4;
        int root = 1;
        int ahead = ahead(bytes);
        CountDownLatch leavesDone = new CountDownLatch(ranks - 2);
        AtomicBoolean rootCame = new AtomicBoolean();
        ThreadRanks.run(ranks, CFG, comm -> {
            int r = comm.rank();
            if (r == root) {
                assertTrue(leavesDone.await(60, TimeUnit.SECONDS), "members other than 0 and the root waited for the root");
                Thread.sleep(300); // time for a member that is not stopped by the gate to finish its extra call
                rootCame.set(true);
            }
            for (int i = 0; i < ahead; i++) {
                CollectiveCorrectnessTest.check(comm, Collective.REDUCE, DataType.LONG, Op.SUM, bytes / 8, root, 600 + i,
                        Api.ARRAYS);
            }
            if (r != root && r != 0) {
                leavesDone.countDown();
            }
            CollectiveCorrectnessTest.check(comm, Collective.REDUCE, DataType.LONG, Op.SUM, bytes / 8, root, 600 + ahead,
                    Api.ARRAYS);
            assertTrue(rootCame.get(), "rank " + r + " made Reduce " + (ahead + 1) + " before the root came: it ran more than "
                    + ahead + " calls ahead");
            comm.barrier();
        });
    }

    /**
     * Sizes mixed in one run ahead: the exchange area's calls (160 B, SETS sets) around a tree
     * call whose data is in a slot (400 B, SLOT_SETS sets). The leaves may make all SETS - 1 before
     * the root comes (the slot call is their second: its gate asks for nothing yet), and the root's
     * results of every size are bit-exact; then the same again with the root in step.
     */
    @Test
    void membersRunAheadThroughMixedSizesAndTheirDataSurvives() {
        int ranks = 4;
        int root = 1;
        int[] bytes = new int[ShmLevel.SETS - 1];
        java.util.Arrays.fill(bytes, 160);
        bytes[1] = 400;
        CountDownLatch leavesDone = new CountDownLatch(ranks - 2);
        ThreadRanks.run(ranks, CFG, comm -> {
            int r = comm.rank();
            if (r == root) {
                assertTrue(leavesDone.await(60, TimeUnit.SECONDS), "members other than 0 and the root waited for the root");
            }
            for (int i = 0; i < bytes.length; i++) {
                CollectiveCorrectnessTest.check(comm, Collective.REDUCE, DataType.LONG, Op.SUM, bytes[i] / 8, root, 700 + i,
                        Api.BUFFERS);
            }
            if (r != root && r != 0) {
                leavesDone.countDown();
            }
            for (int k = 0; k < 2; k++) {
                for (int i = 0; i < bytes.length; i++) {
                    CollectiveCorrectnessTest.check(comm, Collective.REDUCE, DataType.DOUBLE, Op.SUM, bytes[i] / 8, root,
                            800 + 100 * k + i, Api.ARRAYS);
                }
            }
            comm.barrier();
        });
    }

    /** Who names which root: everyone agrees but rank 3 (count), or nobody names itself root. */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"count", "nobody-is-root", "op-tree"})
    void aMismatchReachesMembersThatWentAheadWithinSetsCalls(String what) {
        int ranks = 4;
        ThreadRanks.run(ranks, CFG, comm -> {
            int r = comm.rank();
            double[] in = new double[100];
            double[] out = new double[100];
            int root;
            boolean goesAhead;
            Runnable bad;
            switch (what) {
                case "count":
                    root = 1;
                    goesAhead = r == 2 || r == 3;
                    bad = () -> comm.reduce(in, 0, out, 0, r == 3 ? 2 : 3, Op.SUM, 1);
                    break;
                case "nobody-is-root":
                    root = -1;
                    goesAhead = r != 0;
                    bad = () -> comm.reduce(in, 0, out, 0, 2, Op.SUM, r == 0 ? 1 : r % 3 + 1); // 0->1, 1->2, 2->3, 3->1
                    break;
                default:
                    // the binary tree (480 B), the op differs on rank 3: it goes; rank 2, its parent,
                    // sees the mismatch in its subtree and stays for member 0's verdict
                    root = 1;
                    goesAhead = r == 3;
                    bad = () -> comm.reduce(in, 0, out, 0, 60, r == 3 ? Op.MAX : Op.SUM, 1);
                    break;
            }
            if (goesAhead) {
                bad.run(); // returns: this rank did not wait for the comparison
            } else {
                ArgumentMismatchException e = assertThrows(ArgumentMismatchException.class, bad::run);
                assertTrue(e.getMessage().contains("different arguments") && !e.getMessage().contains("an earlier call"),
                        e.getMessage());
            }
            boolean wentAhead = goesAhead;
            // SETS more correct Reduces with root 1 (0 for the root-less case): a member that went
            // ahead gets the earlier mismatch from one of them, which still completes.
            int thrown = 0;
            int r2 = root < 0 ? 0 : root;
            for (int i = 0; i < ShmLevel.SETS; i++) {
                long[] x = {r + 1};
                long[] s = new long[1];
                try {
                    comm.reduce(x, 0, s, 0, 1, Op.SUM, r2);
                } catch (ArgumentMismatchException e) {
                    assertTrue(e.getMessage().contains("an earlier call"), e.getMessage());
                    thrown++;
                }
                if (r == r2) {
                    assertArrayEquals(new long[] {10}, s);
                }
            }
            assertEquals(wentAhead ? 1 : 0, thrown, "rank " + r);
            comm.barrier();
        });
    }

    /** A member whose last call went ahead of a mismatch learns it from close. */
    @Test
    void closeReportsAMismatchOfTheLastCall() {
        Throwable[] errs = ThreadRanks.runCollect(4, CFG, comm -> {
            int r = comm.rank();
            long[] in = {1, 2, 3};
            long[] out = new long[3];
            if (r == 0 || r == 1) {
                assertThrows(ArgumentMismatchException.class, () -> comm.reduce(in, 0, out, 0, r == 0 ? 2 : 3, Op.SUM, 1));
            } else {
                comm.reduce(in, 0, out, 0, 3, Op.SUM, 1); // went ahead; the close that follows throws
            }
        }, 120_000);
        assertNull(errs[0]);
        assertNull(errs[1]);
        for (int r = 2; r < 4; r++) {
            assertNotNull(errs[r], "rank " + r + " closed without reporting the mismatch of its last call");
            assertTrue(errs[r] instanceof ArgumentMismatchException && errs[r].getMessage().contains("an earlier call"),
                    "rank " + r + ": " + errs[r]);
        }
    }

    /** The root never comes: member 0, and the members that went ahead once their sets run out, name it. */
    @Test
    void aRootThatNeverComesIsNamedByEveryone() {
        Config cfg = CFG.withTimeoutNanos(1_000_000_000L);
        Throwable[] errs = ThreadRanks.runCollect(4, cfg, comm -> {
            if (comm.rank() == 1) {
                return; // never calls
            }
            long[] x = {1};
            long[] s = new long[1];
            for (int i = 0; i < ShmLevel.SETS; i++) { // the leaves' SETS-th waits for the root
                comm.reduce(x, 0, s, 0, 1, Op.SUM, 1);
            }
        }, 60_000);
        assertNull(errs[1]);
        for (int r : new int[] {0, 2, 3}) {
            assertTrue(errs[r] instanceof PeerFailureException, "rank " + r + ": " + errs[r]);
            assertArrayEquals(new int[] {1}, ((PeerFailureException) errs[r]).ranks(), "rank " + r + ": " + errs[r].getMessage());
        }
    }
}
