package org.sharp4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * Every bad input throws an exception naming the problem, on the calling rank only, before any
 * shared state is touched: the collectives that follow on every rank still match up and are right.
 */
class ArgumentValidationTest {
    static final Config CFG = Config.defaults().withSimulatedTopology(2, 1).withTimeoutNanos(20_000_000_000L);

    static void expect(Class<? extends Throwable> type, String fragment, Executable call) {
        Throwable t = assertThrows(type, call);
        assertTrue(t.getMessage().contains(fragment), "message '" + t.getMessage() + "' should mention '" + fragment + "'");
    }

    @Test
    void badInputsThrowAndLeaveTheCommunicatorInStep() {
        ThreadRanks.run(3, CFG, comm -> {
            double[] d = new double[4];
            double[] out = new double[4];
            ByteBuffer direct = ByteBuffer.allocateDirect(32).order(java.nio.ByteOrder.nativeOrder());
            int root = 1;
            // Only rank 1 makes the bad calls; the others go straight to the good collectives below.
            if (comm.rank() == 1) {
                expect(NullPointerException.class, "send buffer is null", () -> comm.allreduce((double[]) null, 0, out, 0, 4, Op.SUM));
                expect(NullPointerException.class, "recv buffer is null", () -> comm.allreduce(d, 0, (double[]) null, 0, 4, Op.SUM));
                expect(NullPointerException.class, "recv buffer is null on the root", () -> comm.reduce(d, 0, null, 0, 4, Op.SUM, 1));
                expect(NullPointerException.class, "op is null", () -> comm.allreduce(d, 0, out, 0, 4, null));
                expect(IllegalArgumentException.class, "count must be >= 0", () -> comm.allreduce(d, 0, out, 0, -1, Op.SUM));
                expect(IllegalArgumentException.class, "send buffer too short", () -> comm.allreduce(d, 1, out, 0, 4, Op.SUM));
                expect(IllegalArgumentException.class, "recv buffer too short", () -> comm.allreduce(d, 0, out, 2, 4, Op.SUM));
                expect(IllegalArgumentException.class, "negative offset", () -> comm.allreduce(d, -1, out, 0, 1, Op.SUM));
                expect(IllegalArgumentException.class, "op BAND is not defined for DOUBLE", () -> comm.allreduce(d, 0, out, 0, 4, Op.BAND));
                expect(IllegalArgumentException.class, "op LOR is not defined for FLOAT",
                        () -> comm.allreduce(new float[1], 0, new float[1], 0, 1, Op.LOR));
                expect(IllegalArgumentException.class, "root 3 out of range [0, 3)", () -> comm.reduce(d, 0, out, 0, 4, Op.SUM, 3));
                expect(IllegalArgumentException.class, "root -1 out of range", () -> comm.reduce(d, 0, out, 0, 4, Op.SUM, -1));
                expect(IllegalArgumentException.class, "must be a direct ByteBuffer",
                        () -> comm.allreduce(ByteBuffer.allocate(32), 0, direct, 0, 4, DataType.DOUBLE, Op.SUM));
                expect(IllegalArgumentException.class, "recv buffer is read-only",
                        () -> comm.allreduce(direct, 0, direct.asReadOnlyBuffer(), 0, 4, DataType.DOUBLE, Op.SUM));
                expect(IllegalArgumentException.class, "too short: elements [1, 5) of DOUBLE need 40 bytes, limit is 32",
                        () -> comm.allreduce(direct, 1, ByteBuffer.allocateDirect(64), 0, 4, DataType.DOUBLE, Op.SUM));
                // Java's default order for a new buffer is BIG_ENDIAN: reducing it as native memory gives garbage.
                expect(IllegalArgumentException.class, "send buffer is in BIG_ENDIAN byte order",
                        () -> comm.allreduce(ByteBuffer.allocateDirect(32), 0, direct, 0, 4, DataType.DOUBLE, Op.SUM));
                expect(NullPointerException.class, "data type is null", () -> comm.allreduce(direct, 0, 4, null, Op.SUM));
                expect(IllegalArgumentException.class, "shared buffer too short",
                        () -> comm.allreduce(comm.sharedBuffer(), comm.sharedBuffer().capacity() / 8 + 1, DataType.DOUBLE, Op.SUM));
                expect(IllegalArgumentException.class, "exceeds 2 GiB",
                        () -> comm.allreduce(direct, 0, Integer.MAX_VALUE, DataType.LONG, Op.SUM));
            }
            // Non-root ranks of a reduce may pass a null recv buffer.
            comm.reduce(new double[] {comm.rank()}, 0, comm.rank() == root ? out : null, 0, 1, Op.SUM, root);
            if (comm.rank() == root) {
                assertArrayEquals(new double[] {3}, new double[] {out[0]});
            }
            double[] r = new double[1];
            comm.allreduce(new double[] {1}, 0, r, 0, 1, Op.SUM);
            assertArrayEquals(new double[] {3}, r);
            comm.barrier();
        });
    }

    @Test
    void closedCommunicatorRefusesCalls() {
        ThreadRanks.run(1, Config.defaults(), comm -> {
            comm.close();
            expect(IllegalStateException.class, "closed", comm::barrier);
        });
    }
}
