package org.sharp4j.fallback.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Three real "hosts" on this machine ({@code .ci/netns-rig.sh}: network namespaces, veths to a
 * bridge, host names host0..host2 by {@code unshare -u}), the ranks of one job spread over them by
 * the embedded launcher ({@code --bind} on the bridge, {@code --rank-prefix} into the namespaces),
 * UCX over TCP across the veths. The topology sees three hosts, so phase 3 is UCX without forcing.
 * Skipped, with the reason (per test), where network namespaces cannot be made (not root, no
 * CAP_SYS_ADMIN, no iproute2); failed instead when the environment says {@code CI=true}.
 */
class NetnsRigTest {
    static final Path SCRIPT = findScript();
    static final String ID = "s4j" + ProcessHandle.current().pid() % 100_000;
    static final String NET = "10.231." + (100 + ProcessHandle.current().pid() % 150);
    static final Map<String, String> ENV = Map.of("RIG_ID", ID, "RIG_NET", NET);
    static final List<String> UCX_TCP = List.of("-Dsharp4j.ucx.tls=tcp", "-Dsharp4j.ucx.net.devices=eth0", "-Dsharp4j.timeout=60");

    static Path findScript() {
        for (Path d = Path.of("").toAbsolutePath(); d != null; d = d.getParent()) {
            Path s = d.resolve(".ci/netns-rig.sh");
            if (Files.isRegularFile(s)) {
                return s;
            }
        }
        return null;
    }

    /**
     * Why every test is skipped, or null. Recorded here and acted on in {@link #rigIsThere()}: a
     * failed assumption in {@code @BeforeAll} is reported by surefire as "Tests run: 0, Skipped: 0",
     * without the reason, so the skip would be invisible.
     */
    static String skip;

    @BeforeAll
    static void namespacesWork() throws Exception {
        if (SCRIPT == null) {
            skip = "no .ci/netns-rig.sh above " + Path.of("").toAbsolutePath();
            System.err.println("NetnsRigTest: " + skip);
            return;
        }
        ProcessBuilder pb = new ProcessBuilder("bash", SCRIPT.toString(), "check").redirectErrorStream(true);
        pb.environment().putAll(ENV);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        if (p.waitFor() != 0) {
            skip = "network namespaces are not available here, the 3-host rig is skipped: " + out;
            System.err.println("NetnsRigTest: " + skip);
        }
    }

    /** Skips each test, saying why; on CI (CI=true: root, the rig must run) fails it instead. */
    @BeforeEach
    void rigIsThere() {
        if (skip != null && onCi()) {
            fail("CI=true, so the 3-host rig must run, but: " + skip);
        }
        Assumptions.assumeTrue(skip == null, skip);
    }

    static boolean onCi() {
        return "true".equalsIgnoreCase(System.getenv("CI"));
    }

    @AfterAll
    static void down() throws Exception {
        if (SCRIPT != null) {
            ProcessBuilder pb = new ProcessBuilder("bash", SCRIPT.toString(), "down").redirectErrorStream(true);
            pb.environment().putAll(ENV);
            Process p = pb.start();
            p.getInputStream().readAllBytes();
            p.waitFor();
        }
    }

    /** {@code netns-rig.sh run 3 -- java <opts> LocalLauncher --bind BRIDGE --rank-prefix '...' -np NP MAIN ARGS}. */
    static Job onThreeHosts(List<String> jvmOpts, int np, String... program) throws IOException {
        List<String> cmd = new ArrayList<>(List.of("bash", SCRIPT.toString(), "run", "3", "--", Job.java()));
        cmd.addAll(jvmOpts);
        cmd.addAll(List.of("-cp", Job.classPath(), "org.sharp4j.launch.LocalLauncher", "--bind", NET + ".254",
                "--rank-prefix", SCRIPT + " exec {rank} {size}", "--grace", "30", "-np", String.valueOf(np)));
        cmd.addAll(List.of(program));
        return new Job(cmd, ENV);
    }

    static String launcherPrefix(Job job) {
        Optional<ProcessHandle> l = job.process.descendants()
                .filter(h -> h.info().commandLine().map(c -> c.contains("LocalLauncher")).orElse(false)).findFirst();
        return l.map(h -> "sharp4j-j" + h.pid() + "-").orElse(null);
    }

