package org.sharp4j.coll;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import org.sharp4j.Config;
import org.sharp4j.ThreadRanks;
import org.sharp4j.launch.Info;

/**
 * {@code sharp4j.slot.bytes=auto} ({@link Engine#autoSlotBytes}): larger chunks only where the
 * pipelined and direct algorithms run (one socket of one node), within the segment budget and the
 * file system, never above the shared buffer; a fixed slot is kept; every rank of a communicator
 * runs on the pick, and reports it.
 */
class AutoSlotTest {
    private static final long GIB = 1L << 30;
    private static final int MIB = 1 << 20;

    @Test
    void oneSocketOfOneNodeGetsTheLargestSlotTheBudgetHolds() {
        assertEquals(512 * 1024, Engine.autoSlotBytes(1, 1, 2, MIB, 24 * GIB));
        assertEquals(512 * 1024, Engine.autoSlotBytes(1, 1, 8, MIB, 24 * GIB)); // 8 MiB shared + 4 x 9 x 512 KiB: 26 MiB
        assertEquals(256 * 1024, Engine.autoSlotBytes(1, 1, 12, MIB, 24 * GIB)); // 512 KiB would be 38 MiB
        assertEquals(Config.DEFAULT_SLOT_BYTES, Engine.autoSlotBytes(1, 1, 64, MIB, 24 * GIB)); // the shared buffers alone exceed it
        // a container's 64 MiB /dev/shm: a quarter of it
        assertEquals(512 * 1024, Engine.autoSlotBytes(1, 1, 2, MIB, 64L * MIB));
        assertEquals(128 * 1024, Engine.autoSlotBytes(1, 1, 8, MIB, 64L * MIB));
        assertEquals(Config.DEFAULT_SLOT_BYTES, Engine.autoSlotBytes(1, 1, 2, MIB, 0)); // unreadable file system
    }

    @Test
    void severalNodesOrSocketsOrASmallSharedBufferKeepTheDefault() {
        assertEquals(Config.DEFAULT_SLOT_BYTES, Engine.autoSlotBytes(2, 1, 2, MIB, 24 * GIB)); // phase 3's part size
        assertEquals(Config.DEFAULT_SLOT_BYTES, Engine.autoSlotBytes(1, 2, 2, MIB, 24 * GIB)); // hierarchical tiled
        assertEquals(256 * 1024, Engine.autoSlotBytes(1, 1, 2, 256 * 1024, 24 * GIB)); // no larger than the shared buffer
        assertEquals(Config.DEFAULT_SLOT_BYTES, Engine.autoSlotBytes(1, 1, 2, 0, 24 * GIB));
    }

    @Test
    void communicatorsRunOnThePickAndReportIt() {
        Config base = Config.defaults().withTimeoutNanos(60_000_000_000L).withWarmupRounds(0);
        long fs = 0;
        try {
            fs = java.nio.file.Files.getFileStore(base.shmDir()).getTotalSpace();
        } catch (java.io.IOException e) {
            throw new AssertionError(e);
        }
        int expect = Engine.autoSlotBytes(1, 1, 2, base.sharedBytes(), fs);
        assertEquals(slotOf(2, base), expect);
        assertEquals(Config.DEFAULT_SLOT_BYTES, slotOf(2, base.withSimulatedTopology(2, 1)));
        Properties p = new Properties();
        p.setProperty("sharp4j.slot.bytes", "128k");
        p.setProperty("sharp4j.warmup", "0");
        Config fixed = Config.fromProperties(p);
        assertTrue(!fixed.slotAuto());
        assertEquals(128 * 1024, slotOf(2, fixed));
        p.setProperty("sharp4j.slot.bytes", "auto");
        assertTrue(Config.fromProperties(p).slotAuto());
        assertEquals(expect, slotOf(2, Config.fromProperties(p)));
    }

    /** The slot every rank's engine runs on (all equal), checked against what Info prints. */
    private static int slotOf(int ranks, Config cfg) {
        Map<Integer, Integer> got = new ConcurrentHashMap<>();
        ThreadRanks.run(ranks, cfg, comm -> {
            int slot = comm.engine().config().slotBytes();
            got.put(comm.rank(), slot);
            String info = Info.report(comm);
            assertTrue(info.contains("slot (chunk) " + slot + " B"), info);
            // a call of several chunks at the pick
            double[] in = new double[2 * slot / 8 + 3];
            double[] out = new double[in.length];
            java.util.Arrays.fill(in, comm.rank() + 1);
            comm.allreduce(in, out, org.sharp4j.Op.SUM);
            for (double d : out) {
                assertEquals(ranks * (ranks + 1) / 2.0, d);
            }
            java.nio.ByteBuffer bi = java.nio.ByteBuffer.allocateDirect(in.length * 8).order(java.nio.ByteOrder.nativeOrder());
            java.nio.ByteBuffer bo = java.nio.ByteBuffer.allocateDirect(in.length * 8).order(java.nio.ByteOrder.nativeOrder());
            bi.asDoubleBuffer().put(in);
            comm.reduce(bi, 0, bo, 0, in.length, org.sharp4j.DataType.DOUBLE, org.sharp4j.Op.SUM, ranks - 1);
            if (comm.rank() == ranks - 1) {
                for (int i = 0; i < in.length; i++) {
                    assertEquals(ranks * (ranks + 1) / 2.0, bo.getDouble(i * 8), "element " + i);
                }
            }
        });
        assertEquals(ranks, got.size());
        assertEquals(1, got.values().stream().distinct().count(), got.toString());
        return got.get(0);
    }
}
