package org.sharp4j.fallback;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.PeerFailureException;
import org.sharp4j.Sharp4jException;
import org.sharp4j.coll.CallStatus;
import org.sharp4j.coll.Desc;
import org.sharp4j.tuning.Collective;
import org.sharp4j.tuning.CompiledTable;

/**
 * HostStep's parts in flight (issue 12 item 4): {@code post} / {@code progress} / {@code test} /
 * {@code await} give, byte for byte, what the blocking part methods give (the same rounds, groups
 * and bracket, so the documented fold order over nodes), with several parts in flight at once,
 * small fragments so that every part runs many, and inputs whose floating-point sums depend on the
 * bracket; a dead leader or an abort while parts are in flight is named on every node quickly.
 */
class PostedPartsTest {
    static final long TIMEOUT = 20_000_000_000L;
    static final int FRAG = 256;

    static Stream<Arguments> shapes() {
        List<Arguments> out = new ArrayList<>();
        String[] tables = {null, "allreduce,reduce:0-inf:sra:radix=2", "allreduce,reduce:0-inf:knomial:radix=3",
            "allreduce,reduce:0-inf:sra:radix=4"};
        // every other shape heating (HostStep.heating: one await in eight waits for its part before its check)
        for (int n : new int[] {2, 3, 4, 5, 8}) {
            for (String t : tables) {
                out.add(Arguments.of(n, t == null ? "built-in" : t, FRAG, out.size() % 2 == 1));
            }
        }
        // posted parts in fragments of their own size (HostStep's "Large fragments"), not a multiple
        // of the blocking rounds' fragment: element-wise folds, so the bytes must not change
        for (int n : new int[] {2, 3, 5}) {
            for (String t : new String[] {null, tables[1]}) {
                out.add(Arguments.of(n, t == null ? "built-in" : t, 5 * FRAG / 2, out.size() % 2 == 1));
            }
        }
        return out.stream();
    }

    /** Bracket-sensitive inputs: sums of values of very different magnitudes round differently in another order. */
    static void fillRandom(ByteBuffer b, DataType t, long seed, int node, int count) {
        for (int i = 0; i < count; i++) {
            long h = Inputs.raw(seed, node, i);
            double v = (h >> 11) * 0x1.0p-53 * Math.scalb(1.0, (int) Long.remainderUnsigned(h, 40) - 20);
            switch (t) {
                case INT: b.putInt(i * 4, (int) h); break;
                case LONG: b.putLong(i * 8, h); break;
                case FLOAT: b.putFloat(i * 4, (float) v); break;
                default: b.putDouble(i * 8, v); break;
            }
        }
    }

    @ParameterizedTest(name = "{0} nodes, {1}, posted fragments of {2} bytes, heating {3}")
    @MethodSource("shapes")
    void postedPartsGiveTheBlockingPartsBytes(int n, String rules, int partFrag, boolean heating) {
        CompiledTable table = Team.table(rules.equals("built-in") ? null : rules, n);
        MemTransport.Mesh mesh = MemTransport.Mesh.of(n);
        final int parts = 7; // more than in flight: the oldest is awaited before a new one is posted
        Team.runOk(n, 120_000, node -> {
            try (HostStep step = new HostStep(mesh.end(node), table, Team.waiter(TIMEOUT, null, node), "t", FRAG, 3, partFrag)) {
                assertEquals(3, step.partsInFlight());
                step.heating(heating); // the engine's heating varies what is timing; the bytes must not change
                long seed = 100 * n + rules.length() + partFrag;
                for (DataType t : DataType.values()) {
                    for (Op op : new Op[] {Op.SUM, Op.PROD, Op.MAX}) {
                        for (Collective c : new Collective[] {Collective.ALLREDUCE, Collective.REDUCE}) {
                            seed++;
                            int root = (int) (seed % n);
                            // parts of several sizes: below a fragment, a few fragments, fewer elements than nodes
                            int[] counts = {3, FRAG / t.size + 5, 4 * FRAG / t.size + 1, 1, 2 * FRAG / t.size, 17, 5 * FRAG / t.size};
                            int total = Arrays.stream(counts).sum();
                            long desc = Desc.make(c, t, op, root, total);
                            ByteBuffer a = HostStepTest.buf(total * t.size);
                            fillRandom(a, t, seed, node, total);
                            ByteBuffer b = HostStepTest.buf(total * t.size);
                            b.put(0, a, 0, total * t.size);
                            CallStatus st = new CallStatus();
                            // blocking: every part in turn (the first one checks the call)
                            int off = 0;
                            for (int p = 0; p < parts; p++) {
                                part(step, c, a, off, counts[p], t, op, root, desc, st, p > 0);
                                off += counts[p] * t.size;
                            }
                            assertTrue(st.ok());
                            // posted: the first part blocking, then the others in flight, at most 3 at once
                            part(step, c, b, 0, counts[0], t, op, root, desc, st, false);
                            int[] handles = new int[parts];
                            off = counts[0] * t.size;
                            for (int p = 1; p < parts; p++) {
                                if (p > 3) {
                                    step.await(handles[p - 3]);
                                }
                                handles[p] = step.post(c, b, off, counts[p], t, op, root, desc, st);
                                step.progress();
                                off += counts[p] * t.size;
                            }
                            step.await(handles[parts - 1]);
                            for (int p = 1; p < parts; p++) {
                                assertTrue(step.test(handles[p]), "part " + p + " is complete once a later one is");
                            }
                            assertTrue(st.ok());
                            boolean has = c == Collective.ALLREDUCE || node == root;
                            if (has) {
                                for (int i = 0; i < total * t.size; i++) {
                                    if (a.get(i) != b.get(i)) {
                                        throw new AssertionError(c + " " + t + " " + op + " node " + node + ": byte " + i
                                                + " of " + total * t.size + " differs between blocking and posted parts");
                                    }
                                }
                            }
                        }
                    }
                }
                // exact inputs: the result is right, not only the same (a blocking call in between drains nothing)
                for (DataType t : DataType.values()) {
                    int count = 3 * FRAG / t.size + 7;
                    ByteBuffer x = HostStepTest.buf(2 * count * t.size);
                    Inputs.fill(x, 0, t, Op.SUM, 77, node, 2 * count);
                    long desc = Desc.make(Collective.ALLREDUCE, t, Op.SUM, 0, 2 * count);
                    CallStatus st = new CallStatus();
                    step.allreduce(x, 0, count, t, Op.SUM, desc, st, false);
                    int h = step.post(Collective.ALLREDUCE, x, count * t.size, count, t, Op.SUM, 0, desc, st);
                    step.await(h);
                    assertNull(Inputs.check(x, 0, t, Op.SUM, 77, n, 2 * count), t + " node " + node);
                }
                assertEquals(1, mesh.end(node).inUse(), "no request left behind (the one abort receive stays)");
            }
        });
    }

