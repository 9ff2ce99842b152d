package org.sharp4j.tuning;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sharp4j.Config;
import org.sharp4j.Op;
import org.sharp4j.ThreadRanks;
import org.sharp4j.coll.Engine;

/** The tuning table decides the algorithm the engine runs, observed through its counters. */
class TableInEngineTest {
    static final Config BASE = Config.defaults().withWarmupRounds(2).withTimeoutNanos(60_000_000_000L);

    static void allreduceAndCheck(org.sharp4j.Communicator comm, int count) {
        double[] in = new double[count];
        double[] out = new double[count];
        double[] want = new double[count];
        for (int i = 0; i < count; i++) {
            in[i] = comm.rank() * 1000 + i;
            for (int r = 0; r < comm.size(); r++) {
                want[i] += r * 1000 + i;
            }
        }
        comm.allreduce(in, out, Op.SUM);
        assertArrayEquals(want, out);
    }

    @Test
    void defaultTableRunsTheExchangeFor64BytesAndTheTreeFor1k() {
        ThreadRanks.run(3, BASE, comm -> {
            Engine e = comm.engine();
            assertEquals(IntraNodeAlgorithm.EXCHANGE, e.algorithm(Collective.ALLREDUCE, 64));
            assertEquals(IntraNodeAlgorithm.TREE, e.algorithm(Collective.ALLREDUCE, 1024));
            allreduceAndCheck(comm, 8);
            allreduceAndCheck(comm, 128);
            comm.barrier();
            assertEquals(2, e.calls(IntraNodeAlgorithm.EXCHANGE));
            assertEquals(1, e.calls(IntraNodeAlgorithm.TREE));
            assertEquals(0, e.calls(IntraNodeAlgorithm.TILED));
        });
    }

    @Test
    void twoRanksOnOneNodeRunTheExchangeUpTo64KiB() {
        ThreadRanks.run(2, BASE, comm -> {
            Engine e = comm.engine();
            for (long bytes : new long[] {257, 1024, 16383}) {
                assertEquals(IntraNodeAlgorithm.EXCHANGE, e.algorithm(Collective.ALLREDUCE, bytes), bytes + " B Allreduce");
                assertEquals(IntraNodeAlgorithm.EXCHANGE, e.algorithm(Collective.REDUCE, bytes), bytes + " B Reduce");
            }
            // Allreduce up to 64 KiB - 1 (one slot: the auto slot of one socket is larger), the split cma one from 64 KiB
            for (long bytes : new long[] {16384, 16385, 32768, 65535}) {
                assertEquals(IntraNodeAlgorithm.EXCHANGE, e.algorithm(Collective.ALLREDUCE, bytes), bytes + " B Allreduce");
            }
            // (where reading the other process is cheap enough for two, PeerReadsTest sets the cost both ways)
            assertEquals(e.builtInPairSplitWhyNot() == null ? IntraNodeAlgorithm.CMA_SPLIT : IntraNodeAlgorithm.PIPELINED,
                    e.algorithm(Collective.ALLREDUCE, 65536));
            // from 16 KiB to 256 KiB the root reads the other rank's input from its process (cma), where it can and
            // that is cheap here (PeerReadsTest sets the cost both ways)
            IntraNodeAlgorithm cma = e.builtInCmaWhyNot() == null ? IntraNodeAlgorithm.CMA : IntraNodeAlgorithm.DIRECT;
            assertEquals(cma, e.algorithm(Collective.REDUCE, 16384));
            assertEquals(cma, e.algorithm(Collective.REDUCE, 262144));
            assertEquals(IntraNodeAlgorithm.DIRECT, e.algorithm(Collective.REDUCE, 262145));
            for (int count : new int[] {128, 2048, 6144, 8191}) { // 1, 16, 48 and 64 KiB - 8 of doubles, folded on both ranks
                allreduceAndCheck(comm, count);
            }
            assertEquals(0, e.calls(IntraNodeAlgorithm.TREE));
            assertEquals(0, e.calls(IntraNodeAlgorithm.TILED));
            assertEquals(4, e.calls(IntraNodeAlgorithm.EXCHANGE));
        });
    }

    @Test
    void overrideForcesTiledFor64BytesAndChunkApplies() {
        Config cfg = BASE.withTuneOverride("allreduce:0-128:tiled#allreduce:1k-inf:tiled:chunk=256");
        ThreadRanks.run(3, cfg, comm -> {
            Engine e = comm.engine();
            assertEquals(IntraNodeAlgorithm.TILED, e.algorithm(Collective.ALLREDUCE, 64));
            assertEquals(IntraNodeAlgorithm.EXCHANGE, e.algorithm(Collective.ALLREDUCE, 128));
            assertEquals(IntraNodeAlgorithm.TREE, e.algorithm(Collective.ALLREDUCE, 512));
            allreduceAndCheck(comm, 8);     // 64 B: tiled
            allreduceAndCheck(comm, 64);    // 512 B: tree
            allreduceAndCheck(comm, 1000);  // 8000 B in 256-byte chunks
            assertEquals(2, e.calls(IntraNodeAlgorithm.TILED));
            assertEquals(1, e.calls(IntraNodeAlgorithm.TREE));
        });
    }

    @Test
    void tableFileFromPropertiesIsUsed(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("table.txt");
        Files.writeString(f, "# forced\nallreduce:0-inf:ppn=2:tiled\n");
        Properties p = new Properties();
        p.setProperty("sharp4j.tune.file", f.toString());
        p.setProperty("sharp4j.warmup", "1");
        Config cfg = Config.fromProperties(p);
        ThreadRanks.run(2, cfg, comm -> {
            assertEquals(IntraNodeAlgorithm.TILED, comm.engine().algorithm(Collective.ALLREDUCE, 8));
            allreduceAndCheck(comm, 1);
            assertEquals(1, comm.engine().calls(IntraNodeAlgorithm.TILED));
        });
        // ppn=2 only: with 3 ranks on the node the built-in exchange applies
        ThreadRanks.run(3, cfg, comm -> assertEquals(IntraNodeAlgorithm.EXCHANGE, comm.engine().algorithm(Collective.ALLREDUCE, 8)));
    }

    @Test
    void legacyPropertiesStillWork() {
        Properties p = new Properties();
        p.setProperty("sharp4j.tiled.threshold", "100");
        p.setProperty("sharp4j.tree.radix", "3");
        Config cfg = Config.fromProperties(p);
        assertEquals(100, cfg.tuning().tiledThresholdBytes());
        assertEquals(3, cfg.tuning().treeRadix());
        ThreadRanks.run(2, cfg.withWarmupRounds(1), comm -> {
            assertEquals(IntraNodeAlgorithm.TREE, comm.engine().algorithm(Collective.ALLREDUCE, 100));
            assertEquals(IntraNodeAlgorithm.TILED, comm.engine().algorithm(Collective.ALLREDUCE, 101));
            assertEquals(3, comm.engine().tuning().treeRadix());
        });
    }
}
