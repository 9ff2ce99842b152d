package org.sharp4j.osu.plot;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sharp4j.osu.Kind;
import org.sharp4j.osu.Stats;
import org.sharp4j.osu.Table;

class PlotCsvTest {
    private static final byte[] PNG_SIGNATURE = {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    private static final long[] SIZES = {4, 8, 16, 64, 1024, 4096, 65536, 1048576};

    @TempDir
    Path dir;

    @BeforeAll
    static void headless() {
        System.setProperty("java.awt.headless", "true");
    }

    /** The latency OSU would have measured for {@code size} bytes: a floor plus bandwidth, so that log-log is a hockey stick. */
    static Stats stats(long size, double scale, int[] percentiles) {
        double avg = scale * (0.35 + size / 9000.0);
        double[] tails = new double[percentiles.length];
        for (int i = 0; i < tails.length; i++) {
            tails[i] = avg * (1 + percentiles[i] / 100.0);
        }
        return new Stats(avg, avg * 0.9, avg * 1.2, 1000, 0, tails);
    }

    /** Writes a CSV exactly as Osu.execute does: Table's header and rows through PrintWriter.println. */
    Path osuCsv(String name, Kind kind, boolean validate, int[] percentiles, boolean compare, String datatype, long... sizes)
            throws IOException {
        Path f = dir.resolve(name);
        Table table = new Table(kind, false, validate, percentiles, compare);
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(f, StandardCharsets.UTF_8))) {
            w.println(table.csvHeader());
            if (kind == Kind.BARRIER) {
                w.println(table.csvRow("", 0, stats(0, 1, percentiles), compare ? stats(0, 2, percentiles) : null));
            } else {
                for (long s : sizes) {
                    w.println(table.csvRow(datatype, s, stats(s, 1, percentiles), compare ? stats(s, 2.5, percentiles) : null));
                }
            }
        }
        return f;
    }

    record Run(int code, String out, String err) {
    }

    static Run plot(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = PlotCsv.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    static BufferedImage readPng(Path png, int width, int height) throws IOException {
        assertTrue(Files.isRegularFile(png), png + " was not written");
        byte[] head = Arrays.copyOf(Files.readAllBytes(png), PNG_SIGNATURE.length);
        assertArrayEquals(PNG_SIGNATURE, head, "PNG signature");
        BufferedImage img = ImageIO.read(png.toFile());
        assertNotNull(img, "ImageIO cannot decode " + png);
        assertEquals(width, img.getWidth(), "width");
        assertEquals(height, img.getHeight(), "height");
        return img;
    }

    /** Whether the image is more than a blank canvas: several distinct colours (axes, lines, text). */
    static void assertDrawn(BufferedImage img) {
        java.util.Set<Integer> colours = new java.util.HashSet<>();
        for (int y = 0; y < img.getHeight(); y += 3) {
            for (int x = 0; x < img.getWidth(); x += 3) {
                colours.add(img.getRGB(x, y));
            }
        }
        assertTrue(colours.size() > 5, "only " + colours.size() + " colours: nothing drawn?");
    }

    @Test
    void parsesCompareCsvIntoOneSeriesPerBackend() throws Exception {
        int[] pct = {50, 99};
        Path f = osuCsv("cmp.csv", Kind.ALLREDUCE, true, pct, true, "MPI_FLOAT", SIZES);
        OsuCsv csv = OsuCsv.read(f);
        assertFalse(csv.isBarrier());
        assertTrue(csv.hasMpiColumns());
        assertEquals(List.of("avg", "min", "max", "p50", "p99"), csv.statistics());
        List<OsuCsv.Series> avg = csv.series("avg", "sharp4j");
        assertEquals(2, avg.size());
        assertEquals("sharp4j", avg.get(0).backend());
        assertEquals("Open MPI Java", avg.get(1).backend());
        assertEquals("MPI_FLOAT", avg.get(0).datatype());
        assertArrayEquals(Arrays.stream(SIZES).asDoubleStream().toArray(), avg.get(0).sizes());
        for (int i = 0; i < SIZES.length; i++) {
            assertEquals(stats(SIZES[i], 1, pct).avg(), avg.get(0).latencies()[i], 0.0005);
            assertEquals(stats(SIZES[i], 2.5, pct).avg(), avg.get(1).latencies()[i], 0.0005);
        }
        List<OsuCsv.Series> p99 = csv.series("p99", "sharp4j");
        assertEquals(stats(SIZES[3], 2.5, pct).tails()[1], p99.get(1).latencies()[3], 0.0005);
    }

    @Test
    void multipleDatatypesGiveOneSeriesEach() throws Exception {
        Path f = dir.resolve("types.csv");
        Table table = new Table(Kind.REDUCE, false, false, new int[0], false);
        Files.write(f, List.of(table.csvHeader(),
                table.csvRow("MPI_INT", 4, stats(4, 1, new int[0]), null),
                table.csvRow("MPI_INT", 8, stats(8, 1, new int[0]), null),
                table.csvRow("MPI_DOUBLE", 8, stats(8, 1.1, new int[0]), null),
                table.csvRow("MPI_DOUBLE", 16, stats(16, 1.1, new int[0]), null)));
        List<OsuCsv.Series> s = OsuCsv.read(f).series("avg", "sharp4j");
        assertEquals(List.of("MPI_INT", "MPI_DOUBLE"), s.stream().map(OsuCsv.Series::datatype).toList());
        Path png = dir.resolve("types.png");
        Run r = plot(f.toString(), "-o", png.toString());
        assertEquals(0, r.code(), r.err());
        readPng(png, 1000, 650);
    }

    @Test
    void writesPngOfRequestedSize() throws Exception {
        Path a = osuCsv("a.csv", Kind.ALLREDUCE, false, new int[] {50, 99}, true, "MPI_FLOAT", SIZES);
        Path b = osuCsv("b.csv", Kind.ALLREDUCE, true, new int[] {50, 99}, false, "MPI_FLOAT", 8, 64, 512, 4096);
        Path png = dir.resolve("out.png");
        Run r = plot(a.toString(), b.toString(), "-o", png.toString(), "--width", "640", "--height", "480",
                "--title", "test chart", "--column", "p99");
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains("wrote " + png), r.out());
        assertDrawn(readPng(png, 640, 480));
    }

    @Test
    void defaultSizeAndColumn() throws Exception {
        Path a = osuCsv("plain.csv", Kind.ALLREDUCE, false, new int[0], false, "MPI_DOUBLE", SIZES);
        Path png = dir.resolve("plain.png");
        Run r = plot(a.toString(), "-o", png.toString());
        assertEquals(0, r.code(), r.err());
        assertDrawn(readPng(png, 1000, 650));
    }

    @Test
    void barrierFilesBecomeBars() throws Exception {
        Path b1 = osuCsv("barrier1.csv", Kind.BARRIER, false, new int[0], false, "");
        Path b2 = osuCsv("barrier2.csv", Kind.BARRIER, false, new int[] {50}, true, "");
        assertTrue(OsuCsv.read(b1).isBarrier());
        Path png = dir.resolve("barrier.png");
        Run r = plot(b1.toString(), b2.toString(), "-o", png.toString(), "--width", "500", "--height", "300");
        assertEquals(0, r.code(), r.err());
        assertDrawn(readPng(png, 500, 300));
    }

    @Test
    void barrierNextToSizedFilesIsALine() throws Exception {
        Path a = osuCsv("allreduce.csv", Kind.ALLREDUCE, false, new int[0], true, "MPI_FLOAT", SIZES);
        Path b = osuCsv("barrier.csv", Kind.BARRIER, false, new int[0], true, "");
        Path png = dir.resolve("mixed.png");
        Run r = plot(a.toString(), b.toString(), "-o", png.toString());
        assertEquals(0, r.code(), r.err());
        readPng(png, 1000, 650);
    }

    @Test
    void sameFileTwiceAndSizeZeroDoNotCrash() throws Exception {
        Path a = osuCsv("zero.csv", Kind.ALLREDUCE, false, new int[0], false, "MPI_FLOAT", 0, 4, 8);
        Path png = dir.resolve("twice.png");
        Run r = plot(a.toString(), a.toString(), "-o", png.toString());
        assertEquals(0, r.code(), r.err());
        assertTrue(r.err().contains("left out 1 point"), r.err());
        readPng(png, 1000, 650);
    }

    @Test
    void wrongFieldCountNamesFileAndLine() throws Exception {
        Path good = osuCsv("good.csv", Kind.ALLREDUCE, false, new int[0], false, "MPI_FLOAT", 4, 8, 16);
        List<String> lines = Files.readAllLines(good);
        lines.set(2, lines.get(2) + ",42");
        Path bad = Files.write(dir.resolve("bad.csv"), lines);
        Path png = dir.resolve("bad.png");
        Run r = plot(good.toString(), bad.toString(), "-o", png.toString());
        assertEquals(1, r.code());
        assertTrue(r.err().contains(bad + ":3: expected 10 fields as in the header, found 11"), r.err());
        assertFalse(Files.exists(png), "no PNG after an error");
        CsvFormatException e = assertThrows(CsvFormatException.class, () -> OsuCsv.read(bad));
        assertEquals(3, e.line());
        assertEquals(bad, e.file());
    }

    @Test
    void nonNumericLatencyNamesFileLineAndColumn() throws Exception {
        Path good = osuCsv("g.csv", Kind.ALLREDUCE, false, new int[0], false, "MPI_FLOAT", 4, 8);
        List<String> lines = Files.readAllLines(good);
        lines.set(1, lines.get(1).replaceFirst(",4,[^,]+,", ",4,fast,"));
        Path bad = Files.write(dir.resolve("nan.csv"), lines);
        Run r = plot(bad.toString(), "-o", dir.resolve("x.png").toString());
        assertEquals(1, r.code());
        assertTrue(r.err().contains(bad + ":2: avg_us is not a number: 'fast'"), r.err());

        Path badSize = Files.write(dir.resolve("size.csv"), List.of(lines.get(0), "allreduce,2,1,sharp4j,MPI_FLOAT,four,1.0,1.0,1.0,10"));
        r = plot(badSize.toString(), "-o", dir.resolve("x.png").toString());
        assertEquals(1, r.code());
        assertTrue(r.err().contains(badSize + ":2: size_bytes is not an integer: 'four'"), r.err());
    }

    @Test
    void notAnOsuCsvOrMissingOrEmpty() throws Exception {
        Path other = Files.write(dir.resolve("other.csv"), List.of("x,y", "1,2"));
        Path empty = Files.write(dir.resolve("empty.csv"), new byte[0]);
        Path headerOnly = Files.write(dir.resolve("header.csv"), List.of("datatype,size_bytes,avg_us,min_us,max_us,iterations"));
        Path missing = dir.resolve("missing.csv");
        Run r = plot(other.toString(), empty.toString(), headerOnly.toString(), missing.toString(), "-o", dir.resolve("x.png").toString());
        assertEquals(1, r.code());
        assertTrue(r.err().contains(other + ":1: not an OSU CSV header"), r.err());
        assertTrue(r.err().contains(empty + ": empty file"), r.err());
        assertTrue(r.err().contains(headerOnly + ": no data rows"), r.err());
        assertTrue(r.err().contains(missing + ": no such file"), r.err());
    }

    @Test
    void missingPercentileColumnIsExplained() throws Exception {
        Path a = osuCsv("nopct.csv", Kind.ALLREDUCE, false, new int[0], false, "MPI_FLOAT", 4, 8);
        Run r = plot(a.toString(), "--column", "p99", "-o", dir.resolve("x.png").toString());
        assertEquals(1, r.code());
        assertTrue(r.err().contains(a + ":1: no column 'p99_us' (this file has: avg, min, max; percentiles are written by osu_* -z)"),
                r.err());
    }

    @Test
    void badCommandLine() {
        Run r = plot("a.csv", "--column", "median");
        assertEquals(2, r.code());
        assertTrue(r.err().contains("--column must be avg, min, max or pNN"), r.err());
        r = plot("a.csv", "--width", "10");
        assertEquals(2, r.code());
        r = plot();
        assertEquals(2, r.code());
        assertTrue(r.err().contains("CSV"), r.err());
        r = plot("--help");
        assertEquals(0, r.code());
        assertTrue(r.out().contains("--column"), r.out());
    }

    @Test
    void unwritableOutput() throws Exception {
        Path a = osuCsv("w.csv", Kind.ALLREDUCE, false, new int[0], false, "MPI_FLOAT", 4, 8);
        Run r = plot(a.toString(), "-o", dir.resolve("no/such/dir/x.png").toString());
        assertEquals(1, r.code());
        assertTrue(r.err().contains("cannot write"), r.err());
    }

    @Test
    void readsCsvOfEarlierVersionsWithoutMetadataColumns() throws Exception {
        Path old = Files.write(dir.resolve("old.csv"), List.of("datatype,size_bytes,avg_us,min_us,max_us,iterations,mpi_avg_us,mpi_min_us,"
                + "mpi_max_us,mpi_iterations,ratio", "MPI_FLOAT,4,1.5,1.4,1.6,1000,3.0,2.9,3.1,1000,0.5",
                "MPI_FLOAT,8,1.6,1.5,1.7,1000,3.2,3.1,3.3,1000,0.5"));
        OsuCsv c = OsuCsv.read(old);
        assertEquals(null, c.collective());
        assertEquals(-1, c.ranks());
        List<OsuCsv.Series> s = c.series("avg", "sharp4j");
        assertEquals(List.of("sharp4j", "Open MPI Java"), s.stream().map(OsuCsv.Series::backend).toList());
        assertArrayEquals(new double[] {1.5, 1.6}, s.get(0).latencies());
        assertEquals("OSU latency (Avg), MPI_FLOAT", PlotCsv.defaultTitle(List.of(c), "Avg"));
        Path png = dir.resolve("old.png");
        Run r = plot(old.toString(), "-o", png.toString());
        assertEquals(0, r.code(), r.err());
        assertDrawn(readPng(png, 1000, 650));
    }

    @Test
    void metadataColumnsGiveTitleAndBackend() throws Exception {
        Path f = dir.resolve("meta.csv");
        Table table = new Table(Kind.REDUCE, false, false, new int[] {10, 50, 90}, false, new Table.RunInfo(Table.OPEN_MPI_JAVA, 6, 3));
        Files.write(f, List.of(table.csvHeader(), table.csvRow("MPI_DOUBLE", 8, stats(8, 1, new int[] {10, 50, 90}), null),
                table.csvRow("MPI_DOUBLE", 16, stats(16, 1, new int[] {10, 50, 90}), null)));
        OsuCsv c = OsuCsv.read(f);
        assertEquals("reduce", c.collective());
        assertEquals(6, c.ranks());
        assertEquals(3, c.nodes());
        assertEquals("Open MPI Java", c.backend());
        assertEquals("OSU Reduce latency (Avg), 6 ranks on 3 nodes, MPI_DOUBLE", PlotCsv.defaultTitle(List.of(c), "Avg"));
        List<OsuCsv.Series> s = c.series("avg", "sharp4j", "p10", "p90");
        assertEquals("Open MPI Java", s.get(0).backend(), "the file's backend column wins over --primary");
        assertArrayEquals(new double[] {stats(8, 1, new int[] {10}).tails()[0], stats(16, 1, new int[] {10}).tails()[0]}, s.get(0).lo(), 0.0005);
        assertArrayEquals(new double[] {stats(8, 1, new int[] {90}).tails()[0], stats(16, 1, new int[] {90}).tails()[0]}, s.get(0).hi(), 0.0005);
        assertEquals(null, c.series("avg", "sharp4j", "p5", "p95").get(0).lo(), "no band without both columns");
    }

    /** The port's own stdout (a golden file) and OMB's C output (no port line) read as tables too. */
    @Test
    void readsOsuTextOutput() throws Exception {
        Path port = dir.resolve("port.txt");
        try (var in = PlotCsvTest.class.getResourceAsStream("/org/sharp4j/osu/golden/osu_allreduce_f_z.txt")) {
            Files.write(port, in.readAllBytes());
        }
        OsuCsv p = OsuCsv.read(port);
        assertEquals("allreduce", p.collective());
        assertEquals(4, p.ranks());
        assertEquals(2, p.nodes());
        assertEquals("sharp4j", p.backend());
        assertEquals(List.of("avg", "min", "max", "p50", "p90", "p99"), p.statistics());
        OsuCsv.Series s = p.series("p90", "x").get(0);
        assertEquals("MPI_FLOAT", s.datatype());
        assertEquals(4.0, s.sizes()[0]);
        assertEquals(1048576.0, s.sizes()[s.sizes().length - 1]);
        assertEquals(19, s.sizes().length);

        List<String> c = new ArrayList<>(Files.readAllLines(port));
        c.remove(2); // OMB's C benchmarks print no port line
        Path omb = Files.write(dir.resolve("omb.txt"), c);
        OsuCsv o = OsuCsv.read(omb);
        assertEquals("Open MPI C", o.backend());
        assertEquals(-1, o.ranks());
        assertEquals("MVAPICH2 C", OsuCsv.read(omb, "MVAPICH2 C").backend());

        Path barrier = dir.resolve("barrier.txt");
        try (var in = PlotCsvTest.class.getResourceAsStream("/org/sharp4j/osu/golden/osu_barrier_f_z.txt")) {
            Files.write(barrier, in.readAllBytes());
        }
        OsuCsv b = OsuCsv.read(barrier);
        assertTrue(b.isBarrier());
        assertEquals(1.12, b.series("avg", "x").get(0).latencies()[0]);

        Path png = dir.resolve("text.png");
        Run r = plot(port.toString(), omb.toString(), barrier.toString(), "-o", png.toString(), "--column", "p50");
        assertEquals(0, r.code(), r.err());
        assertDrawn(readPng(png, 1000, 650));
    }

    /** The port's --compare stdout: both libraries, their P10/P90 bands, the ratio column ignored. */
    @Test
    void readsComparisonTextOutput() throws Exception {
        int[] pct = {10, 50, 90};
        Table t = new Table(Kind.ALLREDUCE, true, true, pct, true, new Table.RunInfo(Table.SHARP4J, 2, 1));
        StringBuilder sb = new StringBuilder(t.preamble()).append("# Datatype: MPI_DOUBLE.\n").append(t.header()).append('\n');
        for (long size : new long[] {8, 16, 32}) {
            sb.append(t.row(size, stats(size, 1, pct), stats(size, 2, pct))).append('\n');
        }
        Path f = Files.writeString(dir.resolve("cmp.txt"), sb.toString());
        OsuCsv c = OsuCsv.read(f);
        assertEquals(2, c.ranks());
        assertEquals(1, c.nodes());
        List<OsuCsv.Series> s = c.series("avg", "x", "p10", "p90");
        assertEquals(List.of("sharp4j", "Open MPI Java"), s.stream().map(OsuCsv.Series::backend).toList());
        assertEquals("MPI_DOUBLE", s.get(1).datatype());
        assertEquals(stats(16, 2, pct).avg(), s.get(1).latencies()[1], 0.005);
        assertEquals(stats(32, 2, pct).tails()[2], s.get(1).hi()[2], 0.005);
        assertEquals(stats(8, 1, pct).tails()[0], s.get(0).lo()[0], 0.005);
    }

    @Test
    void bandIsDrawnWhereTheFileHasBothPercentiles() throws Exception {
        int[] pct = {10, 50, 90};
        Path f = osuCsv("band.csv", Kind.ALLREDUCE, false, pct, false, "MPI_FLOAT", SIZES);
        Path with = dir.resolve("with.png");
        Path without = dir.resolve("without.png");
        assertEquals(0, plot(f.toString(), "-o", with.toString()).code());
        assertEquals(0, plot(f.toString(), "-o", without.toString(), "--band", "none").code());
        BufferedImage a = readPng(with, 1000, 650);
        BufferedImage b = readPng(without, 1000, 650);
        // the band is sharp4j's blue at low opacity over white: light blue pixels only in the first image
        // (a few come from the anti-aliased edges of the blue line in both)
        assertTrue(lightBlue(a) > 10 * Math.max(100, lightBlue(b)), "band pixels: " + lightBlue(a) + " with, " + lightBlue(b) + " without");
        Run bad = plot(f.toString(), "-o", with.toString(), "--band", "p10");
        assertEquals(2, bad.code());
        assertTrue(bad.err().contains("--band must be LO:HI"), bad.err());
    }

    private static int lightBlue(BufferedImage img) {
        int n = 0;
        for (int y = 0; y < img.getHeight(); y++) {
            for (int x = 0; x < img.getWidth(); x++) {
                java.awt.Color c = new java.awt.Color(img.getRGB(x, y));
                if (c.getBlue() > 200 && c.getBlue() < 240 && c.getRed() > 170 && c.getRed() < 215 && c.getBlue() - c.getRed() > 15) {
                    n++;
                }
            }
        }
        return n;
    }
}
