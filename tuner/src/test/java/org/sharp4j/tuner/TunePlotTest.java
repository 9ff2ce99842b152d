package org.sharp4j.tuner;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
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
import org.sharp4j.tuning.Collective;

/** The tuner's plot: the chosen candidate per size is the table's choice, error bars from stderr_us, one chart per shape/collective/layer. */
class TunePlotTest {
    static Measurement m(int nodes, Collective c, String layer, String cand, long bytes, double us, double se) {
        return new Measurement(nodes, 3, c, layer, cand, bytes, us, se, 5, true);
    }

    @Test
    void chartMarksChoicesCarriesErrorBarsAndNamesTheShape(@TempDir Path dir) throws IOException {
        List<Measurement> ms = List.of(
                m(2, Collective.ALLREDUCE, "intra", "tree:radix=4", 8, 2.0, 0.1), m(2, Collective.ALLREDUCE, "intra", "tree:radix=4", 8192, 9.0, 0.4),
                m(2, Collective.ALLREDUCE, "intra", "tiled", 8, 4.0, 0.2), m(2, Collective.ALLREDUCE, "intra", "tiled", 8192, 6.0, 0.3),
                m(2, Collective.ALLREDUCE, "inter", "knomial:radix=2", 8, 20, 0.2), m(2, Collective.ALLREDUCE, "inter", "sra:radix=2", 8, 30, 0.2),
                m(2, Collective.ALLREDUCE, "inter", "knomial:radix=2", 64, 21, 0.2), m(2, Collective.ALLREDUCE, "inter", "sra:radix=2", 64, 31, 0.2),
                m(2, Collective.REDUCE, "intra", "tiled", 8, 4.0, 0.2), m(2, Collective.REDUCE, "intra", "tiled", 64, 4.5, 0.2),
                m(2, Collective.BARRIER, "intra", "tree:radix=2", 0, 1.0, 0.1));
        Map<String, List<Measurement>> byCandidate = new LinkedHashMap<>();
        byCandidate.put("tree:radix=4", ms.subList(0, 2));
        byCandidate.put("tiled", ms.subList(2, 4));
        var plot = TunePlot.chart(byCandidate, TuneTable.choose(ms, TuneTable.GUARD));
        assertEquals("sharp4j tune: Allreduce, intra-node candidates, 6 ranks on 2 nodes", plot.title());
        var lines = plot.lines();
        assertEquals(2, lines.size());
        // the tree wins at 8 B, tiled at 8 KiB: exactly those points are ringed
        assertArrayEquals(new boolean[] {true, false}, lines.get(0).highlights());
        assertArrayEquals(new boolean[] {false, true}, lines.get(1).highlights());
        assertArrayEquals(new double[] {0.1, 0.4}, lines.get(0).errors());

        Path csv = dir.resolve("t.txt.csv");
        for (Measurement x : ms) {
            TuneCsv.append(csv, x);
        }
        Path png = dir.resolve("t.png");
        TunePlot.plot(csv, png);
        BufferedImage img = ImageIO.read(png.toFile());
        assertEquals(1000, img.getWidth());
        assertEquals(1800, img.getHeight(), "allreduce intra, allreduce inter, reduce intra: stacked");

        Path notCsv = Files.write(dir.resolve("x.csv"), List.of("a,b"));
        IOException e = assertThrows(IOException.class, () -> TunePlot.plot(notCsv, png));
        assertTrue(e.getMessage().contains("not a sharp4j tune CSV"), e.getMessage());
    }
}
