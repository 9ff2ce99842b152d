package org.sharp4j.fallback;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.coll.CallStatus;
import org.sharp4j.coll.Desc;
import org.sharp4j.tuning.Collective;

/**
 * The host path's side of an offload's recovery: one leader starts a recovery collective for an
 * operation while the others wait inside a later host call; they find it through the probe in
 * their waits, run it nested, and then finish their call. The recovery's result (BOR of every
 * leader's words) and the later call's result are both exact.
 */
class RecoveryCollectiveTest {
    static final long TIMEOUT = 60_000_000_000L;

    @ParameterizedTest(name = "{0} leaders")
    @ValueSource(ints = {2, 3, 4, 7, 8})
    void aLeaderInRecoveryIsServedFromInsideTheOthersWaits(int n) {
        MemTransport.Mesh mesh = MemTransport.Mesh.of(n);
        HostStep[] steps = new HostStep[n];
        int starter = n / 2;
        long opSeq = 0x1234567L; // beyond 24 bits: the tag carries its low 24
        long desc = Desc.make(Collective.ALLREDUCE, DataType.LONG, Op.BOR, 0, 3);
        AtomicInteger served = new AtomicInteger();
        Team.runOk(n, 60_000, node -> {
            try (HostStep step = new HostStep(mesh.end(node), Team.table(null, n), Team.waiter(TIMEOUT, steps, node), "t")) {
                steps[node] = step;
                ByteBuffer words = ByteBuffer.allocateDirect(24).order(ByteOrder.nativeOrder());
                words.putLong(0, 1L << node).putLong(8, node == starter ? 0 : 0xF0L).putLong(16, node);
                CallStatus rst = new CallStatus();
                boolean[] joined = {node == starter};
                step.recoveryListener(seq24 -> {
                    assertEquals((int) (opSeq & 0xFFFFFF), seq24);
                    if (!joined[0]) {
                        joined[0] = true;
                        served.incrementAndGet();
                        step.recoveryCollective(opSeq, 0, Collective.ALLREDUCE, words, 0, 3, DataType.LONG, Op.BOR, 0, desc, rst);
                    }
                });
                if (node == starter) {
                    step.recoveryCollective(opSeq, 0, Collective.ALLREDUCE, words, 0, 3, DataType.LONG, Op.BOR, 0, desc, rst);
                }
                // a later call, which the others entered before the starter joined it
                ByteBuffer b = ByteBuffer.allocateDirect(8).order(ByteOrder.nativeOrder());
                b.putLong(0, node + 1);
                CallStatus st = new CallStatus();
                long sent = step.messagesSent();
                step.allreduce(b, 0, 1, DataType.LONG, Op.SUM, Desc.make(Collective.ALLREDUCE, DataType.LONG, Op.SUM, 0, 1), st);
                assertTrue(st.ok() && rst.ok());
                assertEquals((long) n * (n + 1) / 2, b.getLong(0));
                assertEquals((1L << n) - 1, words.getLong(0), "every leader's bit");
                assertEquals(n > 1 ? 0xF0L : 0, words.getLong(8));
                assertTrue(step.messagesSent() > sent);
            }
        });
        assertEquals(n - 1, served.get(), "every other leader served the recovery from inside its wait");
    }
}
