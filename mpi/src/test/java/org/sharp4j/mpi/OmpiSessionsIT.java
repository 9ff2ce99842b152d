package org.sharp4j.mpi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.sharp4j.testkit.OmpiSessions;
import org.sharp4j.testkit.Procs;

/**
 * The test kit's per-job Open MPI session directories ({@link OmpiSessions}): a real mpirun job's
 * ranks see a base of their own, Open MPI makes its {@code ompi.<host>.<uid>} there, and nothing of
 * it is left once {@link Procs#run} returns; a leftover after a job that exited 0 is a failure naming
 * the job, after any other job a note, and removed either way.
 */
class OmpiSessionsIT {
    static String skip;

    @BeforeAll
    static void setUp() throws Exception {
        skip = Mpirun.problem();
    }

    @Test
    void anMpirunJobHasSessionDirectoriesOfItsOwnAndLeavesNothing() throws Exception {
        assumeTrue(skip == null, skip);
        List<String> cmd = new ArrayList<>(List.of(Mpirun.mpirun.toString()));
        cmd.addAll(Procs.words(Mpirun.mpirunFlags));
        // each rank prints its base and what Open MPI made in it while the job runs
        cmd.addAll(List.of("-np", "2", "sh", "-c", "echo \"base=$" + OmpiSessions.VAR + "\"; ls \"$" + OmpiSessions.VAR + "\""));
        Procs.Result r = Procs.run(cmd, Map.of(), 120);
        assertEquals(0, r.exit(), r::toString);
        List<String> bases = new ArrayList<>();
        for (String l : r.out().split("\\R")) {
            if (l.startsWith("base=")) {
                bases.add(l.substring(5));
            }
        }
        assertEquals(2, bases.size(), r::toString);
        assertEquals(bases.get(0), bases.get(1), r::toString);
        assertTrue(bases.get(0).startsWith("/tmp/s4j-ompi"), r::toString);
        assertTrue(r.out().contains("ompi."), () -> "Open MPI made no session directory under the job's base\n" + r);
        assertFalse(Files.exists(Path.of(bases.get(0))), "the job's base is left: " + bases.get(0));
    }

    @Test
    void aLeftoverFailsAJobThatEndedNormallyAndIsRemovedAfterAnyJob() throws Exception {
        List<String> cmd = List.of("/usr/bin/mpirun", "-np", "2", "x");
        Path base = OmpiSessions.baseFor(cmd, Map.of());
        assertNotNull(base);
        Files.createDirectories(base.resolve("ompi.h.0/pid.1"));
        String failure = OmpiSessions.check(base, cmd, 0);
        assertNotNull(failure);
        assertTrue(failure.contains("ended normally") && failure.contains("ompi.h.0/pid.1") && failure.contains("/usr/bin/mpirun -np 2 x"),
                failure);
        assertFalse(Files.exists(base));

        Path killed = OmpiSessions.baseFor(cmd, Map.of());
        Files.createDirectories(killed.resolve("ompi.h.0/pid.2"));
        assertNull(OmpiSessions.check(killed, cmd, 143)); // printed, not a failure
        assertFalse(Files.exists(killed));

        assertNull(OmpiSessions.baseFor(List.of("java", "-version"), Map.of()), "not mpirun: no base");
        assertNull(OmpiSessions.baseFor(cmd, Map.of(OmpiSessions.VAR, "/tmp/rig")), "a base the caller chose is kept");
    }
}
