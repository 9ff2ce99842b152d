package org.sharp4j.tuning;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sharp4j.Config;
import org.sharp4j.ThreadRanks;
import org.sharp4j.bootstrap.Bootstrap;
import org.sharp4j.bootstrap.ThreadBootstrap;
import org.sharp4j.launch.Info;
import org.sharp4j.launch.TuneMain;
import org.sharp4j.launch.Tuner;

/** The tuner end to end on thread ranks, its table loaded by the hierarchy, and {@code sharp4j info}. */
class TunerAndInfoTest {
    @Test
    void tinySweepWritesATableTheEngineThenUses(@TempDir Path dir) throws Exception {
        Tuner.Options o = Tuner.Options.quick();
        o.collectives = EnumSet.of(Collective.ALLREDUCE, Collective.BARRIER);
        o.sizes = new long[] {64, 32768};
        o.radices = new int[] {2};
        o.iterations = 50;
        o.warmup = 5;
        o.maxRounds = 2;
        Config base = Config.defaults().withWarmupRounds(1).withTimeoutNanos(60_000_000_000L);
        int n = 2;
        List<Bootstrap> boots = ThreadBootstrap.group(n, 60_000);
        AtomicReference<Tuner.Result> result = new AtomicReference<>();
        List<Throwable> errors = new ArrayList<>();
        List<Thread> ts = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            Bootstrap b = boots.get(r);
            Thread t = new Thread(() -> {
                try {
                    Tuner.Result res = Tuner.run(b, base, o, b.rank() == 0 ? System.err : null);
                    if (b.rank() == 0) {
                        result.set(res);
                    }
                } catch (Throwable e) {
                    synchronized (errors) {
                        errors.add(e);
                    }
                }
            });
            t.setDaemon(true);
            t.start();
            ts.add(t);
        }
        for (Thread t : ts) {
            t.join(240_000);
        }
        assertTrue(errors.isEmpty(), errors.toString());
        Tuner.Result res = result.get();
        assertNotNull(res);
        // 2 candidates x 2 sizes for allreduce + 1 for barrier
        assertEquals(5, res.measurements.size());
        Path table = dir.resolve("table.txt");
        TuneMain.write(res, table, dir.resolve("table.csv"));
        assertTrue(Files.readAllLines(dir.resolve("table.csv")).get(0).startsWith("collective,candidate,bytes"));
        List<Rule> rules = RuleParser.parseFile(table); // the written table parses
        assertTrue(rules.stream().allMatch(r -> r.minNodes() == 1 && r.minPpn() == 2 && r.maxPpn() == 2), rules.toString());

        Properties p = new Properties();
        p.setProperty("sharp4j.tune.file", table.toString());
        p.setProperty("sharp4j.warmup", "1");
        String at64 = res.choice(Collective.ALLREDUCE, 64);
        String at32k = res.choice(Collective.ALLREDUCE, 32768);
        ThreadRanks.run(n, Config.fromProperties(p), comm -> {
            CompiledTable t = comm.engine().table();
            assertTrue(t.intraOrigin(Collective.ALLREDUCE, 64).startsWith(table.toString()), t.intraOrigin(Collective.ALLREDUCE, 64));
            assertEquals(at64.startsWith("tree") ? IntraNodeAlgorithm.TREE : IntraNodeAlgorithm.TILED,
                    comm.engine().algorithm(Collective.ALLREDUCE, 64));
            assertEquals(at32k.startsWith("tree") ? IntraNodeAlgorithm.TREE : IntraNodeAlgorithm.TILED,
                    comm.engine().algorithm(Collective.ALLREDUCE, 32768));
        });
        // a table that the tuner would write if tiled won at 64 B is obeyed too (the choice changes the algorithm)
        List<String> forced = new ArrayList<>(Files.readAllLines(table));
        forced.removeIf(l -> l.startsWith("allreduce"));
        forced.add("allreduce:0-inf:nodes=1:ppn=2:tiled");
        Files.write(table, forced);
        ThreadRanks.run(n, Config.fromProperties(p), comm -> {
            assertEquals(IntraNodeAlgorithm.TILED, comm.engine().algorithm(Collective.ALLREDUCE, 64));
            comm.allreduce(new double[8], new double[8], org.sharp4j.Op.SUM);
            assertEquals(1, comm.engine().calls(IntraNodeAlgorithm.TILED));
        });
    }

    @Test
    void infoWithoutSharpLibrary() {
        Config cfg = Config.defaults().withWarmupRounds(0).withSimulatedTopology(2, 1)
                .withTuneOverride("allreduce:0-64:tiled");
        AtomicReference<String> out = new AtomicReference<>();
        ThreadRanks.run(2, cfg, comm -> {
            String r = Info.report(comm);
            if (comm.rank() == 0) {
                out.set(r);
            }
        });
        String r = out.get();
        System.out.println(r);
        assertTrue(r.contains("2 rank(s), 2 node(s) (simulated)"), r);
        assertTrue(r.contains("node 1: 1 rank(s), 1 socket(s), node leader rank 1"), r);
        assertTrue(r.contains("SHARP: not found") && r.contains("the sharp-jni module is not on the class path")
                && r.contains("not initialised"), r);
        assertTrue(r.contains("UCX: not found") && r.contains("add the dependency org.sharp4j:sharp4j-fallback"), r);
        assertTrue(r.contains("add the dependency org.sharp4j:sharp4j-sharp-jni"), r);
        assertTrue(r.contains("inter-node phase in use: shared memory"), r);
        assertTrue(r.contains("override string (Config.withTuneOverride)"), r);
        assertTrue(r.matches("(?s).*allreduce +intra 0-64 +tiled chunk=slot +<- Config.withTuneOverride rule 1.*"), r);
        assertTrue(r.contains("effective settings"), r);
    }
}
