package org.sharp4j.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.sharp4j.launch.LauncherAccess;
import org.sharp4j.topology.CpuTopology;

/** The launcher binds rank i to the i-th allowed CPU (as mpirun does for few ranks), and only then. */
class LauncherBindTest {
    static final Pattern LINE = Pattern.compile("rank (\\d+) cpus (\\S+)");

    @Test
    void thePlanTakesTheAllowedCpusInOrderAndNothingWhenRanksOutnumberThem() {
        assertArrayEquals(new int[] {0, 1}, LauncherAccess.bindPlan(2, new int[] {0, 1}));
        assertArrayEquals(new int[] {4, 6}, LauncherAccess.bindPlan(2, new int[] {4, 6, 7}));
        assertArrayEquals(new int[] {3}, LauncherAccess.bindPlan(1, new int[] {3}));
        assertNull(LauncherAccess.bindPlan(3, new int[] {0, 1}));
    }

    @Test
    void eachRankRunsOnItsOwnCpuByDefault() throws Exception {
        int[] allowed = CpuTopology.allowedCpus();
        assumeTrue(allowed.length >= 2, "needs 2 CPUs");
        Map<Integer, String> cpus = run("-np", "2", AffinityMain.class.getName());
        assertEquals(Integer.toString(allowed[0]), cpus.get(0));
        assertEquals(Integer.toString(allowed[1]), cpus.get(1));
    }

    @Test
    void bindToNoneAndOversubscriptionLeaveTheAffinityAlone() throws Exception {
        String mine = CpuTopology.detect().cpusAllowed;
        Map<Integer, String> none = run("-np", "2", "--bind-to", "none", AffinityMain.class.getName());
        assertEquals(Map.of(0, mine, 1, mine), none);
        int n = CpuTopology.allowedCpus().length + 1;
        Map<Integer, String> over = run("-np", Integer.toString(n), AffinityMain.class.getName());
        assertEquals(n, over.size());
        over.values().forEach(c -> assertEquals(mine, c, "oversubscribed ranks must not be bound"));
    }

    @Test
    void aBadBindingIsRefusedBeforeAnyRankStarts() throws Exception {
        LauncherProcessTest.Job job = new LauncherProcessTest.Job(List.of(), "-np", "2", "--bind-to", "socket", AffinityMain.class.getName());
        int exit = job.waitFor(60);
        assertNotEquals(0, exit);
        assertEquals(1, job.count("--bind-to must be core or none, got 'socket'"), String.join("\n", job.lines));
        assertEquals(0, job.count("cpus "), "no rank may start");
    }

    private static Map<Integer, String> run(String... args) throws Exception {
        LauncherProcessTest.Job job = new LauncherProcessTest.Job(List.of(), args);
        int exit = job.waitFor(120);
        String out = String.join("\n", job.lines);
        assertEquals(0, exit, out);
        Map<Integer, String> cpus = new TreeMap<>();
        synchronized (job.lines) {
            for (String l : job.lines) {
                Matcher m = LINE.matcher(l);
                if (m.find()) {
                    cpus.put(Integer.parseInt(m.group(1)), m.group(2));
                }
            }
        }
        assertTrue(!cpus.isEmpty(), out);
        return cpus;
    }
}