    static void part(HostStep s, Collective c, ByteBuffer b, int off, int count, DataType t, Op op, int root, long desc,
            CallStatus st, boolean more) {
        if (c == Collective.REDUCE) {
            s.reduce(b, off, count, t, op, root, desc, st, more);
        } else {
            s.allreduce(b, off, count, t, op, desc, st, more);
        }
    }

    /** Parts beyond the step's limit are refused before anything is posted; 0 parts in flight runs each part at its post. */
    @Test
    void theLimitIsCheckedAndZeroRunsAtOnce() {
        final int n = 2;
        MemTransport.Mesh mesh = MemTransport.Mesh.of(n);
        MemTransport.Mesh mesh0 = MemTransport.Mesh.of(n);
        Team.runOk(n, 60_000, node -> {
            long desc = Desc.make(Collective.ALLREDUCE, DataType.LONG, Op.SUM, 0, 3000);
            try (HostStep step = new HostStep(mesh.end(node), Team.table(null, n), Team.waiter(TIMEOUT, null, node), "t", FRAG, 2)) {
                ByteBuffer b = HostStepTest.buf(3000 * 8);
                Inputs.fill(b, 0, DataType.LONG, Op.SUM, 5, node, 3000);
                CallStatus st = new CallStatus();
                step.allreduce(b, 0, 1000, DataType.LONG, Op.SUM, desc, st, false);
                int h1 = step.post(Collective.ALLREDUCE, b, 8000, 1000, DataType.LONG, Op.SUM, 0, desc, st);
                int h2 = step.post(Collective.ALLREDUCE, b, 16000, 1000, DataType.LONG, Op.SUM, 0, desc, st);
                long sent = mesh.end(node).sends;
                IllegalStateException e = assertThrows(IllegalStateException.class,
                        () -> step.post(Collective.ALLREDUCE, b, 16000, 1000, DataType.LONG, Op.SUM, 0, desc, st));
                assertTrue(e.getMessage().contains("2 parts already in flight"), e.getMessage());
                assertEquals(sent, mesh.end(node).sends, "nothing posted by the refused part");
                step.await(h1);
                step.await(h2);
                assertNull(Inputs.check(b, 0, DataType.LONG, Op.SUM, 5, n, 3000));
            }
            try (HostStep step = new HostStep(mesh0.end(node), Team.table(null, n), Team.waiter(TIMEOUT, null, node), "t", FRAG, 0)) {
                assertEquals(0, step.partsInFlight());
                ByteBuffer b = HostStepTest.buf(3000 * 8);
                Inputs.fill(b, 0, DataType.LONG, Op.SUM, 6, node, 3000);
                CallStatus st = new CallStatus();
                step.allreduce(b, 0, 1000, DataType.LONG, Op.SUM, desc, st, false);
                step.post(Collective.ALLREDUCE, b, 8000, 2000, DataType.LONG, Op.SUM, 0, desc, st);
                assertNull(Inputs.check(b, 0, DataType.LONG, Op.SUM, 6, n, 3000), "complete at its post");
            }
        });
    }

