package org.sharp4j.sharp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.sharp4j.sharp.SharpTestSupport.buffer;
import static org.sharp4j.sharp.SharpTestSupport.check;
import static org.sharp4j.sharp.SharpTestSupport.config;
import static org.sharp4j.sharp.SharpTestSupport.fill;
import static org.sharp4j.sharp.SharpTestSupport.map;
import static org.sharp4j.sharp.SharpTestSupport.sharpOn;
import static org.sharp4j.sharp.SharpTestSupport.with;

import java.nio.ByteBuffer;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.sharp4j.ArgumentMismatchException;
import org.sharp4j.Communicator;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.PeerFailureException;
import org.sharp4j.ThreadRanks;

/**
 * Issue 11, items 2 and 3: a successful SHARP call sends no host message, and after any SHARP
 * failure every rank ends the same way (the same result, checked here; or the same error). Node
 * leaders are threads of this JVM (4 simulated nodes of one rank, UCX between them); the emulator
 * injects the failures. Each case prints one line of the table in issue 11's closing note.
 */
class SharpRecoveryTest {
    static final int NODES = 4;

    /** Calls alternate allreduce (SUM of 5 longs), reduce (MAX to a rotating root), barrier; every result is checked. */
    static void workload(Communicator comm, int calls) {
        int n = comm.size();
        for (int c = 0; c < calls; c++) {
            long seed = 5000 + c;
            switch (c % 3) {
                case 0: {
                    ByteBuffer in = buffer(DataType.LONG, 5);
                    fill(in, DataType.LONG, Op.SUM, comm.rank(), 5, seed);
                    comm.allreduce(in, 0, 5, DataType.LONG, Op.SUM);
                    check(in, DataType.LONG, Op.SUM, n, 5, seed, "allreduce #" + c);
                    break;
                }
                case 1: {
                    ByteBuffer in = buffer(DataType.DOUBLE, 3);
                    ByteBuffer out = buffer(DataType.DOUBLE, 3);
                    fill(in, DataType.DOUBLE, Op.MAX, comm.rank(), 3, seed);
                    int root = c % n;
                    comm.reduce(in, 0, out, 0, 3, DataType.DOUBLE, Op.MAX, root);
                    if (comm.rank() == root) {
                        check(out, DataType.DOUBLE, Op.MAX, n, 3, seed, "reduce #" + c);
                    }
                    break;
                }
                default:
                    comm.barrier();
                    break;
            }
        }
    }

    static void row(String fault, String outcome, double secs) {
        System.out.printf("SHARP-FAULT | %s | %s | %.2f s |%n", fault, outcome, secs);
    }

    @Test
    void aSuccessfulSharpCallSendsNoHostMessage() {
        long sharp0 = SharpStep.SHARP_CALLS.get();
        long msgs0 = SharpStep.HOST_MESSAGES_ON_SUCCESS.get();
        long fb0 = SharpStep.FALLBACKS.get();
        with(sharpOn(), map(), () -> ThreadRanks.run(NODES, config(NODES, 1), comm -> workload(comm, 300)));
        assertEquals(300L * NODES, SharpStep.SHARP_CALLS.get() - sharp0, "every call on SHARP");
        assertEquals(0, SharpStep.FALLBACKS.get() - fb0);
        assertEquals(0, SharpStep.HOST_MESSAGES_ON_SUCCESS.get() - msgs0, "host messages during successful SHARP calls");
        row("none (300 calls)", "every rank: right result; 0 host messages per successful SHARP call", 0);
    }

