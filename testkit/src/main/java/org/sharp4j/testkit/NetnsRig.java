package org.sharp4j.testkit;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Several "hosts" on this machine for one test class: the network namespaces of
 * {@code .ci/netns-rig.sh} (veths to a bridge in the root namespace, host names host0..hostN-1),
 * with mpirun's rsh agent {@code .ci/netns-rsh} and a host file for them.
 *
 * <p>Each rig has its own name and subnet, made from a prefix, a subnet base and this JVM's pid,
 * so that it never meets another test's rig or a developer's default one. {@link #up} adds a
 * shutdown hook that takes it down (the fork stopped mid-test: mpirun's processes first, then the
 * rig and what runs inside it); {@link #down} removes the hook. Who may touch it: the test class's
 * {@code @BeforeAll}/{@code @AfterAll} thread, and that hook at exit.
 */
public final class NetnsRig {
    private static final long PID = ProcessHandle.current().pid();

    /** RIG_ID and RIG_NET for the scripts, as the tests pass them on to mpirun, orted and the ranks. */
    public final String id;
    public final String net;
    /**
     * RIG_ID, RIG_NET, UCX_LOG_LEVEL=error (UCX 1.13's version warning goes to stdout, where the
     * results are) and OMPI_MCA_orte_tmpdir_base={@link #tmp}.
     */
    public final Map<String, String> env;
    /**
     * Open MPI's session directories of the rig's jobs (mpirun's and each host's orted's
     * {@code ompi.<host>.<uid>}, with PMIx's shared-memory store): every host of the rig shares this
     * machine's /tmp, and a job whose orted or mpirun ends without its own clean-up (a test that
     * times out, an orted killed with its namespace) left them there for good, named after hosts
     * that no longer exist. Created by {@link #up}, removed with everything in it by {@link #down}.
     */
    public final Path tmp;
    /** The hosts' TCP congestion control ({@code RIG_CC}), or null: the machine's default. */
    private final String cc;
    private final Path script;
    private final Path rsh;
    private Path hostfile;
    private volatile boolean up;
    private Thread downOnExit;

    /**
     * @param prefix the rig's name before the pid (e.g. {@code s4jmr})
     * @param netBase the first two octets of its /24 (e.g. {@code 10.232}); the third comes from the pid
     */
    public NetnsRig(String prefix, String netBase) {
        this(prefix, netBase, null);
    }

    /**
     * A rig whose hosts use TCP congestion control {@code cc} (the script's {@code RIG_CC}) where this
     * kernel has it, else the machine's default (then {@link #congestionControl()} is null). A new
     * namespace inherits the machine's default, which differs between machines (Debian's cubic, bbr on
     * some VM images) and changes how TCP paces long flows; a test whose subject depends on it says which.
     */
    public NetnsRig(String prefix, String netBase, String cc) {
        this.id = prefix + PID % 100_000;
        this.net = netBase + "." + PID % 250;
        this.cc = cc != null && available(cc) ? cc : null;
        this.tmp = Path.of(System.getProperty("java.io.tmpdir"), "netns-rig-" + id);
        Map<String, String> e = new LinkedHashMap<>(Map.of("RIG_ID", id, "RIG_NET", net, "UCX_LOG_LEVEL", "error",
                "OMPI_MCA_orte_tmpdir_base", tmp.toString()));
        if (this.cc != null) {
            e.put("RIG_CC", this.cc);
        }
        this.env = Collections.unmodifiableMap(e);
        Path top = Path.of("").toAbsolutePath();
        while (top != null && !Files.isRegularFile(top.resolve(".ci/netns-rig.sh"))) {
            top = top.getParent();
        }
        if (top == null) {
            throw new IllegalStateException("no .ci/netns-rig.sh above " + Path.of("").toAbsolutePath());
        }
        this.script = top.resolve(".ci/netns-rig.sh");
        this.rsh = top.resolve(".ci/netns-rsh");
        if (!Files.isExecutable(rsh)) {
            throw new IllegalStateException(rsh + " must exist and be executable");
        }
    }

    /** The hosts' TCP congestion control if one was asked for and is available, else null (the machine's default). */
    public String congestionControl() {
        return cc;
    }

    private static boolean available(String cc) {
        try {
            String all = Files.readString(Path.of("/proc/sys/net/ipv4/tcp_available_congestion_control"));
            return java.util.Arrays.asList(all.trim().split("\\s+")).contains(cc);
        } catch (IOException e) {
            return false;
        }
    }

    /** {@code env} as {@code NAME=VALUE} words. */
    public List<String> envWords() {
        List<String> out = new ArrayList<>();
        env.forEach((k, v) -> out.add(k + "=" + v));
        return out;
    }

    /** Why namespaces cannot be made here (not root, no iproute2...), or null when they can. */
    public String problem() throws IOException, InterruptedException {
        Procs.Result check = script("check");
        return check.exit() == 0 ? null : (check.out() + check.err()).trim();
    }

    /** Brings {@code hosts} hosts up, {@code slots} slots each in the host file; throws with the script's output if that fails. */
    public void up(int hosts, int slots) throws IOException, InterruptedException {
        downOnExit = new Thread(this::quietDown, "netns-rig " + id + " down");
        Runtime.getRuntime().addShutdownHook(downOnExit);
        up = true;
        Files.createDirectories(tmp);
        Procs.Result r = script("up", Integer.toString(hosts));
        if (r.exit() != 0) {
            throw new AssertionError("netns-rig.sh up " + hosts + " (RIG_ID=" + id + " RIG_NET=" + net + ")\n" + r);
        }
        hostfile = Files.createTempFile("netns-hosts", ".txt");
        StringBuilder sb = new StringBuilder();
        for (int h = 0; h < hosts; h++) {
            sb.append("host").append(h).append(" slots=").append(slots).append('\n');
        }
        Files.writeString(hostfile, sb, StandardCharsets.UTF_8);
    }

    public boolean isUp() {
        return up;
    }

    /** Takes the rig down if it is up (idempotent) and deletes the host file; returns the script's result, or null if it was not up. */
    public Procs.Result down() throws IOException, InterruptedException {
        Procs.Result r = null;
        if (up) {
            r = script("down");
            up = false;
            try {
                Runtime.getRuntime().removeShutdownHook(downOnExit);
            } catch (IllegalStateException shuttingDown) {
                // the hook runs anyway; down is idempotent
            }
        }
        if (hostfile != null) {
            Files.deleteIfExists(hostfile);
            hostfile = null;
        }
        removeTmp();
        return r;
    }

    /** Removes {@link #tmp} and what Open MPI left in it (after the rig is down: no orted writes there any more). */
    private void removeTmp() throws IOException {
        if (!Files.exists(tmp, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        try (Stream<Path> all = Files.walk(tmp)) {
            for (Path p : (Iterable<Path>) all.sorted(Comparator.reverseOrder())::iterator) {
                Files.deleteIfExists(p);
            }
        }
    }

    private void quietDown() {
        try {
            if (up) {
                ProcessHandle.current().descendants().forEach(ProcessHandle::destroyForcibly);
                script("down");
            }
            removeTmp();
        } catch (Exception e) {
            // at exit: nothing more to do
        }
    }

    /** Runs the rig script with these arguments (e.g. {@code exec 0 3 CMD...}) in the rig's environment. */
    public Procs.Result script(String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("bash", script.toString()));
        cmd.addAll(List.of(args));
        return Procs.run(cmd, env, 60);
    }

    /**
     * mpirun's flags for the rig: {@code baseFlags} (.ci/mpi-env.sh's) without their {@code --mca btl}
     * (Open MPI refuses a parameter given twice), then the host file, the rsh agent, orted's channel and
     * the TCP BTL held to the rig's subnet, and {@code btl self,vader,tcp} (vader serves ranks of one host).
     */
    public List<String> mpirunFlags(String baseFlags) {
        List<String> base = Procs.words(baseFlags);
        List<String> flags = new ArrayList<>();
        for (int i = 0; i < base.size(); i++) {
            if ((base.get(i).equals("--mca") || base.get(i).equals("-mca")) && i + 2 < base.size() && base.get(i + 1).equals("btl")) {
                i += 2;
            } else {
                flags.add(base.get(i));
            }
        }
        String subnet = net + ".0/24";
        flags.addAll(List.of("--hostfile", hostfile.toString(), "--mca", "plm_rsh_agent", rsh.toString(),
                "--mca", "oob_tcp_if_include", subnet, "--mca", "btl_tcp_if_include", subnet, "--mca", "btl", "self,vader,tcp"));
        return flags;
    }
}
