package org.sharp4j.tuner.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sharp4j.tuning.Algorithm;
import org.sharp4j.tuning.Collective;
import org.sharp4j.tuning.CompiledTable;
import org.sharp4j.tuning.Rule;
import org.sharp4j.tuning.RuleParser;
import org.sharp4j.tuning.TuningTable;

class PerfModelTest {
    private static final double EPS = 1e-9;
    private final PerfModel model = new PerfModel(ModelParams.defaults());

    @Test
    void ceilLog() {
        assertEquals(0, PerfModel.ceilLog(2, 1));
        assertEquals(1, PerfModel.ceilLog(2, 2));
        assertEquals(2, PerfModel.ceilLog(4, 5));
        assertEquals(2, PerfModel.ceilLog(4, 16));
        assertEquals(1, PerfModel.ceilLog(40, 40));
        assertEquals(2, PerfModel.ceilLog(40, 41));
        assertEquals(2, PerfModel.ceilLog(40, 1600));
        assertEquals(3, PerfModel.ceilLog(40, 7861));
        assertThrows(IllegalArgumentException.class, () -> PerfModel.ceilLog(1, 5));
    }

    @Test
    void handComputedSmallCases() {
        // round latency at radix 4: L + 2o + 2g = 1.2 + 0.7 + 0.7 = 2.6; per byte G + gamma = 0.00018
        assertEquals(2.6 + 3 * 2048 * 0.00018, model.knomial(4, 2048, 4), EPS); // 3.70592, paper 004: 3.66 us
        assertEquals(2 * 2.6, model.knomial(16, 0, 4), EPS);
        assertEquals(0, model.knomial(1, 1 << 20, 4), EPS);
        // SRA: 2 s (L + 2o + (k-2)g) + (1 - 1/n) m (2G + gamma) = 2*2*2.6 + 15/16 * 1024 * 0.00026
        assertEquals(10.4 + 960 * 0.00026, model.sra(16, 1024, 4), EPS);
        assertEquals(0, model.sra(1, 1024, 4), EPS);
        // barrier radix 8: round L + 2o + 6g = 4.0; 64 nodes: 2 rounds
        assertEquals(8.0, model.barrier(64, 8), EPS);
        // SHARP: base 2 + levels * 1 + m * 0.0004; 4 nodes: 1 level; 2048 nodes: 3 levels (40^2 = 1600)
        assertEquals(3.0064 + 0.31, model.sharp(4, 16), EPS); // + sharp4j's measured cost per call
        assertEquals(2 + 0.31 + 3 + 2048 * 0.0004, model.sharp(2048, 2048), EPS);
        assertEquals(Double.POSITIVE_INFINITY, model.sharp(4, 2049));
        assertEquals(0, model.sharp(1, 16), EPS);
        // intra: tree radix 2 over 16 ranks: (a + b m) * 4; tiled: a q + B q m; read-out a + b m
        assertEquals((0.2 + 0.01) * 4, model.intraTree(16, 100, 2), EPS);
        assertEquals(3 * (0.2 + 0.01) * 2, model.intraTree(16, 100, 4), EPS);
        assertEquals(0.2 * 16 + 0.0000125 * 16 * 100, model.intraTiled(16, 100), EPS);
        assertEquals(0.21, model.intraBcast(16, 100), EPS);
        assertEquals(0, model.intraTree(1, 100, 2) + model.intraTiled(1, 100) + model.intraBcast(1, 100), EPS);
        assertEquals(0.84 + 3.70592 + 0.21 - 3 * 100 * 0.00018 + 3 * 100 * 0.00018,
                model.allreduce(Algorithm.KNOMIAL, 4, 16, 100, 4) + (3.70592 - model.knomial(4, 100, 4)), EPS);
    }

    @Test
    void treeAndTiledCrossNearPaper001() {
        // at 16 ranks tree (a+bm)*4 = tiled 16a + 2bm at m = 6a/b = 12000 bytes
        assertTrue(model.intraTree(16, 8192, 2) < model.intraTiled(16, 8192));
        assertTrue(model.intraTree(16, 16384, 2) > model.intraTiled(16, 16384));
    }

    @Test
    void monotoneInNodesAndBytes() {
        long[] sizes = {0, 8, 16, 64, 1024, 2048, 4096, 65536, 1 << 20};
        for (int k : new int[] {2, 3, 4, 8}) {
            for (long m : sizes) {
                double pk = 0;
                double ps = 0;
                double pb = 0;
                double ph = 0;
                for (long n = 1; n <= 9000; n += n < 64 ? 1 : 37) {
                    double tk = model.knomial(n, m, k);
                    double ts = model.sra(n, m, k);
                    double tb = model.barrier(n, k);
                    double th = model.sharp(n, Math.min(m, 2048));
                    assertTrue(tk >= pk && ts >= ps - EPS && tb >= pb && th >= ph, "not monotone in n at n=" + n + " m=" + m);
                    pk = tk;
                    ps = ts;
                    pb = tb;
                    ph = th;
                }
            }
        }
        for (long n : new long[] {2, 4, 100, 7861}) {
            double pk = -1;
            double ps = -1;
            double ph = -1;
            for (long m : sizes) {
                assertTrue(model.knomial(n, m, 4) > pk && model.sra(n, m, 4) > ps, "not monotone in m at " + n + "/" + m);
                pk = model.knomial(n, m, 4);
                ps = model.sra(n, m, 4);
                if (m <= 2048) {
                    assertTrue(model.sharp(n, m) >= ph);
                    ph = model.sharp(n, m);
                }
            }
        }
    }

