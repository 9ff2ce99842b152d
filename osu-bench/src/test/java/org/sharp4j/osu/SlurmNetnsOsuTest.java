package org.sharp4j.osu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.sharp4j.testkit.Procs;

/**
 * sharp4j under Slurm, as on a cluster: {@code .ci/slurm-rig.sh} runs slurmctld in the root
 * namespace and one slurmd in each of three network-namespace hosts ({@code .ci/netns-rig.sh}),
 * and {@code srun --mpi=pmix -N 3 -n 6} starts two JVMs per host. Slurm's PMIx plugin serves
 * libpmix, through which sharp4j's PMIx bootstrap joins the job (no MPI anywhere: mpi.jar is left
 * off the ranks' class path); shared memory inside a host, UCX over TCP on the veths between hosts.
 * Without {@code --mpi=pmix} every rank must fail, naming the fix, instead of computing alone.
 *
 * <p>Own rig name, subnet and ports (from this JVM's pid), so that it never meets another rig; the
 * cluster is always taken down, also when the JVM is stopped, and nothing may be left behind.
 * Skipped, saying why in the test, where Slurm is not installed or network namespaces cannot be
 * made (not root); failed instead when the environment says {@code CI=true} (CI runs as root and
 * installs Slurm through .ci/setup.sh).
 */
class SlurmNetnsOsuTest {
    static final long PID = ProcessHandle.current().pid();
    static final String RIG_ID = "s4js" + PID % 100_000;
    static final String RIG_NET = "10.234." + PID % 250;
    static final int PORT = 12_000 + (int) (PID % 180) * 110; // with srun's 100 ports, below the ephemeral range
    /** On every rank's command line: after the test no process may still carry it. */
    static final String MARK = "-Dsharp4j.test.slurmrig=" + RIG_ID;
    /** For the rig script and, through srun, the ranks; UCX 1.13's version warning goes to stdout. */
    static final Map<String, String> ENV = Map.of("RIG_ID", RIG_ID, "RIG_NET", RIG_NET, "SLURM_RIG_PORT", Integer.toString(PORT),
            "UCX_LOG_LEVEL", "error");
    static final List<String> SHARP4J_OPTS = List.of("-Dsharp4j.ucx.tls=tcp", "-Dsharp4j.ucx.net.devices=eth0", "-Dsharp4j.timeout=60",
            "-Dsharp4j.log.level=INFO");

    static Path rig;
    static boolean rigUp;
    static Thread downOnExit;
    static Set<String> shmBefore;
    /** Why the test is skipped, or null (assumed in {@link #rigIsThere()}, see MpirunNetnsOsuTest). */
    static String skip;

    @BeforeAll
    static void bringTheClusterUp() throws Exception {
        Path top = Path.of("").toAbsolutePath();
        while (top != null && !Files.isRegularFile(top.resolve(".ci/slurm-rig.sh"))) {
            top = top.getParent();
        }
        assertNotNull(top, "no .ci/slurm-rig.sh above " + Path.of("").toAbsolutePath());
        rig = top.resolve(".ci/slurm-rig.sh");
        Procs.Result check = rig("check");
        if (check.exit() != 0) {
            skip = "Slurm across network-namespace hosts is skipped: " + (check.out() + check.err()).trim();
            System.err.println("SlurmNetnsOsuTest: " + skip);
            return;
        }
        shmBefore = shm();
        downOnExit = new Thread(SlurmNetnsOsuTest::quietDown, "slurm-rig down");
        Runtime.getRuntime().addShutdownHook(downOnExit);
        rigUp = true;
        Procs.Result up = rig("up", "3");
        assertEquals(0, up.exit(), () -> "slurm-rig.sh up 3 (RIG_ID=" + RIG_ID + " RIG_NET=" + RIG_NET + ")\n" + up);
    }

