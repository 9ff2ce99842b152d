package org.sharp4j.fallback.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Real processes through the embedded launcher ({@code LocalLauncher}) with simulated nodes and
 * phase 3 forced onto UCX: correctness, and a node leader killed with -9 (named by every survivor
 * within the timeout, nothing hangs, nothing left in /dev/shm).
 */
class UcxProcessTest {
    static final List<String> UCX = List.of("-Dsharp4j.internode=ucx", "-Dsharp4j.timeout=60");

    @Test
    void allCollectivesUpToEightMebibytesOnFourSimulatedNodesOfTwoProcesses() throws Exception {
        Job job = Job.launcher(UCX, Map.of(), "-np", "8", "--nodes", "4", CollectivesMain.class.getName(), String.valueOf(8 << 20));
        int exit = job.waitFor(600);
        String out = job.output();
        assertEquals(0, exit, out);
        assertEquals(8, job.count("collectives OK"), out);
        assertEquals(8, job.count("phase 3: UCX k-nomial"), out);
        assertEquals(List.of(), Job.shmFiles(job.jobPrefix()));
    }

    @Test
    void mixedRandomCollectivesOnThreeSimulatedNodes() throws Exception {
        // hierarchy's StressMain: random kinds, types, ops, sizes, roots and APIs, every result checked
        Job job = Job.launcher(UCX, Map.of(), "-np", "6", "--nodes", "3", "org.sharp4j.it.StressMain", "3000", "20261121");
        int exit = job.waitFor(600);
        String out = job.output();
        assertEquals(0, exit, out);
        assertEquals(6, job.count("3000 collectives OK"), out);
    }

    @Test
    void aTransportPeerKilledWithSigkillIsNamedByEveryOtherPeer() throws Exception {
        Job job = Job.launcher(List.of(), Map.of(), "-np", "4", "--grace", "30", UcxExchangeMain.class.getName(), "-1");
        job.awaitLines(" ready on ", 4, 120);
        Thread.sleep(300);
        long victim = Long.parseLong(job.find("rank 1 pid (\\d+) ready"));
        long t0 = System.nanoTime();
        ProcessHandle.of(victim).orElseThrow().destroyForcibly();
        int exit = job.waitFor(120);
        double secs = (System.nanoTime() - t0) / 1e9;
        String out = job.output();
        assertNotEquals(0, exit, out);
        for (int r : new int[] {0, 2, 3}) {
            assertEquals(1, job.count("rank " + r + ": FAILED: rank " + r + ": node leader rank 1 (node 1) disconnected: "), "rank " + r + ":\n" + out);
        }
        assertTrue(secs < 30, "survivors took " + secs + " s");
    }

    @Test
    void aNodeLeaderKilledWithSigkillIsNamedByEverySurvivorAndNothingLeaks() throws Exception {
        // 3 simulated nodes x 2 processes: ranks 0-1, 2-3, 4-5; rank 2 leads node 1.
        java.util.Set<String> tmpBefore = jucxDirs();
        Job job = Job.launcher(UCX, Map.of(), "-np", "6", "--nodes", "3", "--grace", "30", "org.sharp4j.it.StressMain", "-1", "7");
        job.awaitLines(" ready", 6, 180);
        Thread.sleep(500); // mid-run
        String pid = job.find("rank 2 pid (\\d+) ready");
        assertNotNull(pid, job.output());
        long t0 = System.nanoTime();
        ProcessHandle.of(Long.parseLong(pid)).orElseThrow().destroyForcibly();
        int exit = job.waitFor(180);
        double secs = (System.nanoTime() - t0) / 1e9;
        String out = job.output();
        assertNotEquals(0, exit, out);
        for (int r : new int[] {0, 1, 3, 4, 5}) {
            assertTrue(namesRank2(job, r), "rank " + r + " did not name rank 2:\n" + out);
        }
        assertTrue(secs < 60, "survivors took " + secs + " s (sharp4j.timeout=60)");
        assertEquals(List.of(), Job.shmFiles(job.jobPrefix()));
        java.util.Set<String> left = jucxDirs();
        left.removeAll(tmpBefore);
        assertEquals(java.util.Set.of(), left, "jucx's extracted library left in /tmp (the killed leader's included)");
    }

