package org.sharp4j.tuner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sharp4j.tuning.Algorithm;
import org.sharp4j.tuning.Collective;
import org.sharp4j.tuning.CompiledTable;
import org.sharp4j.tuning.IntraNodeAlgorithm;
import org.sharp4j.tuning.Rule;
import org.sharp4j.tuning.RuleParser;
import org.sharp4j.tuning.TuningFormatException;
import org.sharp4j.tuning.TuningTable;

/** Sections of the table format, the tuner's choice, and the merge of runs at several job shapes. */
class TuneTableTest {
    static final Collective AR = Collective.ALLREDUCE;

    static Measurement m(int nodes, int ppn, Collective c, String layer, String cand, long bytes, double us, double se) {
        return new Measurement(nodes, ppn, c, layer, cand, bytes, us, se, 3, true);
    }

    @Test
    void sectionsGiveTheirShapeAndProvenanceToTheirRules() {
        List<Rule> rs = RuleParser.parseLines(List.of(
                "allreduce:0-inf:tiled",
                "[nodes=2:ppn=2-4:measured]   # a comment",
                "allreduce:0-1k:tree:radix=4",
                "[nodes=3-inf:modelled]",
                "allreduce:0-inf:nodes=8-inf:sra:radix=2",
                "[]",
                "reduce:0-inf:tiled"), "t");
        assertEquals(null, rs.get(0).provenance());
        assertEquals(List.of(2, 2, 2, 4), List.of(rs.get(1).minNodes(), rs.get(1).maxNodes(), rs.get(1).minPpn(), rs.get(1).maxPpn()));
        assertEquals(Rule.Provenance.MEASURED, rs.get(1).provenance());
        assertEquals(8, rs.get(2).minNodes()); // intersected with the section's 3-inf
        assertEquals(Rule.Provenance.MODELLED, rs.get(2).provenance());
        assertEquals(null, rs.get(3).provenance());
        assertEquals(Integer.MAX_VALUE, rs.get(3).maxNodes());
        TuningFormatException e = assertThrows(TuningFormatException.class,
                () -> RuleParser.parseLines(List.of("[nodes=2:measured]", "allreduce:0-inf:nodes=3:tiled"), "t"));
        assertTrue(e.getMessage().contains("outside its section") && e.getMessage().contains("t:2"), e.getMessage());
        assertThrows(TuningFormatException.class, () -> RuleParser.parseLines(List.of("[nodes=2:guessed]"), "t"));
        assertThrows(TuningFormatException.class, () -> RuleParser.parseLines(List.of("[nodes=2"), "t"));
        assertThrows(TuningFormatException.class, () -> RuleParser.parseLines(List.of("[nodes=2:nodes=3]"), "t"));
    }

    @Test
    void provenanceReachesTheCompiledTable() {
        CompiledTable t = TuningTable.builtIn().withFileLines(List.of(
                "[modelled]", "allreduce:0-inf:nodes=4-inf:sra:radix=2",
                "[nodes=4:ppn=2:measured]", "allreduce:0-1k:knomial:radix=3"), "f").compile(4, 2);
        assertEquals("measured on this cluster", t.interProvenance(AR, 8));
        assertEquals(3, t.interRadix(AR, 8));
        assertEquals("modelled", t.interProvenance(AR, 4096));
        assertEquals(Algorithm.SRA, t.interAlgorithm(AR, 4096));
        assertEquals("built in", t.intraProvenance(AR, 8));
        assertTrue(t.describe().stream().anyMatch(l -> l.contains("[modelled]")), t.describe().toString());
        // another shape: the measured section does not apply
        assertEquals("modelled", TuningTable.builtIn().withFileLines(List.of("[modelled]", "allreduce:0-inf:nodes=4-inf:sra:radix=2",
                "[nodes=4:ppn=2:measured]", "allreduce:0-1k:knomial:radix=3"), "f").compile(4, 8).interProvenance(AR, 8));
    }

