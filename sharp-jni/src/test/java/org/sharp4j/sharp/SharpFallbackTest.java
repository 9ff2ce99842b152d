package org.sharp4j.sharp;

import org.sharp4j.ThreadRanks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.sharp4j.sharp.SharpTestSupport.buffer;
import static org.sharp4j.sharp.SharpTestSupport.check;
import static org.sharp4j.sharp.SharpTestSupport.config;
import static org.sharp4j.sharp.SharpTestSupport.fill;
import static org.sharp4j.sharp.SharpTestSupport.map;
import static org.sharp4j.sharp.SharpTestSupport.plus;
import static org.sharp4j.sharp.SharpTestSupport.sharpOn;
import static org.sharp4j.sharp.SharpTestSupport.with;

import java.nio.ByteBuffer;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.sharp4j.Communicator;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.Sharp4jException;

/**
 * Every failure the emulator injects ({@code SHARP_EMU_*}, set in this JVM with libc setenv before
 * the communicators are created) ends with correct results on every rank and the expected log lines.
 */
class SharpFallbackTest {
    static final int NODES = 3;
    static final int RANKS = 6; // 2 per node

    /** Runs {@code calls} mixed collectives (allreduce, reduce to a rotating root, barrier) and checks them. */
    static void workload(Communicator comm, int calls) {
        int n = comm.size();
        for (int c = 0; c < calls; c++) {
            int count = 1 + (c % 3) * 6;
            DataType t = DataType.values()[c % 4];
            Op op = c % 2 == 0 ? Op.SUM : Op.MAX;
            long seed = 1000 + c;
            ByteBuffer in = buffer(t, count);
            ByteBuffer out = buffer(t, count);
            fill(in, t, op, comm.rank(), count, seed);
            switch (c % 3) {
                case 0:
                    comm.allreduce(in, 0, out, 0, count, t, op);
                    check(out, t, op, n, count, seed, "allreduce #" + c);
                    break;
                case 1:
                    int root = c % n;
                    comm.reduce(in, 0, out, 0, count, t, op, root);
                    if (comm.rank() == root) {
                        check(out, t, op, n, count, seed, "reduce #" + c);
                    }
                    break;
                default:
                    comm.barrier();
                    comm.allreduce(in, 0, count, t, op); // in place
                    check(in, t, op, n, count, seed, "in-place allreduce #" + c);
                    break;
            }
        }
    }

    /**
     * Runs the workload with SHARP at {@code props} and the emulator environment {@code env}; returns
     * "SHARP" when SHARP carried at least one call, else "host". Also checks that every rank's
     * {@code Communicator.interNode()} names SHARP exactly when its setup succeeded.
     */
    static String run(Map<String, String> props, Map<String, String> env, int calls) {
        long sharp0 = SharpStep.SHARP_CALLS.get();
        long fb0 = SharpStep.FALLBACKS.get();
        java.util.Set<String> described = java.util.concurrent.ConcurrentHashMap.newKeySet();
        with(props, env, () -> ThreadRanks.run(RANKS, config(NODES, 1), comm -> {
            described.add(comm.interNode());
            workload(comm, calls);
        }));
        String used = SharpStep.SHARP_CALLS.get() > sharp0 || SharpStep.FALLBACKS.get() > fb0 ? "SHARP" : "host";
        org.junit.jupiter.api.Assertions.assertEquals(1, described.size(), "ranks disagree on phase 3: " + described);
        String d = described.iterator().next();
        org.junit.jupiter.api.Assertions.assertEquals(used.equals("SHARP"), d.startsWith("SHARP"), "interNode() says '" + d
                + "' but " + used + " carried the calls");
        return used;
    }

    /** Auto mode with an explicit minimum of 2 nodes (the built-in table uses SHARP from 4 nodes only). */
    static Map<String, String> auto() {
        return plus(sharpOn(), SharpSettings.MODE, "auto", SharpSettings.MIN_NODES, "2");
    }

    @Test
    void noFailureNoWarning() {
        try (SharpTestSupport.LogCapture log = new SharpTestSupport.LogCapture()) {
            long fb0 = SharpStep.FALLBACKS.get();
            assertEquals("SHARP", run(auto(), map(), 9));
            log.assertSharpWarnings(0);
            assertEquals(0, SharpStep.FALLBACKS.get() - fb0);
        }
    }

    @Test
    void initFailingWithEjobCreateFallsBackWithOneWarning() {
        try (SharpTestSupport.LogCapture log = new SharpTestSupport.LogCapture()) {
            String inter = run(auto(), map("SHARP_EMU_FAIL_INIT", "-11"), 9);
            assertEquals("host", inter);
            log.assertSharpWarnings(1, "sharp_coll_init failed with -11 (Cannot create SHARP job)", "falling back to UCX");
        }
    }

