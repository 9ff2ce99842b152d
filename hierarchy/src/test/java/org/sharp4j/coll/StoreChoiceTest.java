package org.sharp4j.coll;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** {@link StoreChoice}: fixed modes, and auto's choice from fed-in call times (no clock, no ranks). */
class StoreChoiceTest {
    static final long MIB = 1 << 20;

    /** Runs {@code calls} calls of {@code bytes} whose time is {@code streamNs} or {@code ordinaryNs}; returns how many streamed. */
    static int run(StoreChoice c, long bytes, int calls, long streamNs, long ordinaryNs) {
        int streamed = 0;
        for (int i = 0; i < calls; i++) {
            boolean s = c.streaming(bytes);
            streamed += s ? 1 : 0;
            c.record(bytes, s, s ? streamNs : ordinaryNs);
        }
        return streamed;
    }

    @Test
    void fixedModesNeverChangeAndNothingStreamsBelowTheThreshold() {
        StoreChoice s = new StoreChoice(StoreChoice.STREAMING);
        StoreChoice o = new StoreChoice(StoreChoice.ORDINARY);
        StoreChoice a = new StoreChoice(StoreChoice.AUTO);
        assertEquals(100, run(s, MIB, 100, 10_000_000, 1));
        assertEquals(0, run(o, MIB, 100, 1, 10_000_000));
        assertFalse(s.streaming(Payload.STREAM_MIN_BYTES - 1));
        assertTrue(s.streaming(Payload.STREAM_MIN_BYTES));
        assertEquals(0, run(a, Payload.STREAM_MIN_BYTES - 1, 100, 1, 1000));
        assertThrows(IllegalArgumentException.class, () -> new StoreChoice("fast"));
    }

    @Test
    void autoMeasuresBothThenTakesTheFasterAndExploresOneCallInExplore() {
        StoreChoice c = new StoreChoice(StoreChoice.AUTO);
        for (int i = 0; i < 2; i++) {
            assertTrue(c.streaming(MIB), "the first two calls of a class stream");
            c.record(MIB, true, 100_000);
        }
        for (int i = 0; i < 2; i++) {
            assertFalse(c.streaming(MIB), "the next two measure ordinary stores");
            c.record(MIB, false, 50_000);
        }
        int calls = 64 * StoreChoice.EXPLORE;
        int streamed = run(c, MIB, calls, 100_000, 50_000);
        assertEquals(calls / StoreChoice.EXPLORE, streamed, "only the explorations stream while ordinary stores are faster");
        // The other way round in another size class, independently.
        StoreChoice d = new StoreChoice(StoreChoice.AUTO);
        int dStreamed = run(d, 4 * MIB, calls + 2, 100_000, 300_000);
        assertEquals(calls + 2 - 2 - calls / StoreChoice.EXPLORE, dStreamed, "all but the two first ordinary calls and the explorations");
        assertEquals(2 + 64, run(d, 64 * 1024, 2 + calls, 9_000, 1_000), "a smaller class learns on its own");
    }

    @Test
    void autoFollowsAChangeOfPlacementWithinAFewExplorations() {
        StoreChoice c = new StoreChoice(StoreChoice.AUTO);
        run(c, 8 * MIB, 200, 1_000_000, 2_000_000); // separate cores: streaming wins
        // The vCPUs move to one core: now ordinary stores take half the time streaming does.
        int before = 0;
        int after = 0;
        for (int i = 0; i < 4 * StoreChoice.EXPLORE; i++) {
            boolean s = c.streaming(8 * MIB);
            c.record(8 * MIB, s, s ? 2_000_000 : 1_000_000);
            if (i < 3 * StoreChoice.EXPLORE) {
                before += s ? 1 : 0;
            } else {
                after += s ? 1 : 0;
            }
        }
        assertTrue(before <= 2 * StoreChoice.EXPLORE + 1, "switched after two explorations: " + before);
        assertEquals(1, after, "then only the explorations stream");
    }

    @Test
    void oneDescheduledCallDoesNotFlipTheChoice() {
        StoreChoice c = new StoreChoice(StoreChoice.AUTO);
        run(c, 2 * MIB, 100, 100_000, 200_000);
        // a call of the faster kind that took 1000x (a rank descheduled for 100 ms)
        c.record(2 * MIB, true, 100_000_000);
        assertEquals(2 * StoreChoice.EXPLORE - 2, run(c, 2 * MIB, 2 * StoreChoice.EXPLORE, 100_000, 200_000),
                "the median of three ignored it; only the two explorations took ordinary stores");
    }
}
