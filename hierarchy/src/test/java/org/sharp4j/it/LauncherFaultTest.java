package org.sharp4j.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The fault-injection table's rows on the embedded launcher (issue 16): kill -9 and SIGSTOP of a
 * node leader and of a plain member, on one node (2 sockets) and on 2 simulated nodes x 2 sockets,
 * while every rank runs random checked collectives ({@link StressMain}). Every other rank must
 * fail naming the victim (kill -9: within seconds; SIGSTOP: within the timeout, 4 s here), the
 * stopped rank must end too once continued, the launcher must exit non-zero, and nothing may be
 * left: no file in /dev/shm or /tmp, no process, no hs_err file.
 */
class LauncherFaultTest {
    static final int TIMEOUT_S = 4;

    @ParameterizedTest(name = "{0} ranks, {1} node(s) x {2} sockets: {3} of rank {4} ({5})")
    @CsvSource({
        "4,1,2,KILL,0,node leader", "4,1,2,KILL,3,member", "4,1,2,STOP,0,node leader", "4,1,2,STOP,3,member",
        // one socket: a Reduce's members other than the root and rank 0 return early (ExchangeAlgorithm, "Who returns when")
        "4,1,1,KILL,2,member of one socket", "4,1,1,STOP,0,leader of one socket",
        "8,2,2,KILL,4,leader of node 1", "8,2,2,KILL,7,member", "8,2,2,STOP,4,leader of node 1", "8,2,2,STOP,6,socket leader"})
    void everySurvivorNamesTheVictimAndNothingIsLeft(int np, int nodes, int sockets, String signal, int victim, String role)
            throws Exception {
        faultRow(np, nodes, sockets, signal, victim, role, List.of());
    }

    /**
     * The same rows with every call of 4 KiB and more on the pipelined algorithm in 1 KiB chunks
     * (the long calls, where the time goes: the victim is mostly hit inside one, chunks in flight,
     * a Reduce's non-roots gone ahead).
     */
    @ParameterizedTest(name = "pipelined, {0} ranks: {1} of rank {2} ({3})")
    @CsvSource({"4,KILL,2,member", "4,STOP,0,member 0", "4,STOP,3,member", "2,KILL,0,member 0"})
    void pipelinedCallsNameTheVictimToo(int np, String signal, int victim, String role) throws Exception {
        faultRow(np, 1, 1, signal, victim, role + ", pipelined", List.of("-Dsharp4j.tune=allreduce,reduce:4k-inf:pipelined:chunk=1k"));
    }

    /**
     * The same with every Reduce on the cma algorithm: a member killed while its root reads its
     * input from its process (the read fails with ESRCH: the root names it as dead), or while it
     * waits for the root; a stopped root or member found by the timeout.
     */
    @ParameterizedTest(name = "cma, {0} ranks: {1} of rank {2} ({3})")
    @CsvSource({"2,KILL,1,member", "3,KILL,2,member", "3,STOP,0,member 0", "2,STOP,1,member"})
    void cmaReducesNameTheVictimToo(int np, String signal, int victim, String role) throws Exception {
        faultRow(np, 1, 1, signal, victim, role + ", cma", List.of("-Dsharp4j.tune=reduce:0-inf:cma"));
    }

    /**
     * The split cma Allreduce and Reduce: a rank killed while the others read its slice of every input
     * or wait for its TILED (reads of its memory fail with ESRCH, the flags wait names it) or write into
     * its output (process_vm_writev: ESRCH); a stopped member found by the timeout.
     */
    @ParameterizedTest(name = "cma_split, {0} ranks: {1} of rank {2} ({3})")
    @CsvSource({"2,KILL,1,member", "3,KILL,0,member 0", "3,STOP,2,member"})
    void splitCmaReducesNameTheVictimToo(int np, String signal, int victim, String role) throws Exception {
        faultRow(np, 1, 1, signal, victim, role + ", cma_split", List.of("-Dsharp4j.tune=allreduce,reduce:0-inf:cma_split"));
    }

    private static void faultRow(int np, int nodes, int sockets, String signal, int victim, String role, List<String> props)
            throws Exception {
        List<String> args = new ArrayList<>(List.of("-np", Integer.toString(np), "--grace", "15"));
        if (nodes > 1) {
            args.addAll(List.of("--nodes", Integer.toString(nodes)));
        }
        args.addAll(List.of("--sockets", Integer.toString(sockets), StressMain.class.getName(), "-1", "11"));
        List<String> opts = new ArrayList<>(props);
        opts.add("-Dsharp4j.timeout=" + TIMEOUT_S);
        try (FaultRig job = new FaultRig(FaultRig.launcher(opts, args.toArray(String[]::new)),
                List.of())) {
            long[] pids = job.awaitReady(np, 120);
            Thread.sleep(300); // inside the random collectives
            job.signal(pids[victim], signal);
            double seen = job.awaitOutput(FaultRig.everyoneBlames(np, victim, Set.of(victim)), signal.equals("KILL") ? 30 : 60,
                    "every survivor naming rank " + victim, pids);
            if (signal.equals("STOP")) {
                job.signal(pids[victim], "CONT"); // it must notice the job's end by itself and exit
            }
            int exit = job.waitFor(60);
            List<String> left = job.leftovers(List.of("sharp4j", "jucx"), pids);
            String[] errs = job.errors(np);
            FaultRig.row("launcher " + nodes + "x" + sockets + " sockets, " + np + " ranks", (signal.equals("KILL") ? "kill -9 " : "SIGSTOP ")
                    + role + " (rank " + victim + ")", FaultRig.summarize(errs, victim), seen, "launcher " + exit, left);
            assertNotEquals(0, exit, job.output());
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
     * SIGTERM of the launcher (what scancel or a terminal's kill sends): it forwards SIGTERM to the
     * ranks, which give up on the job from their shutdown hook (so the peers learn it at once) and
     * exit; after a grace period it would SIGKILL them. Nothing may be left behind.
     */
    @org.junit.jupiter.api.Test
    void sigtermOfTheLauncherEndsEveryRankAndLeavesNothing() throws Exception {
        try (FaultRig job = new FaultRig(FaultRig.launcher(List.of("-Dsharp4j.timeout=60"), "-np", "4", "--nodes", "2",
                StressMain.class.getName(), "-1", "13"), List.of())) {
            long[] pids = job.awaitReady(4, 120);
            Thread.sleep(300);
            job.signal(job.process.pid(), "TERM");
            int exit = job.waitFor(60);
            double secs = job.secondsSinceFault();
            List<String> left = job.leftovers(List.of("sharp4j", "jucx"), pids);
            long told = job.lines.stream().filter(l -> l.contains("the JVM is shutting down")).count();
            FaultRig.row("launcher 2 nodes, 4 ranks", "SIGTERM of the launcher", "every rank terminated; " + told
                    + " error line(s) name the shutdown", secs, "launcher " + exit, left);
            assertNotEquals(0, exit, job.output());
            assertEquals(List.of(), left, job.output());
            assertTrue(secs < 15, "took " + secs + " s");
        }
    }
}
