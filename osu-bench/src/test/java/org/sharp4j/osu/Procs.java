package org.sharp4j.osu;

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

/** Runs benchmark JVMs as child processes for the end-to-end tests that need real processes. */
final class Procs {
    record Result(int exit, String out, String err) {
        @Override
        public String toString() {
            return "exit " + exit + "\n--- stdout\n" + out + "--- stderr\n" + err;
        }
    }

    private Procs() {
    }

    static String java() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /** This test JVM's class path entries (surefire's list, not its manifest-only booter jar). */
    static List<String> classPath() {
        String cp = System.getProperty("surefire.test.class.path");
        if (cp == null || cp.isBlank()) {
            cp = System.getProperty("java.class.path");
        }
        return Arrays.stream(cp.split(File.pathSeparator)).filter(s -> !s.isBlank()).collect(Collectors.toList());
    }

    static boolean isMpiJar(String entry) {
        String name = Path.of(entry).getFileName().toString();
        return entry.contains("open-mpi") || name.equals("mpi.jar") || name.matches("mpi-[0-9.]+\\.jar");
    }

    static String join(List<String> entries) {
        return String.join(File.pathSeparator, entries);
    }

    static Result run(List<String> command, long timeoutSeconds) throws IOException, InterruptedException {
        return run(command, Map.of(), timeoutSeconds);
    }

    /** Runs the command with {@code env} added to this JVM's environment; stdout and stderr apart. */
    static Result run(List<String> command, Map<String, String> env, long timeoutSeconds) throws IOException, InterruptedException {
        Path out = Files.createTempFile("osu-out", ".txt");
        Path err = Files.createTempFile("osu-err", ".txt");
        try {
            ProcessBuilder pb = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile());
            pb.environment().putAll(env);
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

    /** An executable on PATH, or null. */
    static Path onPath(String name) {
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
