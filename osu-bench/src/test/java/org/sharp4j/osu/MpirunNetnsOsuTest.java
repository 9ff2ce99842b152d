package org.sharp4j.osu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.sharp4j.testkit.NetnsRig;
import org.sharp4j.testkit.Procs;

/**
 * The OSU Allreduce port with {@code -c} under mpirun across three "hosts" on this machine: the
 * network namespaces of {@code .ci/netns-rig.sh}, orted started in each by Open MPI's rsh launcher
 * with {@code .ci/netns-rsh} as its agent, as the mpi module's MpirunNetnsIT does (and here, after
 * the mpi module, osu-bench's jar and the MPI backend exist on a clean clone). Two ranks per host:
 * sharp4j bootstraps over MPI.COMM_WORLD, reduces in shared memory inside a host and over UCX (TCP
 * on the veths) between the hosts; Open MPI's own traffic uses vader inside a host and TCP between.
 *
 * <p>Own rig name and subnet (from this JVM's pid: RIG_ID s4jo..., 10.233.x) so that it never meets
 * NetnsRigTest's or MpirunNetnsIT's rig or a developer's default one; the rig is always taken down,
 * also when the JVM is stopped. Skipped, saying why in the test, where mpirun, mpi.jar or the MPI
 * backend is missing or network namespaces cannot be made; for the latter, failed instead when the
 * environment says {@code CI=true} (CI runs as root and must exercise the rig).
 */
class MpirunNetnsOsuTest {
    /** The rig (RIG_ID s4jo..., 10.233.x); its environment is passed on by mpirun and netns-rsh to orted and the ranks. */
    static NetnsRig rig;
    /** UCX between the hosts over TCP on the veth, and a short sharp4j timeout so that a failure does not hang. */
    static final List<String> SHARP4J_OPTS = List.of("-Dsharp4j.ucx.tls=tcp", "-Dsharp4j.ucx.net.devices=eth0", "-Dsharp4j.timeout=60");
    /** sharp4j's setup line (Engine, INFO, rank 0): the topology and the inter-node step. */
    static final Pattern SETUP = Pattern.compile("sharp4j: (\\d+) ranks on (\\d+) node\\(s\\):((?: node \\d+\\{[^}]*\\})+); .*; inter-node ([^;]+);");

    /**
     * Why the test is skipped, or null. Assumed in {@link #rigIsThere()}: surefire reports an
     * assumption failed in {@code @BeforeAll} as "Tests run: 0, Skipped: 0", without the reason.
     */
    static String skip;
    /** The skip is for want of network namespaces, which CI must have. */
    static boolean noNamespaces;

    @BeforeAll
    static void bringTheRigUp() throws Exception {
        MpirunCompareTest.environment();
        String problem = MpirunCompareTest.mpiProblem();
        if (problem != null) {
            skip = "OSU across network-namespace hosts: " + problem;
            System.err.println("MpirunNetnsOsuTest: " + skip);
            return;
        }
        // cubic, Debian's default, whatever this machine's is: the Reduce test's stall showed under cubic
        // only (this VM's bbr paces the long flows so that the leaf's MPI data was gone before it left)
        rig = new NetnsRig("s4jo", "10.233", "cubic");
        String why = rig.problem();
        if (why != null) {
            skip = "network namespaces are not available here, OSU across netns hosts is skipped: " + why;
            noNamespaces = true;
            System.err.println("MpirunNetnsOsuTest: " + skip);
            return;
        }
        rig.up(3, 2);
    }

    /** Skips, saying why; fails instead where namespaces cannot be made on CI. */
    @BeforeEach
    void rigIsThere() {
        if (noNamespaces && "true".equalsIgnoreCase(System.getenv("CI"))) {
            fail("CI=true, so OSU across netns hosts must run, but: " + skip);
        }
        assumeTrue(skip == null, skip);
    }

    @AfterAll
    static void takeTheRigDown() throws Exception {
        Procs.Result down = rig == null ? null : rig.down();
        if (down != null) {
            assertEquals(0, down.exit(), down::toString);
        }
    }

    /**
     * mpirun FLAGS -np N JAVA -cp CP [MPI_JAVA_OPTS] [jvmArgs] -Xmx256m MAIN args. The class path
     * comes first: mpirun (Open MPI 4.1.4) takes the first argument of a java program that contains
     * "cp" anywhere for the class path option and rewrites the argument after it, so
     * -Dsharp4j.ucx.tls=tcp before -cp breaks the command.
     */
    static Procs.Result mpirun(int np, List<String> jvmArgs, String main, String... args) throws Exception {
        return mpirun(List.of(), np, jvmArgs, main, args);
    }

