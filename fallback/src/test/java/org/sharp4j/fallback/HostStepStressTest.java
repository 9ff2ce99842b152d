package org.sharp4j.fallback;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.coll.CallStatus;
import org.sharp4j.coll.Desc;
import org.sharp4j.tuning.Collective;
import org.sharp4j.tuning.CompiledTable;

/**
 * Thousands of back-to-back random calls (kind, type, op, size, root: the same sequence on every
 * node, like hierarchy's StressMain) on the built-in table, with completions surfacing in
 * shuffled orders ({@link MemTransport#jitter}) and nodes arriving at random times: every result
 * checked, no hang, no request left behind.
 */
class HostStepStressTest {

    @Test
    void randomCallsWithShuffledCompletions() {
        stress(3, 4000, 128 * 1024, 11);
        stress(6, 1500, 1024, 12);
        stress(8, 1000, 128 * 1024, 13);
    }

    static void stress(int n, int calls, int frag, long seed) {
        CompiledTable table = Team.table(null, n);
        MemTransport.Mesh mesh = MemTransport.Mesh.of(n);
        Team.runOk(n, 180_000, node -> {
            MemTransport t = mesh.end(node);
            t.jitter(seed * 31 + node, 6);
            try (HostStep step = new HostStep(t, table, Team.waiter(60_000_000_000L, null, node), "stress", frag)) {
                SplittableRandom rnd = new SplittableRandom(seed);
                SplittableRandom mine = new SplittableRandom(seed + 1000 + node);
                ByteBuffer b = ByteBuffer.allocateDirect(8 * 40_000).order(ByteOrder.nativeOrder());
                CallStatus st = new CallStatus();
                for (int it = 0; it < calls; it++) {
                    int kind = rnd.nextInt(10);
                    int pick = rnd.nextInt(100);
                    int count = pick < 85 ? rnd.nextInt(64) : pick < 98 ? rnd.nextInt(64, 8192) : rnd.nextInt(8192, 40_000);
                    DataType ty = DataType.values()[rnd.nextInt(4)];
                    Op[] ops = ty.integral ? Op.values() : new Op[] {Op.SUM, Op.PROD, Op.MIN, Op.MAX};
                    Op op = ops[rnd.nextInt(ops.length)];
                    int root = rnd.nextInt(n);
                    if (mine.nextInt(50) == 0) {
                        Thread.sleep(mine.nextInt(3)); // someone is late
                    }
                    st.reset();
                    String at = "n=" + n + " node " + node + " call " + it;
                    if (kind == 9) {
                        step.barrier(Desc.make(Collective.BARRIER, DataType.INT, Op.SUM, 0, 0), st);
                        assertTrue(st.ok(), at);
                        continue;
                    }
                    Inputs.fill(b, 0, ty, op, it, node, count);
                    if (kind >= 6) {
                        step.reduce(b, 0, count, ty, op, root, Desc.make(Collective.REDUCE, ty, op, root, count), st);
                    } else {
                        step.allreduce(b, 0, count, ty, op, Desc.make(Collective.ALLREDUCE, ty, op, 0, count), st);
                    }
                    assertTrue(st.ok(), at);
                    if (kind < 6 || node == root) {
                        assertNull(Inputs.check(b, 0, ty, op, it, n, count), at + " " + ty + " " + op + " count " + count
                                + (kind >= 6 ? " reduce to " + root : " allreduce"));
                    }
                }
                assertEquals(n > 1 ? 1 : 0, t.inUse(), "only the one abort receive stays posted");
            }
        });
    }
}
