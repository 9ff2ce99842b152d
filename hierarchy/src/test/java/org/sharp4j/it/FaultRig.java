package org.sharp4j.it;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.sharp4j.testkit.OmpiSessions;

/**
 * The fault-injection suite's harness (issue 16): starts a job (any command: the embedded launcher,
 * mpirun, srun), waits until its ranks run, injects a fault into one process (a signal), and
 * afterwards collects what every rank reported, the time to it, the exit code, and leftovers: files
 * in /dev/shm and /tmp that appeared during the job, processes of the job still alive, hs_err
 * files in its working directory. Each case appends one row to {@code target/fault-table.md}
 * (and stdout), the table the closing note of issue 16 shows.
 *
 * <p>Ranks must print {@code rank R pid P ready} once they are inside their collectives loop
 * ({@link StressMain} does), and their errors as uncaught exceptions ({@code Exception in thread
 * "main" ...: rank R: ...}), which is what a plain Java program does.
 */
public final class FaultRig implements AutoCloseable {
    static final Path SHM = Path.of("/dev/shm");
    static final Path TMP = Path.of("/tmp");
    static final Pattern READY = Pattern.compile("rank (\\d+) pid (\\d+) ready");
    static final Pattern ERROR = Pattern.compile("(?:Exception in thread \"main\" )?(org\\.sharp4j\\.[A-Za-z.]+Exception|mpi\\.MPIException): (?:rank (\\d+): )?(.*)");

    public final Process process;
    public final List<String> lines = Collections.synchronizedList(new ArrayList<>());
    final Path cwd;
    private final List<String> command;
    /** The job's Open MPI session base under {@link #cwd} (mpirun jobs only, else null). */
    private final Path sessions;
    private final Thread reader;
    private final Set<String> shmBefore;
    private final Set<String> tmpBefore;
    private final long started = System.nanoTime();
    private long injectedAt;