    @Test
    void theWinnerMustBeatTheIncumbentByNoise() {
        List<Measurement> ms = new ArrayList<>();
        // (40 ranks per node: the built-in choice at 64 B is the binary tree, the exchange stops at 32)
        // 64 B: tiled 3% faster than the built-in tree: within the 5% guard, the tree stays
        ms.add(m(1, 40, AR, "intra", "tree:radix=2", 64, 1.00, 0.01));
        ms.add(m(1, 40, AR, "intra", "tiled", 64, 0.97, 0.01));
        // 1 KiB: tree radix 4 clearly faster
        ms.add(m(1, 40, AR, "intra", "tree:radix=2", 1024, 2.0, 0.01));
        ms.add(m(1, 40, AR, "intra", "tree:radix=4", 1024, 1.5, 0.01));
        ms.add(m(1, 40, AR, "intra", "tiled", 1024, 1.9, 0.01));
        // 64 KiB: tiled faster, but with a huge standard error: 2 * hypot(0.01, 2) = 4 > the gap 5 - 2: not separable
        ms.add(m(1, 40, AR, "intra", "tree:radix=4", 65536, 5.0, 0.01));
        ms.add(m(1, 40, AR, "intra", "tiled", 65536, 2.0, 2.0));
        List<TuneTable.Choice> cs = TuneTable.choose(ms, TuneTable.GUARD);
        assertEquals(List.of("tree:radix=2", "tree:radix=4", "tree:radix=4"), cs.stream().map(TuneTable.Choice::candidate).toList());
        List<String> sec = TuneTable.section(ms, 1, 40, TuneTable.GUARD);
        assertEquals("[nodes=1:ppn=40:measured]", sec.get(0));
        assertTrue(sec.contains("allreduce:0-1k:tree:radix=2") && sec.contains("allreduce:1k-inf:tree:radix=4"), sec.toString());
        assertTrue(sec.stream().anyMatch(l -> l.startsWith("# allreduce intra 64 B: tiled 0.97+-0.01(3) tree:radix=2 1.00+-0.01(3) -> tree:radix=2")),
                sec.toString());
    }

    @Test
    void sharpIsOnlyChosenAsAPrefixFromZeroBytes() {
        List<Measurement> ms = new ArrayList<>();
        ms.add(m(4, 1, AR, "inter", "sharp", 8, 2, 0.01));
        ms.add(m(4, 1, AR, "inter", "knomial:radix=2", 8, 10, 0.01));
        ms.add(m(4, 1, AR, "inter", "sharp", 4096, 30, 0.01));
        ms.add(m(4, 1, AR, "inter", "knomial:radix=2", 4096, 20, 0.01));
        ms.add(m(4, 1, AR, "inter", "sharp", 65536, 10, 0.01)); // faster again, but SHARP cannot come back
        ms.add(m(4, 1, AR, "inter", "knomial:radix=2", 65536, 40, 0.01));
        ms.add(m(4, 1, Collective.BARRIER, "inter", "knomial:radix=4", 0, 5, 0.01));
        ms.add(m(4, 1, Collective.BARRIER, "inter", "knomial:radix=2", 0, 9, 0.01));
        List<String> sec = TuneTable.section(ms, 4, 1, TuneTable.GUARD);
        assertTrue(sec.contains("allreduce:0-4k:sharp") && sec.contains("allreduce:4k-inf:knomial:radix=2"), sec.toString());
        assertTrue(sec.contains("barrier:0-inf:knomial:radix=4"), sec.toString());
        assertTrue(!sec.contains("allreduce:0-1:knomial:radix=4"), "a spine rule would cut SHARP's prefix: " + sec);
        CompiledTable t = TuningTable.builtIn().withFileLines(sec, "s").compile(4, 1);
        assertEquals(4096, t.sharpMaxBytes(AR));
        assertEquals(Algorithm.SHARP, t.interAlgorithm(AR, 8));
        // without SHARP the barrier's winner becomes the spine radix (a 0-byte allreduce)
        ms.removeIf(x -> x.candidate().equals("sharp"));
        sec = TuneTable.section(ms, 4, 1, TuneTable.GUARD);
        assertTrue(sec.contains("allreduce:0-1:knomial:radix=4"), sec.toString());
        t = TuningTable.builtIn().withFileLines(sec, "s").compile(4, 1);
        assertEquals(4, t.interRadix(AR, 0));
        assertEquals(2, t.interRadix(AR, 8));
    }

