package org.sharp4j.tuner.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.sharp4j.tuning.Collective;
import org.sharp4j.tuner.Measurement;

/** The fit recovers the parameters that made the measurements, including the intra-node phases it must subtract. */
class TuneFitTest {
    static Measurement m(int nodes, int ppn, Collective c, String layer, String cand, long bytes, double us) {
        return new Measurement(nodes, ppn, c, layer, cand, bytes, us, 0.01, 3, true);
    }

    @Test
    void recoversIntraHostAndSharpParameters() {
        ModelParams truth = ModelParams.defaults();
        truth.intraA = 0.5;
        truth.intraB = 0.0002;
        truth.hostL = 3.0;
        truth.hostGap = 0.8;
        truth.hostG = 0.001;
        truth.sharpBase = 2.5;
        truth.sharpLevel = 1.5;
        truth.sharpG = 0.0007;
        PerfModel t = new PerfModel(truth);
        List<Measurement> ms = new ArrayList<>();
        for (long b : new long[] {8, 1024, 65536}) {
            // one node x 4 ranks: the binary tree (model: (a + b m) (ceil(log2 4) + 1))
            ms.add(m(1, 4, Collective.ALLREDUCE, "intra", "tree:radix=2", b, (truth.intraA + truth.intraB * b) * 3));
        }
        for (int n : new int[] {2, 64}) { // 64 nodes: two SHARP levels with radix 40
            for (long b : new long[] {8, 1024, 65536}) {
                double intra = t.intraReduce(4, b) + t.intraBcast(4, b);
                for (int k : new int[] {2, 3}) {
                    ms.add(m(n, 4, Collective.ALLREDUCE, "inter", "knomial:radix=" + k, b, intra + t.knomial(n, b, k)));
                }
                if (b <= 2048) {
                    ms.add(m(n, 4, Collective.ALLREDUCE, "inter", "sharp", b, intra + t.sharp(n, b)));
                }
            }
            ms.add(m(n, 4, Collective.BARRIER, "inter", "knomial:radix=2", 0,
                    t.intraReduce(4, 0) + t.intraBcast(4, 0) + t.barrier(n, 2)));
        }
        ModelParams p = ModelParams.defaults();
        List<String> said = TuneFit.fit(p, ms, "csv");
        assertEquals(truth.intraA, p.intraA, 1e-9, said.toString());
        assertEquals(truth.intraB, p.intraB, 1e-12, said.toString());
        assertEquals(truth.hostL, p.hostL, 1e-6, said.toString());
        assertEquals(truth.hostGap, p.hostGap, 1e-6, said.toString());
        assertEquals(truth.hostG, p.hostG, 1e-9, said.toString());
        assertEquals(truth.sharpBase, p.sharpBase, 1e-6, said.toString());
        assertEquals(truth.sharpLevel, p.sharpLevel, 1e-6, said.toString());
        assertEquals(truth.sharpG, p.sharpG, 1e-9, said.toString());
        assertEquals("fitted from csv", p.origin("sharp.level"));
        assertEquals("default", p.origin("host.o"), "overhead and latency cannot be told apart: o is kept");
    }

    @Test
    void whatWasNotMeasuredKeepsItsValueAndSaysSo() {
        ModelParams p = ModelParams.defaults();
        List<String> said = TuneFit.fit(p, List.of(m(2, 1, Collective.ALLREDUCE, "inter", "knomial:radix=2", 8, 10)), "csv");
        assertEquals(10 - 2 * p.hostO - 8 * (p.hostG + p.hostGamma), p.hostL, 1e-9, said.toString()); // one point: L + 2o only
        assertEquals("default", p.origin("host.g"));
        assertEquals("default", p.origin("host.G"));
        assertEquals("default", p.origin("sharp.base"));
        assertTrue(said.stream().anyMatch(s -> s.contains("g kept (one radix)") && s.contains("G kept (one size)")), said.toString());
        assertTrue(said.stream().anyMatch(s -> s.startsWith("sharp.base, sharp.level, sharp.G kept")), said.toString());
        assertTrue(said.stream().anyMatch(s -> s.startsWith("intra.a, intra.b kept")), said.toString());
    }
}