    /**
     * One leader, or all, fail at post (no contribution: the others' calls cannot complete, they join
     * the recovery) or at completion (the others complete: the recovery takes their result), at the
     * Nth operation. Every result is right on every rank, every leader counts the failure once, and
     * SHARP carries the calls after it.
     */
    @ParameterizedTest(name = "{0} at {1}, rank {2}")
    @CsvSource({
        "post,1,1", "post,2,3", "post,6,0", "post,3,*", "post,7,*",
        "complete,1,2", "complete,5,0", "complete,2,*", "complete,9,*"})
    void everyRankEndsWithTheSameRightResults(String phase, int nth, String rank) {
        long fb0 = SharpStep.FALLBACKS.get();
        long sharp0 = SharpStep.SHARP_CALLS.get();
        String rule = nth + ":-20" + (rank.equals("*") ? "" : ":" + rank);
        Map<String, String> env = map("SHARP_EMU_FAIL_OP", rule, "SHARP_EMU_FAIL_OP_PHASE", phase);
        long t0 = System.nanoTime();
        with(sharpOn(), env, () -> ThreadRanks.run(NODES, config(NODES, 1), comm -> workload(comm, 12)));
        double secs = (System.nanoTime() - t0) / 1e9;
        assertEquals(NODES, SharpStep.FALLBACKS.get() - fb0, "every leader recovered the one failed call once");
        // the failed call completed on SHARP only where the switch had the result (failure at completion on one leader)
        int completedIt = phase.equals("complete") && !rank.equals("*") ? NODES - 1 : 0;
        assertEquals(11L * NODES + completedIt, SharpStep.SHARP_CALLS.get() - sharp0, "the other calls on SHARP");
        row("fails at " + phase + ", op " + nth + ", " + (rank.equals("*") ? "every leader" : "leader of node " + rank),
                "every rank: right results for all 12 calls (recovered: "
                        + (phase.equals("complete") && !rank.equals("*") ? "the switch's result from the others" : "redone on the host path")
                        + ")", secs);
    }

    @Test
    void leadersThatDisagreeOnASharpCallAllGetTheMismatchAndGoOn() {
        long t0 = System.nanoTime();
        with(sharpOn(), map(), () -> ThreadRanks.run(NODES, config(NODES, 1), comm -> {
            workload(comm, 3);
            ByteBuffer in = buffer(DataType.LONG, 8);
            ArgumentMismatchException e = org.junit.jupiter.api.Assertions.assertThrows(ArgumentMismatchException.class,
                    () -> comm.allreduce(in, 0, comm.rank() == 2 ? 7 : 6, DataType.LONG, Op.SUM));
            assertTrue(e.getMessage().contains("different arguments"), e.getMessage());
            workload(comm, 6); // still usable, on SHARP
        }));
        row("leaders disagree on a SHARP call (count 6 vs 7)", "every rank: ArgumentMismatchException; then right results",
                (System.nanoTime() - t0) / 1e9);
    }

    /** A leader that stops calling: the others' SHARP calls cannot complete; their recovery names it. */
    @Test
    void aLeaderThatStopsIsNamedByEveryOtherRank() {
        Throwable[] errs = new Throwable[NODES];
        long[] stopAt = new long[1];
        double[] failedAfter = new double[NODES];
        with(sharpOn(), map(), () -> {
            Throwable[] e = ThreadRanks.runCollect(NODES, config(NODES, 1).withTimeoutNanos(4_000_000_000L), comm -> {
                workload(comm, 4);
                if (comm.rank() == 2) {
                    stopAt[0] = System.nanoTime();
                    Thread.sleep(15_000); // stops, then finds the job gone
                }
                try {
                    workload(comm, 3);
                } catch (RuntimeException x) {
                    failedAfter[comm.rank()] = (System.nanoTime() - stopAt[0]) / 1e9;
                    throw x;
                }
            }, 60_000);
            System.arraycopy(e, 0, errs, 0, NODES);
        });
        double secs = 0;
        for (int r = 0; r < NODES; r++) {
            if (r != 2) {
                secs = Math.max(secs, failedAfter[r]);
            }
        }
        StringBuilder outcome = new StringBuilder();
        for (int r = 0; r < NODES; r++) {
            if (r == 2) {
                continue;
            }
            assertTrue(errs[r] instanceof PeerFailureException, "rank " + r + ": " + errs[r]);
            int[] blamed = ((PeerFailureException) errs[r]).ranks();
            assertTrue(blamed.length == 1 && blamed[0] == 2, "rank " + r + " blamed " + java.util.Arrays.toString(blamed) + ": "
                    + errs[r].getMessage());
            outcome.append("rank ").append(r).append(": PeerFailureException naming rank 2; ");
        }
        assertTrue(secs < 12, "the survivors took " + secs + " s to fail after the stop (timeout 4 s)");
        row("a leader stops calling (sharp4j.timeout 4 s)", outcome + "rank 2: " + (errs[2] == null ? "no error" : errs[2].getClass()
                .getSimpleName()), secs);
    }
}
