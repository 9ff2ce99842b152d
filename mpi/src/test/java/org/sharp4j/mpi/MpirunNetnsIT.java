package org.sharp4j.mpi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.sharp4j.testkit.NetnsRig;
import org.sharp4j.testkit.Procs;

/**
 * mpirun across three "hosts" on this machine: the network namespaces of {@code .ci/netns-rig.sh}
 * (veths to a bridge in the root namespace, host names host0..host2 through {@code unshare -u}).
 * mpirun stays in the root namespace and starts one orted per host with Open MPI's rsh launcher,
 * whose agent is {@code .ci/netns-rsh} instead of ssh (it enters the host's namespace and runs the
 * command through a shell, as sshd would). orted's out-of-band channel and the TCP BTL are held
 * to the rig's subnet; vader serves ranks of the same host. sharp4j sees three nodes (the host
 * names differ) and goes between them over UCX (module fallback, in the agent jar).
 *
 * <p>Own rig name and subnet (from this JVM's pid) so that it never meets the UCX module's rig
 * test (RIG_ID s4j..., 10.231.x) or a developer's default rig. Skipped, saying why in each test,
 * where network namespaces cannot be made (not root, no CAP_SYS_ADMIN, no iproute2), failed instead
 * when the environment says {@code CI=true}; the rig is always taken down, also when the JVM is
 * stopped. The OSU Allreduce port across the same rig is osu-bench's MpirunNetnsOsuTest (osu-bench
 * is built after this module).
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class MpirunNetnsIT {
    /**
     * The rig (RIG_ID s4jmr..., 10.232.x). Its environment goes to mpirun, which passes it on to
     * orted and the ranks, as the rig's rsh agent does.
     */
    static NetnsRig rig;
    /** n, max iterations, tolerance, solves: one for the results and one timed (~300 allReduces on each rank). */
    static final String[] CG_ARGS = {"48", "5000", "1e-10", "2"};
    /** UCX between the hosts over TCP on the veth, and a short sharp4j timeout so that a failure does not hang. */
    static final List<String> SHARP4J_OPTS = List.of("-Dsharp4j.ucx.tls=tcp", "-Dsharp4j.ucx.net.devices=eth0", "-Dsharp4j.timeout=60");

    static String agentJar;

    /** Why every test is skipped (each test says so: surefire drops a class-level assumption without a trace), or null. */
    static String skip;
    /** The skip is for want of network namespaces, which CI must have. */
    static boolean noNamespaces;

    @BeforeAll
    static void bringTheRigUp() throws Exception {
        String problem = Mpirun.problem();
        if (problem != null) {
            skipAll("mpirun across network namespaces is skipped: " + problem);
            return;
        }
        agentJar = System.getProperty("sharp4j.it.agentJar");
        assertNotNull(agentJar, "sharp4j.it.agentJar (set by the pom)");
        assertTrue(Files.isRegularFile(Path.of(agentJar)), "no agent jar at " + agentJar + " (mvn package builds it)");
        rig = new NetnsRig("s4jmr", "10.232");
        String why = rig.problem();
        if (why != null) {
            skipAll("network namespaces are not available here, mpirun across netns hosts is skipped: " + why);
            noNamespaces = true;
            return;
        }
        rig.up(3, 2);
    }

    static void skipAll(String why) {
        skip = why;
        System.err.println("MpirunNetnsIT: " + why);
    }

    /** Skips each test, saying why; fails it instead where namespaces cannot be made on CI (CI=true: root, the rig must run). */
    @BeforeEach
    void rigIsThere() {
        if (noNamespaces && "true".equalsIgnoreCase(System.getenv("CI"))) {
            fail("CI=true, so mpirun across netns hosts must run, but: " + skip);
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

    /** mpirun FLAGS [mpirunArgs] -np N PROGRAM... on the rig. */
    static Procs.Result mpirun(int np, List<String> mpirunArgs, List<String> program) throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(Mpirun.mpirun.toString());
        cmd.addAll(rig.mpirunFlags(Mpirun.mpirunFlags));
        cmd.addAll(mpirunArgs);
        cmd.addAll(List.of("-np", Integer.toString(np)));
        cmd.addAll(program);
        return Procs.run(cmd, rig.env, 180);
    }

    /**
     * The java command of a rank: JAVA -cp CP [MPI_JAVA_OPTS] [jvmArgs] -Xmx256m MAIN args. The
     * class path comes first: mpirun (orte/mca/schizo/ompi, Open MPI 4.1.4) takes the first
     * argument of a program named java that contains "cp" anywhere for the class path option and
     * rewrites the argument after it, so -Dsharp4j.ucx.tls=tcp before -cp breaks the command.
     */
    static List<String> java(List<String> jvmArgs, String classPath, String main, String... args) {
        List<String> cmd = new ArrayList<>();
        cmd.addAll(List.of(Procs.java(), "-cp", classPath));
        cmd.addAll(Procs.words(Mpirun.javaOpts));
        cmd.addAll(jvmArgs);
        cmd.addAll(List.of("-Xmx256m", main));
        cmd.addAll(List.of(args));
        return cmd;
    }

    /** Each rank runs on its host: its own host name and its own address on the rig, two ranks per host (slots=2). */
    @Test
    @Order(1)
    void ranksRunInTheirHostsNamespaces() throws Exception {
        Procs.Result r = mpirun(6, List.of(), List.of("sh", "-c",
                "echo \"rank $OMPI_COMM_WORLD_RANK on $(hostname) $(ip -o -4 addr show eth0 | awk '{print $4}')\""));
        assertEquals(0, r.exit(), r::toString);
        for (int rank = 0; rank < 6; rank++) {
            int h = rank / 2;
            String line = "rank " + rank + " on host" + h + " " + rig.net + "." + (h + 1) + "/24";
            assertTrue(r.out().lines().anyMatch(line::equals), () -> line + "\n" + r);
        }
    }

    /**
     * The CG solver, one rank per host: bit-identical results without and with the agent
     * ({@code -Dsharp4j.enable=true}); with it sharp4j sets up over MPI.COMM_WORLD with three nodes
     * and UCX between them, and routes every call of the solver.
     */
    @Test
    @Order(2)
    void cgSolverAcrossThreeHostsSameResultsWithAndWithoutTheAgent() throws Exception {
        String cp = System.getProperty("sharp4j.it.testClasses") + ":" + Mpirun.mpiJar;
        List<String> oneRankPerHost = List.of("--map-by", "node");
        Procs.Result plain = mpirun(3, oneRankPerHost, java(SHARP4J_OPTS, cp, "mpiapps.CgSolver", CG_ARGS));
        assertEquals(0, plain.exit(), plain::toString);
        List<String> withAgent = new ArrayList<>(SHARP4J_OPTS);
        withAgent.addAll(List.of("-javaagent:" + agentJar, "-Dsharp4j.enable=true"));
        Procs.Result routed = mpirun(3, oneRankPerHost, java(withAgent, cp, "mpiapps.CgSolver", CG_ARGS));
        assertEquals(0, routed.exit(), routed::toString);

        assertEquals(MpiAgentIT.results(plain), MpiAgentIT.results(routed), () -> "plain:\n" + plain + "\nrouted:\n" + routed);
        assertFalse(plain.err().contains("sharp4j"), plain::toString);
        assertTrue(routed.err().contains("sharp4j communicator on MPI.COMM_WORLD: 3 ranks, 3 node(s), inter-node step: UCX k-nomial"),
                routed::toString);
        assertTrue(MpiAgentIT.routedOn(routed, "MPI.COMM_WORLD").containsAll(List.of("allReduce of MPI.DOUBLE with MPI.SUM",
                "allReduce of MPI.DOUBLE with MPI.MAX", "reduce of MPI.DOUBLE with MPI.SUM", "barrier")), routed::toString);
        int it = Integer.parseInt(MpiAgentIT.results(plain).replaceAll("(?s).*iterations=(\\d+).*", "$1"));
        int solves = Integer.parseInt(CG_ARGS[3]);
        long allReduces = (long) solves * (1 + 2L * it + it / 25) + 4; // as in MpiAgentIT
        long barriers = 1 + 2L * (solves - 1);
        assertEquals("allReduce: " + allReduces + " routed, 0 passed to MPI; reduce: 2 routed, 0 passed to MPI; barrier: " + barriers
                + " routed, 0 passed to MPI", MpiAgentIT.summary(routed), routed::toString);
        System.out.printf("CG solver across 3 netns hosts (mpirun, rsh agent .ci/netns-rsh, TCP BTL): time per iteration %.0f us on Open MPI, "
                + "%.0f us with sharp4j (UCX between hosts); 2 cores shared, not a benchmark%n",
                MpiAgentIT.usPerIteration(plain), MpiAgentIT.usPerIteration(routed));
    }

    /**
     * The CG solver, two ranks per host: Open MPI's halo exchange goes through vader inside a host
     * and TCP between hosts, sharp4j reduces in shared memory inside a host and over UCX between
     * them. Results as in MpiAgentIT at np 4: identical, or (the two libraries may add the six
     * partial sums in different orders) within 1e-12 relative with the same iteration count.
     */
    @Test
    @Order(3)
    void cgSolverOnTwoRanksPerHost() throws Exception {
        String cp = System.getProperty("sharp4j.it.testClasses") + ":" + Mpirun.mpiJar;
        String[] args = {"24", CG_ARGS[1], CG_ARGS[2], "1"}; // a smaller grid, one solve: this is about the paths
        Procs.Result plain = mpirun(6, List.of(), java(SHARP4J_OPTS, cp, "mpiapps.CgSolver", args));
        assertEquals(0, plain.exit(), plain::toString);
        List<String> withAgent = new ArrayList<>(SHARP4J_OPTS);
        withAgent.addAll(List.of("-javaagent:" + agentJar, "-Dsharp4j.enable=true"));
        Procs.Result routed = mpirun(6, List.of(), java(withAgent, cp, "mpiapps.CgSolver", args));
        assertEquals(0, routed.exit(), routed::toString);
        assertTrue(routed.err().contains("sharp4j communicator on MPI.COMM_WORLD: 6 ranks, 3 node(s), inter-node step: UCX k-nomial"),
                routed::toString);
        assertTrue(MpiAgentIT.summary(routed).matches("allReduce: \\d+ routed, 0 passed to MPI; reduce: 2 routed, 0 passed to MPI; "
                + "barrier: \\d+ routed, 0 passed to MPI"), routed::toString);
        List<String> a = MpiAgentIT.results(plain).lines().collect(Collectors.toList());
        List<String> b = MpiAgentIT.results(routed).lines().collect(Collectors.toList());
        assertEquals(a.size(), b.size(), () -> plain + "\n" + routed);
        for (int i = 0; i < a.size(); i++) {
            String x = a.get(i);
            String y = b.get(i);
            if (x.equals(y)) {
                continue;
            }
            assertTrue(x.matches("(residual|true_residual|max_residual_entry|checksum_x|checksum_ix)=.*"), () -> x + " vs " + y);
            double u = Double.parseDouble(x.replaceAll("^[a-z_]+=([^ ]+).*", "$1"));
            double v = Double.parseDouble(y.replaceAll("^[a-z_]+=([^ ]+).*", "$1"));
            assertEquals(u, v, Math.abs(u) * 1e-12, x + " vs " + y);
        }
    }
}
