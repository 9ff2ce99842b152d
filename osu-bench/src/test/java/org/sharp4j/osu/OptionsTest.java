package org.sharp4j.osu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class OptionsTest {
    /** Output of one parse or run: exit code and the two streams. */
    record Result(int exit, String out, String err, OsuOptions options) {
    }

    static Result parse(Kind kind, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        OsuOptions.Parsed p;
        try (PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
                PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            p = OsuOptions.parse(kind, args, o, e, true);
        }
        return new Result(p.exitCode, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8), p.options);
    }

    static OsuOptions ok(Kind kind, String... args) {
        Result r = parse(kind, args);
        assertTrue(r.options() != null, () -> "parse failed: " + r.err());
        return r.options();
    }

    static void rejected(Kind kind, String expectInErr, String... args) {
        Result r = parse(kind, args);
        assertEquals(1, r.exit(), () -> String.join(" ", args) + " should be rejected");
        assertTrue(r.err().contains(expectInErr), () -> "stderr: " + r.err());
        assertTrue(r.out().contains("Usage: " + kind.program), () -> "usage on stdout as OMB: " + r.out());
    }

    @Test
    void defaultsFollowOmbBySize() {
        OsuOptions o = ok(Kind.ALLREDUCE);
        assertEquals(1000, o.iterationsFor(4));
        assertEquals(100, o.warmupFor(4));
        assertEquals(1000, o.iterationsFor(8192));
        assertEquals(100, o.warmupFor(8192));
        assertEquals(100, o.iterationsFor(16384));
        assertEquals(10, o.warmupFor(16384));
        assertEquals(1000, ok(Kind.BARRIER).iterationsFor(0));
        assertEquals(List.of(ElemType.FLOAT), o.types());
        assertFalse(o.full() || o.validation() || o.inPlace() || o.arrays() || o.needsMpi());
        assertEquals(0, o.percentiles().length);
        assertEquals(30000, o.jitWarmup());
    }

    @Test
    void theJitWarmupMakesAllItsCallsWhateverTheSizes() {
        // 64 KiB-16 MiB of floats: the 64 MiB cap per size leaves most of the 30,000 calls out, and the
        // backend's call path stayed below C2's threshold until the first rows; the rest go with one element
        List<Integer> large = ok(Kind.REDUCE, "-m", "65536:16777216").counts(ElemType.FLOAT);
        int[] plan = Osu.warmupPlan(30000, large, 4);
        assertEquals(large.size() + 1, plan.length);
        long calls = plan[large.size()];
        for (int k = 0; k < large.size(); k++) {
            long bytes = 4L * large.get(k);
            assertTrue(plan[k] == 10 || plan[k] >= 10 && plan[k] * bytes <= 64L << 20, "size " + bytes + ": " + plan[k]);
            calls += 2L * plan[k];
        }
        assertEquals(30000, calls);
        assertTrue(plan[large.size()] > 20000, "one-element calls: " + plan[large.size()]);
        // small sizes: the spread makes the calls, the rest is rounding
        List<Integer> small = ok(Kind.REDUCE, "-m", "4:4096").counts(ElemType.FLOAT);
        int[] p = Osu.warmupPlan(30000, small, 4);
        long spread = 0;
        for (int k = 0; k < small.size(); k++) {
            assertEquals(30000 / small.size() / 2, p[k]);
            spread += 2L * p[k];
        }
        assertEquals(30000 - spread, p[small.size()]);
        assertTrue(p[small.size()] < 2 * small.size());
        // fewer calls asked for than the per-size minimum: no top-up
        assertEquals(0, Osu.warmupPlan(50, large, 4)[large.size()]);
    }

    @Test
    void givenIterationsApplyToAllSizes() {
        OsuOptions o = ok(Kind.ALLREDUCE, "-i", "50", "-x", "5");
        assertEquals(50, o.iterationsFor(4));
        assertEquals(50, o.iterationsFor(1 << 20));
        assertEquals(5, o.warmupFor(4));
        assertEquals(5, o.warmupFor(1 << 20));
        OsuOptions onlyI = ok(Kind.ALLREDUCE, "--iterations=7");
        assertEquals(7, onlyI.iterationsFor(1 << 20));
        assertEquals(10, onlyI.warmupFor(1 << 20));
    }

    @Test
    void messageSizes() {
        assertEquals(List.of(8L, 16L, 32L, 64L), ok(Kind.ALLREDUCE, "-m", "8:64").sizes(ElemType.FLOAT));
        assertEquals(List.of(8L, 16L, 32L, 64L), ok(Kind.ALLREDUCE, "-m", "8:64").sizes(ElemType.DOUBLE));
        assertEquals(List.of(1, 2, 4, 8), ok(Kind.ALLREDUCE, "-m", "8:64").counts(ElemType.DOUBLE));
        // default 1 B .. 1 MiB, smaller than one element rounds up to one element
        List<Long> floats = ok(Kind.ALLREDUCE).sizes(ElemType.FLOAT);
        assertEquals(4L, floats.get(0));
        assertEquals(1L << 20, floats.get(floats.size() - 1));
        assertEquals(19, floats.size());
        assertEquals(21, ok(Kind.ALLREDUCE).sizes(ElemType.CHAR).size());
        assertEquals(List.of(8L, 16L), ok(Kind.ALLREDUCE, "-m", "1:16").sizes(ElemType.DOUBLE));
        assertEquals(List.of(), ok(Kind.ALLREDUCE, "-m", "1:4").sizes(ElemType.DOUBLE));
        // OMB's forms: MAX, MIN:MAX, MIN:
        assertEquals(List.of(4L, 8L, 16L, 32L, 64L, 128L), ok(Kind.ALLREDUCE, "-m", "128").sizes(ElemType.INT));
        OsuOptions minOnly = ok(Kind.ALLREDUCE, "-m", "512:");
        assertEquals(512, minOnly.minSize());
        assertEquals(1 << 20, minOnly.maxSize());
        assertEquals(List.of(1024L, 2048L), ok(Kind.ALLREDUCE, "--message-size=1k:2k").sizes(ElemType.LONG));
    }

    @Test
    void typesRootTailsApi() {
        OsuOptions o = ok(Kind.REDUCE, "-T", "int,mpi_double", "-T", "LONG", "-k", "rotate", "-z", "-a", "arrays", "-l", "-c", "-f");
        assertEquals(List.of(ElemType.INT, ElemType.DOUBLE, ElemType.LONG), o.types());
        assertTrue(o.rotateRoot());
        assertEquals(3, o.rootFor(7, 4));
        assertArrayEquals(new int[] {50, 90, 99}, o.percentiles());
        assertTrue(o.arrays() && o.inPlace() && o.validation() && o.full());
        OsuOptions fixed = ok(Kind.REDUCE, "-k", "fixed:1", "-z95,5");
        assertEquals(1, fixed.rootFor(7, 4));
        assertArrayEquals(new int[] {95, 5}, fixed.percentiles());
        assertEquals(List.of(ElemType.values()), ok(Kind.ALLREDUCE, "-T", "all").types());
        assertTrue(ok(Kind.ALLREDUCE, "--compare", "mpi").compareMpi());
        assertTrue(ok(Kind.ALLREDUCE, "--backend", "mpi").mpiBackend());
    }

    @Test
    void unknownOptionPrintsUsageAndExits1() {
        rejected(Kind.ALLREDUCE, "Unknown option: '-q'", "-q");
        rejected(Kind.ALLREDUCE, "Unknown option", "--bogus");
        rejected(Kind.ALLREDUCE, "Unknown options: '-k', 'rotate'", "-k", "rotate"); // -k is reduce's only, as in OMB
        rejected(Kind.BARRIER, "Unknown option: '-c'", "-c"); // OMB's barrier has no validation
        rejected(Kind.BARRIER, "Unknown option", "-T", "int");
    }

    /** OMB 7.4's options that the port does not implement run anyway, with exactly one warning line naming them. */
    @Test
    void ombOnlyOptionsAreIgnoredWithOneWarningLine() {
        Result r = parse(Kind.ALLREDUCE, "-M", "1073741824", "-f", "-u", "3", "-G", "png", "-P", "PAPI_L1_DCM:/tmp/p", "-I",
                "-d", "cuda", "-a", "32", "-clog:/tmp/v", "-m", "8:16");
        assertEquals(0, r.exit(), r::toString);
        assertEquals("", r.out());
        assertEquals("osu_allreduce: warning: ignoring OMB options this port does not implement: -M 1073741824 -u 3 -G png "
                + "-P PAPI_L1_DCM:/tmp/p -I -d cuda -a 32 -clog:/tmp/v" + System.lineSeparator(), r.err());
        OsuOptions o = r.options();
        assertTrue(o.full() && o.validation(), "the implemented options still apply");
        assertFalse(o.arrays(), "-a 32 is OMB's array size, not the port's -a arrays");
        assertEquals(List.of(8L, 16L), o.sizes(ElemType.FLOAT));
        assertEquals(List.of("-M 1073741824", "-u 3", "-G png", "-P PAPI_L1_DCM:/tmp/p", "-I", "-d cuda", "-a 32", "-clog:/tmp/v"),
                o.ignoredOptions());

        Result b = parse(Kind.BARRIER, "--mem-limit=1G", "-a", "16", "--session");
        assertEquals(0, b.exit(), b::toString);
        assertEquals("osu_barrier: warning: ignoring OMB options this port does not implement: -M 1G -a 16 -I" + System.lineSeparator(), b.err());

        Result plain = parse(Kind.REDUCE, "-c", "-a", "arrays", "-f");
        assertEquals("", plain.err(), "no warning without OMB-only options");
        assertTrue(plain.options().arrays() && plain.options().validation());

        Result quiet = parse(Kind.REDUCE, "-I");
        assertTrue(quiet.options() != null);
        OsuOptions.Parsed other = OsuOptions.parse(Kind.REDUCE, new String[] {"-I"}, new PrintStream(new ByteArrayOutputStream()),
                new PrintStream(new ByteArrayOutputStream()) {
                    @Override
                    public void println(String x) {
                        throw new AssertionError("rank != 0 must not warn: " + x);
                    }
                }, false);
        assertTrue(other.run());
    }

    @Test
    void badValuesExit1() {
        rejected(Kind.ALLREDUCE, "Invalid Message Size", "-m", "0:8");
        rejected(Kind.ALLREDUCE, "Invalid Message Size", "-m", "64:8");
        rejected(Kind.ALLREDUCE, "Invalid Message Size", "-m", "abc");
        rejected(Kind.ALLREDUCE, "Invalid Number of Iterations", "-i", "0");
        rejected(Kind.ALLREDUCE, "Invalid value for option '--iterations'", "-i", "many");
        rejected(Kind.ALLREDUCE, "Invalid Number of Warmup Iterations", "-x", "-1");
        rejected(Kind.ALLREDUCE, "Invalid type", "-T", "complex");
        rejected(Kind.REDUCE, "Invalid root rank", "-k", "fixed:x");
        rejected(Kind.REDUCE, "Invalid root rank", "-k", "random");
        rejected(Kind.ALLREDUCE, "Percentile range", "-z101");
        rejected(Kind.ALLREDUCE, "Invalid API", "-a", "heap");
        rejected(Kind.ALLREDUCE, "Invalid backend", "--backend", "ucx");
        rejected(Kind.ALLREDUCE, "drop --backend mpi", "--backend", "mpi", "--compare", "mpi");
        rejected(Kind.ALLREDUCE, "--compare takes mpi, builtin, table=FILE or tune=RULES, got 'openmpi'", "--compare", "openmpi");
        rejected(Kind.ALLREDUCE, "no-such-table.txt", "--compare", "table=no-such-table.txt");
        rejected(Kind.ALLREDUCE, "--compare tune", "--compare", "tune=allreduce:0-inf:bogus");
        rejected(Kind.ALLREDUCE, "give --compare too", "--blocks", "4");
        rejected(Kind.ALLREDUCE, "Invalid number of blocks", "--compare", "builtin", "--blocks", "0");
    }

    /** --compare against sharp4j with other tuning: the kinds, their column prefixes, and the blocks' defaults. */
    @Test
    void compareSharp4jConfigurations(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        assertEquals(1, ok(Kind.ALLREDUCE, "--compare", "mpi").blocks(), "against MPI: OMB's loop twice, the ratio of the averages");
        assertEquals(1, ok(Kind.ALLREDUCE).blocks());
        OsuOptions b = ok(Kind.ALLREDUCE, "--compare", "builtin");
        assertEquals(Comparison.Source.BUILTIN, b.comparison().source());
        assertEquals(10, b.blocks());
        assertTrue(!b.compareMpi() && !b.needsMpi());
        assertEquals("sharp4j vs sharp4j built-in", b.library());
        java.nio.file.Path t = java.nio.file.Files.write(dir.resolve("t.txt"), List.of("[nodes=1]", "allreduce:0-inf:tiled"));
        OsuOptions f = ok(Kind.REDUCE, "--compare", "table=" + t, "--blocks", "4");
        assertEquals(new Comparison(Comparison.Source.TABLE, t.toString()), f.comparison());
        assertEquals(4, f.blocks());
        assertEquals("Table", f.comparison().prefix());
        OsuOptions r = ok(Kind.BARRIER, "--compare", "tune=barrier:0-inf:tree:radix=4");
        assertEquals("tune", r.comparison().source().name().toLowerCase(java.util.Locale.ROOT));
        assertEquals("barrier:0-inf:tree:radix=4", r.comparison().arg());
    }

    @Test
    void helpAndVersionExit0() {
        Result h = parse(Kind.REDUCE, "-h");
        assertEquals(0, h.exit());
        assertTrue(h.out().startsWith("Usage: osu_reduce"), h.out());
        assertTrue(h.out().contains("--root-rank"));
        Result v = parse(Kind.ALLREDUCE, "-v");
        assertEquals(0, v.exit());
        String nl = System.lineSeparator();
        assertEquals("# OSU MPI Allreduce Latency Test v7.4" + nl + "# sharp4j port: library sharp4j" + nl, v.out());
        assertEquals("# OSU MPI Barrier Latency Test v7.4", ok(Kind.BARRIER, "--compare", "mpi").title());
        assertEquals("sharp4j vs Open MPI Java", ok(Kind.BARRIER, "--compare", "mpi").library());
        assertEquals("Open MPI Java", ok(Kind.REDUCE, "--backend", "mpi").library());
    }

    @Test
    void charIsRejectedForSharp4jBeforeAnyCollective() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = Osu.run(Kind.ALLREDUCE, new String[] {"-T", "char"}, new PrintStream(new ByteArrayOutputStream()),
                new PrintStream(err, true, StandardCharsets.UTF_8), o -> {
                    throw new AssertionError("no backend may be opened");
                });
        assertEquals(1, exit);
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("sharp4j has no 1-byte type"), err.toString(StandardCharsets.UTF_8));
        assertTrue(ok(Kind.ALLREDUCE, "-T", "char", "--backend", "mpi").types().contains(ElemType.CHAR));
    }
}
