package org.sharp4j.tuner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sharp4j.Config;
import org.sharp4j.ThreadRanks;
import org.sharp4j.bootstrap.Bootstrap;
import org.sharp4j.bootstrap.ThreadBootstrap;
import org.sharp4j.launch.Info;
import org.sharp4j.tuning.Collective;
import org.sharp4j.tuning.CompiledTable;
import org.sharp4j.tuning.IntraNodeAlgorithm;
import org.sharp4j.tuning.Rule;
import org.sharp4j.tuning.RuleParser;

/** The tuner end to end on thread ranks, its table loaded by the hierarchy, and {@code sharp4j info}. */
class TunerAndInfoTest {
    /** Runs the tuner on {@code n} thread ranks; returns rank 0's result and collects the passes rank 0 hands its sink. */
    static Tuner.Result sweep(int n, Config base, Tuner.Options o, Set<String> done, List<Measurement.Pass> sink) throws Exception {
        List<Bootstrap> boots = ThreadBootstrap.group(n, 60_000);
        AtomicReference<Tuner.Result> result = new AtomicReference<>();
        List<Throwable> errors = new ArrayList<>();
        List<Thread> ts = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            Bootstrap b = boots.get(r);
            Thread t = new Thread(() -> {
                try {
                    Tuner.Result res = Tuner.run(b, base, o, b.rank() == 0 ? done : Set.of("rank 0's set is the one used"),
                            b.rank() == 0 ? sink::add : m -> {
                                throw new AssertionError("only rank 0 records");
                            }, b.rank() == 0 ? System.err : null);
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
        assertNotNull(result.get());
        return result.get();
    }

    static Tuner.Options tiny() {
        Tuner.Options o = Tuner.Options.quick();
        o.collectives = EnumSet.of(Collective.ALLREDUCE, Collective.BARRIER);
        o.sizes = new long[] {64, 32768};
        o.radices = new int[] {2};
        o.iterations = 50;
        o.warmup = 5;
        o.maxRounds = 2;
        o.budgetNanos = 120_000_000_000L;
        return o;
    }

    @Test
    void tinySweepWritesATableTheEngineThenUsesAndAResumedSweepMeasuresNothingAgain(@TempDir Path dir) throws Exception {
        Config base = Config.defaults().withWarmupRounds(1).withTimeoutNanos(60_000_000_000L);
        int n = 2;
        List<Measurement.Pass> sink = new ArrayList<>();
        Tuner.Options withChunk = tiny();
        withChunk.chunks = new long[] {4096};
        Tuner.Result res = sweep(n, base, withChunk, Set.of(), sink);
        // tree:radix=2, tiled, pipelined, cma_split and tiled:chunk=4k at 2 sizes for allreduce, exchange at 64 B (up to 4 KiB),
        // tree and exchange for barrier
        assertEquals(13, res.measurements.size(), res.measurements.toString());
        assertTrue(res.measurements.stream().anyMatch(m -> m.candidate().equals("tiled:chunk=4k") && m.bytes() == 32768), res.measurements.toString());
        assertTrue(res.measurements.stream().allMatch(m -> m.passes() == 2), res.measurements.toString());
        assertEquals(26, sink.size(), "each point in each of the 2 passes: " + sink);
        assertEquals(res.measurements, Measurement.overPassesByPoint(sink));
        assertEquals(26, res.total);
        // every point's pass 1 before any point's pass 2; each point measured on all its candidates together,
        // in the pass's order, and pass 2 starts one candidate further on
        List<String> order = new ArrayList<>();
        for (Measurement.Pass p : sink) {
            order.add(p.pass() + " " + Measurement.name(p.point().collective()) + " " + p.point().bytes() + " " + p.point().candidate());
        }
        assertEquals(List.of("1 allreduce 64 tree:radix=2", "1 allreduce 64 exchange", "1 allreduce 64 tiled", "1 allreduce 64 pipelined",
                "1 allreduce 64 cma_split", "1 allreduce 64 tiled:chunk=4k",
                "1 allreduce 32768 tree:radix=2", "1 allreduce 32768 tiled", "1 allreduce 32768 pipelined", "1 allreduce 32768 cma_split",
                "1 allreduce 32768 tiled:chunk=4k",
                "1 barrier 0 tree:radix=2", "1 barrier 0 exchange",
                "2 allreduce 64 exchange", "2 allreduce 64 tiled", "2 allreduce 64 pipelined", "2 allreduce 64 cma_split",
                "2 allreduce 64 tiled:chunk=4k", "2 allreduce 64 tree:radix=2",
                "2 allreduce 32768 tiled", "2 allreduce 32768 pipelined", "2 allreduce 32768 cma_split", "2 allreduce 32768 tiled:chunk=4k",
                "2 allreduce 32768 tree:radix=2",
                "2 barrier 0 exchange", "2 barrier 0 tree:radix=2"), order);
        assertFalse(res.budgetSpent);
        assertTrue(res.notes.stream().anyMatch(x -> x.contains("one node")), res.notes.toString());
        Path table = dir.resolve("table.txt");
        for (Measurement.Pass m : sink) {
            TuneCsv.append(TuneCsv.of(table), m);
        }
        List<Measurement> back = TuneCsv.read(TuneCsv.of(table));
        assertEquals(res.measurements.size(), back.size(), back.toString());
        for (int i = 0; i < back.size(); i++) { // the CSV reads back each point over its passes (4 decimals)
            Measurement a = res.measurements.get(i);
            Measurement b = back.get(i);
            assertEquals(a.key(), b.key());
            assertEquals(a.passes(), b.passes());
            assertEquals(a.rounds(), b.rounds());
            assertEquals(a.meanUs(), b.meanUs(), 1e-3);
            assertEquals(a.stderrUs(), b.stderrUs(), 1e-3);
        }
        TuneTable.write(table, TuneCsv.read(TuneCsv.of(table)), TuneTable.GUARD);
        List<String> lines = Files.readAllLines(table);
        assertTrue(lines.contains("[nodes=1:ppn=2:measured]"), lines.toString());
        List<Rule> rules = RuleParser.parseFile(table); // the written table parses
        assertTrue(rules.stream().allMatch(r -> r.minNodes() == 1 && r.maxNodes() == 1 && r.minPpn() == 2 && r.maxPpn() == 2
                && r.provenance() == Rule.Provenance.MEASURED), rules.toString());

        Properties p = new Properties();
        p.setProperty("sharp4j.tune.file", table.toString());
        p.setProperty("sharp4j.warmup", "1");
        List<TuneTable.Choice> choices = TuneTable.choose(res.measurements, TuneTable.GUARD);
        String at64 = choice(choices, Collective.ALLREDUCE, 64);
        String at32k = choice(choices, Collective.ALLREDUCE, 32768);
        AtomicReference<String> info = new AtomicReference<>();
        ThreadRanks.run(n, Config.fromProperties(p), comm -> {
            CompiledTable t = comm.engine().table();
            assertTrue(t.intraOrigin(Collective.ALLREDUCE, 64).startsWith(table.toString()), t.intraOrigin(Collective.ALLREDUCE, 64));
            assertEquals("measured on this cluster", t.intraProvenance(Collective.ALLREDUCE, 64));
            assertEquals(intra(at64), comm.engine().algorithm(Collective.ALLREDUCE, 64));
            assertEquals(intra(at32k), comm.engine().algorithm(Collective.ALLREDUCE, 32768));
            if (at32k.equals("tiled:chunk=4k")) {
                assertEquals(4096, t.chunkAt(Collective.ALLREDUCE, t.intraIndex(Collective.ALLREDUCE, 32768)));
            }
            String r = Info.report(comm);
            if (comm.rank() == 0) {
                info.set(r);
            }
        });
        assertTrue(info.get().matches("(?s).*allreduce +intra 0-[^ ]+ +" + at64.split(":")[0]
                + ".*<- " + java.util.regex.Pattern.quote(table.toString()) + ":\\d+: .*\\[measured on this cluster\\].*"), info.get());
        assertTrue(info.get().matches("(?s).*allreduce +inter .*\\[built in\\].*"), info.get());

        // the same sweep again with rank 0's state: every point is skipped, nothing is measured
        Set<String> done = new java.util.HashSet<>();
        for (Measurement.Pass m : TuneCsv.readPasses(TuneCsv.of(table))) {
            done.add(m.key());
        }
        List<Measurement.Pass> again = new ArrayList<>();
        Tuner.Result res2 = sweep(n, base, withChunk, done, again);
        assertEquals(0, res2.measurements.size());
        assertEquals(26, res2.skipped);
        assertTrue(again.isEmpty());

        // a sweep cut after pass 1: resumed with rank 0's state, it measures pass 2 of every point, nothing else
        Set<String> pass1 = new java.util.HashSet<>();
        for (Measurement.Pass m : sink) {
            if (m.pass() == 1) {
                pass1.add(m.key());
            }
        }
        List<Measurement.Pass> rest = new ArrayList<>();
        Tuner.Result res3 = sweep(n, base, withChunk, pass1, rest);
        assertEquals(13, res3.skipped);
        assertEquals(13, rest.size(), rest.toString());
        assertTrue(rest.stream().allMatch(x -> x.pass() == 2), rest.toString());
    }

    @Test
    void aSpentBudgetStopsEveryRankCleanly() throws Exception {
        Tuner.Options o = tiny();
        o.budgetNanos = 1; // spent before the first point
        List<Measurement.Pass> sink = new ArrayList<>();
        Tuner.Result res = sweep(2, Config.defaults().withWarmupRounds(1).withTimeoutNanos(60_000_000_000L), o, Set.of(), sink);
        assertTrue(res.budgetSpent);
        assertTrue(res.measurements.isEmpty() && sink.isEmpty());
    }

    /**
     * At a job of several nodes the intra-node candidates are measured on one communicator per node
     * (no phase 3): a node's bootstrap sees its own ranks only, in the job's allgathers, under a job id of
     * its own (two simulated nodes on one host must not share segments), and a point's figure is the
     * slowest node's.
     */
    @Test
    void intraNodeCandidatesAtSeveralNodesAreMeasuredPerNode() throws Exception {
        List<Bootstrap> boots = ThreadBootstrap.group(4, 30_000);
        List<Tuner.NodeBootstrap> nodes = new ArrayList<>();
        for (Bootstrap b : boots) {
            nodes.add(new Tuner.NodeBootstrap(b, b.rank() < 2 ? new int[] {0, 1} : new int[] {2, 3}, b.rank() < 2 ? 0 : 1));
        }
        assertEquals(1, nodes.get(3).rank());
        assertEquals(2, nodes.get(3).size());
        assertTrue(!nodes.get(0).jobId().equals(nodes.get(2).jobId()), "each node its own segments");
        List<byte[][]> got = new java.util.concurrent.CopyOnWriteArrayList<>(java.util.Collections.nCopies(4, (byte[][]) null));
        List<Measurement> worst = new java.util.concurrent.CopyOnWriteArrayList<>(java.util.Collections.nCopies(4, (Measurement) null));
        List<Thread> ts = new ArrayList<>();
        for (int r = 0; r < 4; r++) {
            int rank = r;
            Thread t = new Thread(() -> {
                got.set(rank, nodes.get(rank).allgather(new byte[] {(byte) (10 + rank)}));
                worst.set(rank, Tuner.slowestNode(boots.get(rank), new Measurement(2, 2, Collective.ALLREDUCE, "intra", "tiled", 8,
                        rank == 2 ? 5.0 : 1.0 + rank / 10.0, 0.1, 2, rank != 2)));
            });
            t.start();
            ts.add(t);
        }
        for (Thread t : ts) {
            t.join(30_000);
        }
        assertEquals(List.of(12, 13), java.util.Arrays.stream(got.get(2)).map(b -> (int) b[0]).toList());
        assertEquals(List.of(10, 11), java.util.Arrays.stream(got.get(1)).map(b -> (int) b[0]).toList());
        for (Measurement m : worst) {
            assertEquals(5.0, m.meanUs(), 0, "the slowest node's figure on every rank");
            assertFalse(m.stable());
        }

        // a sweep at 2 simulated nodes x 2 ranks: every rank gets through the per-node communicators
        Tuner.Options o = tiny();
        o.collectives = EnumSet.of(Collective.ALLREDUCE);
        List<Measurement.Pass> sink = new ArrayList<>();
        Tuner.Result res = sweep(4, Config.defaults().withSimulatedTopology(2, 0).withWarmupRounds(1).withTimeoutNanos(60_000_000_000L),
                o, Set.of(), sink);
        assertEquals(2, res.nodes);
        assertEquals(2, res.ppn);
        // tree:radix=2 and tiled at 64 B and 32 KiB, exchange at 64 B; not pipelined (one node only)
        assertEquals(5, res.measurements.size(), res.measurements.toString());
        assertTrue(res.measurements.stream().noneMatch(m -> m.candidate().equals("pipelined") || m.candidate().equals("direct")),
                res.measurements.toString());
        assertTrue(res.notes.stream().anyMatch(x -> x.contains("pipelined algorithm (one node only) are not candidates")), res.notes.toString());
        assertTrue(res.measurements.stream().allMatch(m -> m.layer().equals("intra") && m.nodes() == 2 && m.ppn() == 2 && m.passes() == 2),
                res.measurements.toString());
    }

    private static String choice(List<TuneTable.Choice> cs, Collective c, long bytes) {
        for (TuneTable.Choice ch : cs) {
            if (ch.collective() == c && ch.bytes() == bytes && ch.layer().equals(Measurement.INTRA)) {
                return ch.candidate();
            }
        }
        throw new AssertionError("no choice for " + c + " " + bytes + " in " + cs);
    }

    /** The algorithm a candidate's name runs ("tree:radix=2", "tiled:chunk=4k", "pipelined", ...). */
    private static IntraNodeAlgorithm intra(String cand) {
        String base = cand.split(":")[0];
        return base.equals("tree") ? IntraNodeAlgorithm.TREE : IntraNodeAlgorithm.valueOf(base.toUpperCase(java.util.Locale.ROOT));
    }

    /**
     * Every host-path call meets on the spine first, at the radix of a 0-byte allreduce, which the
     * written table takes from the barrier's winner: so the barrier candidates come first and
     * every data candidate is measured on the spine they chose, never on its own radix (a sweep
     * that coupled them chose reduce radix 2 at 3 hosts, which osu_reduce then found 1.2-2.2x
     * slower than the built-in radix 4 from 32 KiB up).
     */
    @Test
    void interNodeDataCandidatesRunOnTheSpineTheBarrierChose() {
        Tuner.Options o = new Tuner.Options();
        List<Tuner.Candidate> cs = Tuner.candidates(o, 3, 1, "UCX k-nomial", new ArrayList<>());
        int lastBarrier = -1;
        int firstData = Integer.MAX_VALUE;
        for (int i = 0; i < cs.size(); i++) {
            Tuner.Candidate c = cs.get(i);
            if (c.collectives().contains(Collective.BARRIER)) {
                lastBarrier = i;
                assertFalse(c.collectives().contains(Collective.ALLREDUCE), c + " measures the barrier alone");
                assertFalse(c.needsSpine(), c + " is a spine");
            } else {
                firstData = Math.min(firstData, i);
                assertTrue(c.needsSpine(), c + " runs on the chosen spine");
            }
        }
        assertTrue(lastBarrier >= 0 && lastBarrier < firstData, "barrier candidates first: " + cs);
        Tuner.Candidate sra = cs.stream().filter(c -> c.name().equals("sra:radix=3")).findFirst().orElseThrow();
        assertEquals("allreduce,reduce:0-inf:sra:radix=3#allreduce:0-1:knomial:radix=2", sra.forcing(2));
        assertEquals("allreduce,reduce:0-inf:sra:radix=3", sra.forcing(0), "no host-path winner: the table's own spine");
        org.sharp4j.tuning.TuningTable.builtIn().withOverride(sra.forcing(2), "test").compile(3, 1); // a valid override
    }

    @Test
    void sharpPipelineDepthsAreCandidatesAboveOneOperationUnlessThePropertyFixesTheDepth() {
        Tuner.Options o = new Tuner.Options();
        List<String> notes = new ArrayList<>();
        List<Tuner.Candidate> cs = Tuner.candidates(o, 4, 1, "SHARP (emulator)", notes);
        List<String> sharp = cs.stream().map(Tuner.Candidate::name).filter(n -> n.startsWith("sharp")).toList();
        assertEquals(List.of("sharp", "sharp:pipeline=1", "sharp:pipeline=2", "sharp:pipeline=8"), sharp, "4 is the plain sharp");
        Tuner.Candidate two = cs.stream().filter(c -> c.name().equals("sharp:pipeline=2")).findFirst().orElseThrow();
        assertEquals("allreduce,reduce:0-inf:sharp:pipeline=2", two.forcing(0));
        assertEquals(List.of(16384L, 65536L, 262144L, 1048576L, 4194304L, 16777216L),
                java.util.Arrays.stream(Tuner.sizes(o, two, Collective.ALLREDUCE)).boxed().toList(), "from pipelineMin (8 KiB) up");
        assertTrue(Tuner.candidates(o, 4, 1, "UCX k-nomial", new ArrayList<>()).stream().noneMatch(c -> c.name().startsWith("sharp")));
        System.setProperty("sharp4j.sharp.pipeline", "2");
        try {
            List<String> fixed = new ArrayList<>();
            assertEquals(List.of("sharp"), Tuner.candidates(o, 4, 1, "SHARP", fixed).stream().map(Tuner.Candidate::name)
                    .filter(n -> n.startsWith("sharp")).toList());
            assertTrue(fixed.stream().anyMatch(n -> n.contains("sharp4j.sharp.pipeline=2 overrides")), fixed.toString());
        } finally {
            System.clearProperty("sharp4j.sharp.pipeline");
        }
    }
}
