package org.sharp4j.testkit;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * Runs JVMs (ranks, launchers, mpirun, scripts) as child processes for the end-to-end tests that need real
 * processes: the tuner's, osu-bench's and the mpi module's. A child never inherits this JVM's
 * {@code JAVA_TOOL_OPTIONS} (a developer's agent or debugger must not reach the ranks).
 */
public final class Procs {
    public record Result(int exit, String out, String err) {
        @Override
        public String toString() {
            return "exit " + exit + "\n--- stdout\n" + out + "--- stderr\n" + err;
        }
    }

    private Procs() {
    }

    public static String java() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /** This test JVM's class path entries (surefire's list, not its manifest-only booter jar). */
    public static List<String> classPath() {
        String cp = System.getProperty("surefire.test.class.path");
        if (cp == null || cp.isBlank()) {
            cp = System.getProperty("java.class.path");
        }
        return Arrays.stream(cp.split(File.pathSeparator)).filter(s -> !s.isBlank()).collect(Collectors.toList());
    }

    public static boolean isMpiJar(String entry) {
        String name = Path.of(entry).getFileName().toString();
        return entry.contains("open-mpi") || name.equals("mpi.jar") || name.matches("mpi-[0-9.]+\\.jar");
    }

    public static String join(List<String> entries) {
        return String.join(File.pathSeparator, entries);
    }

    public static Result run(List<String> command, long timeoutSeconds) throws IOException, InterruptedException {
        return run(command, Map.of(), timeoutSeconds);
    }

    /** Runs the command with {@code env} ({@code NAME=VALUE} each) added to this JVM's environment. */
    public static Result run(List<String> command, List<String> env, long timeoutSeconds) throws IOException, InterruptedException {
        Map<String, String> m = new java.util.LinkedHashMap<>();
        for (String kv : env) {
            int eq = kv.indexOf('=');
            m.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        return run(command, m, timeoutSeconds);
    }

    /**
     * Runs the command with {@code env} added to this JVM's environment; stdout and stderr apart. An
     * mpirun job gets session directories of its own ({@link OmpiSessions}): if a job that exited 0 left
     * them, this throws, naming the job.
     */
    public static Result run(List<String> command, Map<String, String> env, long timeoutSeconds) throws IOException, InterruptedException {
        Path out = Files.createTempFile("procs-out", ".txt");
        Path err = Files.createTempFile("procs-err", ".txt");
        Path sessions = OmpiSessions.baseFor(command, env);
        int exit = -1;
        try {
            ProcessBuilder pb = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile());
            pb.environment().remove("JAVA_TOOL_OPTIONS");
            pb.environment().putAll(env);
            if (sessions != null) {
                pb.environment().put(OmpiSessions.VAR, sessions.toString());
            }
            Process p = pb.start();
            if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                p.waitFor(10, TimeUnit.SECONDS);
                throw new AssertionError("timed out after " + timeoutSeconds + " s: " + String.join(" ", command) + "\n"
                        + Files.readString(out, StandardCharsets.UTF_8) + Files.readString(err, StandardCharsets.UTF_8));
            }
            exit = p.exitValue();
            return new Result(exit, Files.readString(out, StandardCharsets.UTF_8), Files.readString(err, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
            String left = OmpiSessions.check(sessions, command, exit);
            if (left != null) {
                throw new AssertionError(left);
            }
        }
    }

    /**
     * How to run Open MPI ranks on this machine: mpirun on PATH (null if none), and {@code MPI_JAR},
     * {@code MPIRUN_FLAGS}, {@code MPI_JAVA_OPTS} from .ci/mpi-env.sh (the one place that says so; these
     * defaults where it cannot be read).
     */
    public record MpiEnv(Path mpirun, String mpiJar, String mpirunFlags, String javaOpts) {
    }

    /** {@link MpiEnv} for a test running in a module directory (the script is ../.ci/mpi-env.sh). */
    public static MpiEnv mpiEnv() throws IOException, InterruptedException {
        String mpiJar = "/usr/lib/x86_64-linux-gnu/openmpi/lib/mpi.jar";
        String mpirunFlags = "--allow-run-as-root --oversubscribe --mca pml ob1 --mca btl self,vader";
        String javaOpts = "-Djava.library.path=/usr/lib/x86_64-linux-gnu --enable-native-access=ALL-UNNAMED";
        Path script = Path.of("..", ".ci", "mpi-env.sh");
        if (Files.isRegularFile(script)) {
            Result env = run(List.of("bash", "-c",
                    "source \"$0\" && printf '%s\\n%s\\n%s\\n' \"$MPI_JAR\" \"$MPIRUN_FLAGS\" \"$MPI_JAVA_OPTS\"",
                    script.toString()), 30);
            String[] v = env.out().split("\\R");
            if (env.exit() == 0 && v.length >= 3) {
                mpiJar = v[0];
                mpirunFlags = v[1];
                javaOpts = v[2];
            }
        }
        return new MpiEnv(onPath("mpirun"), mpiJar, mpirunFlags, javaOpts);
    }

    /** An executable on PATH, or null. */
    public static Path onPath(String name) {
        String path = System.getenv("PATH");
        if (path == null) {
            return null;
        }
        for (String dir : path.split(File.pathSeparator)) {
            Path p = Path.of(dir, name);
            if (Files.isExecutable(p)) {
                return p;
            }
        }
        return null;
    }

    public static List<String> words(String s) {
        List<String> out = new ArrayList<>();
        for (String w : s.trim().split("\\s+")) {
            if (!w.isEmpty()) {
                out.add(w);
            }
        }
        return out;
    }
}