    /**
     * UCX writes its log to stdout, where OSU parsers read the tables: by default (no
     * UCX_LOG_LEVEL) not one UCX line may reach the ranks' stdout, not even UCX 1.13's API-version
     * warning; a user who sets UCX_LOG_LEVEL gets UCX's output as UCX prints it.
     */
    @Test
    void ucxLogsNothingOnStdoutUnlessTheUserSetsUcxLogLevel() throws Exception {
        String[] quiet = runSplit(null);
        assertEquals(2, quiet[0].lines().filter(l -> l.endsWith(": exchange OK")).count(), quiet[0] + quiet[1]);
        assertEquals(List.of(), quiet[0].lines().filter(l -> l.contains("UCX")).toList(), "UCX on stdout; stderr:\n" + quiet[1]);
        assertTrue(!quiet[1].contains("UCP API version"), quiet[1]);
        // Debian 12's UCX 1.13.1 under jucx 1.15 warns at every context creation (UcxTransport's class comment).
        String[] loud = runSplit("warn");
        assertEquals(2, loud[0].lines().filter(l -> l.endsWith(": exchange OK")).count(), loud[0] + loud[1]);
        assertEquals(2, loud[0].lines().filter(l -> l.contains("UCX  WARN  UCP API version is incompatible")).count(),
                "UCX_LOG_LEVEL=warn set by the user: each rank's context should print UCX's warning (UCX older than 1.15 here);"
                + " stdout:\n" + loud[0] + "\nstderr:\n" + loud[1]);
    }

    /** Two ranks of UcxExchangeMain through the launcher: {stdout, stderr}; UCX_LOG_LEVEL unset when level is null. */
    private static String[] runSplit(String level) throws Exception {
        java.nio.file.Path out = java.nio.file.Files.createTempFile("sharp4j-ucxlog", ".out");
        java.nio.file.Path err = java.nio.file.Files.createTempFile("sharp4j-ucxlog", ".err");
        try {
            ProcessBuilder pb = new ProcessBuilder(Job.java(), "-cp", Job.classPath(), "org.sharp4j.launch.LocalLauncher",
                    "-np", "2", UcxExchangeMain.class.getName(), "20").redirectOutput(out.toFile()).redirectError(err.toFile());
            pb.environment().remove("UCX_LOG_LEVEL");
            if (level != null) {
                pb.environment().put("UCX_LOG_LEVEL", level);
            }
            Process p = pb.start();
            boolean ended = p.waitFor(120, java.util.concurrent.TimeUnit.SECONDS);
            if (!ended) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                p.waitFor();
            }
            String[] r = {java.nio.file.Files.readString(out), java.nio.file.Files.readString(err)};
            assertTrue(ended, "job did not end within 120 s; stdout:\n" + r[0] + "\nstderr:\n" + r[1]);
            assertEquals(0, p.exitValue(), "stdout:\n" + r[0] + "\nstderr:\n" + r[1]);
            return r;
        } finally {
            java.nio.file.Files.deleteIfExists(out);
            java.nio.file.Files.deleteIfExists(err);
        }
    }

    static java.util.Set<String> jucxDirs() throws java.io.IOException {
        try (java.util.stream.Stream<java.nio.file.Path> s = java.nio.file.Files.list(java.nio.file.Path.of("/tmp"))) {
            return s.map(p -> p.getFileName().toString()).filter(n -> n.startsWith("jucx"))
                    .collect(java.util.stream.Collectors.toCollection(java.util.HashSet::new));
        }
    }

    /** A line of rank r's error that blames rank 2 (dead process, peer's abort, or UCX's disconnect). */
    static boolean namesRank2(Job job, int r) {
        synchronized (job.lines) {
            return job.lines.stream().anyMatch(l -> l.contains("rank " + r + ":") && (l.contains("rank 2 died")
                    || l.contains("because of rank 2") || l.contains("node leader rank 2 (node 1)")));
        }
    }
}
