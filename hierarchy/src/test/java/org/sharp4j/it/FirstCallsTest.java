package org.sharp4j.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A program's first calls after {@code Sharp4j.init()} find the hot path compiled for them: no
 * deoptimization in {@code org.sharp4j} code (JFR's jdk.Deoptimization, in each rank) during its
 * first calls in every form the heating covers: direct buffers and in-place direct buffers,
 * arrays and in-place arrays, Allreduce, Reduce and Barrier, 8 B and 256 B, on the program's own
 * memory. Caught: the heating passed one pair of direct buffers, so C2 compiled "the buffer
 * changed" in {@code Payload.buffer} as a trap, and every program on direct buffers deoptimized
 * {@code Communicator.buffers} at its first call (its first 1,000 calls 1.2-2.5x the steady state).
 * The calls end with a run of Reduces to one root, whose non-root waits at the reuse gate before
 * every call, a branch the heating takes in its runs of Reduces ({@code Communicator.REDUCE_RUN}).
 */
class FirstCallsTest {
    @Test
    void theFirstCallsInEveryHeatedFormDoNotDeoptimize() throws Exception {
        LauncherProcessTest.Job job = new LauncherProcessTest.Job(List.of("-Dsharp4j.timeout=60"), "-np", "2",
                FirstCallsMain.class.getName(), "300");
        int exit = job.waitFor(180);
        String out = String.join("\n", job.lines);
        assertEquals(0, exit, out);
        assertEquals(2, job.count(" calls " + (912 + FirstCallsMain.REDUCE_RUN_CALLS)), "both ranks made their calls:\n" + out);
        assertTrue(job.count(" deopt ") == 0, "deoptimizations in sharp4j code during the first calls:\n" + out);
    }
}
