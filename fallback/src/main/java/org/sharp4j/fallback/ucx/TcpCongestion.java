package org.sharp4j.fallback.ucx;

import com.sun.jna.Function;
import com.sun.jna.LastErrorException;
import com.sun.jna.Memory;
import com.sun.jna.NativeLibrary;
import com.sun.jna.ptr.IntByReference;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * The TCP congestion control of the sockets UCX opens for the transport, where the network is TCP
 * ({@value #PROPERTY}).
 *
 * <h2>Why</h2>
 * BBR paces a connection at the delivery rate it measures from the acknowledgements. The host
 * path's long messages travel one way per socket (a send worker's), in bursts of up to 512 KiB,
 * and the receiver's acknowledgements arrive when its thread has read the data, not when the data
 * arrived. BBR then measures a low delivery rate, leaves its startup phase and paces every later
 * burst at it. On the network-namespace rig (2 hosts x 1 rank, a 256 KiB Reduce, sharp4j alone,
 * the VM's default bbr) a call took 154-193 us in every one of 8 runs, its connection paced at
 * 15-47 Gbit/s with a smoothed RTT of 0.1-0.37 ms (minimum 3 us); with cubic or reno 54-62 us, as
 * Open MPI's C benchmark under bbr (56 us: its connection stayed in BBR's startup, app-limited).
 * With the hosts' routes marked {@code quickack 1} every congestion control gave 57-59 us, which
 * is how the acknowledgements were found to be the cause. Cubic, on the other hand, made the
 * Allreduce, whose two directions run at once, slower than bbr from 512 KiB (4 MiB: 4.9 ms
 * against 3.4), and reno was the fastest of the three at both (4 MiB Allreduce 1.5 ms, 256 KiB
 * Reduce 54 us). UCX 1.13 has no setting for it, so the transport sets it on its own sockets.
 *
 * <h2>What</h2>
 * {@code auto} (default): a socket that runs {@code bbr} is switched to {@code reno} (always
 * built in, and always allowed to unprivileged processes); any other congestion control is left
 * alone. {@code keep}: nothing is changed. A name ({@code reno}, {@code cubic}, {@code dctcp},
 * ...): every socket gets it; one the kernel refuses ({@code net.ipv4.tcp_allowed_congestion_control}
 * lists what an unprivileged process may set) is reported once as a warning, and the socket keeps
 * its own.
 *
 * <h2>Which sockets</h2>
 * Those that appear in the process while the transport creates a worker (its listening sockets:
 * the connections UCX accepts on them inherit a congestion control set there) or an endpoint (the
 * connecting socket UCX opens in {@code ucp_ep_create}): the process's descriptors are listed
 * ({@code /proc/self/fd}) before and after, and only TCP sockets among the new ones are touched.
 * UCX's own thread may accept a peer's connection meanwhile: that socket is UCX's too. A socket
 * another library opens from another thread in that window could be touched as well; for it that
 * means reno instead of bbr. Cost: two listings per worker and endpoint, O(log n) of them per
 * leader, none on a collective's path after the first use of a peer; a listing reads every
 * descriptor of the process (a few microseconds each: about 1 ms for a JVM's few hundred). Many
 * leaders as threads of one JVM would each list all of their sockets, so the tests that run
 * hundreds of leaders that way ({@code HostPathScaleTest}) say {@code keep}.
 *
 * <p>Not thread-safe: one per transport, used by the thread that drives it (the setup, and the
 * endpoints and send worker it makes on a peer's first use); its counters are read by that thread.
 */
final class TcpCongestion {
    /** {@code auto}, {@code keep} or a congestion control's name: see the class comment. */
    static final String PROPERTY = UcxTransport.CONGESTION_PROPERTY;

    private static final int SOL_SOCKET = 1;
    private static final int SO_PROTOCOL = 38;
    private static final int IPPROTO_TCP = 6;
    private static final int TCP_CONGESTION = 13;
    /** TCP_CA_NAME_MAX: a name and its terminating zero. */
    private static final int NAME_MAX = 16;

    /** What {@code auto} replaces, and with what. */
    private static final String AUTO_FROM = "bbr";
    private static final String AUTO_TO = "reno";

    private final String policy;
    /** Sockets switched and the name they got (the last one), for the transport's description. */
    private int switched;
    private String switchedTo;
    /** The first refusal (a name the kernel does not allow or know), reported once. */
    private String refused;

    private TcpCongestion(String policy) {
        this.policy = policy;
    }

    /**
     * The policy {@code value} names ({@code auto}, {@code keep} or a congestion control's name:
     * lower-case letters, digits and '_', at most 15 characters).
     *
     * @throws IllegalArgumentException naming {@value #PROPERTY} and the value otherwise
     */
    static TcpCongestion of(String value) {
        String v = value == null ? "auto" : value.trim();
        if (v.isEmpty() || v.length() >= NAME_MAX || !v.matches("[a-z0-9_]+")) {
            throw new IllegalArgumentException(PROPERTY + " must be auto, keep or a TCP congestion control's name"
                    + " (lower case, at most " + (NAME_MAX - 1) + " characters, e.g. reno), not '" + value + "'");
        }
        return new TcpCongestion(v);
    }

    /** Whether this policy changes nothing ({@code keep}): then no descriptor is listed either. */
    boolean keeps() {
        return policy.equals("keep");
    }

    String policy() {
        return policy;
    }

    /** Sockets switched so far. */
    int switched() {
        return switched;
    }

    /** The congestion control the last switched socket got, or null. */
    String switchedTo() {
        return switchedTo;
    }

    /** The first name the kernel refused and why, or null. */
    String refused() {
        return refused;
    }

    /** The process's open descriptors and what each refers to ({@code socket:[inode]}, a path, ...); empty under {@code keep}. */
    Map<Integer, String> snapshot() {
        Map<Integer, String> fds = new HashMap<>();
        if (keeps()) {
            return fds;
        }
        try (DirectoryStream<Path> d = Files.newDirectoryStream(Path.of("/proc/self/fd"))) {
            for (Path p : d) {
                try {
                    fds.put(Integer.parseInt(p.getFileName().toString()), Files.readSymbolicLink(p).toString());
                } catch (IOException | NumberFormatException e) {
                    // closed meanwhile (the listing's own descriptor among them): not a socket of ours
                }
            }
        } catch (IOException | RuntimeException e) {
            // no /proc (not Linux): nothing to switch
        }
        return fds;
    }

    /**
     * Applies the policy to every TCP socket open now that was not in {@code before} (a {@link
     * #snapshot} taken before the worker or endpoint was made). Never throws: a socket it cannot
     * read or set keeps its congestion control.
     */
    void applySince(Map<Integer, String> before) {
        if (keeps()) {
            return;
        }
        for (Map.Entry<Integer, String> e : snapshot().entrySet()) {
            String link = e.getValue();
            if (link.startsWith("socket:") && !link.equals(before.get(e.getKey()))) {
                apply(e.getKey());
            }
        }
    }

    private void apply(int fd) {
        if (Libc.ERROR != null || !isTcp(fd)) {
            return;
        }
        String now = get(fd);
        if (now == null) {
            return;
        }
        String to = policy.equals("auto") ? (now.equals(AUTO_FROM) ? AUTO_TO : null) : policy;
        if (to != null && !now.equals(to)) {
            int err = set(fd, to);
            if (err != 0) {
                refuse(to, err);
            }
        }
    }

    private void refuse(String name, int errno) {
        if (refused == null) {
            refused = name + " (errno " + errno + (errno == 1 ? ": not in net.ipv4.tcp_allowed_congestion_control"
                    : errno == 2 ? ": not available in this kernel" : "") + ")";
        }
    }

    private static boolean isTcp(int fd) {
        try (Memory v = new Memory(4)) {
            IntByReference len = new IntByReference(4);
            Libc.GETSOCKOPT.invoke(int.class, new Object[] {fd, SOL_SOCKET, SO_PROTOCOL, v, len});
            return v.getInt(0) == IPPROTO_TCP;
        } catch (LastErrorException e) {
            return false; // not a socket (any more), or no SO_PROTOCOL
        }
    }

    /** The socket's congestion control, or null if it cannot be read. */
    static String get(int fd) {
        if (Libc.ERROR != null) {
            return null;
        }
        try (Memory v = new Memory(NAME_MAX)) {
            v.clear();
            IntByReference len = new IntByReference(NAME_MAX);
            Libc.GETSOCKOPT.invoke(int.class, new Object[] {fd, IPPROTO_TCP, TCP_CONGESTION, v, len});
            byte[] b = v.getByteArray(0, Math.min(NAME_MAX, len.getValue()));
            int n = 0;
            while (n < b.length && b[n] != 0) {
                n++;
            }
            return new String(b, 0, n, StandardCharsets.US_ASCII);
        } catch (LastErrorException e) {
            return null;
        }
    }

    /** Sets {@code name} on {@code fd}: 0, or the errno of the refusal. */
    private int set(int fd, String name) {
        byte[] b = name.getBytes(StandardCharsets.US_ASCII);
        try (Memory v = new Memory(b.length)) {
            v.write(0, b, 0, b.length);
            Libc.SETSOCKOPT.invoke(int.class, new Object[] {fd, IPPROTO_TCP, TCP_CONGESTION, v, b.length});
            switched++;
            switchedTo = name;
            return 0;
        } catch (LastErrorException e) {
            return e.getErrorCode() == 0 ? -1 : e.getErrorCode();
        }
    }

    /** libc's getsockopt and setsockopt, bound once (JNA, already the project's binding for native calls). */
    private static final class Libc {
        static final Function GETSOCKOPT;
        static final Function SETSOCKOPT;
        /** Null when bound, else why not (then nothing is switched). */
        static final String ERROR;

        static {
            Function g = null;
            Function s = null;
            String err = null;
            try {
                NativeLibrary c = NativeLibrary.getInstance("c");
                g = c.getFunction("getsockopt", Function.THROW_LAST_ERROR);
                s = c.getFunction("setsockopt", Function.THROW_LAST_ERROR);
            } catch (UnsatisfiedLinkError | RuntimeException e) {
                err = String.valueOf(e.getMessage());
            }
            GETSOCKOPT = g;
            SETSOCKOPT = s;
            ERROR = err;
        }
    }
}
