package org.sharp4j.tuning;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TuningTableTest {
    static final Collective AR = Collective.ALLREDUCE;

    @Test
    void builtInMatchesTheLegacyDefaults() {
        CompiledTable t = TuningTable.builtIn().compile(1, 4);
        assertEquals(IntraNodeAlgorithm.EXCHANGE, t.intraAlgorithm(AR, 0));
        assertEquals(IntraNodeAlgorithm.EXCHANGE, t.intraAlgorithm(AR, 256));
        assertEquals(IntraNodeAlgorithm.TREE, t.intraAlgorithm(AR, 257));
        assertEquals(IntraNodeAlgorithm.TREE, t.intraAlgorithm(AR, 16384));
        assertEquals(IntraNodeAlgorithm.TREE, TuningTable.builtIn().compile(1, 33).intraAlgorithm(AR, 8), "the exchange up to 32 ranks per node");
        assertEquals(IntraNodeAlgorithm.TILED, t.intraAlgorithm(AR, 16385));
        assertEquals(IntraNodeAlgorithm.TILED, t.intraAlgorithm(AR, 65535));
        // one node: pipelined from 64 KiB (the engine runs tiled where the node has several sockets), with 4 ranks
        // the split cma Allreduce from 256 KiB (2 ranks from 64 KiB)
        assertEquals(IntraNodeAlgorithm.PIPELINED, t.intraAlgorithm(AR, 65536));
        assertEquals(IntraNodeAlgorithm.PIPELINED, t.intraAlgorithm(AR, 262143));
        assertEquals(IntraNodeAlgorithm.CMA_SPLIT, t.intraAlgorithm(AR, 262144));
        assertEquals(IntraNodeAlgorithm.CMA_SPLIT, t.intraAlgorithm(AR, Long.MAX_VALUE - 1));
        assertEquals(IntraNodeAlgorithm.CMA_SPLIT, TuningTable.builtIn().compile(1, 2).intraAlgorithm(AR, 65536));
        assertEquals(IntraNodeAlgorithm.PIPELINED, TuningTable.builtIn().compile(1, 8).intraAlgorithm(AR, 1 << 20));
        assertEquals(IntraNodeAlgorithm.DIRECT, t.intraAlgorithm(Collective.REDUCE, 65536));
        assertEquals(IntraNodeAlgorithm.TILED, TuningTable.builtIn().compile(1, 5).intraAlgorithm(Collective.REDUCE, 65536));
        assertEquals(IntraNodeAlgorithm.TILED, TuningTable.builtIn().compile(2, 4).intraAlgorithm(AR, 65536), "several nodes: tiled");
        assertEquals(IntraNodeAlgorithm.EXCHANGE, t.intraAlgorithm(Collective.BARRIER, 0));
        assertEquals(2, t.treeRadix(AR, 1000));
        assertEquals(16384, t.summary().tiledThresholdBytes());
        assertEquals(2, t.summary().treeRadix());
        // inter-node: k-nomial radix 2 below 64k (at every size on 3 nodes), SRA radix 4 from there, k-nomial
        // between 2 nodes (SRA radix 2 from 512k with one rank per node); SHARP only from 4 nodes
        assertEquals(Algorithm.KNOMIAL, t.interAlgorithm(AR, 65535));
        assertEquals(2, t.interRadix(AR, 65535));
        assertEquals(Algorithm.SRA, t.interAlgorithm(AR, 65536));
        assertEquals(4, t.interRadix(AR, 65536));
        CompiledTable three = TuningTable.builtIn().compile(3, 4);
        assertEquals(Algorithm.KNOMIAL, three.interAlgorithm(AR, 524287));
        assertEquals(2, three.interRadix(AR, 524287));
        assertEquals(Algorithm.KNOMIAL, three.interAlgorithm(AR, 524288), "several ranks per node: a slot per part");
        CompiledTable threeSolo = TuningTable.builtIn().compile(3, 1);
        assertEquals(Algorithm.KNOMIAL, threeSolo.interAlgorithm(AR, 524288), "one rank per node: radix 2 too");
        assertEquals(2, threeSolo.interRadix(AR, 1L << 30));
        // Reduce between 3 nodes: radix 2 at every size (the spine's up to 16 KiB, measured above)
        assertEquals(2, threeSolo.interRadix(Collective.REDUCE, 16384));
        assertEquals(2, threeSolo.interRadix(Collective.REDUCE, 65536));
        assertEquals(2, threeSolo.interRadix(Collective.REDUCE, 262144));
        assertEquals(4, TuningTable.builtIn().compile(2, 1).interRadix(Collective.REDUCE, 65536), "radix 2 at 3 nodes only");
        assertEquals(4, TuningTable.builtIn().compile(4, 1).interRadix(Collective.REDUCE, 1L << 30), "radix 2 at 3 nodes only");
        assertEquals(Algorithm.SRA, TuningTable.builtIn().compile(4, 1).interAlgorithm(AR, 524288));
        assertEquals(Algorithm.KNOMIAL, three.interAlgorithm(AR, 1L << 30));
        assertEquals(Algorithm.KNOMIAL, TuningTable.builtIn().compile(2, 4).interAlgorithm(AR, 1L << 30));
        // two nodes of one rank: recursive doubling below 512 KiB, SRA radix 2 from there (Allreduce only)
        CompiledTable twoSolo = TuningTable.builtIn().compile(2, 1);
        assertEquals(Algorithm.KNOMIAL, twoSolo.interAlgorithm(AR, 524287));
        assertEquals(2, twoSolo.interRadix(AR, 524287));
        assertEquals(Algorithm.SRA, twoSolo.interAlgorithm(AR, 524288));
        assertEquals(2, twoSolo.interRadix(AR, 524288));
        assertEquals(Algorithm.SRA, twoSolo.interAlgorithm(AR, 2L << 20));
        assertEquals(Algorithm.SRA, twoSolo.interAlgorithm(AR, 1L << 30));
        assertEquals(Algorithm.KNOMIAL, twoSolo.interAlgorithm(Collective.REDUCE, 1L << 30));
        assertEquals(Algorithm.KNOMIAL, TuningTable.builtIn().compile(2, 2).interAlgorithm(AR, 1L << 30));
        assertEquals(0, t.sharpMaxBytes(AR));
        CompiledTable big = TuningTable.builtIn().compile(4, 4);
        assertEquals(Algorithm.SHARP, big.interAlgorithm(AR, 2047));
        assertEquals(Algorithm.KNOMIAL, big.interAlgorithm(AR, 2048));
        assertEquals(2048, big.sharpMaxBytes(AR));
        assertEquals(Algorithm.SHARP, big.interAlgorithm(Collective.BARRIER, 0));
    }

    @Test
    void lookupAtRangeEdges() {
        TuningTable tt = TuningTable.builtIn().withOverride(
                "allreduce:0-64:tiled#allreduce:64-4k:tree:radix=4#allreduce:4k-1M:tree:radix=8#allreduce:1M-inf:tiled:chunk=32k", "t");
        CompiledTable t = tt.compile(1, 2);
        long[] at = {0, 63, 64, 65, 4095, 4096, (1 << 20) - 1, 1 << 20, Long.MAX_VALUE - 1};
        String[] want = {"TILED", "TILED", "TREE4", "TREE4", "TREE4", "TREE8", "TREE8", "TILED", "TILED"};
        for (int i = 0; i < at.length; i++) {
            int k = t.intraIndex(AR, at[i]);
            String got = t.intraAlgorithmAt(AR, k) == IntraNodeAlgorithm.TREE ? "TREE" + t.treeRadixAt(AR, k) : "TILED";
            assertEquals(want[i], got, "at " + at[i]);
        }
        assertEquals(32768, t.chunkAt(AR, t.intraIndex(AR, 1 << 20)));
        assertEquals(0, t.chunkAt(AR, t.intraIndex(AR, 0)), "unset chunk means the slot size");
        // reduce was not overridden
        assertEquals(IntraNodeAlgorithm.EXCHANGE, t.intraAlgorithm(Collective.REDUCE, 63));
    }

    @Test
    void nodeAndPpnQualifiers() {
        TuningTable tt = TuningTable.builtIn().withOverride("allreduce:0-inf:nodes=2-3:ppn=4-inf:tiled", "t");
        assertEquals(IntraNodeAlgorithm.TILED, tt.compile(2, 4).intraAlgorithm(AR, 8));
        assertEquals(IntraNodeAlgorithm.TILED, tt.compile(3, 64).intraAlgorithm(AR, 8));
        assertEquals(IntraNodeAlgorithm.EXCHANGE, tt.compile(1, 4).intraAlgorithm(AR, 8));
        assertEquals(IntraNodeAlgorithm.EXCHANGE, tt.compile(4, 4).intraAlgorithm(AR, 8));
        assertEquals(IntraNodeAlgorithm.EXCHANGE, tt.compile(2, 3).intraAlgorithm(AR, 8));
    }

    @Test
    void precedenceOverrideOverLegacyOverFileOverBuiltIn(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("table.txt");
        Files.writeString(f, "# tuned\nallreduce:0-1k:tree:radix=8\nallreduce:1k-inf:tiled\n");
        Properties p = new Properties();
        p.setProperty(TuningTable.PROP_FILE, f.toString());
        CompiledTable t = TuningTable.resolve(p, Map.of()).compile(1, 2);
        assertEquals(8, t.treeRadix(AR, 100));
        assertEquals(IntraNodeAlgorithm.TILED, t.intraAlgorithm(AR, 1024));
        assertTrue(t.intraOrigin(AR, 100).startsWith(f + ":2"), t.intraOrigin(AR, 100));
        // the built-in table's: two ranks on one node run the exchange for Reduce below 16 KiB
        assertEquals(IntraNodeAlgorithm.EXCHANGE, t.intraAlgorithm(Collective.REDUCE, 1024), "file says nothing about reduce");
        assertTrue(t.intraOrigin(Collective.REDUCE, 1024).startsWith("built-in"));

        // legacy properties beat the file
        p.setProperty("sharp4j.tiled.threshold", "2k");
        t = TuningTable.resolve(p, Map.of()).compile(1, 2);
        assertEquals(IntraNodeAlgorithm.TREE, t.intraAlgorithm(AR, 2048));
        assertEquals(IntraNodeAlgorithm.TILED, t.intraAlgorithm(AR, 2049));
        assertEquals(8, t.treeRadix(AR, 100), "same algorithm: the file's radix is kept");
        p.setProperty("sharp4j.tree.radix", "3");
        t = TuningTable.resolve(p, Map.of()).compile(1, 2);
        assertEquals(3, t.treeRadix(AR, 100));
        assertEquals(3, t.interRadix(AR, 8), "the legacy radix also sets the host k-nomial");
        assertTrue(t.intraOrigin(AR, 100).contains("sharp4j.tree.radix"));

        // the override string beats everything, only where it applies
        Map<String, String> env = Map.of(TuningTable.ENV_TUNE, "allreduce:0-64:tiled");
        t = TuningTable.resolve(p, env).compile(1, 2);
        assertEquals(IntraNodeAlgorithm.TILED, t.intraAlgorithm(AR, 63));
        assertEquals(IntraNodeAlgorithm.TREE, t.intraAlgorithm(AR, 64));
        assertTrue(t.intraOrigin(AR, 0).startsWith("SHARP4J_TUNE"), t.intraOrigin(AR, 0));
        // the property beats the variable
        p.setProperty(TuningTable.PROP_TUNE, "allreduce:0-64:tree:radix=5");
        t = TuningTable.resolve(p, env).compile(1, 2);
        assertEquals(IntraNodeAlgorithm.TREE, t.intraAlgorithm(AR, 63));
        assertEquals(5, t.treeRadix(AR, 63));
        assertEquals(List.of(TuningTable.Level.BUILT_IN, TuningTable.Level.FILE, TuningTable.Level.LEGACY,
                TuningTable.Level.OVERRIDE), TuningTable.resolve(p, env).sources().stream().map(TuningTable.Source::level).toList());
    }

    @Test
    void fileFromEnvironmentAndErrorsNameTheFile(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("bad.txt");
        Files.writeString(f, "allreduce:0-1k:tree\nallreduce:1k-inf:tiled:radix=2\n");
        TuningFormatException e = assertThrows(TuningFormatException.class,
                () -> TuningTable.resolve(new Properties(), Map.of(TuningTable.ENV_FILE, f.toString())));
        assertEquals(f + ":2: tiled takes no radix in 'allreduce:1k-inf:tiled:radix=2'", e.getMessage());
    }

    @Test
    void laterRulesWinWithinASourceAndParameterOnlyRulesPatch() {
        CompiledTable t = TuningTable.builtIn()
                .withOverride("allreduce:0-inf:tree:radix=2#allreduce:0-1k:tiled#all:0-inf:radix=6#all:0-inf:chunk=4k", "t")
                .compile(1, 2);
        assertEquals(IntraNodeAlgorithm.TILED, t.intraAlgorithm(AR, 1023));
        assertEquals(4096, t.chunkAt(AR, t.intraIndex(AR, 0)));
        assertEquals(6, t.treeRadix(AR, 1024));
        assertEquals(6, t.interRadix(AR, 8));
    }

    @Test
    void sharpPipelineDepthIsLookedUpPerSizeAndPatchedOnlyWhereSharpIs() {
        CompiledTable t = TuningTable.builtIn().withOverride("allreduce:0-64k:sharp:pipeline=1#allreduce:64k-16M:sharp:pipeline=2"
                + "#allreduce:16M-inf:sra:radix=2#reduce:0-1M:sharp", "t").compile(4, 1);
        assertEquals(1, t.sharpPipeline(Collective.ALLREDUCE, 4096));
        assertEquals(2, t.sharpPipeline(Collective.ALLREDUCE, 65536));
        assertEquals(2, t.sharpPipeline(Collective.ALLREDUCE, (16 << 20) - 1));
        assertEquals(CompiledTable.DEFAULT_SHARP_PIPELINE, t.sharpPipeline(Collective.REDUCE, 4096), "a sharp rule without pipeline=");
        assertEquals(16L << 20, t.sharpMaxBytes(Collective.ALLREDUCE), "two sharp segments still make one SHARP prefix");
        assertTrue(t.describe().stream().anyMatch(l -> l.matches("allreduce +inter +64k-16M +sharp pipeline=2 .*")), t.describe().toString());
        // a parameter-only rule sets the depth of the SHARP segments it covers, and nothing on the host path
        CompiledTable p = TuningTable.builtIn().withOverride("allreduce:0-1M:sharp#allreduce:1M-inf:sra:radix=2", "t")
                .withFileLines(List.of("all:0-inf:pipeline=8"), "f").compile(4, 1);
        assertEquals(CompiledTable.DEFAULT_SHARP_PIPELINE, p.sharpPipeline(Collective.ALLREDUCE, 4096), "the override paints over the file");
        CompiledTable q = TuningTable.builtIn().withOverride("allreduce:0-1M:sharp#allreduce:1M-inf:sra:radix=2#all:0-inf:pipeline=8", "t")
                .compile(4, 1);
        assertEquals(8, q.sharpPipeline(Collective.ALLREDUCE, 4096));
        assertEquals(Algorithm.SRA, q.interAlgorithm(Collective.ALLREDUCE, 2 << 20));
        assertEquals(2, q.interRadix(Collective.ALLREDUCE, 2 << 20));
    }

    @Test
    void sizesFormatRoundTrips() {
        for (long v : new long[] {0, 1, 63, 1024, 16385, 1 << 20, 3L << 30, Long.MAX_VALUE}) {
            assertEquals(v, Sizes.parseBytes(Sizes.format(v)));
        }
    }
}
