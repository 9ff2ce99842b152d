package org.sharp4j.osu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.sharp4j.testkit.Procs;

/** Real JVMs on a class path without mpi.jar: sharp4j runs under the embedded launcher, --backend mpi explains itself. */
class WithoutMpiJarTest {
    static List<String> noMpiCommand(String main, String... args) {
        List<String> cp = new ArrayList<>(Procs.classPath());
        cp.removeIf(Procs::isMpiJar);
        List<String> cmd = new ArrayList<>(List.of(Procs.java(), "-Xmx256m", "-cp", Procs.join(cp), main));
        cmd.addAll(List.of(args));
        return cmd;
    }

    @Test
    void mpiBackendWithoutMpiJarFailsClearly() throws Exception {
        Procs.Result r = Procs.run(noMpiCommand("org.sharp4j.osu.OsuAllreduce", "--backend", "mpi", "-m", "8:8"), 120);
        assertEquals(1, r.exit(), r::toString);
        assertTrue(r.err().contains("--backend mpi needs Open MPI's mpi.jar on the class path: run .ci/setup-mpi.sh and launch under mpirun"),
                r::toString);
        Procs.Result c = Procs.run(noMpiCommand("org.sharp4j.osu.OsuBarrier", "--compare", "mpi"), 120);
        assertEquals(1, c.exit(), c::toString);
        assertTrue(c.err().contains("--compare mpi needs Open MPI's mpi.jar on the class path"), c::toString);
    }

    /**
     * The README's class path without mpi.jar, programs started alone: the mpi module's bootstrap
     * plugin is on it but cannot work and is passed over (it used to end in
     * ServiceConfigurationError: NoClassDefFoundError mpi/MPIException); nothing says this is one
     * rank of a larger job, so sharp4j runs as a job of one rank, and the OSU port says, as OSU does,
     * that it needs two.
     */
    @Test
    void programsStartedAloneWithoutMpiJarRunAsOneRank() throws Exception {
        Procs.Result d = Procs.run(noMpiCommand("org.sharp4j.launch.AllreduceDemo"), 120);
        assertEquals(0, d.exit(), d::toString);
        assertTrue(d.out().contains("rank 0 of 1: sum of ranks = 0, ranks counted = 1"), d::toString);
        assertFalse(d.err().contains("Exception") || d.err().contains("Error"), d::toString);

        Procs.Result r = Procs.run(noMpiCommand("org.sharp4j.osu.OsuAllreduce", "-m", "8:16", "-i", "10", "-x", "2", "-c"), 120);
        assertEquals(1, r.exit(), r::toString);
        assertEquals("This test requires at least two processes", r.err().trim(), r::toString);
    }

    @Test
    void sharp4jRunsUnderTheEmbeddedLauncherWithoutMpiJar() throws Exception {
        Procs.Result r = Procs.run(noMpiCommand("org.sharp4j.launch.LocalLauncher", "-np", "2", "osu_allreduce",
                "-m", "8:16", "-i", "20", "-x", "2", "-c", "--jit-warmup", "100"), 180);
        assertEquals(0, r.exit(), r::toString);
        assertFalse(r.err().contains("Exception"), r::toString);
        List<String[]> rows = EndToEndThreadsTest.rows(r.out());
        assertEquals(2, rows.size(), r::toString);
        assertEquals("8", rows.get(0)[0]);
        assertEquals("Pass", rows.get(0)[2]);
        assertEquals("16", rows.get(1)[0]);
        assertEquals("Pass", rows.get(1)[2]);
    }
}
