package org.sharp4j.tuning;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class RuleParserTest {
    @Test
    void parsesAFullRule() {
        Rule r = RuleParser.parseRule("allreduce,reduce:4k-1M:nodes=2-inf:ppn=8:knomial:radix=8", "t", 0, "o");
        assertEquals(EnumSet.of(Collective.ALLREDUCE, Collective.REDUCE), r.collectives());
        assertEquals(4096, r.minBytes());
        assertEquals(1 << 20, r.maxBytes());
        assertEquals(2, r.minNodes());
        assertEquals(Integer.MAX_VALUE, r.maxNodes());
        assertEquals(8, r.minPpn());
        assertEquals(8, r.maxPpn());
        assertEquals(Algorithm.KNOMIAL, r.algorithm());
        assertEquals(8, r.radix());
        assertEquals("allreduce,reduce:4k-1M:nodes=2-inf:ppn=8:knomial:radix=8", r.toString());
    }

    @Test
    void parsesUccStyleAndParameterOnlyRules() {
        List<Rule> rs = RuleParser.parseOverride("allreduce:0-4k:@knomial:radix=4#allreduce:4k-inf:@sra_knomial#", "p");
        assertEquals(2, rs.size());
        assertEquals(Algorithm.SRA, rs.get(1).algorithm());
        assertEquals(Long.MAX_VALUE, rs.get(1).maxBytes());
        Rule patch = RuleParser.parseRule("all:0-inf:radix=3", "p", 0, "p");
        assertNull(patch.algorithm());
        assertEquals(EnumSet.allOf(Collective.class), patch.collectives());
        Rule tiled = RuleParser.parseRule("ALL:16k-inf:TILED:chunk=32k", "p", 0, "p");
        assertEquals(EnumSet.of(Collective.ALLREDUCE, Collective.REDUCE), tiled.collectives(), "barrier dropped from all:tiled");
        assertEquals(32768, tiled.chunk());
    }

    @Test
    void sharpTakesAPipelineDepthThatRoundTrips() {
        Rule r = RuleParser.parseRule("allreduce:64k-16M:sharp:pipeline=2", "t", 0, "o");
        assertEquals(Algorithm.SHARP, r.algorithm());
        assertEquals(2, r.pipeline());
        assertEquals("allreduce:64k-16M:sharp:pipeline=2", r.toString());
        Rule patch = RuleParser.parseRule("all:0-inf:pipeline=8", "t", 0, "o");
        assertNull(patch.algorithm());
        assertEquals(8, patch.pipeline());
        assertEquals(Rule.UNSET, RuleParser.parseRule("allreduce:0-4k:sharp", "t", 0, "o").pipeline());
    }

    @Test
    void fileSkipsCommentsAndBlankLinesAndNamesLines(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("t.txt");
        Files.writeString(f, "# a table\n\nallreduce:0-64:tiled   # forced\n  barrier:0-inf:tree:radix=4\n");
        List<Rule> rs = RuleParser.parseFile(f);
        assertEquals(2, rs.size());
        assertEquals(f + ":3", rs.get(0).origin());
        assertEquals(f + ":4", rs.get(1).origin());
        Files.writeString(f, "allreduce:0-64:tiled\n\n# x\nallreduce:0-64:tre\n");
        TuningFormatException e = assertThrows(TuningFormatException.class, () -> RuleParser.parseFile(f));
        assertEquals(4, e.line());
        assertEquals(f.toString(), e.where());
        assertTrue(e.getMessage().startsWith(f + ":4: unknown algorithm 'tre'"), e.getMessage());
        TuningFormatException missing = assertThrows(TuningFormatException.class, () -> RuleParser.parseFile(dir.resolve("none")));
        assertTrue(missing.getMessage().contains("cannot read"), missing.getMessage());
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
        "allreduce:0-4k|at least",
        "allreduce|at least",
        "gather:0-4k:tree|unknown collective 'gather'",
        "allreduce,:0-4k:tree|unknown collective ''",
        ":0-4k:tree|no collective",
        "allreduce:4k:tree|size range must be LO-HI",
        "allreduce:-4k:tree|size range must be LO-HI",
        "allreduce:4k-:tree|size range must be LO-HI",
        "allreduce:4x-8k:tree|bad size range",
        "allreduce:8k-4k:tree|empty size range",
        "allreduce:4k-4k:tree|empty size range",
        "allreduce:inf-inf:tree|cannot start at inf",
        "allreduce:0-4k:tre|unknown algorithm 'tre'",
        "allreduce:0-4k:tree:tiled|two algorithms",
        "allreduce:0-4k:tree:radix=1|radix must be in 2..64",
        "allreduce:0-4k:tree:radix=65|radix must be in 2..64",
        "allreduce:0-4k:tree:radix=two|radix is not a number",
        "allreduce:0-4k:tree:radix=2:radix=4|radix given twice",
        "allreduce:0-4k:tree:radix=|no value for 'radix'",
        "allreduce:0-4k:tiled:radix=2|tiled takes no radix",
        "allreduce:0-4k:sharp:radix=2|sharp takes no radix",
        "allreduce:0-4k:tree:chunk=4k|tree takes no chunk",
        "allreduce:0-4k:tiled:chunk=100|multiple of 64",
        "allreduce:0-4k:tiled:chunk=lots|chunk is not a size",
        "allreduce:0-4k:tiled:chunk=4k:chunk=8k|chunk given twice",
        "allreduce:64k-16M:sharp:pipeline=0|pipeline must be in 1..8",
        "allreduce:64k-16M:sharp:pipeline=9|pipeline must be in 1..8",
        "allreduce:64k-16M:sharp:pipeline=deep|pipeline is not a number",
        "allreduce:64k-16M:sharp:pipeline=2:pipeline=4|pipeline given twice",
        "allreduce:64k-16M:knomial:pipeline=2|knomial takes no pipeline",
        "allreduce:0-4k:tiled:pipeline=2|tiled takes no pipeline",
        "allreduce:0-4k:tree:nodes=0-4|nodes range must be",
        "allreduce:0-4k:tree:nodes=8-4|nodes range must be",
        "allreduce:0-4k:tree:nodes=a-4|nodes range is not",
        "allreduce:0-4k:tree:nodes=2:nodes=3|nodes given twice",
        "allreduce:0-4k:tree:ppn=x|ppn range is not",
        "allreduce:0-4k:tree:ppn=1:ppn=2|ppn given twice",
        "allreduce:0-4k:tree:fanout=2|unknown parameter 'fanout'",
        "allreduce:0-4k:tree::radix=2|empty field 4",
        "allreduce:0-4k:nodes=2|no algorithm and no parameter",
        "barrier:0-inf:tiled|barrier moves no data",
    })
    void rejectsMalformedRules(String text, String reason) {
        TuningFormatException e = assertThrows(TuningFormatException.class, () -> RuleParser.parseRule(text, "f.txt", 7, "o"));
        assertTrue(e.getMessage().startsWith("f.txt:7: "), e.getMessage());
        assertTrue(e.reason().contains(reason), e.getMessage());
        assertEquals(7, e.line());
    }

    @Test
    void overrideRejectsEmptyRulesInTheMiddle() {
        TuningFormatException e = assertThrows(TuningFormatException.class,
                () -> RuleParser.parseOverride("allreduce:0-4k:tree##allreduce:4k-inf:tiled", "sharp4j.tune"));
        assertTrue(e.getMessage().startsWith("sharp4j.tune: empty rule 2"), e.getMessage());
        TuningFormatException bad = assertThrows(TuningFormatException.class,
                () -> RuleParser.parseOverride("allreduce:0-4k:tree#allreduce:4k-inf:tilde", "SHARP4J_TUNE"));
        assertTrue(bad.getMessage().startsWith("SHARP4J_TUNE: unknown algorithm 'tilde'"), bad.getMessage());
    }

    @org.junit.jupiter.api.Test
    void directIsAReduceAlgorithmWithAChunk() {
        Rule r = RuleParser.parseRule("reduce:64k-inf:ppn=1-4:DIRECT:chunk=16k", "t", 0, "o");
        org.junit.jupiter.api.Assertions.assertEquals(Algorithm.DIRECT, r.algorithm());
        org.junit.jupiter.api.Assertions.assertEquals(16384, r.chunk());
        org.junit.jupiter.api.Assertions.assertEquals(IntraNodeAlgorithm.DIRECT, r.algorithm().toIntra());
        for (String bad : new String[] {"allreduce:0-inf:direct", "all:0-inf:direct", "reduce,barrier:0-inf:direct"}) {
            TuningFormatException e = assertThrows(TuningFormatException.class, () -> RuleParser.parseRule(bad, "t", 0, "o"), bad);
            org.junit.jupiter.api.Assertions.assertTrue(e.getMessage().contains("direct is a Reduce algorithm"), e.getMessage());
        }
    }

    @org.junit.jupiter.api.Test
    void pipelinedIsADataAlgorithmWithAChunk() {
        Rule r = RuleParser.parseRule("allreduce,reduce:64k-inf:nodes=1:pipelined:chunk=32k", "t", 0, "o");
        org.junit.jupiter.api.Assertions.assertEquals(Algorithm.PIPELINED, r.algorithm());
        org.junit.jupiter.api.Assertions.assertEquals(32768, r.chunk());
        org.junit.jupiter.api.Assertions.assertEquals(IntraNodeAlgorithm.PIPELINED, r.algorithm().toIntra());
        // all: means the data collectives; a barrier alone is refused, naming the algorithm
        org.junit.jupiter.api.Assertions.assertFalse(RuleParser.parseRule("all:0-inf:pipelined", "t", 0, "o").collectives()
                .contains(Collective.BARRIER));
        TuningFormatException e = assertThrows(TuningFormatException.class, () -> RuleParser.parseRule("barrier:0-inf:pipelined", "t", 0, "o"));
        org.junit.jupiter.api.Assertions.assertTrue(e.getMessage().contains("pipelined does not apply"), e.getMessage());
        TuningFormatException r2 = assertThrows(TuningFormatException.class, () -> RuleParser.parseRule("reduce:0-inf:pipelined:radix=2", "t", 0, "o"));
        org.junit.jupiter.api.Assertions.assertTrue(r2.getMessage().contains("pipelined takes no radix"), r2.getMessage());
    }
}
