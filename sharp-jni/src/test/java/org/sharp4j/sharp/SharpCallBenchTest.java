package org.sharp4j.sharp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The benchmark runs (few iterations: a smoke test, not a measurement). */
class SharpCallBenchTest {
    @Test
    void benchmarkReportsEverySize() throws Exception {
        List<String> lines = SharpCallBench.run(2_000, 1);
        assertEquals(2 + SharpCallBench.SIZES.length, lines.size(), String.join("\n", lines));
        for (int s = 0; s < SharpCallBench.SIZES.length; s++) {
            String[] w = lines.get(2 + s).trim().split("\\s+");
            assertEquals(Integer.toString(SharpCallBench.SIZES[s]), w[0]);
            assertTrue(Double.parseDouble(w[1]) > 0 && Double.parseDouble(w[2]) > 0, lines.get(2 + s));
        }
    }
}