    public FaultRig(List<String> command, List<String> env) throws IOException {
        this.cwd = Files.createTempDirectory("sharp4j-fault");
        this.command = List.copyOf(command);
        this.shmBefore = list(SHM);
        this.tmpBefore = list(TMP);
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true).directory(cwd.toFile());
        pb.environment().remove("JAVA_TOOL_OPTIONS");
        for (String kv : env) {
            int eq = kv.indexOf('=');
            pb.environment().put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        // An mpirun job's session directories in the job's own directory (OmpiSessions), checked and removed by close()
        boolean ownSessions = OmpiSessions.isMpirun(command) && !pb.environment().containsKey(OmpiSessions.VAR);
        this.sessions = ownSessions ? Files.createDirectory(cwd.resolve("s")) : null;
        if (ownSessions) {
            pb.environment().put(OmpiSessions.VAR, sessions.toString());
        }
        process = pb.start();
        reader = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String l; (l = r.readLine()) != null; ) {
                    lines.add(l);
                }
            } catch (IOException ignored) {
                // ended
            }
        }, "fault-rig-reader");
        reader.setDaemon(true);
        reader.start();
    }

    /** java -cp (this test class path) [jvm options] LocalLauncher args. */
    public static List<String> launcher(List<String> jvmOpts, String... args) {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(jvmOpts);
        cmd.add("-cp");
        cmd.add(System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")));
        cmd.add("org.sharp4j.launch.LocalLauncher");
        cmd.addAll(List.of(args));
        return cmd;
    }

    /** Waits until {@code n} ranks said ready; returns their pids by rank. */
    public long[] awaitReady(int n, long seconds) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (true) {
            long[] pids = new long[n];
            int seen = 0;
            synchronized (lines) {
                for (String l : lines) {
                    Matcher m = READY.matcher(l);
                    if (m.find()) {
                        int r = Integer.parseInt(m.group(1));
                        if (r < n && pids[r] == 0) {
                            pids[r] = Long.parseLong(m.group(2));
                            seen++;
                        }
                    }
                }
            }
            if (seen == n) {
                return pids;
            }
            if (!process.isAlive() || System.nanoTime() > deadline) {
                throw new AssertionError("ranks did not start (" + seen + " of " + n + " ready):\n" + output());
            }
            Thread.sleep(50);
        }
    }

    /** Sends {@code signal} (KILL, STOP, CONT, TERM, ...) to {@code pid} and starts the clock. */
    public void signal(long pid, String signal) throws IOException, InterruptedException {
        Process k = new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).inheritIO().start();
        if (!k.waitFor(10, TimeUnit.SECONDS) || k.exitValue() != 0) {
            throw new AssertionError("kill -" + signal + " " + pid + " failed");
        }
        if (injectedAt == 0) {
            injectedAt = System.nanoTime();
        }
    }

    /** Starts the clock without a signal (faults injected by the program itself). */
    public void markInjected() {
        injectedAt = System.nanoTime();
    }

    /** Seconds since the fault (or since the start when none was injected). */
    public double secondsSinceFault() {
        return (System.nanoTime() - (injectedAt != 0 ? injectedAt : started)) / 1e9;
    }

    /**
     * Waits until {@code ok} holds for the output (polled), or fails after {@code seconds} with the
     * output and the main thread's stack of every process in {@code pids} that is still alive.
     */
    public double awaitOutput(Predicate<List<String>> ok, long seconds, String what, long... pids) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (true) {
            synchronized (lines) {
                if (ok.test(lines)) {
                    return secondsSinceFault();
                }
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError(what + " not seen within " + seconds + " s:\n" + output() + stacks(pids));
            }
            Thread.sleep(20);
        }
    }

    /** jstack of each live process (diagnostics of a failed case). */
    static String stacks(long... pids) {
        StringBuilder sb = new StringBuilder();
        String jstack = Path.of(System.getProperty("java.home"), "bin", "jstack").toString();
        for (long pid : pids) {
            if (!ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
                continue;
            }
            try {
                Process p = new ProcessBuilder(jstack, Long.toString(pid)).redirectErrorStream(true).start();
                String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                p.waitFor(20, TimeUnit.SECONDS);
                int i = out.indexOf("\"main\"");
                sb.append("\n--- pid ").append(pid).append(" main thread:\n")
                        .append(i < 0 ? out : out.substring(i, Math.min(out.length(), i + 2500)));
            } catch (IOException | InterruptedException e) {
                sb.append("\n--- pid ").append(pid).append(": jstack failed: ").append(e);
            }
        }
        return sb.toString();
    }

    /** The error each rank reported, by rank (null where none). */
    public String[] errors(int n) {
        String[] out = new String[n];
        synchronized (lines) {
            for (String l : lines) {
                Matcher m = ERROR.matcher(l);
                if (m.find() && m.group(2) != null) {
                    int r = Integer.parseInt(m.group(2));
                    if (r < n && out[r] == null) {
                        out[r] = m.group(1).replaceAll(".*\\.", "") + ": " + m.group(3);
                    }
                }
            }
        }
        return out;
    }

    /** Whether every rank except those in {@code exempt} reported an error blaming {@code victim}. */
    public static Predicate<List<String>> everyoneBlames(int n, int victim, Set<Integer> exempt) {
        return ls -> {
            boolean[] ok = new boolean[n];
            for (String l : ls) {
                Matcher m = ERROR.matcher(l);
                if (m.find() && m.group(2) != null) {
                    int r = Integer.parseInt(m.group(2));
                    if (r < n && blames(m.group(3), victim)) {
                        ok[r] = true;
                    }
                }
            }
            for (int r = 0; r < n; r++) {
                if (!ok[r] && !exempt.contains(r)) {
                    return false;
                }
            }
            return true;
        };
    }

    /** An error text that names {@code victim} as the culprit. */
    public static boolean blames(String text, int victim) {
        return text.contains("rank " + victim + " died") || text.contains("because of rank " + victim)
                || text.contains("[" + victim + "] did not arrive") || text.contains("waiting for rank " + victim + ";")
                || text.contains("rank " + victim + " gave up") || text.contains("leader rank " + victim + " ")
                || text.contains("(rank " + victim + ")") || text.contains("; rank " + victim + " entered it")
                || text.contains("; rank " + victim + " did not answer");
    }

    /** Waits for the job's end (killing it after {@code seconds}); returns the exit code. */
    public int waitFor(long seconds) throws InterruptedException {
        if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
            process.descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
            throw new AssertionError("job did not end within " + seconds + " s:\n" + output());
        }
        reader.join(5_000);
        return process.exitValue();
    }

    /**
     * What the job left behind: new files in /dev/shm and /tmp whose names contain one of
     * {@code ours} (e.g. "sharp4j", "jucx", "sharp_emu"), live processes started by the job, hs_err
     * files. Empty when clean. Call after {@link #waitFor}.
     */
    public List<String> leftovers(List<String> ours, List<Long> pids) throws IOException {
        List<String> out = new ArrayList<>();
        // A launcher (mpirun) may exit before its children finish their exit: give them 15 s in all.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        for (long p : pids) {
            java.util.Optional<ProcessHandle> h = ProcessHandle.of(p);
            while (h.map(ProcessHandle::isAlive).orElse(false) && System.nanoTime() < deadline) {
                try {
                    Thread.sleep(50);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
            if (h.map(ProcessHandle::isAlive).orElse(false)) {
                out.add("process " + p + " still alive");
            }
        }
        for (String f : list(SHM)) {
            if (!shmBefore.contains(f) && ours.stream().anyMatch(f::contains)) {
                out.add("/dev/shm/" + f);
            }
        }
        for (String f : list(TMP)) {
            if (!tmpBefore.contains(f) && ours.stream().anyMatch(f::contains)) {
                out.add("/tmp/" + f);
            }
        }
        try (Stream<Path> s = Files.list(cwd)) {
            s.map(p -> p.getFileName().toString()).filter(n -> n.startsWith("hs_err") || n.startsWith("core"))
                    .forEach(n -> out.add("crash file " + n));
        }
        return out;
    }

    /** {@link #leftovers(List, List)} for the ranks' pids as {@link #awaitReady} returns them. */
    public List<String> leftovers(List<String> ours, long[] pids) throws IOException {
        List<Long> all = new ArrayList<>();
        for (long p : pids) {
            all.add(p);
        }
        return leftovers(ours, all);
    }

    /** Whether a JVM of the job crashed: a fatal-error report, SIGSEGV, or an aborting assertion (UCX's). */
    public boolean crashed() {
        synchronized (lines) {
            return lines.stream().anyMatch(l -> l.contains("A fatal error has been detected") || l.contains("SIGSEGV")
                    || l.contains("SIGABRT") || l.contains("Assertion"));
        }
    }

    /** Appends one row to target/fault-table.md and prints it. */
    public static void row(String path, String fault, String outcome, double seconds, String exit, List<String> leftovers) {
        String r = String.format(java.util.Locale.ROOT, "| %s | %s | %s | %.2f s | %s | %s |", path, fault, outcome, seconds, exit,
                leftovers.isEmpty() ? "none" : String.join(", ", leftovers));
        System.out.println("FAULT-TABLE " + r);
        try {
            Path t = Path.of("target", "fault-table.md");
            Files.createDirectories(t.getParent());
            Files.writeString(t, r + "\n", StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** "ranks 0,1,3: PeerFailureException naming 2" style summary of {@link #errors}. */
    public static String summarize(String[] errors, int victim) {
        List<Integer> named = new ArrayList<>();
        List<String> other = new ArrayList<>();
        for (int r = 0; r < errors.length; r++) {
            if (errors[r] == null) {
                other.add("rank " + r + ": no error");
            } else if (victim >= 0 && blames(errors[r], victim)) {
                named.add(r);
            } else {
                other.add("rank " + r + ": " + errors[r]);
            }
        }
        String s = named.isEmpty() ? "" : "ranks " + named.stream().map(String::valueOf).collect(Collectors.joining(","))
                + ": error naming rank " + victim;
        return other.isEmpty() ? s : (s.isEmpty() ? "" : s + "; ") + String.join("; ", other);
    }

    public String output() {
        synchronized (lines) {
            return String.join("\n", lines);
        }
    }

    private static Set<String> list(Path dir) {
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).collect(Collectors.toCollection(TreeSet::new));
        } catch (IOException e) {
            return new TreeSet<>();
        }
    }

    @Override
    public void close() throws IOException {
        if (process.isAlive()) {
            process.descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly();
            try {
                process.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        // a job this rig had to kill counts as abnormal (-1) whatever it would have exited with
        String left = OmpiSessions.check(sessions, command, process.isAlive() ? -1 : process.exitValue());
        try (Stream<Path> s = Files.walk(cwd)) {
            s.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
        if (left != null) {
            throw new AssertionError(left);
        }
    }
}
