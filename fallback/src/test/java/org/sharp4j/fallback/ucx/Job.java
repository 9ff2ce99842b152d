package org.sharp4j.fallback.ucx;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/** A command (usually {@code java ... LocalLauncher ...}) with stdout+stderr merged and collected line by line. */
final class Job {
    final Process process;
    final List<String> lines = Collections.synchronizedList(new ArrayList<>());
    private final Thread reader;

    Job(List<String> cmd, Map<String, String> env) throws IOException {
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().putAll(env);
        process = pb.start();
        reader = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream()))) {
                for (String l; (l = r.readLine()) != null; ) {
                    lines.add(l);
                }
            } catch (IOException ignored) {
                // process ended
            }
        });
        reader.setDaemon(true);
        reader.start();
    }

    /** {@code java <jvmOpts> -cp <test class path> LocalLauncher <args>}. */
    static Job launcher(List<String> jvmOpts, Map<String, String> env, String... args) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(java());
        cmd.addAll(jvmOpts);
        cmd.add("-cp");
        cmd.add(classPath());
        cmd.add("org.sharp4j.launch.LocalLauncher");
        cmd.addAll(List.of(args));
        return new Job(cmd, env);
    }

    static String java() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    static String classPath() {
        return System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    }

    int waitFor(long seconds) throws InterruptedException {
        if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
            process.descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly();
            throw new AssertionError("job did not finish within " + seconds + " s; output:\n" + output());
        }
        reader.join(5000);
        return process.exitValue();
    }

    /** Waits until {@code count} lines contain {@code fragment}; fails if the job ends first or after {@code seconds}. */
    void awaitLines(String fragment, int count, long seconds) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (count(fragment) < count) {
            if (!process.isAlive() || System.nanoTime() > deadline) {
                throw new AssertionError("waiting for " + count + " lines with '" + fragment + "': " + output());
            }
            Thread.sleep(20);
        }
    }

    long count(String fragment) {
        synchronized (lines) {
            return lines.stream().filter(l -> l.contains(fragment)).count();
        }
    }

    /** Group 1 of the first line matching {@code regex}, or null. */
    String find(String regex) {
        Pattern p = Pattern.compile(regex);
        synchronized (lines) {
            for (String l : lines) {
                Matcher m = p.matcher(l);
                if (m.find()) {
                    return m.group(1);
                }
            }
        }
        return null;
    }

    String output() {
        synchronized (lines) {
            return String.join("\n", lines);
        }
    }

    String jobPrefix() {
        return "sharp4j-j" + process.pid() + "-";
    }

    static List<String> shmFiles(String prefix) throws IOException {
        try (Stream<Path> s = Files.list(Path.of("/dev/shm"))) {
            return s.map(p -> p.getFileName().toString()).filter(n -> n.startsWith(prefix)).toList();
        }
    }
}