    /** {@link #mpirun(int, List, String, String...)} with mpirun arguments of its own (placement, MCA). */
    static Procs.Result mpirun(List<String> mpirunArgs, int np, List<String> jvmArgs, String main, String... args) throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(MpirunCompareTest.mpirun.toString());
        cmd.addAll(rig.mpirunFlags(MpirunCompareTest.mpirunFlags));
        cmd.addAll(mpirunArgs);
        cmd.addAll(List.of("-np", Integer.toString(np), Procs.java(), "-cp", MpirunCompareTest.rankClassPath()));
        cmd.addAll(Procs.words(MpirunCompareTest.javaOpts));
        cmd.addAll(jvmArgs);
        cmd.addAll(List.of("-Xmx256m", main));
        cmd.addAll(List.of(args));
        return Procs.run(cmd, rig.env, 240);
    }

    /**
     * sharp4j's and Open MPI's Reduce alternating in the same processes (the port's {@code --compare
     * mpi}), 3 hosts x 1 rank, 4-16 MiB: a leaf returns from Open MPI's Reduce with its last
     * segments still queued in Open MPI and goes on into sharp4j's next call, where it waits for
     * the root, which waits in Open MPI for those segments. Before sharp4j's waits drove MPI's
     * progress (Bootstrap.progress) this ran into sharp4j's timeout in every run (5 of 5 on this
     * machine, in the port's dry pass); it must now finish with every row.
     */
    @Test
    void reduceAlternatingWithOpenMpiDoesNotStallOnThreeHostsOfOneRank() throws Exception {
        List<String> opts = List.of("-Dsharp4j.ucx.tls=tcp", "-Dsharp4j.ucx.net.devices=eth0", "-Dsharp4j.timeout=30");
        // one rank per host, on 2 CPUs: unbound, and Open MPI yielding while it polls (what it sets itself
        // when it knows a node is oversubscribed, which no orted of the rig can see)
        Procs.Result r = mpirun(List.of("--map-by", "node", "--bind-to", "none", "--mca", "mpi_yield_when_idle", "1"), 3, opts,
                "org.sharp4j.osu.OsuReduce", "--compare", "mpi", "-m", "4194304:16777216", "-i", "20", "-x", "5");
        assertEquals(0, r.exit(), r::toString);
        assertTrue(r.out().contains("3 ranks, 3 nodes"), r::toString);
        assertEquals(3, EndToEndThreadsTest.rows(r.out()).size(), r::toString); // 4, 8 and 16 MiB
        assertFalse(r.toString().contains("timed out"), r::toString);
        System.out.println("sharp4j's and Open MPI's Reduce alternating, 3 netns hosts x 1 rank, TCP congestion control "
                + (rig.congestionControl() != null ? rig.congestionControl()
                        : "the machine's default (cubic is not available here: the stall this guards against may not show)")
                + ":\n" + r.out().trim());
    }

    /**
     * Two ranks per host: every size validates (Pass), the run exits 0, and sharp4j's setup line
     * says 6 ranks on 3 nodes of two ranks each (host i: ranks 2i, 2i+1) with UCX between them.
     */
    @Test
    void osuAllreduceValidatedOnThreeHostsTwoRanksEach() throws Exception {
        List<String> opts = new ArrayList<>(SHARP4J_OPTS);
        opts.add("-Dsharp4j.log.level=INFO");
        Procs.Result r = mpirun(6, opts, "org.sharp4j.osu.OsuAllreduce", "-c", "-m", "8:1024", "-i", "50", "-x", "10",
                "--jit-warmup", "0"); // checking, not timing: without the JIT warm-up of 30000 calls (~10 s here)
        assertEquals(0, r.exit(), r::toString);
        assertTrue(r.out().contains("# OSU MPI Allreduce Latency Test v7.4\n# sharp4j port: library sharp4j, 6 ranks, 3 nodes\n"), r::toString);
        List<String[]> rows = EndToEndThreadsTest.rows(r.out());
        assertEquals(8, rows.size(), r::toString); // 8, 16, ..., 1024 bytes
        for (int i = 0; i < rows.size(); i++) {
            String[] row = rows.get(i);
            assertEquals(3, row.length, r::toString); // size, avg latency, validation
            assertEquals(8L << i, Long.parseLong(row[0]), r::toString);
            assertEquals("Pass", row[2], () -> row[0] + " bytes\n" + r);
        }
        assertFalse(r.out().contains("DATA VALIDATION ERROR"), r::toString);

        Matcher setup = SETUP.matcher(r.err());
        assertTrue(setup.find(), () -> "no sharp4j setup line\n" + r);
        assertEquals("6", setup.group(1), r::toString);
        assertEquals("3", setup.group(2), r::toString);
        Matcher node = Pattern.compile(" node (\\d+)\\{([^}]*)\\}").matcher(setup.group(3));
        for (int n = 0; n < 3; n++) {
            assertTrue(node.find(), r::toString);
            assertEquals(Integer.toString(n), node.group(1), r::toString);
            // the node's ranks over its sockets: socket 0[0, 1], or socket 0[0] socket 1[1] on two sockets
            List<Integer> ranks = new ArrayList<>();
            Matcher num = Pattern.compile("\\[([0-9, ]*)\\]").matcher(node.group(2));
            while (num.find()) {
                for (String v : num.group(1).split(",\\s*")) {
                    ranks.add(Integer.parseInt(v.trim()));
                }
            }
            ranks.sort(null);
            assertEquals(List.of(2 * n, 2 * n + 1), ranks, () -> "node " + node.group(1) + "\n" + r);
        }
        assertEquals("UCX k-nomial", setup.group(4).trim(), r::toString);
        assertTrue(r.err().contains("sharp4j: UCX k-nomial between 3 node leaders"), r::toString);
        String setupLine = r.err().lines().filter(l -> l.contains(setup.group())).findFirst().orElse(setup.group());
        System.out.println("OSU Allreduce across 3 netns hosts x 2 ranks (sharp4j: shared memory in a host, UCX between):\n"
                + setupLine + "\n" + r.out().trim());
    }
}