    @Test
    void whereSharpWinsItsPipelineDepthIsChosenByNoiseAndWritten() {
        List<Measurement> ms = new ArrayList<>();
        ms.add(m(4, 1, AR, "inter", "knomial:radix=2", 8, 10, 0.01));
        ms.add(m(4, 1, AR, "inter", "sharp", 8, 2, 0.01));
        ms.add(m(4, 1, AR, "inter", "knomial:radix=2", 16384, 30, 0.01));
        ms.add(m(4, 1, AR, "inter", "sharp", 16384, 10, 0.01));
        ms.add(m(4, 1, AR, "inter", "sharp:pipeline=2", 16384, 9.8, 0.01)); // within 5 %: the default depth stays
        ms.add(m(4, 1, AR, "inter", "knomial:radix=2", 65536, 80, 0.01));
        ms.add(m(4, 1, AR, "inter", "sharp", 65536, 40, 0.01));
        ms.add(m(4, 1, AR, "inter", "sharp:pipeline=2", 65536, 20, 0.01));
        ms.add(m(4, 1, AR, "inter", "sharp:pipeline=8", 65536, 30, 0.01));
        ms.add(m(4, 1, AR, "inter", "knomial:radix=2", 262144, 100, 0.01));
        ms.add(m(4, 1, AR, "inter", "sra:radix=2", 262144, 90, 0.01));
        ms.add(m(4, 1, AR, "inter", "sharp", 262144, 200, 0.01));
        ms.add(m(4, 1, AR, "inter", "sharp:pipeline=2", 262144, 85, 0.01)); // a depth never brings SHARP back after the host won
        List<TuneTable.Choice> cs = TuneTable.choose(ms, TuneTable.GUARD);
        assertEquals(List.of("sharp", "sharp", "sharp:pipeline=2", "sra:radix=2"), cs.stream().map(TuneTable.Choice::candidate).toList());
        assertTrue(cs.get(1).note().contains("sharp within noise of sharp:pipeline=2"), cs.get(1).note());
        List<String> sec = TuneTable.section(ms, 4, 1, TuneTable.GUARD);
        assertTrue(sec.contains("allreduce:0-64k:sharp") && sec.contains("allreduce:64k-256k:sharp:pipeline=2")
                && sec.contains("allreduce:256k-inf:sra:radix=2"), sec.toString());
        CompiledTable t = TuningTable.builtIn().withFileLines(sec, "s").compile(4, 1);
        assertEquals(262144, t.sharpMaxBytes(AR), "one SHARP prefix over both depths");
        assertEquals(CompiledTable.DEFAULT_SHARP_PIPELINE, t.sharpPipeline(AR, 16384));
        assertEquals(2, t.sharpPipeline(AR, 65536));
        assertEquals(Algorithm.SRA, t.interAlgorithm(AR, 262144));
        // once a depth won, it is the incumbent of the next size
        ms.add(m(4, 1, AR, "inter", "knomial:radix=2", 131072, 90, 0.01));
        ms.add(m(4, 1, AR, "inter", "sharp", 131072, 50, 0.01));
        ms.add(m(4, 1, AR, "inter", "sharp:pipeline=2", 131072, 40, 0.01));
        ms.add(m(4, 1, AR, "inter", "sharp:pipeline=8", 131072, 39, 0.01));
        assertEquals("sharp:pipeline=2", TuneTable.choose(ms, TuneTable.GUARD).get(3).candidate());
    }

    @Test
    void runsAtTwoShapesMergeIntoOneFileThatKeepsOtherSections(@TempDir Path dir) throws Exception {
        Path table = dir.resolve("t.txt");
        Files.write(table, List.of("# by hand", "reduce:0-inf:tiled", "[modelled]", "allreduce:0-inf:nodes=64-inf:sra:radix=8"));
        Path csv = TuneCsv.of(table);
        TuneCsv.append(csv, m(1, 2, AR, "intra", "tree:radix=2", 8, 1, 0.01));
        TuneCsv.append(csv, m(1, 2, AR, "intra", "tiled", 8, 3, 0.01));
        TuneTable.write(table, TuneCsv.read(csv), TuneTable.GUARD);
        // a second run at another shape, then a rerun of the first whose figures changed
        TuneCsv.append(csv, m(2, 2, AR, "inter", "knomial:radix=2", 8, 9, 0.01));
        TuneCsv.append(csv, m(2, 2, AR, "inter", "sra:radix=2", 8, 5, 0.01));
        TuneCsv.append(csv, m(1, 2, AR, "intra", "tiled", 8, 0.5, 0.01));
        List<String> lines = TuneTable.write(table, TuneCsv.read(csv), TuneTable.GUARD);
        assertEquals(4, TuneCsv.read(csv).size()); // the later row for a point replaces the earlier one
        assertEquals(1, lines.stream().filter(l -> l.equals("[nodes=1:ppn=2:measured]")).count(), lines.toString());
        assertEquals(1, lines.stream().filter(l -> l.equals("[nodes=2:ppn=2:measured]")).count(), lines.toString());
        assertTrue(lines.contains("[modelled]") && lines.contains("allreduce:0-inf:nodes=64-inf:sra:radix=8"), lines.toString());
        assertTrue(lines.contains("reduce:0-inf:tiled"), "a rule outside any section is kept: " + lines);
        assertTrue(lines.indexOf("[modelled]") < lines.indexOf("[nodes=1:ppn=2:measured]"), "measured sections come last");
        TuningTable tt = TuningTable.builtIn().withFile(table, "test");
        assertEquals(IntraNodeAlgorithm.TILED, tt.compile(1, 2).intraAlgorithm(AR, 8));
        assertEquals(Algorithm.SRA, tt.compile(2, 2).interAlgorithm(AR, 8));
        assertEquals(2, tt.compile(2, 2).interRadix(AR, 8));
        assertEquals(Algorithm.SRA, tt.compile(64, 2).interAlgorithm(AR, 8));
        assertEquals(8, tt.compile(64, 2).interRadix(AR, 8));
        // written again without new measurements: the same file
        assertEquals(lines.subList(1, lines.size()), TuneTable.write(table, TuneCsv.read(csv), TuneTable.GUARD).subList(1, lines.size()));
    }

