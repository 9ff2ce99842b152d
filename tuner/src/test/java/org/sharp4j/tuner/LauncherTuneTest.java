package org.sharp4j.tuner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sharp4j.testkit.Procs;
import org.sharp4j.tuning.Collective;
import org.sharp4j.tuning.CompiledTable;
import org.sharp4j.tuning.TuningTable;

/**
 * {@code bin/sharp4j tune} on the embedded launcher (the command line started alone, as bin/sharp4j
 * starts it): at 2 simulated nodes x 1 rank over UCX (inter-node candidates only), then at 1 node x 2
 * ranks into the same file: one table with both sections; {@code sharp4j info} with it shows the
 * 2-node rules in force as measured on this cluster and the built-in ones as built in.
 */
class LauncherTuneTest {
    static Procs.Result cli(List<String> props, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(Procs.java(), "-Xmx256m", "-cp", Procs.join(Procs.classPath())));
        cmd.addAll(props);
        cmd.add("org.sharp4j.tuner.Sharp4jCli");
        cmd.addAll(List.of(args));
        return Procs.run(cmd, Map.of("UCX_LOG_LEVEL", "error"), 240);
    }

    @Test
    void twoShapesMergeIntoOneTableThatInfoShowsAsMeasured(@TempDir Path dir) throws Exception {
        Path table = dir.resolve("tuned.txt");
        List<String> ucx = List.of("-Dsharp4j.internode=ucx", "-Dsharp4j.ucx.tls=tcp");
        String[] tiny = {"--quick", "--collectives", "allreduce,barrier", "--sizes", "8", "--radices", "2", "--inter-radices", "2",
            "--iterations", "20", "--max-rounds", "2", "--budget", "60s", "-o", table.toString()};
        List<String> a = new ArrayList<>(List.of("tune", "-np", "2", "--nodes", "2"));
        a.addAll(List.of(tiny));
        Procs.Result r = cli(ucx, a.toArray(new String[0]));
        assertEquals(0, r.exit(), r::toString);
        assertTrue(r.err().contains("2 rank(s), 2 node(s), 1 rank(s) per node; phase 3: UCX"), r::toString);
        assertTrue(r.err().contains("one rank per node: no intra-node candidates"), r::toString);
        a = new ArrayList<>(List.of("tune", "-np", "2"));
        a.addAll(List.of(tiny));
        r = cli(List.of(), a.toArray(new String[0]));
        assertEquals(0, r.exit(), r::toString);
        assertTrue(r.err().contains("one node: no inter-node candidates"), r::toString);
        List<String> lines = Files.readAllLines(table);
        assertTrue(lines.contains("[nodes=1:ppn=2:measured]") && lines.contains("[nodes=2:ppn=1:measured]"), lines::toString);

        CompiledTable two = TuningTable.builtIn().withFile(table, "test").compile(2, 1);
        String inter = two.interAlgorithm(Collective.ALLREDUCE, 8).key() + " radix=" + two.interRadix(Collective.ALLREDUCE, 8);
        List<String> withTable = new ArrayList<>(ucx);
        withTable.add("-Dsharp4j.tune.file=" + table);
        Procs.Result info = cli(withTable, "info", "-np", "2", "--nodes", "2");
        assertEquals(0, info.exit(), info::toString);
        // the segment holding 8 B (it starts at 0, or at 1 when the barrier's spine rule took 0-1)
        assertTrue(info.out().matches("(?s).*\\n +allreduce inter [01]-[^\\n]* " + inter + " +<- " + java.util.regex.Pattern.quote(table.toString())
                + ":\\d+: [^\\n]*\\[measured on this cluster\\]\\n.*"), info::toString);
        assertTrue(info.out().matches("(?s).*\\n +allreduce intra 0-[^\\n]*<- built-in: [^\\n]*\\[built in\\]\\n.*"), info::toString);
    }

    /** Bad options are refused by the command line itself, naming the option, before any rank starts (no file written). */
    @Test
    void badOptionsAreRefusedBeforeAnyRankStarts(@TempDir Path dir) throws Exception {
        Path table = dir.resolve("t.txt");
        String[][] bad = {{"--radices", "1"}, {"--inter-radices", "2,9"}, {"--sizes", "8,lots"}, {"--budget", "soon"},
            {"--collectives", "allgather"}, {"--pipelines", "1,9"}};
        String[] says = {"--radices: tree radices are 2..64, got 1", "--inter-radices: the host path takes radices 2..8, got 9",
            "--sizes: not a size: 'lots'", "--budget must be a duration like 10m, 90s or 1h, got 'soon'",
            "--collectives: unknown collective 'allgather'", "--pipelines: SHARP pipeline depths are 1..8, got 9"};
        for (int i = 0; i < bad.length; i++) {
            java.io.StringWriter err = new java.io.StringWriter();
            picocli.CommandLine cl = new picocli.CommandLine(new org.sharp4j.tuner.Sharp4jCli());
            cl.setErr(new java.io.PrintWriter(err, true));
            int rc = cl.execute("tune", "-o", table.toString(), bad[i][0], bad[i][1]);
            assertEquals(2, rc, err::toString);
            assertTrue(err.toString().contains("sharp4j tune: " + says[i]), err::toString);
            assertTrue(!Files.exists(table) && !Files.exists(Path.of(table + ".csv")), "nothing written");
        }
    }

    /** A state file that is not the tuner's is refused on every rank before anything is measured, and left as it was. */
    @Test
    void aForeignStateFileStopsEveryRankAtOnce(@TempDir Path dir) throws Exception {
        Path table = dir.resolve("t.txt");
        Path csv = Files.write(Path.of(table + ".csv"), List.of("a,b", "1,2"));
        Procs.Result r = cli(List.of(), "tune", "-np", "2", "--quick", "-o", table.toString());
        assertTrue(r.exit() != 0, r::toString);
        assertTrue(r.err().contains("sharp4j tune: rank 0: " + csv + " is not a sharp4j tune CSV"), r::toString);
        assertTrue(!r.err().contains("\tat "), "a message, not a stack trace: " + r);
        assertEquals(List.of("a,b", "1,2"), Files.readAllLines(csv));
        assertTrue(!Files.exists(table));
    }
}