    @BeforeEach
    void rigIsThere() {
        if (skip != null && "true".equalsIgnoreCase(System.getenv("CI"))) {
            fail("CI=true, so the Slurm tests must run, but: " + skip);
        }
        assumeTrue(skip == null, skip);
    }

    /** Down, then nothing of the cluster is left: no namespace, no directory, no daemon, no rank, no shared memory. */
    @AfterAll
    static void takeTheClusterDown() throws Exception {
        if (!rigUp) {
            return;
        }
        Procs.Result down = rig("down");
        rigUp = false;
        try {
            Runtime.getRuntime().removeShutdownHook(downOnExit);
        } catch (IllegalStateException shuttingDown) {
            // the hook runs anyway; down is idempotent
        }
        assertEquals(0, down.exit(), down::toString);
        Procs.Result ns = Procs.run(List.of("ip", "netns", "list"), 30);
        assertFalse(ns.out().contains(RIG_ID + "-h"), ns::toString);
        assertFalse(Files.exists(Path.of("/run", RIG_ID + "-slurm")), "/run/" + RIG_ID + "-slurm is left");
        String dir = "/run/" + RIG_ID + "-slurm";
        List<String> left = ProcessHandle.allProcesses()
                .map(p -> p.info().commandLine().orElse(""))
                .filter(c -> c.contains(dir) || c.contains(MARK))
                .collect(Collectors.toList());
        assertEquals(List.of(), left, "processes of the Slurm rig are left");
        Set<String> shm = shm();
        shm.removeAll(shmBefore);
        shm.removeIf(n -> !n.contains("slurm"));
        assertEquals(Set.of(), shm, "shared memory of the Slurm jobs is left in /dev/shm");
    }

    static void quietDown() {
        try {
            if (rigUp) {
                ProcessHandle.current().descendants().forEach(ProcessHandle::destroyForcibly);
                rig("down");
            }
        } catch (Exception e) {
            // at exit: nothing more to do
        }
    }

    static Set<String> shm() throws IOException {
        try (Stream<Path> s = Files.list(Path.of("/dev/shm"))) {
            return s.map(p -> p.getFileName().toString()).filter(n -> n.startsWith("sharp4j-")).collect(Collectors.toCollection(TreeSet::new));
        }
    }

