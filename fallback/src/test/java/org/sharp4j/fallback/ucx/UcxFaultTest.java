package org.sharp4j.fallback.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.sharp4j.it.CloseLagMain;
import org.sharp4j.it.FaultRig;
import org.sharp4j.it.StressMain;

/**
 * The fault table's UCX rows (issue 16): 2 simulated nodes x 2 processes with phase 3 on the UCX
 * host path, random checked collectives, then kill -9 or SIGSTOP of the other node's leader or of
 * a member. Every survivor must name the victim (SIGSTOP: within the 4 s timeout plus the
 * dissemination), the stopped rank must report too once continued, and the leaders must then
 * close UCX without dying: before, {@code ucp_worker_destroy} aborted the JVM (SIGABRT, {@code
 * Assertion 'req->flags & UCP_REQUEST_FLAG_RELEASED' failed}) about 5 s after the error, because
 * endpoints with a pending close were force-closed under outstanding requests. Nothing may be left:
 * no file in /dev/shm or /tmp (jucx's extracted library included), no process, no hs_err file.
 */
class UcxFaultTest {
    static final int TIMEOUT_S = 4;

    @ParameterizedTest(name = "{0} of rank {1} ({2}), {3} slots")
    @CsvSource({"KILL,2,leader of node 1,64k", "STOP,2,leader of node 1,64k", "STOP,3,member of node 1,64k",
        "STOP,0,leader of node 0,64k", "KILL,2,leader of node 1,4k", "STOP,0,leader of node 0,4k"})
    void everySurvivorNamesTheVictimAndUcxClosesCleanly(String signal, int victim, String role, String slot) throws Exception {
        int np = 4;
        // 4 KiB slots: one call in ten is long enough for phase 3 in parts (first slot, then units of 4), so a
        // leader dies or stops inside them too.
        List<String> jvm = List.of("-Dsharp4j.internode=ucx", "-Dsharp4j.timeout=" + TIMEOUT_S, "-Dsharp4j.slot.bytes=" + slot);
        try (FaultRig job = new FaultRig(FaultRig.launcher(jvm, "-np", "4", "--nodes", "2", "--grace", "20",
                StressMain.class.getName(), "-1", "23"), List.of())) {
            long[] pids = job.awaitReady(np, 180);
            Thread.sleep(500); // inside the random collectives
            job.signal(pids[victim], signal);
            double seen = job.awaitOutput(FaultRig.everyoneBlames(np, victim, Set.of(victim)), signal.equals("KILL") ? 30 : 60,
                    "every survivor naming rank " + victim, pids);
            if (signal.equals("STOP")) {
                Thread.sleep(2_000); // past the others' give-up: the victim wakes into a finished job
                job.signal(pids[victim], "CONT");
            }
            int exit = job.waitFor(90);
            List<String> left = job.leftovers(List.of("sharp4j", "jucx"), pids);
            String[] errs = job.errors(np);
            boolean aborted = job.crashed();
            FaultRig.row("launcher 2 nodes x 2, UCX phase 3" + (slot.equals("64k") ? "" : ", " + slot + " slots"), (signal.equals("KILL") ? "kill -9 " : "SIGSTOP ") + role
                    + " (rank " + victim + ")", FaultRig.summarize(errs, victim) + (aborted ? "; a JVM ABORTED" : ""), seen,
                    "launcher " + exit, left);
            assertNotEquals(0, exit, job.output());
            assertTrue(!aborted, "a JVM crashed while closing UCX:\n" + job.output());
            assertEquals(List.of(), left, job.output());
            if (signal.equals("KILL")) {
                assertTrue(seen < 15, "survivors took " + seen + " s to name a dead rank (timeout " + TIMEOUT_S + " s)");
            } else {
                assertTrue(seen < 3 * TIMEOUT_S + 10, "survivors took " + seen + " s to name a stopped rank (timeout " + TIMEOUT_S + " s)");
                assertTrue(errs[victim] != null, "the stopped rank did not report after SIGCONT:\n" + job.output());
            }
        }
    }

    /**
     * A node leader that is alive but does not close (it sleeps past the others' timeout): the
     * others close anyway, within the timeout and its dissemination, and each says at WARN that
     * the leaders' meeting before close ended early, naming that leader, in the close, not in
     * the last call. The laggard closes at once when it comes, and nothing is left behind.
     */
    @Test
    void aLeaderThatDoesNotCloseIsNamedByTheOthersClose() throws Exception {
        int np = 3;
        int laggard = 2;
        List<String> jvm = List.of("-Dsharp4j.internode=ucx", "-Dsharp4j.timeout=" + TIMEOUT_S);
        try (FaultRig job = new FaultRig(FaultRig.launcher(jvm, "-np", "3", "--nodes", "3", "--tag-output",
                CloseLagMain.class.getName(), Integer.toString(laggard), Integer.toString(4 * TIMEOUT_S + 4)), List.of())) {
            int exit = job.waitFor(120);
            String out = job.output();
            assertEquals(0, exit, out);
            for (int r = 0; r < np; r++) {
                String tag = "[1," + r + "]";
                Matcher closed = Pattern.compile(Pattern.quote(tag) + "<stdout>:rank " + r + " closed in ([0-9.]+) s").matcher(out);
                assertTrue(closed.find(), "rank " + r + " did not close:\n" + out);
                double s = Double.parseDouble(closed.group(1));
                List<String> warns = job.lines.stream().filter(l -> l.startsWith(tag) && l.contains("meeting before close"))
                        .collect(Collectors.toList());
                if (r == laggard) {
                    assertTrue(s < TIMEOUT_S, "the laggard's close took " + s + " s:\n" + out);
                    continue;
                }
                assertTrue(s >= TIMEOUT_S - 1 && s < 3 * TIMEOUT_S + 5, "rank " + r + "'s close took " + s + " s (timeout " + TIMEOUT_S + " s):\n" + out);
                assertEquals(1, warns.size(), "rank " + r + ": one WARN about the meeting:\n" + out);
                String w = warns.get(0);
                assertTrue(w.contains("because of rank " + laggard) || w.contains("waiting for rank " + laggard),
                        "rank " + r + " must name rank " + laggard + ": " + w);
                assertTrue(w.contains("in close") || w.contains("during close"), "the WARN must say the close, not the last call: " + w);
            }
            assertEquals(List.of(), job.leftovers(List.of("sharp4j", "jucx"), List.of()), out);
        }
    }
}
