package org.sharp4j.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Open MPI's session directories of one mpirun job that a test starts: a base directory of its own
 * ({@code OMPI_MCA_orte_tmpdir_base}), so that what a job leaves there is seen right after that job,
 * named with its command, and removed.
 *
 * <p>Why: mpirun makes {@code ompi.<host>.<uid>/pid.<pid>} (with PMIx's shared-memory store and the
 * ranks' directories) under the base and removes it as it exits. CI checks /tmp after a whole pass,
 * and once (2026-12-06, a84e6a7, JDK 17 pass) found {@code /tmp/ompi.vm.0} left there by some job of the
 * pass, without saying which: every job of the pass shared that directory. Per job, the tests can
 * tell a job that ended normally and left it (a failure: mpirun's own cleanup did not finish, which
 * nothing in a normal job excuses) from a job that a test signalled or killed on purpose, or that
 * failed (then mpirun's cleanup under abort is Open MPI's own business: the test prints what was
 * left and removes it, and its own assertions judge sharp4j's files and processes).
 */
public final class OmpiSessions {
    /** The MCA parameter (as an environment variable) that moves the session directories of a job. */
    public static final String VAR = "OMPI_MCA_orte_tmpdir_base";

    private OmpiSessions() {
    }

    /** Whether the command starts Open MPI's launcher (mpirun, mpiexec, orterun), which makes session directories. */
    public static boolean isMpirun(List<String> command) {
        if (command.isEmpty()) {
            return false;
        }
        String name = Path.of(command.get(0)).getFileName().toString();
        return name.equals("mpirun") || name.equals("mpiexec") || name.equals("orterun");
    }

    /**
     * A fresh base directory for one job's session directories, or null when the job needs none of its
     * own: not mpirun, or {@code env} (or this JVM's environment) already names a base (the netns rigs do).
     * Short and under /tmp: PMIx puts its rendezvous sockets below it, whose paths must stay under 108 bytes.
     */
    public static Path baseFor(List<String> command, Map<String, String> env) {
        if (!isMpirun(command) || env.containsKey(VAR) || System.getenv(VAR) != null) {
            return null;
        }
        try {
            return Files.createTempDirectory(Path.of("/tmp"), "s4j-ompi");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** What is left under {@code base} (paths relative to it, at most 12), or an empty list. */
    public static List<String> left(Path base) {
        if (base == null || !Files.isDirectory(base)) {
            return List.of();
        }
        try (Stream<Path> s = Files.walk(base)) {
            return s.filter(p -> !p.equals(base)).map(p -> base.relativize(p).toString()).sorted().limit(12).collect(Collectors.toList());
        } catch (IOException e) {
            return List.of("(cannot list " + base + ": " + e + ")");
        }
    }

    /** Removes {@code base} and everything under it (quietly: a job's files may vanish meanwhile). */
    public static void delete(Path base) {
        if (base == null) {
            return;
        }
        try (Stream<Path> s = Files.walk(base)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException ignored) {
            // already gone
        }
    }

    /**
     * After a job: what it left under {@code base} is removed; for a job that ended normally (exit 0)
     * it is returned as the failure text naming the job, else printed (stderr) and null is returned.
     */
    public static String check(Path base, List<String> command, int exit) {
        List<String> left = left(base);
        delete(base);
        if (left.isEmpty()) {
            return null;
        }
        String what = "Open MPI left its session directory after " + (exit == 0 ? "a job that ended normally" : "a job that exited " + exit)
                + ": " + String.join(", ", left) + "\n  job: " + String.join(" ", command);
        if (exit == 0) {
            return what;
        }
        System.err.println("OmpiSessions: " + what + " (removed)");
        return null;
    }
}
