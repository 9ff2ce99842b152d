package org.sharp4j.launch;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;
import org.sharp4j.bootstrap.RendezvousBootstrap;
import org.sharp4j.bootstrap.RendezvousServer;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code bin/sharp4j-run -np N [--nodes K] [--sockets S] MAIN_CLASS_OR_JAR [args]}: starts N JVMs
 * on this machine that find each other through a loopback rendezvous, like a tiny mpirun.
 *
 * <p>Each rank gets {@code SHARP4J_RANK/SIZE/JOB_ID/RENDEZVOUS} in its environment, this launcher's
 * class path, {@code --enable-native-access=ALL-UNNAMED} (JNA, jucx and Open MPI's mpi.jar load
 * native code; JDK 24+ warns on stderr without it, JDK 17 accepts it), the JVM options in
 * {@code SHARP4J_JAVA_OPTS}, every {@code -Dsharp4j.*} property the launcher's own JVM was given
 * and, last so that they win, the {@code -DNAME=VALUE} options of its command line (as mpirun's
 * {@code -x} passes variables). When a rank exits with an error the others get
 * {@code --grace} seconds to report their own error (a peer-failure, typically) before they are
 * killed; the exit code is the first non-zero one. The job's shared-memory files are removed at
 * the end whatever happened (a rank killed with -9 cannot do it itself).
 *
 * <p>Ranks on "hosts" of their own on this machine (network namespaces, {@code .ci/netns-rig.sh}):
 * {@code --bind ADDR} makes the rendezvous listen on an address they reach instead of loopback,
 * and {@code --rank-prefix CMD} runs each rank as {@code CMD java ...}, with {@code {rank}} and
 * {@code {size}} in CMD replaced (split at spaces, no quoting), e.g.
 * {@code --rank-prefix '.ci/netns-rig.sh exec {rank} {size}'}.
 *
 * <p><b>Output.</b> Ranks write straight to the launcher's stdout and stderr. With
 * {@code --tag-output} (as mpirun's) each line a rank writes is prefixed with
 * {@code [1,RANK]<stdout>:} or {@code [1,RANK]<stderr>:} and stays on its stream; the launcher
 * reads each rank's streams through pipes and writes every line whole, so lines of different ranks
 * never mix (a last line without a newline gets one).
 *
 * <p><b>Binding.</b> {@code --bind-to core} (the default, as mpirun's for few ranks) runs rank i
 * on the i-th CPU this launcher may use, through {@code taskset -c} (util-linux, on every Debian).
 * Unbound, Linux often starts two new ranks on one CPU and takes a while to move one away; ranks
 * that hand data back and forth then wait out each other's spin: on this 2-CPU machine 2
 * unbound ranks took 23-51 us per 1-64 KiB Allreduce in one run of three where bound ones took
 * 0.3-13 us in all three. With more ranks than CPUs nothing is bound (like mpirun
 * --oversubscribe); {@code --bind-to none} leaves placement to the scheduler. A bound JVM sees
 * one CPU ({@code availableProcessors()} = 1: serial GC, fewer JIT threads), as under mpirun.
 */
@Command(name = "sharp4j-run", mixinStandardHelpOptions = true, sortOptions = false, versionProvider = LocalLauncher.Version.class,
        description = "Run N ranks of a sharp4j program on this machine.")
public final class LocalLauncher implements Callable<Integer> {
    /** Short names for the programs this project ships. */
    static final Map<String, String> ALIASES = Map.of(
            "osu_allreduce", "org.sharp4j.osu.OsuAllreduce",
            "osu_reduce", "org.sharp4j.osu.OsuReduce",
            "osu_barrier", "org.sharp4j.osu.OsuBarrier",
            "demo", "org.sharp4j.launch.AllreduceDemo");

    @Option(names = {"-np", "-n"}, required = true, description = "number of ranks")
    int np;

    @Option(names = "--nodes", description = "simulate K nodes (sets -Dsharp4j.topology.nodes)")
    int nodes;

    @Option(names = "--sockets", description = "simulate S sockets per node (sets -Dsharp4j.topology.sockets)")
    int sockets;

    /** Lets the ranks' libraries (JNA, jucx, mpi.jar) load native code without JDK 24+'s warning; JDK 17 accepts it too. */
    static final String NATIVE_ACCESS = "--enable-native-access=ALL-UNNAMED";

    /** Seconds the ranks get to exit after the launcher forwarded SIGTERM to them. */
    static final int TERM_GRACE_SECONDS = 5;

    @Option(names = "--grace", defaultValue = "60", description = "seconds the other ranks get after one fails (default ${DEFAULT-VALUE})")
    int graceSeconds;

    @Option(names = "--bind", description = "address the rendezvous listens on (default: loopback)")
    String bind;

    @Option(names = "--rank-prefix", description = "command put before each rank's java command; {rank} and {size} are replaced")
    String rankPrefix;

    @Option(names = "--bind-to", defaultValue = "core",
            description = "core: rank i runs on the i-th CPU this launcher may use (taskset), unless ranks outnumber CPUs; none: no binding (default ${DEFAULT-VALUE})")
    String bindTo;

    @Option(names = "--shm-dir", defaultValue = "/dev/shm", description = "where the job's segment files live")
    Path shmDir;

    @Option(names = "-D", paramLabel = "NAME=VALUE", mapFallbackValue = "",
            description = "system property for every rank (repeatable), e.g. -Dsharp4j.timeout=60")
    Map<String, String> properties = new java.util.LinkedHashMap<>();

    @Option(names = "--tag-output", description = "prefix each output line with [1,RANK]<stdout>: or [1,RANK]<stderr>: (as mpirun --tag-output)")
    boolean tagOutput;

    @Option(names = {"--cp", "-cp", "--class-path"}, paramLabel = "PATH",
            description = "class path of the program, put before sharp4j's own (the CLASSPATH variable is used when this is not given)")
    String classPath;

    @Parameters(index = "0", paramLabel = "MAIN_CLASS_OR_JAR",
            description = "main class, jar, or one of: osu_allreduce, osu_reduce, osu_barrier, demo")
    String program;

    @Parameters(index = "1..*", paramLabel = "ARGS", description = "arguments of the program")
    List<String> args = new ArrayList<>();

    /** {@code -V}: this build's version (the jar's Implementation-Version) and the JVM's. */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String v = LocalLauncher.class.getPackage().getImplementationVersion();
            return new String[] {"sharp4j " + (v == null ? "(classes, not a jar: version unknown)" : v),
                "Java " + Runtime.version() + " (" + System.getProperty("java.vendor") + ", " + System.getProperty("java.home") + ")"};
        }
    }

    /**
     * The CPU of each rank under {@code --bind-to core}: rank i on the i-th allowed CPU; null when
     * the ranks outnumber the CPUs (then nothing is bound).
     */
    static int[] bindPlan(int np, int[] allowed) {
        if (np > allowed.length) {
            return null;
        }
        return java.util.Arrays.copyOf(allowed, np);
    }

    /** The executable {@code name} in a directory of PATH, or null. */
    static String findOnPath(String name) {
        String path = System.getenv("PATH");
        for (String dir : (path == null ? "/usr/bin:/bin" : path).split(java.io.File.pathSeparator)) {
            Path p = Path.of(dir.isEmpty() ? "." : dir, name);
            if (Files.isExecutable(p)) {
                return p.toString();
            }
        }
        return null;
    }

    public static void main(String[] argv) {
        CommandLine cl = new CommandLine(new LocalLauncher());
        cl.setStopAtPositional(true); // everything after the program belongs to the program
        cl.setParameterExceptionHandler((ex, args) -> { // one line, not the whole usage
            ex.getCommandLine().getErr().println("sharp4j-run: " + ex.getMessage() + " (see sharp4j-run --help)");
            return 2;
        });
        System.exit(cl.execute(argv));
    }

    @Override
    public Integer call() throws Exception {
        if (np < 1) {
            throw new CommandLine.ParameterException(new CommandLine(this), "-np must be >= 1, got " + np);
        }
        if (nodes > np) {
            throw new CommandLine.ParameterException(new CommandLine(this),
                    "--nodes " + nodes + " needs at least " + nodes + " ranks (one per node), got -np " + np);
        }
        for (String k : properties.keySet()) {
            if (k.isBlank() || k.startsWith("-")) {
                throw new CommandLine.ParameterException(new CommandLine(this), "-D needs NAME=VALUE, got the name '" + k + "'");
            }
        }
        if (!bindTo.equals("core") && !bindTo.equals("none")) {
            throw new CommandLine.ParameterException(new CommandLine(this), "--bind-to must be core or none, got '" + bindTo + "'");
        }
        int[] cpuOf = bindTo.equals("core") ? bindPlan(np, org.sharp4j.topology.CpuTopology.allowedCpus()) : null;
        String taskset = cpuOf == null ? null : findOnPath("taskset");
        if (cpuOf != null && taskset == null) {
            System.err.println("sharp4j-run: taskset not found (package util-linux): ranks not bound to CPUs");
            cpuOf = null;
        }
        String jobId = "j" + ProcessHandle.current().pid() + "-" + Long.toHexString(ThreadLocalRandom.current().nextInt() & 0xffffffffL);
        List<String> base = new ArrayList<>();
        base.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        base.add(NATIVE_ACCESS);
        String opts = System.getenv("SHARP4J_JAVA_OPTS");
        if (opts != null && !opts.isBlank()) {
            base.addAll(List.of(opts.trim().split("\\s+")));
        }
        System.getProperties().forEach((k, v) -> {
            if (k.toString().startsWith("sharp4j.")) {
                base.add("-D" + k + "=" + v);
            }
        });
        if (nodes > 0) {
            base.add("-Dsharp4j.topology.nodes=" + nodes);
        }
        if (sockets > 0) {
            base.add("-Dsharp4j.topology.sockets=" + sockets);
        }
        if (!shmDir.toString().equals("/dev/shm")) {
            base.add("-Dsharp4j.shm.dir=" + shmDir);
        }
        properties.forEach((k, v) -> base.add("-D" + k + "=" + v));
        String cp = System.getProperty("java.class.path");
        String userCp = classPath != null ? classPath : System.getenv("CLASSPATH");
        if (userCp != null && !userCp.isBlank()) {
            cp = userCp + java.io.File.pathSeparator + cp;
        }
        String main = ALIASES.getOrDefault(program, program);
        if (main.endsWith(".jar") && !Files.isRegularFile(Path.of(main))) {
            throw new CommandLine.ParameterException(new CommandLine(this), main + ": no such jar file");
        }
        if (main.endsWith(".jar")) {
            try (JarFile jf = new JarFile(main)) {
                String mc = jf.getManifest() == null ? null : jf.getManifest().getMainAttributes().getValue("Main-Class");
                if (mc == null) {
                    System.err.println("sharp4j-run: " + main + " has no Main-Class in its manifest");
                    return 2;
                }
                cp = main + java.io.File.pathSeparator + cp;
                main = mc;
            }
        }
        base.add("-cp");
        base.add(cp);
        base.add(main);
        base.addAll(args);

        List<Process> procs = new ArrayList<>();
        List<Thread> pumps = new ArrayList<>();
        // SIGTERM of the launcher (scancel, a terminal's kill): the ranks get SIGTERM too, so that
        // their shutdown hooks run (they tell their peers and remove what they own), and a few
        // seconds to exit before SIGKILL; then the job's files go whatever happened.
        Thread cleanup = new Thread(() -> {
            procs.forEach(Process::destroy);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(TERM_GRACE_SECONDS);
            for (Process p : procs) {
                try {
                    p.waitFor(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            procs.forEach(Process::destroyForcibly);
            removeJobFiles(jobId);
        }, "sharp4j-run-cleanup");
        Runtime.getRuntime().addShutdownHook(cleanup);
        try (RendezvousServer server = bind == null ? new RendezvousServer(np)
                : new RendezvousServer(np, java.net.InetAddress.getByName(bind))) {
            server.start();
            for (int r = 0; r < np; r++) {
                List<String> cmd = new ArrayList<>();
                if (cpuOf != null) {
                    cmd.addAll(List.of(taskset, "-c", Integer.toString(cpuOf[r])));
                }
                if (rankPrefix != null && !rankPrefix.isBlank()) {
                    for (String w : rankPrefix.trim().split("\\s+")) {
                        cmd.add(w.replace("{rank}", Integer.toString(r)).replace("{size}", Integer.toString(np)));
                    }
                }
                cmd.addAll(base);
                ProcessBuilder pb = new ProcessBuilder(cmd).inheritIO();
                if (tagOutput) {
                    pb.redirectOutput(ProcessBuilder.Redirect.PIPE).redirectError(ProcessBuilder.Redirect.PIPE);
                }
                Map<String, String> env = pb.environment();
                env.put(RendezvousBootstrap.ENV_RANK, Integer.toString(r));
                env.put(RendezvousBootstrap.ENV_SIZE, Integer.toString(np));
                env.put(RendezvousBootstrap.ENV_JOB, jobId);
                env.put(RendezvousBootstrap.ENV_RENDEZVOUS, server.address());
                Process p = pb.start();
                procs.add(p);
                if (tagOutput) {
                    pumps.add(pump(p.getInputStream(), System.out, "[1," + r + "]<stdout>:"));
                    pumps.add(pump(p.getErrorStream(), System.err, "[1," + r + "]<stderr>:"));
                }
            }
            return waitAll(procs);
        } finally {
            procs.forEach(Process::destroyForcibly);
            removeJobFiles(jobId);
            try {
                Runtime.getRuntime().removeShutdownHook(cleanup);
            } catch (IllegalStateException ignored) {
                // already shutting down
            }
            for (Thread t : pumps) {
                t.join(TimeUnit.SECONDS.toMillis(TERM_GRACE_SECONDS)); // the ranks' last lines
            }
        }
    }

    /**
     * Copies {@code in} to {@code dest} line by line, each line prefixed with {@code tag} and
     * written whole in one call, so that lines from other pumps never land inside it.
     */
    static Thread pump(java.io.InputStream in, java.io.PrintStream dest, String tag) {
        byte[] prefix = tag.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        Thread t = new Thread(() -> {
            java.io.ByteArrayOutputStream line = new java.io.ByteArrayOutputStream(256);
            line.writeBytes(prefix);
            try (java.io.InputStream s = new java.io.BufferedInputStream(in)) {
                for (int b; (b = s.read()) != -1; ) {
                    line.write(b);
                    if (b == '\n') {
                        emit(dest, line);
                        line.reset();
                        line.writeBytes(prefix);
                    }
                }
            } catch (IOException ignored) {
                // the rank is gone; what it wrote so far is printed below
            }
            if (line.size() > prefix.length) {
                line.write('\n');
                emit(dest, line);
            }
        }, "sharp4j-run-output");
        t.setDaemon(true);
        t.start();
        return t;
    }

    private static void emit(java.io.PrintStream dest, java.io.ByteArrayOutputStream line) {
        synchronized (dest) {
            dest.write(line.toByteArray(), 0, line.size());
            dest.flush();
        }
    }

    /** Waits for every rank; after the first failure, gives the rest {@code grace} seconds. */
    private int waitAll(List<Process> procs) throws InterruptedException {
        int exit = 0;
        long deadline = Long.MAX_VALUE;
        List<Process> running = new ArrayList<>(procs);
        while (!running.isEmpty()) {
            for (int i = running.size() - 1; i >= 0; i--) {
                Process p = running.get(i);
                if (!p.isAlive()) {
                    running.remove(i);
                    int code = p.exitValue();
                    if (code != 0 && exit == 0) {
                        exit = code;
                        System.err.println("sharp4j-run: rank " + procs.indexOf(p) + " (pid " + p.pid() + ") exited with "
                                + describe(code) + "; waiting up to " + graceSeconds + " s for the others");
                        deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(graceSeconds);
                    }
                }
            }
            if (System.nanoTime() - deadline > 0) {
                for (Process p : running) {
                    System.err.println("sharp4j-run: killing rank " + procs.indexOf(p) + " (pid " + p.pid() + ")");
                    p.destroyForcibly();
                }
                break;
            }
            if (!running.isEmpty()) {
                running.get(0).waitFor(50, TimeUnit.MILLISECONDS);
            }
        }
        return exit;
    }

    private static String describe(int code) {
        return code > 128 ? "code " + code + " (signal " + (code - 128) + ")" : "code " + code;
    }

    /** The job's segment files in --shm-dir and in a directory given as -Dsharp4j.shm.dir (ranks use that one). */
    private void removeJobFiles(String jobId) {
        java.util.Set<Path> dirs = new java.util.LinkedHashSet<>();
        dirs.add(shmDir);
        String prop = System.getProperty("sharp4j.shm.dir");
        if (prop != null && !prop.isBlank()) {
            dirs.add(Path.of(prop.trim()));
        }
        for (Path dir : dirs) {
            try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir, "sharp4j-" + jobId + "-*")) {
                for (Path p : ds) {
                    Files.deleteIfExists(p);
                    System.err.println("sharp4j-run: removed leftover " + p);
                }
            } catch (IOException ignored) {
                // nothing to clean
            }
        }
    }
}