    @Test
    void initFailureWithSharpOnThrowsOnEveryRank() {
        with(sharpOn(), map("SHARP_EMU_FAIL_INIT", "-11"), () -> {
            Throwable[] e = ThreadRanks.runCollect(4, config(2, 1), comm -> { }, 120_000);
            for (Throwable t : e) {
                assertTrue(t instanceof Sharp4jException, String.valueOf(t));
                assertTrue(t.getMessage().contains("sharp4j.sharp=on but SHARP cannot be used")
                        && t.getMessage().contains("Cannot create SHARP job"), t.getMessage());
            }
        });
    }

    @Test
    void commInitLockFailedEveryTimeFallsBackAfterRetries() {
        try (SharpTestSupport.LogCapture log = new SharpTestSupport.LogCapture()) {
            String inter = run(auto(), map("SHARP_EMU_FAIL_COMM_INIT", "-18"), 9);
            assertEquals("host", inter);
            log.assertSharpWarnings(1, "sharp_coll_comm_init failed with -18 (Streaming Tree lock failed)",
                    "after " + SharpProvider.COMM_INIT_ATTEMPTS + " attempts");
        }
    }

    @Test
    void commInitLockFailedOnceIsRetried() {
        try (SharpTestSupport.LogCapture log = new SharpTestSupport.LogCapture()) {
            String inter = run(auto(), map("SHARP_EMU_FAIL_COMM_INIT", "1:-18"), 9);
            assertEquals("SHARP", inter);
            log.assertSharpWarnings(0);
        }
    }

    @Test
    void commInitNoResourceFallsBackWithOneWarning() {
        try (SharpTestSupport.LogCapture log = new SharpTestSupport.LogCapture()) {
            String inter = run(auto(), map("SHARP_EMU_FAIL_COMM_INIT", "-20"), 9);
            assertEquals("host", inter);
            log.assertSharpWarnings(1, "sharp_coll_comm_init failed with -20 (No SHARP resources available)");
        }
    }

    @Test
    void operationFailingWithNoResourceIsFinishedOnTheHost() {
        for (int nth = 1; nth <= 3; nth++) { // the 1st call is an allreduce, the 2nd a reduce, the 3rd a barrier
            try (SharpTestSupport.LogCapture log = new SharpTestSupport.LogCapture()) {
                long fb0 = SharpStep.FALLBACKS.get();
                String inter = run(auto(), map("SHARP_EMU_FAIL_OP", nth + ":-20"), 9);
                assertEquals("SHARP", inter);
                // every leader's call failed (each says so), and every leader redid it on the host path
                log.assertSharpWarnings(NODES, "failed on node 0 with -20 (No SHARP resources available)", "[failure 1 of 3]",
                        "redone on the host path");
                assertEquals(NODES, SharpStep.FALLBACKS.get() - fb0, "every node leader finished op " + nth + " on the host");
            }
        }
    }

    @Test
    void operationFailingOnOneNodeOnlyIsFinishedOnTheHostByAll() {
        try (SharpTestSupport.LogCapture log = new SharpTestSupport.LogCapture()) {
            long fb0 = SharpStep.FALLBACKS.get();
            run(auto(), map("SHARP_EMU_FAIL_OP", "4:-1:1"), 9); // SHARP rank 1 = node 1; the 4th op is an allreduce
            // node 1 did not contribute: the others' calls could not complete; they joined its recovery
            log.assertSharpWarnings(1, "failed on node 1 with -1 (Error)", "redone on the host path");
            assertEquals(NODES, SharpStep.FALLBACKS.get() - fb0);
        }
    }

    @Test
    void operationFailingAtCompletionIsFinishedOnTheHost() {
        try (SharpTestSupport.LogCapture log = new SharpTestSupport.LogCapture()) {
            run(auto(), map("SHARP_EMU_FAIL_OP", "2:-1", "SHARP_EMU_FAIL_OP_PHASE", "complete"), 6);
            log.assertSharpWarnings(NODES, "with -1 (Error)");
        }
    }

    @Test
    void aPayloadAboveTheEmulatorsLimitGoesToTheHostByTheCaps() {
        try (SharpTestSupport.LogCapture log = new SharpTestSupport.LogCapture()) {
            long host0 = SharpStep.HOST_CALLS.get();
            long fb0 = SharpStep.FALLBACKS.get();
            with(auto(), map("SHARP_EMU_MAX_PAYLOAD", "64"), () -> ThreadRanks.run(4, config(2, 1), comm -> {
                for (int count : new int[] {8, 16}) { // 64 B fits; 128 B is over the payload the caps report
                    ByteBuffer in = buffer(DataType.LONG, count);
                    fill(in, DataType.LONG, Op.SUM, comm.rank(), count, count);
                    comm.allreduce(in, 0, count, DataType.LONG, Op.SUM);
                    check(in, DataType.LONG, Op.SUM, 4, count, count, "payload");
                }
            }));
            assertEquals(2, SharpStep.HOST_CALLS.get() - host0, "the 128 B call on both node leaders");
            assertEquals(0, SharpStep.FALLBACKS.get() - fb0);
            log.assertSharpWarnings(0);
        }
    }