    @ParameterizedTest(name = "3 hosts x {0} rank(s)")
    @ValueSource(ints = {1, 2})
    void allreduceReduceAndBarrierAcrossThreeHosts(int perHost) throws Exception {
        int np = 3 * perHost;
        Job job = onThreeHosts(UCX_TCP, np, CollectivesMain.class.getName(), String.valueOf(1 << 20));
        job.awaitLines("", 1, 60);
        String prefix = launcherPrefix(job);
        int exit = job.waitFor(600);
        String out = job.output();
        assertEquals(0, exit, out);
        assertEquals(np, job.count("collectives OK"), out);
        // The rig's hosts share this machine's CPUs: ranks that outnumber them are oversubscribed and do
        // not spin, whatever host name each namespace has.
        long spinUs = np > org.sharp4j.topology.CpuTopology.onlineCpus() ? 0 : 20;
        for (int h = 0; h < 3; h++) {
            assertEquals(perHost, job.count("collectives OK on host" + h + " (node " + h + " of 3, phase 3: UCX k-nomial, spin "
                    + spinUs + " us)"), out);
        }
        if (prefix != null) {
            assertEquals(List.of(), Job.shmFiles(prefix));
        }
        // and the mixed random sequence (hierarchy's StressMain), every result checked
        job = onThreeHosts(UCX_TCP, np, "org.sharp4j.it.StressMain", "1500", String.valueOf(17 + perHost));
        exit = job.waitFor(600);
        out = job.output();
        assertEquals(0, exit, out);
        assertEquals(np, job.count("1500 collectives OK"), out);
    }

    @Test
    void aHostsLeaderKilledWithSigkillIsNamedByTheOtherHosts() throws Exception {
        // Separate hosts: no process probe can see the victim, only UCX's endpoint error does.
        Job job = onThreeHosts(UCX_TCP, 3, "org.sharp4j.it.StressMain", "-1", "5");
        job.awaitLines(" ready", 3, 180);
        String prefix = launcherPrefix(job);
        Thread.sleep(500);
        String pid = job.find("rank 1 pid (\\d+) ready");
        assertNotNull(pid, job.output());
        long t0 = System.nanoTime();
        ProcessHandle.of(Long.parseLong(pid)).orElseThrow().destroyForcibly();
        int exit = job.waitFor(180);
        double secs = (System.nanoTime() - t0) / 1e9;
        String out = job.output();
        assertNotEquals(0, exit, out);
        for (int r : new int[] {0, 2}) {
            synchronized (job.lines) {
                assertTrue(job.lines.stream().anyMatch(l -> l.contains("rank " + r + ":") && (l.contains("node leader rank 1 (node 1)")
                        || l.contains("because of rank 1") || l.contains("[1] died"))), "rank " + r + " did not name rank 1:\n" + out);
            }
        }
        assertTrue(secs < 60, "survivors took " + secs + " s (sharp4j.timeout=60)");
        if (prefix != null) {
            assertEquals(List.of(), Job.shmFiles(prefix));
        }
    }

    /** The launcher on the rig with FaultRig's bookkeeping (leftovers, rows of the fault table). */
    static org.sharp4j.it.FaultRig faultJob(List<String> jvmOpts, int np, String... program) throws IOException {
        List<String> cmd = new ArrayList<>(List.of("bash", SCRIPT.toString(), "run", "3", "--", Job.java()));
        cmd.addAll(jvmOpts);
        cmd.addAll(List.of("-cp", Job.classPath(), "org.sharp4j.launch.LocalLauncher", "--bind", NET + ".254",
                "--rank-prefix", SCRIPT + " exec {rank} {size}", "--grace", "20", "-np", String.valueOf(np)));
        cmd.addAll(List.of(program));
        return new org.sharp4j.it.FaultRig(cmd, List.of("RIG_ID=" + ID, "RIG_NET=" + NET));
    }

    static final int FAULT_TIMEOUT_S = 5;
    static final List<String> UCX_TCP_SHORT = List.of("-Dsharp4j.ucx.tls=tcp", "-Dsharp4j.ucx.net.devices=eth0",
            "-Dsharp4j.timeout=" + FAULT_TIMEOUT_S);

