package org.sharp4j.fallback.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * A program's first long calls between nodes, with unequal work between them (a rank late by 3 or
 * 30 ms in turns), find the host path compiled for them: no deoptimization in {@code org.sharp4j}
 * code ({@link FirstLongCallsMain}, JFR in each rank). Caught: the heating ran its ranks in
 * lockstep, so the condition wait's failure probe (after 20 ms of waiting) was compiled as a trap;
 * the program's first such wait threw the wait and the host step it was inlined into back to the
 * interpreter, and C2 recompiled them during the OSU port's rows (P90 of a 256 KiB Reduce 2 ms,
 * against 60 us); and a send in flight when tested, a part complete when awaited, a call of more
 * parts than phase 3 keeps in flight, all timing or sizes the heating never had.
 */
class FirstLongCallsTest {
    @Test
    void aProgramsFirstLongCallsWithLateRanksDoNotDeoptimize() throws Exception {
        Job job = Job.launcher(UcxProcessTest.UCX, Map.of(), "-np", "2", "--nodes", "2", FirstLongCallsMain.class.getName(), "2");
        int exit = job.waitFor(300);
        String out = job.output();
        assertEquals(0, exit, out);
        assertEquals(2, job.count(" calls 160"), "both ranks made their calls:\n" + out);
        List<String> deopts = job.lines.stream().filter(l -> l.contains(" deopt ")).collect(Collectors.toList());
        assertEquals(List.of(), deopts, "deoptimizations in sharp4j code during the first long calls:\n" + out);
    }
}
