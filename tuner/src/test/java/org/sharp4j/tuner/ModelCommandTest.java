package org.sharp4j.tuner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sharp4j.tuning.Algorithm;
import org.sharp4j.tuning.Collective;
import org.sharp4j.tuning.CompiledTable;
import org.sharp4j.tuning.RuleParser;
import org.sharp4j.tuning.TuningTable;
import org.sharp4j.tuner.model.ModelParams;
import org.sharp4j.tuner.model.PerfModel;
import org.sharp4j.tuner.model.TuneFit;
import picocli.CommandLine;

class ModelCommandTest {
    static final class Run {
        int rc;
        String out;
        String err;
    }

    static Run run(String... args) {
        ModelCommand cmd = new ModelCommand();
        ByteArrayOutputStream bo = new ByteArrayOutputStream();
        cmd.out = new PrintStream(bo, true, StandardCharsets.UTF_8);
        StringWriter ew = new StringWriter();
        CommandLine cl = new CommandLine(cmd);
        cl.setErr(new PrintWriter(ew, true));
        Run r = new Run();
        r.rc = cl.execute(args);
        r.out = bo.toString(StandardCharsets.UTF_8);
        r.err = ew.toString();
        return r;
    }

    @Test
    void printsPlotsAndSeeds(@TempDir Path dir) throws Exception {
        Path png = dir.resolve("model.png");
        Path table = dir.resolve("seed.txt");
        Run r = run("--nodes", "2,4,16,256,2048,8192", "--sizes", "16,2k", "--plot", png.toString(), "--seed-table",
                table.toString());
        assertEquals(0, r.rc, r.err);
        System.out.println(r.out);
        assertTrue(r.out.contains("allreduce 16 B") && r.out.contains("allreduce 2k B") && r.out.contains("barrier"), r.out);
        assertTrue(r.out.matches("(?s).*\\n +8192 +\\S+ +\\S+ +\\S+ +3  sharp .*"), r.out);
        assertTrue(r.out.contains("host.L") && r.out.contains("(default)"), r.out);
        BufferedImage img = ImageIO.read(png.toFile());
        assertNotNull(img, "not a readable PNG");
        assertTrue(img.getWidth() >= 800 && img.getHeight() >= 500);
        List<String> lines = Files.readAllLines(table);
        assertTrue(!RuleParser.parseLines(lines, "seed").isEmpty());
        CompiledTable big = TuningTable.builtIn().withFile(table, "test").compile(4096, 1);
        assertEquals(Algorithm.SHARP, big.interAlgorithm(Collective.ALLREDUCE, 16));
        assertEquals(2049, big.sharpMaxBytes(Collective.ALLREDUCE));
    }

    @Test
    void paramsFileAndFitFromTune(@TempDir Path dir) throws Exception {
        Path params = dir.resolve("m.properties");
        Files.write(params, List.of("sharp.base=10", "sharp.level=10"));
        Path table = dir.resolve("t.txt");
        Files.write(table, List.of("[nodes=1:ppn=4:measured]", "allreduce:0-inf:tree:radix=2"));
        Path csv = TuneCsv.of(table);
        TuneCsv.append(csv, m(1, 4, "intra", "tree:radix=2", 8, 0.9024));
        TuneCsv.append(csv, m(1, 4, "intra", "tree:radix=2", 1024, 1.5));
        TuneCsv.append(csv, m(1, 4, "intra", "tiled", 1024, 2.0));
        TuneCsv.append(csv, m(1, 4, "intra", "tree:radix=2", 65536, 40.2));
        Run r = run("--params", params.toString(), "--from-tune", table.toString(), "--nodes", "2,64", "--sizes", "16");
        assertEquals(0, r.rc, r.err);
        assertTrue(r.out.matches("(?s).*sharp\\.base +10 +\\(" + java.util.regex.Pattern.quote(params.toString()) + "\\).*"), r.out);
        assertTrue(r.out.matches("(?s).*intra\\.a +0\\.\\d+ +\\(fitted from .*t\\.txt\\.csv \\(4 ppn\\)\\).*"), r.out);
        assertTrue(r.err.contains("host.L, host.g, host.G kept: no inter-node knomial point"), r.err);
        // with a slow SHARP (10 + 0.31 sharp4j's own + 10 * levels) the host path wins at 64 nodes for 16 B
        assertTrue(r.out.matches("(?s).*\\n +64 +\\S+ +\\S+ +30\\.32 +2  knomial .*"), r.out);
    }

    static Measurement m(int nodes, int ppn, String layer, String cand, long bytes, double us) {
        return new Measurement(nodes, ppn, Collective.ALLREDUCE, layer, cand, bytes, us, 0.01, 3, true);
    }

