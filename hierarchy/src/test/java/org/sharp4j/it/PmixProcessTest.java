package org.sharp4j.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sharp4j.testkit.OmpiSessions;

/**
 * Real processes started by Open MPI's {@code mpirun}: the ranks find each other through PMIx
 * (libpmix via JNA, no MPI Java bindings). The mpirun tests are skipped, with the reason, when
 * mpirun is not installed or is not Open MPI. Flags from the environment's {@code MPIRUN_FLAGS}
 * (see .ci/mpi-env.sh), else the same defaults.
 */
class PmixProcessTest {
    static final String DEFAULT_MPIRUN_FLAGS = "--allow-run-as-root --oversubscribe --mca pml ob1 --mca btl self,vader";
    static final Pattern MAIN_LINE = Pattern.compile(
            "PMIXMAIN rank (\\d+) size (\\d+) nodes (\\d+) local (\\d+) of (\\d+) sum \\[(\\d+), (\\d+), (\\d+)\\] max (\\d+) (OK|WRONG)");
    static final Pattern CHOSEN = Pattern.compile("bootstrap (\\w+) chosen \\(([^)]*)\\)");
    static final Pattern PMIX_DETAIL = Pattern.compile(
            "pmix rank (\\d+) of (\\d+) \\(namespace (\\S+), local rank (\\d+) of (\\d+) on (\\S+)\\)");

    @TempDir
    static Path tmp;
    static Path logbackConfig;

    @BeforeAll
    static void infoLogging() throws IOException {
        // The test logback config logs WARN and up; the ranks need the INFO line naming the bootstrap.
        logbackConfig = tmp.resolve("logback-info.xml");
        Files.writeString(logbackConfig, String.join("\n",
                "<configuration>",
                "  <appender name=\"ERR\" class=\"ch.qos.logback.core.ConsoleAppender\">",
                "    <target>System.err</target>",
                "    <encoder><pattern>%-5level %logger - %msg%n</pattern></encoder>",
                "  </appender>",
                "  <logger name=\"org.sharp4j.Sharp4j\" level=\"INFO\"/>",
                "  <root level=\"WARN\"><appender-ref ref=\"ERR\"/></root>",
                "</configuration>", ""));
    }

    static String mpirun() throws IOException, InterruptedException {
        String mpirun = null;
        for (String d : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(File.pathSeparator)) {
            Path p = Path.of(d.isEmpty() ? "." : d, "mpirun");
            if (Files.isExecutable(p)) {
                mpirun = p.toString();
                break;
            }
        }
        Assumptions.assumeTrue(mpirun != null, "mpirun is not installed (not on PATH): skipping the PMIx process tests");
        Process p = new ProcessBuilder(mpirun, "--version").redirectErrorStream(true).start();
        String v = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        p.waitFor(30, TimeUnit.SECONDS);
        Assumptions.assumeTrue(v.contains("Open MPI") || v.contains("OpenRTE") || v.contains("PRRTE"),
                "mpirun is not Open MPI/PRRTE (no PMIx server to test against): " + v.trim());
        return mpirun;
    }

    static String classPath() {
        return System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    }

