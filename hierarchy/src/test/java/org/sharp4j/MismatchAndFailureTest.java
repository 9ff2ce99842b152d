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
            .withTimeoutNanos(20_000_000_000L);

    @ParameterizedTest(name = "{0} node(s) x {1} socket(s): {2}")
    @CsvSource({
        "1,1,count", "1,2,count", "2,1,count", "2,2,count",
        "1,1,op", "2,2,op", "1,2,root", "2,1,root", "1,1,kind", "2,2,kind",
        "1,1,tiled-count", "2,2,tiled-count", "1,1,tree-vs-tiled", "1,2,tree-vs-tiled", "2,1,tree-vs-tiled"})
    void everyRankGetsTheMismatchAndTheCommunicatorStaysUsable(int nodes, int sockets, String what) {
        ThreadRanks.run(4, SMALL.withSimulatedTopology(nodes, sockets), comm -> {
            int r = comm.rank();
            long[] in = new long[2000];
            long[] out = new long[2000];
            ArgumentMismatchException e = assertThrows(ArgumentMismatchException.class, () -> {
                switch (what) {
                    case "count": comm.allreduce(in, 0, out, 0, r == 2 ? 3 : 4, Op.SUM); break;
                    case "op": comm.allreduce(in, 0, out, 0, 4, r == 3 ? Op.MAX : Op.SUM); break;
                    case "root": comm.reduce(in, 0, out, 0, 4, Op.SUM, r == 1 ? 0 : 2); break;
                    case "kind": if (r == 0) {
                            comm.barrier();
                        } else {
                            comm.allreduce(in, 0, out, 0, 1, Op.SUM);
                        }
                        break;
                    case "tiled-count": comm.allreduce(in, 0, out, 0, r == 3 ? 1500 : 1700, Op.SUM); break;
                    default: comm.allreduce(in, 0, out, 0, r == 1 ? 1500 : 8, Op.SUM); break; // tree on some ranks, tiled on one
                }
            });
            assertTrue(e.getMessage().contains("different arguments"), e.getMessage());
            // Still in step: a correct collective follows on every rank.
            long[] one = {r + 1};
            long[] sum = new long[1];
            comm.allreduce(one, 0, sum, 0, 1, Op.SUM);
            assertArrayEquals(new long[] {10}, sum);
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