    /**
     * SIGSTOP of host 1's only rank (its node leader) mid-run: no process probe can see it from the
     * other hosts and UCX reports nothing (the TCP connection stays up), so the others must give up
     * at their timeout naming rank 1, close UCX without aborting the JVM, and the stopped rank must
     * end too once continued.
     */
    @Test
    void aHostsLeaderStoppedWithSigstopIsNamedByTheOtherHostsWithinTheTimeout() throws Exception {
        try (org.sharp4j.it.FaultRig job = faultJob(UCX_TCP_SHORT, 3, "org.sharp4j.it.StressMain", "-1", "31")) {
            long[] pids = job.awaitReady(3, 180);
            Thread.sleep(500);
            job.signal(pids[1], "STOP");
            double seen = job.awaitOutput(org.sharp4j.it.FaultRig.everyoneBlames(3, 1, java.util.Set.of(1)), 60,
                    "hosts 0 and 2 naming rank 1", pids);
            Thread.sleep(1_000);
            job.signal(pids[1], "CONT");
            int exit = job.waitFor(90);
            List<String> left = job.leftovers(List.of("sharp4j", "jucx"), pids);
            String[] errs = job.errors(3);
            boolean crashed = job.crashed();
            org.sharp4j.it.FaultRig.row("3 namespace hosts x 1 rank, UCX over TCP", "SIGSTOP leader of host 1 (rank 1)",
                    org.sharp4j.it.FaultRig.summarize(errs, 1) + (crashed ? "; a JVM ABORTED" : ""), seen, "rig " + exit, left);
            assertNotEquals(0, exit, job.output());
            assertTrue(!crashed, job.output());
            assertEquals(List.of(), left, job.output());
            assertTrue(seen < 2 * FAULT_TIMEOUT_S + 10, "took " + seen + " s (timeout " + FAULT_TIMEOUT_S + " s)");
            assertNotNull(errs[1], "the stopped rank did not report after SIGCONT:\n" + job.output());
        }
    }

    /**
     * A partition: host 1's link to the bridge goes down mid-run (its veth in the root namespace),
     * then comes back after everyone reported. TCP sees nothing for minutes, so only the timeouts can
     * end it: every rank must report within about the timeout, host 0 and 2 naming rank 1 and rank 1
     * naming a leader it cannot reach; nobody hangs, crashes or leaves anything behind.
     */
    @Test
    void aPartitionedHostEndsEveryRankWithinTheTimeout() throws Exception {
        try (org.sharp4j.it.FaultRig job = faultJob(UCX_TCP_SHORT, 3, "org.sharp4j.it.StressMain", "-1", "37")) {
            long[] pids = job.awaitReady(3, 180);
            Thread.sleep(500);
            link("down");
            job.markInjected();
            double seen;
            try {
                seen = job.awaitOutput(ls -> reported(ls, 3), 60, "every rank's error", pids);
            } finally {
                link("up");
            }
            int exit = job.waitFor(90);
            List<String> left = job.leftovers(List.of("sharp4j", "jucx"), pids);
            String[] errs = job.errors(3);
            boolean crashed = job.crashed();
            String outcome = "rank 0: " + errs[0] + "; rank 1: " + errs[1] + "; rank 2: " + errs[2];
            org.sharp4j.it.FaultRig.row("3 namespace hosts x 1 rank, UCX over TCP", "host 1's link down (a partition)",
                    outcome.replace('|', '/') + (crashed ? "; a JVM ABORTED" : ""), seen, "rig " + exit, left);
            assertNotEquals(0, exit, job.output());
            assertTrue(!crashed, job.output());
            assertEquals(List.of(), left, job.output());
            assertTrue(seen < 3 * FAULT_TIMEOUT_S + 10, "took " + seen + " s (timeout " + FAULT_TIMEOUT_S + " s)");
            assertTrue(org.sharp4j.it.FaultRig.blames(errs[0], 1) && org.sharp4j.it.FaultRig.blames(errs[2], 1),
                    "hosts 0 and 2 must name rank 1:\n" + outcome);
            assertTrue(org.sharp4j.it.FaultRig.blames(errs[1], 0) || org.sharp4j.it.FaultRig.blames(errs[1], 2),
                    "rank 1 must name a leader it cannot reach:\n" + outcome);
        }
    }

    static boolean reported(List<String> lines, int n) {
        boolean[] seen = new boolean[n];
        java.util.regex.Pattern p = java.util.regex.Pattern.compile("org\\.sharp4j\\.[A-Za-z.]+Exception: rank (\\d+): ");
        for (String l : lines) {
            java.util.regex.Matcher m = p.matcher(l);
            if (m.find() && Integer.parseInt(m.group(1)) < n) {
                seen[Integer.parseInt(m.group(1))] = true;
            }
        }
        for (boolean b : seen) {
            if (!b) {
                return false;
            }
        }
        return true;
    }


    /** Host 1's veth on the bridge side, up or down. */
    static void link(String state) throws Exception {
        Process p = new ProcessBuilder("ip", "link", "set", ID + "v1", state).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), "ip link set " + ID + "v1 " + state + ": " + out);
    }
}
