package org.sharp4j.mpi;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Starts Open MPI Java programs under mpirun the way .ci/mpi-env.sh says, for the end-to-end tests. */
final class Mpirun {
    static final Path ENV_SCRIPT = Path.of("..", ".ci", "mpi-env.sh");
    static String mpiJar = "/usr/lib/x86_64-linux-gnu/openmpi/lib/mpi.jar";
    static String mpirunFlags = "--allow-run-as-root --oversubscribe --mca pml ob1 --mca btl self,vader";
    static String javaOpts = "-Djava.library.path=/usr/lib/x86_64-linux-gnu --enable-native-access=ALL-UNNAMED";
    static Path mpirun;
    private static boolean loaded;

    record Result(int exit, String out, String err) {
        @Override
        public String toString() {
            return "exit " + exit + "\n--- stdout\n" + out + "--- stderr\n" + err;
        }
    }

    private Mpirun() {
    }

    /** Reads .ci/mpi-env.sh once; null when mpirun or mpi.jar is missing, else "". */
    static synchronized String problem() throws IOException, InterruptedException {
        if (!loaded) {
            loaded = true;
            if (Files.isRegularFile(ENV_SCRIPT)) {
                Result env = run(List.of("bash", "-c",
                        "source \"$0\" && printf '%s\\n%s\\n%s\\n' \"$MPI_JAR\" \"$MPIRUN_FLAGS\" \"$MPI_JAVA_OPTS\"", ENV_SCRIPT.toString()),
                        List.of(), 30);
                String[] v = env.out().split("\\R");
                if (env.exit() == 0 && v.length >= 3) {
                    mpiJar = v[0];
                    mpirunFlags = v[1];
                    javaOpts = v[2];
                }
            }
            for (String dir : System.getenv("PATH").split(":")) {
                Path p = Path.of(dir, "mpirun");
                if (Files.isExecutable(p)) {
                    mpirun = p;
                    break;
                }
            }
        }
        if (mpirun == null) {
            return "mpirun is not on PATH (run .ci/setup-mpi.sh)";
        }
        if (!Files.isRegularFile(Path.of(mpiJar))) {
            return "no mpi.jar at " + mpiJar + " (run .ci/setup-mpi.sh)";
        }
        return null;
    }

    static String java() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /**
     * mpirun [flags] [extra mpirun args] -np N JAVA [MPI_JAVA_OPTS] [jvmArgs] -cp CP MAIN args.
     */
    static Result run(int np, String javaExe, List<String> mpirunArgs, List<String> jvmArgs, String classPath, String main,
            List<String> env, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add(mpirun.toString());
        cmd.addAll(words(mpirunFlags));
        cmd.addAll(mpirunArgs);
        cmd.addAll(List.of("-np", Integer.toString(np), javaExe));
        cmd.addAll(words(javaOpts));
        cmd.addAll(jvmArgs);
        cmd.addAll(List.of("-Xmx256m", "-cp", classPath, main));
        cmd.addAll(List.of(args));
        return run(cmd, env, 300);
    }

    static Result run(List<String> command, List<String> env, long timeoutSeconds) throws IOException, InterruptedException {
        Path out = Files.createTempFile("mpirun-out", ".txt");
        Path err = Files.createTempFile("mpirun-err", ".txt");
        try {
            ProcessBuilder pb = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile());
            pb.environment().remove("JAVA_TOOL_OPTIONS");
            for (String kv : env) {
                int eq = kv.indexOf('=');
                pb.environment().put(kv.substring(0, eq), kv.substring(eq + 1));
            }
            Process p = pb.start();
            if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                p.waitFor(10, TimeUnit.SECONDS);
                throw new AssertionError("timed out after " + timeoutSeconds + " s: " + String.join(" ", command) + "\n"
                        + Files.readString(out, StandardCharsets.UTF_8) + Files.readString(err, StandardCharsets.UTF_8));
            }
            return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8), Files.readString(err, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
        }
    }

    static List<String> words(String s) {
        List<String> out = new ArrayList<>();
        for (String w : s.trim().split("\\s+")) {
            if (!w.isEmpty()) {
                out.add(w);
            }
        }
        return out;
    }
}