    @Test
    void sharpFlatterThanHostAtScaleAndInsidePaper004() {
        for (long m : new long[] {16, 2048}) {
            double hostGrowth = model.knomial(8192, m, 4) - model.knomial(4, m, 4);
            double sharpGrowth = model.sharp(8192, m) - model.sharp(4, m);
            assertTrue(sharpGrowth < hostGrowth / 3, "SHARP +" + sharpGrowth + " vs host +" + hostGrowth);
            assertTrue(model.sharp(8192, m) < model.knomial(8192, m, 4));
            assertTrue(model.sharp(8192, m) < model.sra(8192, m, 4));
            for (long n = 4; n <= 2048; n *= 2) {
                double t = model.sharp(n, m);
                assertTrue(t >= 3 && t <= 8, "paper 004: SHARP allreduce 3-8 us up to 2,048 nodes; model " + t + " at " + n);
            }
        }
        assertEquals(3.66, model.knomial(4, 2048, 4), 0.2); // paper 004, MVAPICH2-X 2 KiB at 4 nodes
        // SRA beats k-nomial for large messages, k-nomial SRA for small ones
        assertTrue(model.sra(64, 1 << 20, 4) < model.knomial(64, 1 << 20, 4));
        assertTrue(model.knomial(64, 16, 4) < model.sra(64, 16, 4));
    }

    @Test
    void paramsFromFileAndFit(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("m.properties");
        Files.write(f, List.of("# comment", "host.L=2.0", "sharp.radix=20", "intra.a = 0.5"));
        ModelParams p = ModelParams.load(f);
        assertEquals(2.0, p.hostL, EPS);
        assertEquals(20, p.sharpRadix);
        assertEquals(0.5, p.intraA, EPS);
        assertEquals(0.35, p.hostO, EPS);
        assertEquals(f.toString(), p.origin("host.L"));
        assertEquals("default", p.origin("host.o"));
        assertEquals(2, new PerfModel(p).sharpLevels(41));
        Files.write(f, List.of("host.latency=2"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ModelParams.load(f));
        assertTrue(e.getMessage().contains("unknown model parameter 'host.latency'"), e.getMessage());
        Files.write(f, List.of("sharp.radix=1"));
        e = assertThrows(IllegalArgumentException.class, () -> ModelParams.load(f));
        assertTrue(e.getMessage().contains("2..1024"), e.getMessage());
        Files.write(f, List.of("host.G=fast"));
        e = assertThrows(IllegalArgumentException.class, () -> ModelParams.load(f));
        assertTrue(e.getMessage().contains("not a number"), e.getMessage());
        // describe() round-trips as a properties file
        Path out = dir.resolve("out.properties");
        Files.write(out, ModelParams.defaults().describe());
        assertEquals(ModelParams.defaults().sharpG, ModelParams.load(out).sharpG, EPS);

        // fit: tree allreduce at 4 ranks per node = (a + b m)(log2 4 + 1) = 3a + 3bm
        ModelParams q = ModelParams.defaults();
        double a = 0.3;
        double b = 0.0002;
        double[] x = {8, 1024, 65536};
        double[] y = new double[3];
        for (int i = 0; i < 3; i++) {
            y[i] = 3 * (a + b * x[i]);
        }
        q.fitIntra(x, y, 4, "fit");
        assertEquals(a, q.intraA, 1e-9);
        assertEquals(b, q.intraB, 1e-12);
        assertEquals("fit", q.origin("intra.b"));
    }

    @Test
    void seededTableParsesAndChoosesSharpAtScale() {
        int[] nodes = {2, 4, 8, 16, 64, 256, 1024, 4096, 8192};
        long[] sizes = {8, 16, 64, 256, 1024, 2048, 4096, 16384, 65536, 1 << 20};
        List<String> lines = SeedTable.generate(ModelParams.defaults(), nodes, sizes);
        List<Rule> rules = RuleParser.parseLines(lines, "seed");
        assertTrue(rules.size() >= 3, lines.toString());
        TuningTable t = TuningTable.builtIn().withFileLines(lines, "seed");
        for (int n : new int[] {16, 1000, 4096, 7861}) {
            CompiledTable c = t.compile(n, 1);
            assertEquals(Algorithm.SHARP, c.interAlgorithm(Collective.ALLREDUCE, 16), n + " nodes: " + c.describe());
            assertEquals(Algorithm.SHARP, c.interAlgorithm(Collective.ALLREDUCE, 2048), n + " nodes");
            assertEquals(2049, c.sharpMaxBytes(Collective.ALLREDUCE), n + " nodes: " + lines);
            assertEquals(Algorithm.SHARP, c.interAlgorithm(Collective.BARRIER, 0), n + " nodes");
            assertTrue(c.interAlgorithm(Collective.ALLREDUCE, 1 << 20) != Algorithm.SHARP);
            assertTrue(c.interOrigin(Collective.ALLREDUCE, 16).startsWith("seed:"), c.interOrigin(Collective.ALLREDUCE, 16));
        }
        // 2 nodes: one host round (1.9 us) beats SHARP's 3 us
        CompiledTable two = t.compile(2, 1);
        assertEquals(Algorithm.KNOMIAL, two.interAlgorithm(Collective.ALLREDUCE, 16), two.describe().toString());
        assertEquals(0, two.sharpMaxBytes(Collective.ALLREDUCE));
        // large messages at scale: SRA
        assertEquals(Algorithm.SRA, t.compile(4096, 1).interAlgorithm(Collective.ALLREDUCE, 1 << 20));
        assertThrows(IllegalArgumentException.class, () -> SeedTable.generate(ModelParams.defaults(), new int[] {1}, sizes));
    }
}