    static Procs.Result rig(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("bash", rig.toString()));
        cmd.addAll(List.of(args));
        return Procs.run(cmd, ENV, 120);
    }

    /** srun MPI -N 3 -n 6 java [sharp4j options] MAIN args, against the rig's cluster; a 3-minute limit for the step. */
    static Procs.Result srun(String mpi, String main, String... args) throws Exception {
        return srun(mpi, List.of(), main, args);
    }

    /** {@code props}: more JVM options for every rank (e.g. -Dsharp4j.tune.file=...). */
    static Procs.Result srun(String mpi, List<String> props, String main, String... args) throws Exception {
        List<String> cp = new ArrayList<>(Procs.classPath());
        cp.removeIf(Procs::isMpiJar);
        List<String> cmd = new ArrayList<>(List.of("bash", rig.toString(), "exec", "--", "srun", "--mpi=" + mpi, "-N", "3", "-n", "6",
                "-t", "3", Procs.java(), "-Xmx256m", MARK, "-cp", Procs.join(cp)));
        cmd.addAll(SHARP4J_OPTS);
        cmd.addAll(props);
        cmd.add(main);
        cmd.addAll(List.of(args));
        return Procs.run(cmd, ENV, 300);
    }

    /** sharp4j's setup line says 6 ranks on 3 nodes, two consecutive ranks per host, UCX between them. */
    static void sixRanksOnThreeNodes(Procs.Result r) {
        Matcher setup = MpirunNetnsOsuTest.SETUP.matcher(r.err());
        assertTrue(setup.find(), () -> "no sharp4j setup line\n" + r);
        assertEquals("6", setup.group(1), r::toString);
        assertEquals("3", setup.group(2), r::toString);
        Matcher node = Pattern.compile(" node (\\d+)\\{([^}]*)\\}").matcher(setup.group(3));
        for (int n = 0; n < 3; n++) {
            assertTrue(node.find(), r::toString);
            assertEquals(Integer.toString(n), node.group(1), r::toString);
            List<Integer> ranks = new ArrayList<>();
            Matcher num = Pattern.compile("\\d+").matcher(node.group(2).replaceAll("socket \\d+", ""));
            while (num.find()) {
                ranks.add(Integer.parseInt(num.group()));
            }
            ranks.sort(null);
            assertEquals(List.of(2 * n, 2 * n + 1), ranks, () -> "node " + node.group(1) + "\n" + r);
        }
        assertEquals("UCX k-nomial", setup.group(4).trim(), r::toString);
        // every rank joined through Slurm's PMIx server, in one namespace
        Matcher boot = Pattern.compile("bootstrap pmix chosen \\(auto: PMIX_RANK and PMIX_NAMESPACE are set and libpmix loaded\\): pmix rank (\\d) of 6 "
                + "\\(namespace (slurm\\.pmix\\.\\d+\\.\\d+), local rank \\d of 2 on host(\\d)\\)").matcher(r.err());
        Set<Integer> ranks = new TreeSet<>();
        Set<String> namespaces = new TreeSet<>();
        while (boot.find()) {
            int rank = Integer.parseInt(boot.group(1));
            ranks.add(rank);
            namespaces.add(boot.group(2));
            assertEquals(rank / 2, Integer.parseInt(boot.group(3)), () -> boot.group() + "\n" + r);
        }
        assertEquals(Set.of(0, 1, 2, 3, 4, 5), ranks, r::toString);
        assertEquals(1, namespaces.size(), r::toString);
    }

    @Test
    void osuAllreduceValidatedUnderSrunWithPmix() throws Exception {
        Procs.Result r = srun("pmix", "org.sharp4j.osu.OsuAllreduce", "-c", "-m", "8:1024", "-i", "50", "-x", "10", "--jit-warmup", "0");
        assertEquals(0, r.exit(), r::toString);
        assertTrue(r.out().contains("# OSU MPI Allreduce Latency Test v7.4"), r::toString);
        List<String[]> rows = EndToEndThreadsTest.rows(r.out());
        assertEquals(8, rows.size(), r::toString); // 8, 16, ..., 1024 bytes, printed by rank 0 only
        for (int i = 0; i < rows.size(); i++) {
            String[] row = rows.get(i);
            assertEquals(8L << i, Long.parseLong(row[0]), r::toString);
            assertEquals("Pass", row[row.length - 1], () -> row[0] + " bytes\n" + r);
        }
        assertFalse(r.out().contains("DATA VALIDATION ERROR"), r::toString);
        sixRanksOnThreeNodes(r);
        System.out.println("OSU Allreduce under srun --mpi=pmix -N 3 -n 6 (Slurm rig):\n" + r.out().trim());
    }

    @Test
    void sharp4jProgramUnderSrunWithPmix() throws Exception {
        Procs.Result r = srun("pmix", "org.sharp4j.launch.AllreduceDemo");
        assertEquals(0, r.exit(), r::toString);
        for (int rank = 0; rank < 6; rank++) {
            assertTrue(r.out().contains("rank " + rank + " of 6: sum of ranks = 15, ranks counted = 6 (6 ranks on 3 node(s)"), r::toString);
        }
        sixRanksOnThreeNodes(r);
    }

    /** srun --mpi=none: no PMIx server, so no bootstrap can join the step; each of the 6 ranks fails naming the fix. */
    @Test
    void withoutPmixEveryRankFailsNamingTheFix() throws Exception {
        Procs.Result r = srun("none", "org.sharp4j.launch.AllreduceDemo");
        assertNotEquals(0, r.exit(), r::toString);
        assertFalse(r.out().contains(" of 1:"), () -> "a rank computed alone\n" + r);
        Matcher m = Pattern.compile("sharp4j: this process is one rank of a job of 6 processes \\(SLURM_PROCID=(\\d) SLURM_STEP_NUM_TASKS=6\\)\\. "
                + "Slurm started it without PMIx: run the ranks with srun --mpi=pmix").matcher(r.err());
        Set<Integer> failed = new TreeSet<>();
        while (m.find()) {
            failed.add(Integer.parseInt(m.group(1)));
        }
        assertEquals(Set.of(0, 1, 2, 3, 4, 5), failed, r::toString);
        assertTrue(r.err().contains("-Dsharp4j.bootstrap=singleton to run each process as a job of one rank on purpose"), r::toString);
    }

    /**
     * {@code sharp4j tune} as a job step (every rank runs the command line's tune, PMIx bootstrap), a tiny
     * sweep: 3 nodes x 2 ranks with UCX between the hosts; rank 0 on host0 writes the table with the
     * job's measured section, intra- and inter-node rules. (Not under /tmp: each slurmd has its own.)
     */
    @Test
    void tuneUnderSrunWritesTheJobsSection() throws Exception {
        Path dir = Path.of("target", "slurm-tune-" + RIG_ID).toAbsolutePath();
        Files.createDirectories(dir);
        Path table = dir.resolve("tuned.txt");
        try {
            Procs.Result r = srun("pmix", "org.sharp4j.tuner.Sharp4jCli", "tune", "-o", table.toString(), "--quick", "--collectives",
                    "allreduce,barrier", "--sizes", "8", "--radices", "2", "--inter-radices", "2", "--iterations", "20", "--max-rounds", "2",
                    "--budget", "60s");
            assertEquals(0, r.exit(), r::toString);
            assertTrue(r.err().contains("sharp4j tune: 6 rank(s), 3 node(s), 2 rank(s) per node; phase 3: UCX k-nomial"), r::toString);
            List<String> lines = Files.readAllLines(table);
            assertTrue(lines.contains("[nodes=3:ppn=2:measured]"), lines::toString);
            assertTrue(lines.stream().anyMatch(l -> l.matches("allreduce:0-inf:(knomial|sra):radix=2")), lines::toString);
            assertTrue(lines.stream().anyMatch(l -> l.matches("allreduce:0-[^:]+:(tree:radix=2|exchange|tiled)")), lines::toString);

            // read back: the job's ranks run the table (info names its rule for the host path, measured here), and the
            // OSU port compares it with the built-in rules in the same job step (two communicators over PMIx)
            List<String> withTable = List.of("-Dsharp4j.tune.file=" + table);
            Procs.Result info = srun("pmix", withTable, "org.sharp4j.launch.Info");
            assertEquals(0, info.exit(), info::toString);
            assertTrue(info.out().matches("(?s).*allreduce inter [^\\n]*radix=2 +<- " + Pattern.quote(table.toString())
                    + ":\\d+: [^\\n]*\\[measured on this cluster\\].*"), info::toString);
            Procs.Result cmp = srun("pmix", withTable, "org.sharp4j.osu.OsuAllreduce", "--compare", "builtin", "-m", "8:64", "-i", "20",
                    "-x", "2", "-c", "--jit-warmup", "100");
            assertEquals(0, cmp.exit(), cmp::toString);
            assertTrue(cmp.out().contains("# sharp4j port: library sharp4j vs sharp4j built-in, 6 ranks, 3 nodes\n"), cmp::toString);
            List<String[]> rows = EndToEndThreadsTest.rows(cmp.out());
            assertEquals(4, rows.size(), cmp::toString);
            rows.forEach(row -> assertTrue(row[2].equals("Pass") && row[4].equals("Pass"), cmp::toString));
        } finally {
            for (String f : new String[] {"tuned.txt", "tuned.txt.csv"}) {
                Files.deleteIfExists(dir.resolve(f));
            }
            Files.deleteIfExists(dir);
        }
    }
}
