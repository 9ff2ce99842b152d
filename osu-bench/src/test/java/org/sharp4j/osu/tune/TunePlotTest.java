package org.sharp4j.osu.tune;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The tuner's plot: the chosen algorithm per size comes from the table's rules, error bars from stderr_us. */
class TunePlotTest {
    static final List<String> TABLE = List.of(
            "# sharp4j tuning table, written by sharp4j tune on 2026-11-25T09:00:00",
            "# job shape: 2 node(s), 3 rank(s) per node; rules apply to that shape only",
            "allreduce:0-4k:nodes=2:ppn=3:tree:radix=4",
            "allreduce:4k-inf:nodes=2:ppn=3:tiled  # a comment",
            "barrier:0-inf:nodes=2:ppn=3:tree:radix=2");

    @Test
    void rulesGiveTheChosenAlgorithmPerSize() {
        List<TunePlot.Rule> rules = TunePlot.readRules(TABLE);
        assertEquals(3, rules.size());
        assertEquals("tree:radix=4", TunePlot.chosen(rules, "allreduce", 0));
        assertEquals("tree:radix=4", TunePlot.chosen(rules, "allreduce", 4095));
        assertEquals("tiled", TunePlot.chosen(rules, "allreduce", 4096));
        assertEquals("tiled", TunePlot.chosen(rules, "allreduce", 1L << 30));
        assertNull(TunePlot.chosen(rules, "reduce", 8));
    }

    @Test
    void chartMarksChoicesCarriesErrorBarsAndNamesTheShape(@TempDir Path dir) throws IOException {
        Map<String, List<TunePlot.Point>> byCandidate = new LinkedHashMap<>();
        byCandidate.put("tree:radix=4", List.of(new TunePlot.Point("allreduce", "tree:radix=4", 8, 2.0, 0.1),
                new TunePlot.Point("allreduce", "tree:radix=4", 8192, 9.0, 0.4)));
        byCandidate.put("tiled", List.of(new TunePlot.Point("allreduce", "tiled", 8, 4.0, 0.2),
                new TunePlot.Point("allreduce", "tiled", 8192, 6.0, 0.3)));
        var plot = TunePlot.chart("allreduce", byCandidate, TunePlot.readRules(TABLE), 2, 3);
        assertEquals("sharp4j tune: Allreduce, 6 ranks on 2 nodes", plot.title());
        var lines = plot.lines();
        assertEquals(2, lines.size());
        // the tree wins at 8 B, tiled at 8 KiB: exactly those points are ringed
        assertArrayEquals(new boolean[] {true, false}, highlight(lines.get(0)));
        assertArrayEquals(new boolean[] {false, true}, highlight(lines.get(1)));
        assertArrayEquals(new double[] {0.1, 0.4}, errors(lines.get(0)));

        Path csv = dir.resolve("t.csv");
        Files.write(csv, List.of("collective,candidate,bytes,mean_us,stderr_us,rounds,stable",
                "allreduce,tree:radix=4,8,2.0,0.1,5,true", "allreduce,tree:radix=4,8192,9.0,0.4,5,true",
                "allreduce,tiled,8,4.0,0.2,5,true", "allreduce,tiled,8192,6.0,0.3,5,true",
                "reduce,tiled,8,4.0,0.2,5,true", "reduce,tiled,64,4.5,0.2,5,true", "barrier,tree:radix=2,0,1.0,0.1,5,true"));
        Path table = Files.write(dir.resolve("t.txt"), TABLE);
        Path png = dir.resolve("t.png");
        TunePlot.plot(csv, table, png);
        BufferedImage img = ImageIO.read(png.toFile());
        assertEquals(1000, img.getWidth());
        assertEquals(1200, img.getHeight(), "one chart per collective with sizes, stacked");

        Path notCsv = Files.write(dir.resolve("x.csv"), List.of("a,b"));
        IOException e = assertThrows(IOException.class, () -> TunePlot.plot(notCsv, table, png));
        assertTrue(e.getMessage().contains("not a sharp4j tune CSV"), e.getMessage());
    }

    private static boolean[] highlight(org.sharp4j.osu.plot.LogPlot.Line l) {
        return l.highlights();
    }

    private static double[] errors(org.sharp4j.osu.plot.LogPlot.Line l) {
        return l.errors();
    }
}