    /** A call above the payload that max.bytes admits goes as several operations (the check and 2 chunks), not refused. */
    @Test
    void aCallAboveThePayloadThatMaxBytesAdmitsGoesAsSeveralOperations() {
        try (SharpTestSupport.LogCapture log = new SharpTestSupport.LogCapture()) {
            long fb0 = SharpStep.FALLBACKS.get();
            long sharp0 = SharpStep.SHARP_CALLS.get();
            with(plus(auto(), SharpSettings.MAX_BYTES, "1k"), map("SHARP_EMU_MAX_PAYLOAD", "64"),
                    () -> ThreadRanks.run(4, config(2, 1), comm -> {
                        int count = 16; // 128 B > SHARP_EMU_MAX_PAYLOAD: two 64 B chunks
                        ByteBuffer in = buffer(DataType.LONG, count);
                        fill(in, DataType.LONG, Op.SUM, comm.rank(), count, 3);
                        comm.allreduce(in, 0, count, DataType.LONG, Op.SUM);
                        check(in, DataType.LONG, Op.SUM, 4, count, 3, "payload posted");
                    }));
            assertEquals(0, SharpStep.FALLBACKS.get() - fb0);
            assertEquals(2, SharpStep.SHARP_CALLS.get() - sharp0, "on SHARP on both node leaders");
            log.assertSharpWarnings(0);
        }
    }

    @Test
    void afterMaxFailuresSharpIsSwitchedOffForTheJob() {
        try (SharpTestSupport.LogCapture log = new SharpTestSupport.LogCapture()) {
            long fb0 = SharpStep.FALLBACKS.get();
            long sharp0 = SharpStep.SHARP_CALLS.get();
            long host0 = SharpStep.HOST_CALLS.get();
            int calls = 9;
            run(auto(), map("SHARP_EMU_FAIL_OP", "-20"), calls); // every SHARP operation fails
            // The third failure (call 3) switches SHARP off from call 5: call 4 may already be posted on a leader
            // that completed call 3, so it still goes to SHARP (and fails: the 4th failure).
            assertEquals(4L * NODES, SharpStep.FALLBACKS.get() - fb0);
            assertEquals(0, SharpStep.SHARP_CALLS.get() - sharp0);
            // 9 calls, of which 3 contain two inter-node steps (barrier + allreduce): 12 per leader, 4 on SHARP
            assertEquals((12L - 4) * NODES, SharpStep.HOST_CALLS.get() - host0);
            log.assertSharpWarnings(4 * NODES + 1, "[failure 1 of 3]", "[failure 2 of 3]", "[failure 3 of 3]", "[failure 4 of 3]",
                    "SHARP switched off for this job after 3 failed operations");
        }
    }

    @Test
    void maxFailuresIsConfigurable() {
        try (SharpTestSupport.LogCapture log = new SharpTestSupport.LogCapture()) {
            run(plus(auto(), SharpSettings.MAX_FAILURES, "1"), map("SHARP_EMU_FAIL_OP", "2:-20"), 6);
            log.assertSharpWarnings(NODES + 1, "[failure 1 of 1]", "switched off");
        }
    }

    @Test
    void sharpCollEnvironmentIsPassedThrough() {
        // SHARP_COLL_JOB_QUOTA_* shape the caps: 2 OSTs x 32 B = 64 B payload, read by the library itself.
        long host0 = SharpStep.HOST_CALLS.get();
        AtomicInteger done = new AtomicInteger();
        with(sharpOn(), map("SHARP_COLL_JOB_QUOTA_OSTS", "2", "SHARP_COLL_JOB_QUOTA_PAYLOAD_PER_OST", "32"),
                () -> ThreadRanks.run(2, config(2, 1), comm -> {
                    ByteBuffer in = buffer(DataType.INT, 17); // 68 B > 64 B: host
                    fill(in, DataType.INT, Op.SUM, comm.rank(), 17, 8);
                    comm.allreduce(in, 0, 17, DataType.INT, Op.SUM);
                    check(in, DataType.INT, Op.SUM, 2, 17, 8, "quota");
                    done.incrementAndGet();
                }));
        assertEquals(2, done.get());
        assertEquals(2, SharpStep.HOST_CALLS.get() - host0);
    }
}
