package org.sharp4j.tuner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sharp4j.testkit.Procs;
import org.sharp4j.tuning.Algorithm;
import org.sharp4j.tuning.Collective;
import org.sharp4j.tuning.CompiledTable;
import org.sharp4j.tuning.TuningTable;

/**
 * {@code sharp4j tune} inside a job started by {@code mpirun} (PMIx bootstrap, every rank runs the
 * command line's tune), with 2 simulated nodes of 2 ranks and UCX between them, a tiny sweep under
 * a budget: it writes a measured section with inter-node rules and a plot; the same command again
 * measures nothing (resumed from the CSV); {@code Info} under mpirun with the table shows the rules
 * in force as measured. Skipped, saying why, without mpirun; failed instead with {@code CI=true}.
 */
class MpirunTuneTest {
    static Procs.Result mpirun(Procs.MpiEnv env, int np, List<String> props, String main, String... args) throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(env.mpirun().toString());
        cmd.addAll(Procs.words(env.mpirunFlags()));
        cmd.addAll(List.of("-np", Integer.toString(np), Procs.java(), "-cp", Procs.join(Procs.classPath())));
        cmd.addAll(Procs.words(env.javaOpts()));
        cmd.add("-Xmx256m");
        cmd.addAll(props);
        cmd.add(main);
        cmd.addAll(List.of(args));
        return Procs.run(cmd, Map.of("UCX_LOG_LEVEL", "error"), 240);
    }

    @Test
    void tuneUnderMpirunWritesResumesAndIsReadBack(@TempDir Path dir) throws Exception {
        Procs.MpiEnv env = Procs.mpiEnv();
        if (env.mpirun() == null) {
            String why = "mpirun is not on PATH: skipping sharp4j tune under mpirun (run .ci/setup-mpi.sh)";
            if ("true".equalsIgnoreCase(System.getenv("CI"))) {
                fail("CI=true, so the tuner must run under mpirun, but: " + why);
            }
            assumeTrue(false, why);
        }
        List<String> props = List.of("-Dsharp4j.topology.nodes=2", "-Dsharp4j.internode=ucx", "-Dsharp4j.ucx.tls=tcp");
        Path table = dir.resolve("tuned.txt");
        Path png = dir.resolve("tuned.png");
        String[] tune = {"tune", "-o", table.toString(), "--plot", png.toString(), "--quick", "--collectives", "allreduce,barrier",
            "--sizes", "8,4k", "--radices", "2", "--inter-radices", "2", "--iterations", "30", "--max-rounds", "2", "--budget", "90s"};
        Procs.Result r = mpirun(env, 4, props, "org.sharp4j.tuner.Sharp4jCli", tune);
        assertEquals(0, r.exit(), r::toString);
        assertTrue(r.err().contains("sharp4j tune: 4 rank(s), 2 node(s), 2 rank(s) per node; phase 3: UCX"), r::toString);
        List<Measurement> ms = TuneCsv.read(TuneCsv.of(table));
        // intra: tree:radix=2, exchange (2 sizes + barrier each), tiled (2 sizes); inter: knomial:radix=2 (2 + barrier), sra:radix=2 (2)
        assertEquals(13, ms.size(), ms::toString);
        assertTrue(ms.stream().allMatch(m -> m.nodes() == 2 && m.ppn() == 2), ms::toString);
        assertTrue(ms.stream().anyMatch(m -> m.layer().equals("inter") && m.candidate().equals("sra:radix=2")), ms::toString);
        List<String> lines = Files.readAllLines(table);
        assertTrue(lines.contains("[nodes=2:ppn=2:measured]"), lines::toString);
        assertTrue(Files.size(png) > 0);

        assertTrue(ms.stream().allMatch(m -> m.passes() == 2), "--quick: 2 passes: " + ms);
        assertEquals(1 + 26, Files.readAllLines(TuneCsv.of(table)).size(), "a row per point and pass");

        // the same command again: resumed; only the inter-node barrier is measured again, in both passes
        // (the spine the data candidates run on is chosen from it), its rows appended and the later ones kept
        Procs.Result again = mpirun(env, 4, props, "org.sharp4j.tuner.Sharp4jCli", tune);
        assertEquals(0, again.exit(), again::toString);
        assertTrue(again.err().contains("resuming: 24 of 26 point-pass(es) already measured"), again::toString);
        assertEquals(1 + 26 + 2, Files.readAllLines(TuneCsv.of(table)).size(), "two rows added");
        assertEquals(13, TuneCsv.read(TuneCsv.of(table)).size(), "one measurement per point");

        // read back: the job's ranks run with the table, and info shows the rules in force as measured
        CompiledTable expect = TuningTable.builtIn().withFile(table, "test").compile(2, 2);
        Algorithm at8 = expect.interAlgorithm(Collective.ALLREDUCE, 8);
        List<String> withTable = new ArrayList<>(props);
        withTable.add("-Dsharp4j.tune.file=" + table);
        Procs.Result info = mpirun(env, 4, withTable, "org.sharp4j.launch.Info");
        assertEquals(0, info.exit(), info::toString);
        assertTrue(info.out().matches("(?s).*allreduce inter 8?[^\\n]*" + at8.key() + " radix=2 +<- " + java.util.regex.Pattern.quote(table.toString())
                + ":\\d+: [^\\n]*\\[measured on this cluster\\].*") || info.out().matches("(?s).*allreduce inter 0-[^\\n]*"
                + at8.key() + " radix=2 +<- " + java.util.regex.Pattern.quote(table.toString()) + ":\\d+: [^\\n]*\\[measured on this cluster\\].*"),
                info::toString);
        assertTrue(info.out().contains("tuning sources (lowest precedence first): built-in < table file " + table), info::toString);
    }
}
