package org.sharp4j.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Real processes through the embedded launcher: the long mixed run, and a rank killed with -9. */
class LauncherProcessTest {
    static final Path SHM = Path.of("/dev/shm");

    /** Starts {@code java -cp <test class path> LocalLauncher args}, stdout+stderr merged, lines collected. */
    static final class Job {
        final Process process;
        final List<String> lines = Collections.synchronizedList(new ArrayList<>());
        final Thread reader;

        Job(List<String> jvmOpts, String... args) throws IOException {
            List<String> cmd = new ArrayList<>();
            cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
            cmd.addAll(jvmOpts);
            cmd.add("-cp");
            cmd.add(System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")));
            cmd.add("org.sharp4j.launch.LocalLauncher");
            cmd.addAll(List.of(args));
            process = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            reader = new Thread(() -> {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream()))) {
                    for (String l; (l = r.readLine()) != null; ) {
                        lines.add(l);
                    }
                } catch (IOException ignored) {
                    // process ended
                }
            });
            reader.start();
        }

        String jobPrefix() {
            return "sharp4j-j" + process.pid() + "-";
        }

        int waitFor(long seconds) throws InterruptedException {
            if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
                process.descendants().forEach(ProcessHandle::destroyForcibly);
                process.destroyForcibly();
                throw new AssertionError("job did not finish within " + seconds + " s; output:\n" + String.join("\n", lines));
            }
            reader.join(5000);
            return process.exitValue();
        }

        long count(String fragment) {
            synchronized (lines) {
                return lines.stream().filter(l -> l.contains(fragment)).count();
            }
        }
    }

    static List<String> shmFiles(String prefix) throws IOException {
        try (Stream<Path> s = Files.list(SHM)) {
            return s.map(p -> p.getFileName().toString()).filter(n -> n.startsWith(prefix)).toList();
        }
    }

    @Test
    void hundredThousandMixedCollectivesOnEightProcesses() throws Exception {
        // 8 JVMs on this 2-core machine, 2 simulated nodes x 2 sockets so that all five phases run.
        Job job = new Job(List.of("-Dsharp4j.timeout=120"), "-np", "8", "--nodes", "2", "--sockets", "2",
                StressMain.class.getName(), "100000", "20261121");
        int exit = job.waitFor(900);
        String out = String.join("\n", job.lines);
        assertEquals(0, exit, out);
        assertEquals(8, job.count("100000 collectives OK"), out);
        assertEquals(List.of(), shmFiles(job.jobPrefix()));
    }

    /**
     * The cma Reduces between processes: every Reduce of the mixed run (from 1 element, chunks of
     * 4 KiB: many chunks and steps per call) has its members' direct-buffer inputs read by the root
     * from their processes (process_vm_readv), the others copied or read in place, all checked; the
     * probe at creation found every pair of the 3 processes able to read each other. With cma_split
     * (Allreduce and Reduce) the calls on direct buffers split: each rank folds a slice and writes it
     * into the outputs (process_vm_writev); the others run as cma (Reduce) or pipelined (Allreduce).
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"cma", "cma_split"})
    void theCmaReduceBetweenProcesses(String alg) throws Exception {
        // sharp4j.cma=on: the built-in table's split Allreduce of 3 ranks (below) runs whatever a read costs on this
        // machine (where it is costly, PeerReads.costGate gives it to the pipelined one; measured here: 3.6-3.9x a fold)
        Job job = new Job(List.of("-Dsharp4j.timeout=120", "-Dsharp4j.slot.bytes=4096", "-Dsharp4j.cma=on",
                "-Dsharp4j.tune=" + (alg.equals("cma") ? "reduce" : "allreduce,reduce") + ":0-inf:" + alg), "-np", "3",
                StressMain.class.getName(), "20000", "20261130");
        int exit = job.waitFor(600);
        String out = String.join("\n", job.lines);
        assertEquals(0, exit, out);
        assertEquals(3, job.count("peer reads: yes"), out);
        assertEquals(3, job.count("20000 collectives OK"), out);
        // cma_split (Allreduce and Reduce): the calls whose every buffer is direct split, their results written by
        // process_vm_writev (with cma the built-in table's Allreduce from 256 KiB splits too: 3 ranks)
        assertEquals(3, job.lines.stream().filter(l -> l.matches(".*split cma calls: [1-9][0-9]*")).count(), out);
        assertEquals(List.of(), shmFiles(job.jobPrefix()));
    }

    @Test
    void aRankKilledWithSigkillIsNamedByTheOthersAndNothingLeaks() throws Exception {
        Job job = new Job(List.of("-Dsharp4j.timeout=60"), "-np", "4", "--grace", "30", StressMain.class.getName(), "-1", "7");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (job.count(" ready") < 4) {
            assertTrue(job.process.isAlive(), "launcher ended early: " + job.lines);
            assertTrue(System.nanoTime() < deadline, "ranks did not start: " + job.lines);
            Thread.sleep(50);
        }
        // Segments are unlinked as soon as every rank mapped them: nothing to leak even now.
        Thread.sleep(300);
        assertEquals(List.of(), shmFiles(job.jobPrefix()), "segment files still linked while the job runs");
        long victim = -1;
        Pattern p = Pattern.compile("rank 2 pid (\\d+) ready");
        synchronized (job.lines) {
            for (String l : job.lines) {
                Matcher m = p.matcher(l);
                if (m.find()) {
                    victim = Long.parseLong(m.group(1));
                }
            }
        }
        assertTrue(victim > 0);
        long t0 = System.nanoTime();
        ProcessHandle.of(victim).orElseThrow().destroyForcibly(); // SIGKILL
        int exit = job.waitFor(120);
        double secs = (System.nanoTime() - t0) / 1e9;
        String out = String.join("\n", job.lines);
        assertNotEquals(0, exit, out);
        for (int r : new int[] {0, 1, 3}) {
            assertTrue(job.lines.stream().anyMatch(l -> l.contains("rank " + r + ": rank 2 died")
                    || l.contains("rank " + r + ": rank") && l.contains("because of rank 2")), "rank " + r + " did not name rank 2:\n" + out);
        }
        assertTrue(secs < 30, "survivors took " + secs + " s to report (timeout 60 s): dead-peer detection should be fast");
        assertEquals(List.of(), shmFiles(job.jobPrefix()));
        assertEquals(List.of(), shmFiles("sharp4j-j" + job.process.pid()));
    }
}