    /**
     * A leader dies with parts in flight (before posting its part, or after): every other leader's
     * await fails within seconds (the timeout is 20 s) with a PeerFailureException naming it, and
     * the step refuses later calls.
     */
    @Test
    void aDeadLeaderWithPartsInFlightIsNamedOnEveryNode() {
        for (int when = 0; when < 2; when++) {
            final int n = 5;
            final int dead = 3;
            final int deadWhen = when;
            MemTransport.Mesh mesh = MemTransport.Mesh.of(n);
            HostStep[] steps = new HostStep[n];
            CountDownLatch firstDone = new CountDownLatch(n);
            long[] took = new long[n];
            String[] after = new String[n];
            Throwable[] errors = Team.run(n, 30_000, node -> {
                try (HostStep step = new HostStep(mesh.end(node), Team.table(null, n), Team.waiter(TIMEOUT, steps, node), "t", FRAG, 4)) {
                    steps[node] = step;
                    long desc = Desc.make(Collective.ALLREDUCE, DataType.DOUBLE, Op.SUM, 0, 40_000);
                    ByteBuffer b = HostStepTest.buf(40_000 * 8);
                    CallStatus st = new CallStatus();
                    step.allreduce(b, 0, 100, DataType.DOUBLE, Op.SUM, desc, st, false);
                    int h = step.post(Collective.ALLREDUCE, b, 800, 10_000, DataType.DOUBLE, Op.SUM, 0, desc, st);
                    firstDone.countDown();
                    firstDone.await();
                    if (node == dead) {
                        if (deadWhen == 1) {
                            step.post(Collective.ALLREDUCE, b, 80_800, 10_000, DataType.DOUBLE, Op.SUM, 0, desc, st);
                        }
                        mesh.kill(dead);
                        return;
                    }
                    long t0 = System.nanoTime();
                    try {
                        int h2 = step.post(Collective.ALLREDUCE, b, 80_800, 10_000, DataType.DOUBLE, Op.SUM, 0, desc, st);
                        step.await(h);
                        step.await(h2);
                    } finally {
                        took[node] = System.nanoTime() - t0;
                        Sharp4jException e = assertThrows(Sharp4jException.class,
                                () -> step.allreduce(b, 0, 1, DataType.DOUBLE, Op.SUM, desc, new CallStatus()));
                        after[node] = e.getMessage();
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
                assertTrue(after[node].contains("unusable"), after[node]);
            }
        }
    }

    /** Communicator.abort from another thread while the leader awaits a part: the await ends, the others hear of it. */
    @Test
    void anAbortFromAnotherThreadEndsAnAwaitAndReachesTheOthers() {
        final int n = 3;
        final int giver = 1;
        MemTransport.Mesh mesh = MemTransport.Mesh.of(n);
        HostStep[] steps = new HostStep[n];
        Throwable[] errors = Team.run(n, 30_000, node -> {
            try (HostStep step = new HostStep(mesh.end(node), Team.table(null, n), Team.waiter(TIMEOUT, steps, node), "t", FRAG, 2)) {
                steps[node] = step;
                long desc = Desc.make(Collective.ALLREDUCE, DataType.DOUBLE, Op.SUM, 0, 20_000);
                ByteBuffer b = HostStepTest.buf(20_000 * 8);
                CallStatus st = new CallStatus();
                step.allreduce(b, 0, 100, DataType.DOUBLE, Op.SUM, desc, st, false);
                if (node == 0) {
                    return; // never posts its part: the others' parts cannot complete
                }
                int h = step.post(Collective.ALLREDUCE, b, 800, 10_000, DataType.DOUBLE, Op.SUM, 0, desc, st);
                if (node == giver) {
                    Thread t = new Thread(() -> {
                        try {
                            Thread.sleep(200);
                        } catch (InterruptedException e) {
                            return;
                        }
                        step.abort(mesh.globalRanks[giver], mesh.globalRanks[0]);
                    });
                    t.start();
                }
                step.await(h);
            }
        });
        assertNull(errors[0]);
        assertTrue(errors[giver] instanceof Sharp4jException && errors[giver].getMessage().contains("aborted"), String.valueOf(errors[giver]));
        assertTrue(errors[2] instanceof PeerFailureException, String.valueOf(errors[2]));
        assertTrue(Arrays.stream(((PeerFailureException) errors[2]).ranks()).anyMatch(r -> r == mesh.globalRanks[0]),
                errors[2].getMessage());
    }
}