    /** Inter-node points made from known LogGP and SHARP parameters are fitted back, and seed a [modelled] section into the tuned table. */
    @Test
    void fitsHostAndSharpFromInterNodePointsAndSeedsModelledRulesIntoTheTable(@TempDir Path dir) throws Exception {
        ModelParams truth = ModelParams.defaults();
        truth.hostL = 5.0;
        truth.hostGap = 1.0;
        truth.hostG = 0.002;
        truth.sharpBase = 4.0;
        PerfModel tm = new PerfModel(truth);
        Path table = dir.resolve("t.txt");
        List<Measurement> ms = new java.util.ArrayList<>();
        for (int n : new int[] {2, 4}) {
            for (long b : new long[] {8, 4096, 65536}) {
                for (int k : new int[] {2, 4}) {
                    ms.add(m(n, 1, "inter", "knomial:radix=" + k, b, tm.knomial(n, b, k)));
                }
                ms.add(m(n, 1, "inter", "sra:radix=2", b, tm.sra(n, b, 2)));
                if (b <= 2048 || b == 4096) {
                    ms.add(m(n, 1, "inter", "sharp", b, tm.sharp(n, Math.min(b, 2048)) + (b > 2048 ? 1000 : 0)));
                }
            }
        }
        for (Measurement x : ms) {
            TuneCsv.append(TuneCsv.of(table), x);
        }
        org.sharp4j.tuner.TuneTable.write(table, TuneCsv.read(TuneCsv.of(table)), org.sharp4j.tuner.TuneTable.GUARD);
        ModelParams p = ModelParams.defaults();
        List<String> said = TuneFit.fit(p, ms, "test");
        assertEquals(truth.hostL, p.hostL, 1e-6, said.toString());
        assertEquals(truth.hostGap, p.hostGap, 1e-6, said.toString());
        assertEquals(truth.hostG, p.hostG, 1e-9, said.toString());
        assertEquals(truth.sharpBase, p.sharpBase, 1e-6, said.toString()); // one level count: the level cost kept, the base fitted
        assertEquals("test", p.origin("host.L").replace("fitted from ", ""));

        Run r = run("--from-tune", table.toString(), "--seed-table", table.toString(), "--nodes", "2,4,8,64,4096");
        assertEquals(0, r.rc, r.err);
        List<String> lines = Files.readAllLines(table);
        assertTrue(lines.contains("[modelled]") && lines.contains("[nodes=2:ppn=1:measured]") && lines.contains("[nodes=4:ppn=1:measured]"),
                lines.toString());
        assertTrue(lines.indexOf("[modelled]") < lines.indexOf("[nodes=2:ppn=1:measured]"), lines.toString());
        assertTrue(lines.stream().anyMatch(l -> l.matches("allreduce:0-[^:]+:nodes=5-.*")), "modelled from above the measured 4 nodes: " + lines);
        TuningTable t = TuningTable.builtIn().withFile(table, "test");
        assertEquals("measured on this cluster", t.compile(4, 1).interProvenance(Collective.ALLREDUCE, 8));
        assertEquals("modelled", t.compile(64, 1).interProvenance(Collective.ALLREDUCE, 8));
        assertEquals("built in", t.compile(64, 1).intraProvenance(Collective.ALLREDUCE, 8));
        // modelled again: the [modelled] section is replaced, not added
        r = run("--from-tune", table.toString(), "--seed-table", table.toString(), "--nodes", "2,4,8,64,4096");
        assertEquals(0, r.rc, r.err);
        assertEquals(1, Files.readAllLines(table).stream().filter("[modelled]"::equals).count());
    }

    @Test
    void rejectsBadArguments(@TempDir Path dir) throws Exception {
        Run r = run("--nodes", "2,x");
        assertEquals(2, r.rc);
        assertTrue(r.err.contains("--nodes: 'x' is not a node count"), r.err);
        r = run("--nodes", "0,4");
        assertEquals(2, r.rc);
        assertTrue(r.err.contains("node counts must be >= 1"), r.err);
        r = run("--sizes", "16,lots");
        assertEquals(2, r.rc);
        assertTrue(r.err.contains("--sizes: not a size: 'lots'"), r.err);
        r = run("--ppn", "0");
        assertEquals(2, r.rc);
        assertTrue(r.err.contains("--ppn must be >= 1"), r.err);
        Path params = dir.resolve("bad.properties");
        Files.write(params, List.of("host.latency=1"));
        r = run("--params", params.toString());
        assertEquals(2, r.rc);
        assertTrue(r.err.contains("unknown model parameter 'host.latency'"), r.err);
        r = run("--params", dir.resolve("missing.properties").toString());
        assertEquals(2, r.rc);
        assertTrue(r.err.contains("cannot read the model parameters"), r.err);
        r = run("--from-tune", dir.resolve("none.txt").toString());
        assertEquals(2, r.rc);
        assertTrue(r.err.contains("--from-tune: cannot read"), r.err);
        Path foreign = Files.write(dir.resolve("f.txt.csv"), List.of("a,b"));
        r = run("--from-tune", dir.resolve("f.txt").toString());
        assertEquals(2, r.rc);
        assertTrue(r.err.contains("not a sharp4j tune CSV") && r.err.contains(foreign.toString()), r.err);
        r = run("--bogus");
        assertEquals(2, r.rc);
        assertTrue(r.err.contains("Unknown option: '--bogus'"), r.err);
        // the subcommand is wired into bin/sharp4j's entry point
        assertTrue(new CommandLine(new Sharp4jCli()).getSubcommands().containsKey("model"));
    }
}