    static String java() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /** Runs the command (stdout+stderr merged) and returns its output; fails on a non-zero exit or after 180 s. */
    static String run(List<String> cmd, Map<String, String> env) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().keySet().removeIf(k -> k.startsWith("PMIX_") || k.startsWith("SHARP4J_") || k.startsWith("OMPI_"));
        pb.environment().putAll(env);
        Path sessions = OmpiSessions.baseFor(cmd, env);
        if (sessions != null) {
            pb.environment().put(OmpiSessions.VAR, sessions.toString());
        }
        int exit = -1;
        try {
            Process p = pb.start();
            List<String> lines = new ArrayList<>();
            Thread reader = new Thread(() -> {
                try {
                    String all = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                    synchronized (lines) {
                        lines.addAll(Arrays.asList(all.split("\n")));
                    }
                } catch (IOException ignored) {
                    // process ended
                }
            });
            reader.start();
            if (!p.waitFor(180, TimeUnit.SECONDS)) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                reader.join(5000);
                throw new AssertionError("did not finish within 180 s: " + cmd + "\n" + String.join("\n", lines));
            }
            reader.join(10_000);
            String out;
            synchronized (lines) {
                out = String.join("\n", lines);
            }
            exit = p.exitValue();
            assertEquals(0, exit, cmd + " failed:\n" + out);
            return out;
        } finally {
            String left = OmpiSessions.check(sessions, cmd, exit);
            if (left != null) {
                throw new AssertionError(left);
            }
        }
    }

    static String mpirunJob(int np, String bootstrapProperty, String... args) throws Exception {
        String mpirun = mpirun();
        List<String> cmd = new ArrayList<>(List.of(mpirun));
        String flags = System.getenv().getOrDefault("MPIRUN_FLAGS", DEFAULT_MPIRUN_FLAGS);
        cmd.addAll(Arrays.asList(flags.trim().split("\\s+")));
        if (np > Runtime.getRuntime().availableProcessors() && !cmd.contains("--oversubscribe")) {
            cmd.add("--oversubscribe");
        }
        cmd.addAll(List.of("-np", Integer.toString(np), java(), "-Dlogback.configurationFile=" + logbackConfig,
                "-Dsharp4j.timeout=120"));
        if (bootstrapProperty != null) {
            cmd.add("-Dsharp4j.bootstrap=" + bootstrapProperty);
        }
        cmd.addAll(List.of("-cp", classPath(), PmixMain.class.getName()));
        cmd.addAll(List.of(args));
        return run(cmd, Map.of());
    }

    /** Checks n ranks' PMIXMAIN lines (one node, correct sums) and returns the bootstrap choices logged. */
    static List<String[]> checkMain(String out, int n) {
        Set<Integer> seen = new HashSet<>();
        long sq = 0;
        for (int i = 0; i < n; i++) {
            sq += (long) i * i;
        }
        for (String l : out.split("\n")) {
            Matcher m = MAIN_LINE.matcher(l);
            if (!m.find()) {
                continue;
            }
            int r = Integer.parseInt(m.group(1));
            assertTrue(seen.add(r), "rank " + r + " twice:\n" + out);
            assertEquals(n, Integer.parseInt(m.group(2)), l);
            assertEquals(1, Integer.parseInt(m.group(3)), "all ranks are on this host: one node\n" + l);
            assertEquals(r, Integer.parseInt(m.group(4)), l);
            assertEquals(n, Integer.parseInt(m.group(5)), l);
            assertEquals((long) n * (n + 1) / 2, Long.parseLong(m.group(6)), l);
            assertEquals(n, Long.parseLong(m.group(7)), l);
            assertEquals(sq, Long.parseLong(m.group(8)), l);
            assertEquals(n - 1, Integer.parseInt(m.group(9)), l);
            assertEquals("OK", m.group(10), l);
        }
        assertEquals(n, seen.size(), "expected ranks 0.." + (n - 1) + ":\n" + out);
        List<String[]> chosen = new ArrayList<>();
        for (String l : out.split("\n")) {
            Matcher m = CHOSEN.matcher(l);
            if (m.find()) {
                chosen.add(new String[] {m.group(1), m.group(2), l});
            }
        }
        assertEquals(n, chosen.size(), "one bootstrap line per rank:\n" + out);
        return chosen;
    }

    /** The PMIx log lines: every rank once, same namespace, one node (local rank = rank, local size = size). */
    static void checkPmixDetails(String out, int n) {
        Set<Integer> ranks = new HashSet<>();
        Set<String> namespaces = new HashSet<>();
        Set<String> hosts = new HashSet<>();
        for (String l : out.split("\n")) {
            Matcher m = PMIX_DETAIL.matcher(l);
            if (m.find()) {
                int r = Integer.parseInt(m.group(1));
                ranks.add(r);
                assertEquals(n, Integer.parseInt(m.group(2)), l);
                namespaces.add(m.group(3));
                assertEquals(r, Integer.parseInt(m.group(4)), "PMIX_LOCAL_RANK on a single node\n" + l);
                assertEquals(n, Integer.parseInt(m.group(5)), "PMIX_LOCAL_SIZE on a single node\n" + l);
                hosts.add(m.group(6));
            }
        }
        assertEquals(n, ranks.size(), out);
        assertEquals(1, namespaces.size(), out);
        assertEquals(1, hosts.size(), out);
    }

    @Test
    void twoRanksUnderMpirunMeetThroughPmix() throws Exception {
        String out = mpirunJob(2, "pmix");
        for (String[] c : checkMain(out, 2)) {
            assertEquals("pmix", c[0], c[2]);
            assertEquals("sharp4j.bootstrap=pmix", c[1], c[2]);
        }
        checkPmixDetails(out, 2);
    }

    @Test
    void fourRanksOversubscribedUnderMpirunMeetThroughPmix() throws Exception {
        String out = mpirunJob(4, "pmix");
        for (String[] c : checkMain(out, 4)) {
            assertEquals("pmix", c[0], c[2]);
        }
        checkPmixDetails(out, 4);
    }

    @Test
    void autoSelectionUnderMpirunPicksPmix() throws Exception {
        String out = mpirunJob(2, null);
        for (String[] c : checkMain(out, 2)) {
            assertEquals("pmix", c[0], c[2]);
            assertTrue(c[1].startsWith("auto: PMIX_RANK and PMIX_NAMESPACE are set"), c[2]);
        }
        checkPmixDetails(out, 2);
    }

    @Test
    void repeatedAllgathersOfThePmixBootstrapNeverSeeStaleValues() throws Exception {
        String out = mpirunJob(3, null, "raw");
        Pattern p = Pattern.compile("PMIXRAW rank (\\d+) size 3 lrank (\\d+) lsize 3 host \\S+ job (pmix-[A-Za-z0-9._-]+) .* sum 6 OK");
        Set<Integer> ranks = new HashSet<>();
        Set<String> jobs = new HashSet<>();
        for (String l : out.split("\n")) {
            Matcher m = p.matcher(l);
            if (m.find()) {
                ranks.add(Integer.parseInt(m.group(1)));
                assertEquals(m.group(1), m.group(2), l);
                jobs.add(m.group(3));
            }
        }
        assertEquals(Set.of(0, 1, 2), ranks, out);
        assertEquals(1, jobs.size(), out);
        assertTrue(!out.contains("WRONG"), out);
    }

    @Test
    void autoSelectionUnderTheEmbeddedLauncherPicksTheLauncher() throws Exception {
        List<String> cmd = List.of(java(), "-cp", classPath(), "org.sharp4j.launch.LocalLauncher", "-np", "2",
                PmixMain.class.getName());
        // Even with PMIx variables around, the launcher's SHARP4J_RENDEZVOUS wins in auto mode.
        String out = run(cmd, Map.of("SHARP4J_JAVA_OPTS", "-Dlogback.configurationFile=" + logbackConfig,
                "PMIX_RANK", "0", "PMIX_NAMESPACE", "not-a-real-namespace"));
        for (String[] c : checkMain(out, 2)) {
            assertEquals("launcher", c[0], c[2]);
            assertTrue(c[1].contains("SHARP4J_RENDEZVOUS is set"), c[2]);
        }
    }
}
