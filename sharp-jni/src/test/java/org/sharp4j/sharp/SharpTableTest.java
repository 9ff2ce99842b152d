package org.sharp4j.sharp;

import org.sharp4j.ThreadRanks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.sharp4j.sharp.SharpTestSupport.config;
import static org.sharp4j.sharp.SharpTestSupport.map;
import static org.sharp4j.sharp.SharpTestSupport.plus;
import static org.sharp4j.sharp.SharpTestSupport.sharpOn;
import static org.sharp4j.sharp.SharpTestSupport.with;

import java.nio.ByteBuffer;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.sharp4j.Config;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.bootstrap.SingletonBootstrap;
import org.sharp4j.spi.InterNodeContext;
import org.sharp4j.topology.RankInfo;
import org.sharp4j.topology.Topology;

/** In auto mode the tuning table decides where SHARP is used (size limit per collective, node threshold). */
class SharpTableTest {
    static final Map<String, String> AUTO = plus(sharpOn(), SharpSettings.MODE, "auto");

    static InterNodeContext context(Config cfg, int nodes) {
        RankInfo[] infos = new RankInfo[nodes];
        for (int i = 0; i < nodes; i++) {
            infos[i] = new RankInfo("h", 0, 0, 1, 1);
        }
        return new InterNodeContext(new SingletonBootstrap(), cfg, Topology.compute(infos, nodes, 0), null);
    }

    @Test
    void theBuiltInTableKeepsSharpForFourNodesAndSaysWhy() {
        with(AUTO, map(), () -> {
            String why = new SharpProvider().unavailableReason(context(config(2, 1), 2));
            assertTrue(why != null && why.contains("does not choose SHARP for 2 node(s)") && why.contains("sharp4j.tune"), why);
            assertNull(new SharpProvider().unavailableReason(context(config(4, 1), 4)));
        });
    }

    @Test
    void aTuneRuleChoosesSharpPerCollectiveAndSize() {
        Config cfg = config(2, 1).withTuneOverride("allreduce:0-64:sharp");
        long sharp0 = SharpStep.SHARP_CALLS.get();
        long host0 = SharpStep.HOST_CALLS.get();
        with(AUTO, map(), () -> ThreadRanks.run(2, cfg, comm -> {
            assertTrue(comm.interNode().startsWith("SHARP"), comm.interNode());
            ByteBuffer b = ByteBuffer.allocateDirect(1024).order(java.nio.ByteOrder.nativeOrder());
            b.putLong(0, comm.rank() + 1);
            comm.allreduce(b, 0, 8, DataType.LONG, Op.SUM);   // 64 B: past the rule (0-64 is 0..63 B) -> host
            comm.allreduce(b, 0, 1, DataType.LONG, Op.SUM);   // 8 B -> SHARP
            comm.barrier();                                   // no barrier rule at 2 nodes -> host
        }));
        // per node leader (2): one SHARP call, two host calls
        assertEquals(2, SharpStep.SHARP_CALLS.get() - sharp0, "SHARP calls");
        assertEquals(4, SharpStep.HOST_CALLS.get() - host0, "host calls");
    }

    /**
     * A long call reaches phase 3 a slot at a time; SHARP must take or leave the whole call by the
     * rule for the call's size, not each slot by the slot's size (with 4 KiB slots and SHARP up to
     * 16 KiB, a 64 KiB call's slots were each small enough for SHARP, against the table).
     */
    @Test
    void theRuleForTheWholeCallDecidesEveryPart() {
        Config cfg = config(2, 1).withSlotBytes(4096).withTuneOverride("allreduce:0-16k:sharp");
        long[] sharpCalls = new long[2];
        long[] hostCalls = new long[2];
        with(AUTO, map(), () -> ThreadRanks.run(2, cfg, comm -> {
            assertTrue(comm.interNode().startsWith("SHARP"), comm.interNode());
            ByteBuffer b = ByteBuffer.allocateDirect(64 * 1024).order(java.nio.ByteOrder.nativeOrder());
            for (int round = 0; round < 2; round++) {
                int count = round == 0 ? 8192 : 1024; // 64 KiB (16 slots, past the rule), then 8 KiB (2 slots, within it)
                for (int i = 0; i < count; i++) {
                    b.putLong(8 * i, (comm.rank() + 1) * 1000L + i);
                }
                comm.barrier();
                long s0 = SharpStep.SHARP_CALLS.get();
                long h0 = SharpStep.HOST_CALLS.get();
                comm.allreduce(b, 0, count, DataType.LONG, Op.SUM);
                comm.barrier();
                if (comm.rank() == 0) {
                    sharpCalls[round] = SharpStep.SHARP_CALLS.get() - s0;
                    hostCalls[round] = SharpStep.HOST_CALLS.get() - h0;
                }
                comm.barrier();
                for (int i = 0; i < count; i++) {
                    assertEquals(3000L + 2L * i, b.getLong(8 * i), "element " + i);
                }
            }
        }));
        // the barriers in between are host calls too (no barrier rule): only the data calls' SHARP counts are compared
        assertEquals(0, sharpCalls[0], "SHARP operations of the 64 KiB call (host: " + hostCalls[0] + ")");
        assertTrue(sharpCalls[1] >= 2, "the 8 KiB call's slots go to SHARP: " + sharpCalls[1]);
    }
}
