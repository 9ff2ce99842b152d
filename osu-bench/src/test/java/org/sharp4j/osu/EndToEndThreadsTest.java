package org.sharp4j.osu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The benchmarks end to end on 2 sharp4j ranks as threads: the table parses, every row passes, only rank 0 prints. */
class EndToEndThreadsTest {
    static final Pattern NUM = Pattern.compile("\\d+\\.\\d\\d");

    static List<ThreadJob.RankResult> ok(List<ThreadJob.RankResult> rs) {
        for (int r = 0; r < rs.size(); r++) {
            ThreadJob.RankResult x = rs.get(r);
            final int rank = r;
            assertNull(x.thrown(), () -> "rank " + rank + " threw " + x.thrown());
            assertEquals(0, x.exit(), () -> "rank " + rank + " exit; out:\n" + x.out() + "\nerr:\n" + x.err());
            if (r > 0) {
                assertEquals("", x.out(), "only rank 0 prints");
            }
        }
        return rs;
    }

    /** Table rows of rank 0's output: the lines that start with a number. */
    static List<String[]> rows(String out) {
        List<String[]> rows = new ArrayList<>();
        for (String line : out.split("\\R")) {
            if (line.matches("\\s*\\d.*")) {
                rows.add(line.trim().split("\\s+"));
            }
        }
        return rows;
    }

    @Test
    void allreduceValidated() {
        String out = ok(ThreadJob.run(2, Kind.ALLREDUCE, "-m", "8:64", "-i", "50", "-x", "5", "-c")).get(0).out();
        String[] lines = out.split("\\R");
        assertEquals("", lines[0], out);
        assertEquals("# OSU MPI Allreduce Latency Test v7.4", lines[1]);
        assertTrue(lines[2].matches("# sharp4j port: library sharp4j, 2 ranks, 1 nodes?"), lines[2]);
        assertEquals("# Datatype: MPI_FLOAT.", lines[3]);
        assertEquals("# Size       Avg Latency(us)        Validation", lines[4]);
        List<String[]> rows = rows(out);
        assertEquals(4, rows.size(), out);
        long size = 8;
        for (String[] r : rows) {
            assertEquals(3, r.length, out);
            assertEquals(size, Long.parseLong(r[0]));
            assertTrue(NUM.matcher(r[1]).matches() && Double.parseDouble(r[1]) > 0, out);
            assertEquals("Pass", r[2], out);
            size *= 2;
        }
        Matcher m = Pattern.compile("(?m)^8 {20,}\\d+\\.\\d\\d {14}Pass$").matcher(out);
        assertTrue(m.find(), "OMB's column layout: " + out);
    }

    @Test
    void barrier() {
        String out = ok(ThreadJob.run(2, Kind.BARRIER, "-i", "50")).get(0).out();
        assertTrue(out.startsWith("\n# OSU MPI Barrier Latency Test v7.4\n# sharp4j port: library sharp4j, 2 ranks, 1 node\n# Avg Latency(us)\n"), out);
        List<String[]> rows = rows(out);
        assertEquals(1, rows.size(), out);
        assertEquals(1, rows.get(0).length);
        assertTrue(NUM.matcher(rows.get(0)[0]).matches() && Double.parseDouble(rows.get(0)[0]) > 0, out);
        assertTrue(Pattern.compile("(?m)^ +\\d+\\.\\d\\d$").matcher(out).find());
    }

    @Test
    void reduceEverythingOnArraysWithCsv(@TempDir Path dir) throws Exception {
        Path csv = dir.resolve("reduce.csv");
        String out = ok(ThreadJob.run(2, Kind.REDUCE, "-m", "4:32", "-i", "20", "-x", "2", "--jit-warmup", "50", "-c", "-f", "-z",
                "-l", "-k", "rotate", "-a", "arrays", "-T", "int,double", "--csv", csv.toString())).get(0).out();
        assertTrue(out.contains("# Datatype: MPI_INT.\n"), out);
        assertTrue(out.contains("# Datatype: MPI_DOUBLE.\n"), out);
        List<String[]> rows = rows(out);
        assertEquals(4 + 3, rows.size(), out); // int 4..32, double 8..32
        for (String[] r : rows) {
            assertEquals(9, r.length, out); // size avg min max iterations validation p50 p90 p99
            assertEquals("20", r[4]);
            assertEquals("Pass", r[5], out);
            assertTrue(Double.parseDouble(r[2]) <= Double.parseDouble(r[1]) && Double.parseDouble(r[1]) <= Double.parseDouble(r[3]), out);
        }
        List<String> lines = Files.readAllLines(csv);
        assertEquals("collective,ranks,nodes,backend,datatype,size_bytes,avg_us,min_us,max_us,iterations,validation,p50_us,p90_us,p99_us",
                lines.get(0));
        assertEquals(8, lines.size());
        assertTrue(lines.get(1).startsWith("reduce,2,1,sharp4j,MPI_INT,4,"), lines.get(1));
        assertTrue(lines.get(7).startsWith("reduce,2,1,sharp4j,MPI_DOUBLE,32,"), lines.get(7));
        assertTrue(lines.get(7).contains(",20,Pass,"), lines.get(7));
    }

    @Test
    void allreduceInPlaceOnBuffersAllTypes() {
        String out = ok(ThreadJob.run(2, Kind.ALLREDUCE, "-m", "4:4096", "-i", "10", "-x", "1", "--jit-warmup", "10", "-c", "-l",
                "-T", "int,long,float,double")).get(0).out();
        List<String[]> rows = rows(out);
        assertEquals(11 + 10 + 11 + 10, rows.size(), out);
        rows.forEach(r -> assertEquals("Pass", r[2], out));
    }

    @Test
    void reduceRootOutOfRangeFailsOnEveryRank() {
        List<ThreadJob.RankResult> rs = ThreadJob.run(2, Kind.REDUCE, "-k", "fixed:2", "-m", "4:4", "-i", "2");
        assertEquals(1, rs.get(0).exit());
        assertEquals(1, rs.get(1).exit());
        assertTrue(rs.get(0).err().contains("Root rank('-k') cannot be more than number of processes"), rs.get(0).err());
    }

    @Test
    void oneRankIsRefusedAsOmbDoes() {
        List<ThreadJob.RankResult> rs = ThreadJob.run(1, Kind.ALLREDUCE, "-m", "4:4");
        assertEquals(1, rs.get(0).exit());
        assertTrue(rs.get(0).err().contains("This test requires at least two processes"));
    }
}