    @Test
    void aMergedSectionKeepsTheFilesCommentsAndABadOneLeavesTheFileAsItWas(@TempDir Path dir) throws Exception {
        Path table = dir.resolve("sub").resolve("t.txt");
        List<String> first = TuneTable.mergeSection(table, List.of("[modelled]", "allreduce:0-inf:nodes=64-inf:sra:radix=8"));
        assertEquals(TuneTable.preamble().get(1), first.get(1), "a new file starts with the tuner's comments: " + first);
        assertEquals(first, Files.readAllLines(table), "the parent directory is created and the lines written");
        List<String> mine = new ArrayList<>(List.of("# my cluster's table", "# kept by hand"));
        mine.addAll(first.subList(TuneTable.preamble().size(), first.size()));
        Files.write(table, mine);
        List<String> merged = TuneTable.mergeSection(table, List.of("[nodes=2:ppn=1:measured]", "allreduce:0-inf:knomial:radix=4"));
        assertEquals(List.of("# my cluster's table", "# kept by hand"), merged.subList(0, 2), merged.toString());
        assertTrue(merged.contains("[modelled]") && merged.contains("allreduce:0-inf:knomial:radix=4"), merged.toString());
        assertThrows(TuningFormatException.class,
                () -> TuneTable.mergeSection(table, List.of("[nodes=4:ppn=1:measured]", "allreduce:0-inf:nosuchalgorithm")));
        assertEquals(merged, Files.readAllLines(table), "a section the engine would refuse is never written");
        // the measured rewrite replaces the comments with the tuner's own and keeps the other sections
        Path csv = TuneCsv.of(table);
        TuneCsv.append(csv, m(1, 2, AR, "intra", "tiled", 8, 1, 0.01));
        List<String> rewritten = TuneTable.write(table, TuneCsv.read(csv), TuneTable.GUARD);
        assertEquals(TuneTable.preamble().get(1), rewritten.get(1), rewritten.toString());
        assertTrue(rewritten.contains("[modelled]") && rewritten.contains("[nodes=2:ppn=1:measured]")
                && rewritten.contains("[nodes=1:ppn=2:measured]"), rewritten.toString());
    }

    @Test
    void aForeignCsvIsRefusedNotOverwritten(@TempDir Path dir) throws Exception {
        Path csv = dir.resolve("x.csv");
        Files.write(csv, List.of("a,b,c", "1,2,3"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> TuneCsv.read(csv));
        assertTrue(e.getMessage().contains("not a sharp4j tune CSV"), e.getMessage());
        Files.write(csv, List.of(TuneCsv.HEADER, "1,2,allreduce,intra,tiled,8,x,0,3,true"));
        e = assertThrows(IllegalArgumentException.class, () -> TuneCsv.read(csv));
        assertTrue(e.getMessage().contains("x.csv:2"), e.getMessage());
    }

    @Test
    void theExchangeIsNotExtendedFarBeyondTheSizesItWasTriedAt() {
        List<Measurement> ms = new ArrayList<>();
        ms.add(m(3, 2, AR, "intra", "exchange", 8, 1, 0.01));
        ms.add(m(3, 2, AR, "intra", "tiled", 8, 3, 0.01));
        ms.add(m(3, 2, AR, "intra", "exchange", 4096, 2, 0.01));
        ms.add(m(3, 2, AR, "intra", "tiled", 4096, 4, 0.01));
        List<String> sec = TuneTable.section(ms, 3, 2, TuneTable.GUARD);
        assertTrue(sec.contains("allreduce:0-8k:exchange"), sec.toString());
        CompiledTable t = TuningTable.builtIn().withFileLines(sec, "s").compile(3, 2);
        assertEquals(IntraNodeAlgorithm.EXCHANGE, t.intraAlgorithm(AR, 4096));
        assertEquals("built in", t.intraProvenance(AR, 1 << 20)); // above: the built-in rules
        // a later winner still bounds it
        ms.add(m(3, 2, AR, "intra", "tiled", 65536, 4, 0.01));
        assertTrue(!TuneTable.section(ms, 3, 2, TuneTable.GUARD).contains("allreduce:8k-inf:tiled"));
        assertTrue(TuneTable.section(ms, 3, 2, TuneTable.GUARD).contains("allreduce:64k-inf:tiled"));
    }
}
