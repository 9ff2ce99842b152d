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

    /**
     * osu_barrier's table runs after the harness's dry pass (Osu.harnessWarmup: the row's loop twice,
     * dropped), as the other benchmarks' tables do: without it the timing loop and the block statistics
     * were compiled during the row's own calls. Counted on rank 0: the row alone is 100 timed + 10
     * skipped barriers (plus the blocks' lining up); with the dry pass at least three times that on
     * top of the JIT warm-up; with {@code --jit-warmup 0} neither.
     */
    @Test
    void barrierTableRunsAfterTheHarnessDryPass() {
        for (int warm : new int[] {40, 0}) {
            java.util.concurrent.atomic.AtomicLong calls = new java.util.concurrent.atomic.AtomicLong();
            ok(ThreadJob.run(2, Kind.BARRIER, b -> new ThreadJob.Delegating(b) {
                @Override
                public void barrier() {
                    if (b.rank() == 0) {
                        calls.incrementAndGet();
                    }
                    super.barrier();
                }
            }, "-i", "100", "-x", "10", "--jit-warmup", Integer.toString(warm)));
            long n = calls.get();
            if (warm > 0) {
                assertTrue(n >= 3 * 110 + warm, "barriers on rank 0 with the dry pass: " + n);
            } else {
                assertTrue(n >= 110 && n < 2 * 110, "barriers on rank 0 without warm-ups: " + n);
            }
        }
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

    /**
     * --compare tune=RULES on thread ranks: a second communicator over the same bootstrap runs the rules (the
     * engine's choice says so), every row of both sides validates, and the compared columns are named by the kind.
     */
    @Test
    void compareWithOtherTuningRunsTheRulesOnASecondCommunicator() {
        String rules = "allreduce:0-inf:tiled";
        java.util.concurrent.atomic.AtomicReference<org.sharp4j.tuning.IntraNodeAlgorithm> mine = new java.util.concurrent.atomic.AtomicReference<>();
        java.util.concurrent.atomic.AtomicReference<org.sharp4j.tuning.IntraNodeAlgorithm> theirs = new java.util.concurrent.atomic.AtomicReference<>();
        List<ThreadJob.RankResult> rs = ThreadJob.runPairs(2, Kind.ALLREDUCE, (a, b) -> {
            mine.set(a.communicator().engine().algorithm(org.sharp4j.tuning.Collective.ALLREDUCE, 64));
            theirs.set(b.communicator().engine().algorithm(org.sharp4j.tuning.Collective.ALLREDUCE, 64));
        }, "--compare", "tune=" + rules, "--blocks", "4", "-m", "8:64", "-i", "40", "-x", "4", "--jit-warmup", "50", "-c");
        String out = ok(rs).get(0).out();
        assertEquals(org.sharp4j.tuning.IntraNodeAlgorithm.TILED, theirs.get(), "the compared communicator runs the rules");
        assertTrue(mine.get() != org.sharp4j.tuning.IntraNodeAlgorithm.TILED, "the run's own does not: " + mine.get());
        assertTrue(out.contains("# sharp4j port: library sharp4j vs sharp4j tune " + rules + ", 2 ranks"), out);
        assertTrue(out.contains("Tune Avg Latency(us)") && out.contains("Ratio(sharp4j/Tune)"), out);
        List<String[]> rows = rows(out);
        assertEquals(4, rows.size(), out);
        for (String[] r : rows) {
            assertEquals(6, r.length, out); // size avg validation | avg validation ratio
            assertEquals("Pass", r[2], out);
            assertEquals("Pass", r[4], out);
            assertTrue(Double.parseDouble(r[5]) > 0, out);
        }
    }

    /**
     * The blocks alternate (A B, B A, ...) and the ratio is the median of the blocks' ratios: two fake
     * backends whose calls take 20 and 60 us give about 1/3 whatever one slow block does.
     */
    @Test
    void blocksAlternateAndTheRatioIsTheMedianOfTheBlocksRatios() {
        List<String> order = new ArrayList<>();
        Backend a = new Timed("a", 20_000, order);
        Backend b = new Timed("b", 60_000, order);
        OsuOptions o = OsuOptions.parse(Kind.BARRIER, new String[] {"--compare", "builtin", "--blocks", "4", "-i", "40", "-x", "4"},
                System.out, System.err, false).options;
        Osu.Measured m = Osu.measure(o, List.of(a, b), null, 0, 40, 4);
        List<String> runs = new ArrayList<>();
        for (String s : order) {
            if (runs.isEmpty() || !runs.get(runs.size() - 1).equals(s)) {
                runs.add(s);
            }
        }
        // blocks A B | B A | A B | B A: runs a, b b, a a, b b, a
        assertEquals(List.of("a", "b", "a", "b", "a"), runs);
        // per block a barrier before and after its calls; calls: 4 skipped + 10 timed in the first block, then 1 + 10
        assertEquals((1 + 14 + 1) + 3 * (1 + 11 + 1), order.stream().filter("a"::equals).count(), order.toString());
        assertEquals(1.0 / 3, m.ratio(), 0.08);
        assertEquals(40, m.stats()[0].iterations());
    }

    /** A backend of one rank whose barrier (the timed call of osu_barrier) spins for a fixed time. */
    static final class Timed implements Backend {
        final String name;
        final long nanos;
        final List<String> log;

        Timed(String name, long nanos, List<String> log) {
            this.name = name;
            this.nanos = nanos;
            this.log = log;
        }

        @Override public String name() { return name; }
        @Override public int rank() { return 0; }
        @Override public int size() { return 1; }

        @Override
        public void barrier() {
            log.add(name);
            long end = System.nanoTime() + nanos;
            while (System.nanoTime() < end) {
                Thread.onSpinWait();
            }
        }

        @Override public void allreduce(Buffers b, int count, boolean inPlace) { throw new UnsupportedOperationException(); }
        @Override public void reduce(Buffers b, int count, int root, boolean inPlace) { throw new UnsupportedOperationException(); }

        @Override
        public void reduceToZero(double[] in, double[] out, StatOp op) {
            System.arraycopy(in, 0, out, 0, in.length);
        }

        @Override public int allreduceSum(int v) { return v; }
        @Override public void close() { }
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
