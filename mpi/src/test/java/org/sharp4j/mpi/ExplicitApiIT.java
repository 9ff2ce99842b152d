package org.sharp4j.mpi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.sharp4j.testkit.Procs;

/**
 * {@link Sharp4jMpi} under mpirun -np 2, with the library on the class path (the agent jar, which
 * is also a complete library jar) and no agent, then with the agent: the same counts either way
 * (with the agent the helpers call MPI's methods, which the agent routes).
 */
class ExplicitApiIT {
    static String cp;
    static String agentJar;
    static String logConfig;

    /**
     * Why every test is skipped, or null: assumed per test in {@link #mpirunIsThere()}, since
     * surefire reports an assumption failed in {@code @BeforeAll} as "Tests run: 0" without the reason.
     */
    static String skip;

    @BeforeAll
    static void setUp() throws Exception {
        String problem = Mpirun.problem();
        if (problem != null) {
            skip = "skipping the mpirun tests: " + problem;
            System.err.println("ExplicitApiIT: " + skip);
            return;
        }
        agentJar = System.getProperty("sharp4j.it.agentJar");
        cp = System.getProperty("sharp4j.it.testClasses") + ":" + agentJar + ":" + Mpirun.mpiJar;
        logConfig = "-Dlogback.configurationFile=" + ExplicitApiIT.class.getResource("/org/sharp4j/mpi/agent-logback.xml");
    }

    @BeforeEach
    void mpirunIsThere() {
        assumeTrue(skip == null, skip);
    }

    static Procs.Result run(List<String> jvmArgs) throws Exception {
        Procs.Result r = Mpirun.run(2, Procs.java(), List.of(), jvmArgs, cp, ExplicitApiMain.class.getName(), List.of());
        assertEquals(0, r.exit(), r::toString);
        assertTrue(r.out().contains("EXPLICIT OK"), r::toString);
        return r;
    }

    @Test
    void explicitApiWithoutTheAgent() throws Exception {
        Procs.Result r = run(List.of(logConfig));
        assertTrue(r.out().contains("routed allReduce=2 reduce=2 barrier=1 passed allReduce=1"), r::toString);
        assertTrue(r.out().contains("agent=false"), r::toString);
        assertTrue(r.err().contains("sharp4j-mpi summary at exit (world rank 0): allReduce: 2 routed, 1 passed to MPI (user-defined op: 1)"),
                r::toString);
    }

    @Test
    void explicitApiWithTheAgent() throws Exception {
        Procs.Result r = run(List.of("-javaagent:" + agentJar, "-Dsharp4j.enable=true"));
        assertTrue(r.out().contains("routed allReduce=2 reduce=2 barrier=1 passed allReduce=1"), r::toString);
        assertTrue(r.out().contains("agent=true"), r::toString);
        assertTrue(r.err().contains("sharp4j-mpi summary at MPI.Finalize (world rank 0): allReduce: 2 routed, 1 passed to MPI (user-defined op: 1)"),
                r::toString);
    }

    static Procs.Result init(String... jvmArgs) throws Exception {
        List<String> args = new java.util.ArrayList<>(List.of(jvmArgs));
        args.add(logConfig);
        args.add("-Dsharp4j.log.level=INFO");
        Procs.Result r = Mpirun.run(2, Procs.java(), List.of(), args, cp, InitBootstrapMain.class.getName(), List.of());
        assertEquals(0, r.exit(), r::toString);
        assertTrue(r.out().contains("INIT OK 2"), r::toString);
        return r;
    }

    /** Sharp4j.init() in an MPI program: PMIx when it loads, else MPI.COMM_WORLD, or forced with sharp4j.bootstrap=mpi. */
    @Test
    void initChoosesPmixThenTheMpiWorld() throws Exception {
        String all = init().toString();
        assertTrue(all.contains("bootstrap pmix chosen (auto: PMIX_RANK and PMIX_NAMESPACE are set"), all);
        all = init("-Djna.nosys=true", "-Djna.nounpack=true", "-Djna.boot.library.path=/nonexistent").toString(); // JNA, so PMIx, cannot load
        assertTrue(all.contains("bootstrap mpi chosen (auto: mpi is usable (pmix: PMIX_RANK and PMIX_NAMESPACE are set but"), all);
        all = init("-Dsharp4j.bootstrap=mpi").toString();
        assertTrue(all.contains("bootstrap mpi chosen (sharp4j.bootstrap=mpi)"), all);
    }

    /**
     * mpiapps.BackToBack (the README's same-process comparison of back-to-back calls): both libraries' results
     * are checked in every block (a wrong sum from either throws, and mpirun exits non-zero), every block gets a
     * row with its times and ratio, and a bad size is refused by name before MPI starts.
     */
    @Test
    void backToBackComparesBothLibrariesBlockByBlock() throws Exception {
        for (String coll : List.of("reduce", "allreduce")) {
            Procs.Result r = Mpirun.run(2, Procs.java(), List.of(), List.of(logConfig), cp, "mpiapps.BackToBack", List.of(),
                    coll, "64", "200", "3");
            assertEquals(0, r.exit(), r::toString);
            assertTrue(r.out().contains("# " + coll + " of 64 B, 2 ranks, blocks of 200 calls back to back"), r::toString);
            long rows = r.out().lines().filter(l -> l.matches("\\s+[0-2] +[0-9.]+ +[0-9.]+ +[0-9.]+")).count();
            assertEquals(3, rows, r::toString);
            assertTrue(r.out().lines().anyMatch(l -> l.matches("median +[0-9.]+ +[0-9.]+ +[0-9.]+")), r::toString);
        }
        Procs.Result bad = Mpirun.run(2, Procs.java(), List.of(), List.of(logConfig), cp, "mpiapps.BackToBack", List.of(),
                "reduce", "6");
        assertTrue(bad.exit() != 0, bad::toString);
        assertTrue(bad.err().contains("bytes must be a positive multiple of 4"), bad::toString);
    }
}
