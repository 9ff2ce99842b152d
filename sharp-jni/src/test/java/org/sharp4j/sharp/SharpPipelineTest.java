package org.sharp4j.sharp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.sharp4j.sharp.SharpTestSupport.config;
import static org.sharp4j.sharp.SharpTestSupport.plus;
import static org.sharp4j.sharp.SharpTestSupport.sharpOn;
import static org.sharp4j.sharp.SharpTestSupport.with;

import java.util.Map;
import org.junit.jupiter.api.Test;
import org.sharp4j.Op;
import org.sharp4j.ThreadRanks;

/**
 * Issue 15: the SHARP pipeline depth (operations of one long call in flight) is a parameter of the
 * table's sharp rule, {@code sharp:pipeline=D}, looked up per call, and {@code sharp4j.sharp.pipeline}
 * overrides it. Seen through the most operations in flight at once on the emulator, with its payload
 * cut to 4 KiB so that a 64 KiB phase-3 call is a descriptor check and 16 chunks.
 */
class SharpPipelineTest {
    static final int NODES = 4;

    /** The most operations in flight over a few allreduces of {@code count} doubles, all on SHARP. */
    private static long mostInFlight(Map<String, String> props, String tune, int... counts) {
        SharpStep.MOST_IN_FLIGHT.set(0);
        long sharp0 = SharpStep.SHARP_CALLS.get();
        long host0 = SharpStep.HOST_CALLS.get();
        with(props, SharpLongMessageTest.smallPayload(), () -> ThreadRanks.run(NODES, config(NODES, 1).withTuneOverride(tune),
                comm -> {
                    for (int count : counts) {
                        double[] in = new double[count];
                        double[] out = new double[count];
                        for (int i = 0; i < 3; i++) {
                            in[0] = comm.rank() + i;
                            comm.allreduce(in, 0, out, 0, count, Op.SUM);
                            assertEquals(NODES * (NODES - 1) / 2.0 + NODES * i, out[0], 0.0);
                        }
                    }
                }));
        assertEquals(3L * counts.length * NODES, SharpStep.SHARP_CALLS.get() - sharp0, "every call on SHARP");
        assertEquals(0, SharpStep.HOST_CALLS.get() - host0, "none on the host path");
        return SharpStep.MOST_IN_FLIGHT.get();
    }

    private static Map<String, String> sharp() {
        return plus(sharpOn(), SharpSettings.MAX_BYTES, "1M");
    }

    @Test
    void theTablesDepthIsUsed() {
        assertEquals(2, mostInFlight(sharp(), "allreduce:0-1M:sharp:pipeline=2", 8192));
        assertEquals(8, mostInFlight(sharp(), "allreduce:0-1M:sharp:pipeline=8", 8192));
    }

    @Test
    void withoutPipelineInTheTableTheDepthIsFour() {
        assertEquals(4, mostInFlight(sharp(), "allreduce:0-1M:sharp", 8192));
    }

    @Test
    void theDepthFollowsTheSizeOfTheCall() {
        String tune = "allreduce:0-16k:sharp:pipeline=1#allreduce:16k-1M:sharp:pipeline=3";
        assertEquals(1, mostInFlight(sharp(), tune, 1500), "12000 B: check + 3 chunks, one at a time");
        assertEquals(3, mostInFlight(sharp(), tune, 1500, 8192), "64 KiB: the 16k-1M rule");
    }

    @Test
    void thePropertyOverridesTheTable() {
        Map<String, String> p = plus(sharp(), SharpSettings.PIPELINE, "8");
        assertEquals(8, mostInFlight(p, "allreduce:0-1M:sharp:pipeline=2", 8192));
        assertTrue(SharpSettings.fromProperties(props(SharpSettings.PIPELINE, "8")).toString().contains("sharp4j.sharp.pipeline=8"));
        assertTrue(!SharpSettings.fromProperties(props()).toString().contains("pipeline"), "unset: the table's");
    }

    private static java.util.Properties props(String... kv) {
        java.util.Properties p = new java.util.Properties();
        for (int i = 0; i < kv.length; i += 2) {
            p.setProperty(kv[i], kv[i + 1]);
        }
        return p;
    }
}
