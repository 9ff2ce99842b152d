package org.sharp4j.fallback.ucx;

import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.concurrent.locks.LockSupport;
import org.openucx.jucx.UcxException;
import org.openucx.jucx.UcxUtils;
import org.openucx.jucx.ucp.UcpContext;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpEndpointParams;
import org.openucx.jucx.ucp.UcpParams;
import org.openucx.jucx.ucp.UcpRequest;
import org.openucx.jucx.ucp.UcpTagMessage;
import org.openucx.jucx.ucp.UcpWorker;
import org.openucx.jucx.ucp.UcpWorkerParams;
import org.openucx.jucx.ucs.UcsConstants;
import org.sharp4j.PeerFailureException;
import org.sharp4j.Sharp4jException;
import org.sharp4j.bootstrap.Bootstrap;
import org.sharp4j.fallback.transport.Transport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link Transport} over UCX's tag matching through its Java binding jucx 1.15.0: one
 * {@code UcpContext} (TAG feature) and one {@code UcpWorker} per node leader, one endpoint to
 * every other node leader, all created once by {@link #connect} and reused for the job.
 *
 * <h2>Setup ({@link #connect}, collective over the bootstrap)</h2>
 * Every rank of the job calls it (the bootstrap's allgather needs everyone; ranks that are not
 * node leaders contribute empty arrays and get null back). Round 1: each node leader creates its
 * context and worker and publishes the worker address (or its error). Round 2: each leader
 * creates its endpoints (peer error handling, an error handler that records the failed peer)
 * and exchanges one small handshake message with every peer, which makes UCX connect every pair
 * now rather than in the first collective and checks the peer numbering; the outcome is agreed
 * so that a failure anywhere fails every rank with the same message.
 *
 * <h2>Messages</h2>
 * The 64-bit UCX tag is {@code source peer << 48 | user tag}; receives name their source, so
 * they match with a full mask. Requests are int handles into a fixed pool (default
 * {@value #DEFAULT_POOL}) of jucx {@code UcpRequest} slots, posted without a callback (so a
 * completion costs no call back into Java). {@link #test} is one {@code ucp_worker_progress}
 * plus a look at that request. Buffers must be direct; their native address comes from
 * {@code UcxUtils.getAddress} and is cached per buffer object (4 entries), so the steady state
 * does one JNI call per post and one per test.
 *
 * <p><b>Allocation.</b> sharp4j's side allocates nothing per message, and {@link #test} /
 * {@link #progress} allocate nothing at all. jucx allocates inside JNI for every post: a
 * {@code UcpRequest} (56 bytes with compressed oops), plus two boxed {@code Long}s for its native
 * id (32 bytes) when the request does not complete at once. Measured by {@code UcxTransportTest}
 * ({@code ThreadMXBean.getThreadAllocatedBytes}, 8-byte ping-pong): a send 56 B (it completes
 * at once), a receive 88 B while its message is still to come; when the message is already there
 * only the probe's {@code UcpTagMessage} and its boxed id (the receive itself then allocates
 * nothing, see below); about 104 B per receive on average. Short-lived young-generation garbage.
 *
 * <p><b>UCX bugs worked around.</b> Before each receive the transport probes ({@code
 * ucp_tag_probe_nb}, not removing the message); in UCX's single-threaded mode nothing arrives
 * between probe and receive. A message that waits already is received through {@link
 * UcpTagRecv} ({@code ucp_tag_recv_nbx} bound directly, no callback), not through jucx: UCX
 * before 1.17 calls the receive callback from inside {@code ucp_tag_recv_nbx} when the message is
 * a complete multi-fragment eager one and returns the request it has released, on which jucx 1.15
 * then throws a NullPointerException (see {@link UcpTagRecv}; this crashed runs with {@code
 * UCX_RNDV_THRESH=1m} on the rig, and {@code UcxTransportTest} provokes it at every size). The
 * length of a message received at once is the probe's: UCX up to 1.15 does not fill in the receive
 * info then ("UCP/TAG: Populate tag_info on immediate completion", 1.16). A receive
 * posted before its message arrives goes through jucx and completes from the worker's progress.
 *
 * <h2>Failures</h2>
 * The endpoint error handler (run by UCX inside {@code ucp_worker_progress}, i.e. on the
 * leader thread) records the peer and UCX's status text. From then on a pending or new request
 * with that peer raises {@link PeerFailureException} naming that leader's global rank, e.g.
 * {@code rank 0: node leader rank 3 (node 1) disconnected: Endpoint timeout} (the reporting rank
 * first, as in the engine's messages; a process killed with -9 shows as UCX's "Endpoint timeout"
 * within about 0.1 s over TCP when a send is in flight). A receive is
 * matched by the worker, not the endpoint, so UCX would leave it pending forever: {@link #test}
 * checks the peer's state. A request that completes with another error throws a
 * {@link Sharp4jException} with UCX's status name; a receive longer than posted throws
 * {@link Transport.TruncatedException}.
 *
 * <p>A leader that only waits on receives from a killed peer has nothing in flight on that
 * endpoint, so UCX notices the closed connection only at its next keepalive round, which UCX 1.13
 * runs every 20 s: longer than the collective timeout, and meanwhile another survivor that gave
 * up and exited would be blamed instead (seen in {@code UcxProcessTest}, about 1 run in 6). The
 * transport sets UCP's {@code KEEPALIVE_INTERVAL} to {@value #KEEPALIVE_INTERVAL} unless
 * {@code UCX_KEEPALIVE_INTERVAL} is set. A round checks every endpoint (at most
 * {@code KEEPALIVE_NUM_EPS}, 128), and a leader has O(log N) endpoints (19 at 512 leaders,
 * {@code HostPathScaleTest}): a few dozen small messages a second, none on the collectives' path.
 * A leader may also have nothing pending with the killed peer at all (it finished its exchange with
 * it and waits on a survivor that gave up): the keepalive then marks the dead peer failed, and when
 * the survivor's exit fails the wait, the report names the peer that failed first, then the one
 * waited on ({@code rank 3: node leader rank 1 (node 1) disconnected: ...; then node leader rank 2
 * (node 2) disconnected: ...}; {@link PeerFailureException#ranks} in that order). Seen in
 * {@code UcxProcessTest} about 1 run in 22 on a loaded machine before that order was kept.
 *
 * <h2>UCX over TCP</h2>
 * UCX 1.13's TCP transport sends in segments of {@code TCP_TX_SEG_SIZE} (8 KiB by default) and
 * receives into {@code TCP_RX_SEG_SIZE} (64 KiB): the host path's 32-128 KiB fragments then travel
 * as many small writes and reads, a system call and UCX's protocol work each. Where the network is
 * TCP (TCP named alone, or UCX's choice on a host without RDMA devices, as for the threshold below)
 * the transport creates its context with {@value #TCP_TX_SEG} and {@value #TCP_RX_SEG} instead
 * (unless the environment or the configuration sets them; {@link #contextDefaults}); the receive
 * segment holds the largest host-path message whole (a posted part's fragment, up to 512 KiB:
 * {@code HostStep}'s "Large fragments"). Measured on
 * the network-namespace rig, 2 hosts, P50 against Open MPI over TCP in the same processes, six runs
 * alternating with UCX's sizes, medians: Reduce 0.99 instead of 1.54 at 256 KiB, 1.32 instead of
 * 2.31 at 512 KiB, 0.84-0.95 instead of 1.21-1.24 at 1-8 MiB, 0.66 instead of 1.12 at 16 MiB;
 * Allreduce 0.64 instead of 0.96 at 256 KiB and 1.23 instead of 1.78 at 1 MiB, but 1.04-1.16
 * instead of 0.76-0.81 at 2, 4 and 16 MiB (both directions at once; 32/128 KiB lay between the
 * two for both collectives). Before the eager threshold, with TCP alone, a 64 KiB Allreduce took
 * 72-107 us instead of 175. The entries are UCT's TCP fields ({@code TX_SEG_SIZE},
 * {@code RX_SEG_SIZE}, without the {@code TCP_} of the environment's names, which UCP would not
 * match); UCP keeps entries it does not know and applies them to the transports it opens.
 *
 * <p>Over TCP UCX 1.13 sends messages above a few KiB by rendezvous: a request, a reply, then the
 * data, one more TCP round trip per message before its data moves. The host path's messages are
 * fragments of at most 512 KiB, sent and received with every receive of a round posted, so where
 * the network is TCP (named alone, or UCX's choice on a host without RDMA devices, i.e. nothing in
 * {@code /sys/class/infiniband}) the transport sets {@code RNDV_THRESH} to {@value
 * #TCP_RNDV_THRESH} and they all go eagerly (unless {@code UCX_RNDV_THRESH} or the configuration
 * says otherwise). Measured on the rig, 2 hosts x 1 rank, Allreduce, P50 against Open MPI over TCP
 * in the same processes, three alternating runs each: default 0.93-1.03 at 32 KiB, 0.8-1.06 at 128
 * KiB, 1.0-1.69 at 512 KiB, 1.15-1.58 at 4 MiB, 0.95-1.72 at 16 MiB; with eager messages 0.57-0.64,
 * 0.52-0.83, 0.86-1.35, 0.86-1.10 and 0.72-0.76. Eager multi-fragment messages that arrive before
 * their receive are what {@link UcpTagRecv} receives safely. On RDMA networks UCX's own thresholds
 * stay: its rendezvous there moves the data by RDMA without copies.
 *
 * <p>Where the network is TCP the transport also sets the congestion control of the sockets UCX
 * opens for it ({@value #CONGESTION_PROPERTY}; by default bbr becomes reno): bbr paced the long
 * messages' one-way bursts at a rate it measured from late acknowledgements, 3x slower on the
 * rig. See {@link TcpCongestion}.
 *
 * <h2>A second worker for long messages over TCP</h2>
 * UCX merges the connections two workers open to each other into one TCP socket, so both
 * directions of an exchange share it. Open MPI's TCP transport uses one connection per direction.
 * Where the network is TCP ({@value #SPLIT_PROPERTY} {@code auto}, the default, as for the
 * segment sizes above; {@code on}, {@code off}), the transport makes a second worker, the <i>send
 * worker</i>, in the same context (on the first such send: a job of short messages has none),
 * and sends every message of at least {@value #SPLIT_MIN_BYTES}
 * bytes from its own endpoint ({@link #txEndpoint}) to the peer's (only) receiving worker:
 * those travel one way per socket. Shorter messages keep the shared socket, where each message
 * carries the acknowledgement of the last one the other way; on their own sockets an 8 B-1 KiB
 * Allreduce between 2 rig hosts took 1.2x as long (17-19 us against 13-16). Receives are all posted
 * on the receiving worker, so a receive matches either.
 *
 * <p><b>Order.</b> Messages of one pair and one tag keep their posting order when both are
 * shorter than {@value #SPLIT_MIN_BYTES} bytes or both at least that long (each class travels on
 * one socket); a short one may overtake a long one. The host path never has two messages with
 * one tag from one peer in flight except its 0-8 byte ones (aborts, liveness queries): every
 * data and spine message's tag carries the call's sequence number, round and fragment
 * ({@code Exchange.tag}).
 *
 * <p><b>Progress.</b> Every {@link #progress} drives the receiving worker. The send worker is
 * driven while one of its sends is pending (posted and not yet tested: a send counts from its
 * post until {@link #test} sees it complete), while its last progress reported events (what a
 * completed send left in UCX's socket buffer), and otherwise every {@value #TX_IDLE_PROGRESS}th
 * time (keepalive, connection setup): an idle worker's progress is a system call
 * ({@code epoll_wait}) that a short message's wait would pay on every poll.
 *
 * <p><b>Scale.</b> A leader has at most two endpoints per peer it talks to (O(log N) with the
 * k-nomial patterns); the send worker's endpoints are made on the first long send to a peer.
 * A failure on either endpoint marks the peer failed ({@link #peerFailed}).
 *
 * <p>Measured on the network-namespace rig, 2 hosts x 1 rank, OSU port, alternating with the
 * shared socket: see the README ("UCX host path").
 *
 * <h2>UCX on this machine, and choosing transports</h2>
 * <ul>
 *   <li>jucx 1.15.0 loads the system's {@code libucp.so.0}. On Debian 12's UCX 1.13.1 every
 *       context creation ({@code ucp_init}, not the loading of the library) logs one warning,
 *       harmless here since jucx uses no 1.14/1.15-only call on this path:<br>
 *       {@code UCX  WARN  UCP API version is incompatible: required >= 1.15, actual 1.13.1 (loaded from /lib/x86_64-linux-gnu/libucp.so.0)}<br>
 *       UCX's logger writes to stdout, where it breaks parsers of the program's output (OSU
 *       tables), so unless {@code UCX_LOG_LEVEL} is set (or a {@code LOG_LEVEL} entry is given)
 *       the context is created with {@code LOG_LEVEL} {@value #LOG_LEVEL}: jucx applies a
 *       configuration entry that is not UCP's with {@code ucs_global_opts_set_value} before
 *       {@code ucp_init}, which is where the warning is printed. {@code UCX_LOG_FILE} cannot be
 *       changed that way (UCX opens it when libucs loads), so UCX's errors still go to stdout;
 *       {@code UCX_LOG_FILE=stderr} in the environment moves them.</li>
 *   <li>Without libucp, jucx's {@code NativeLibs} throws {@code UnsatisfiedLinkError:
 *       Native code library failed to load: libjucx_amd64.so. /tmp/jucx.../libjucx_amd64.so:
 *       libucp.so.0: cannot open shared object file: No such file or directory} (later uses:
 *       {@code NoClassDefFoundError}); {@link #loadError()} turns it into a message saying how to
 *       install UCX ({@code apt-get install libucx0}, or the cluster's UCX module).</li>
 *   <li>Peer failure handling (which the error reporting needs) rules out UCX 1.13's shared
 *       memory transports ({@code posix/sysv/self: no peer failure handler}), so between
 *       processes or simulated nodes on one host UCX uses TCP over loopback, and between hosts
 *       TCP or InfiniBand. jucx 1.15 offers no endpoint query, so the lanes UCX picked are not
 *       visible here; {@code UCX_LOG_LEVEL=info} makes UCX print them ({@code ep_cfg[0]:
 *       tag(tcp/lo) ka(tcp/lo)}).</li>
 *   <li>{@code UcpParams.setConfig} passes UCX configuration to the context (jucx applies each
 *       entry with {@code ucp_config_modify}): {@value #TLS_PROPERTY} becomes {@code TLS} and
 *       {@value #DEVICES_PROPERTY} becomes {@code NET_DEVICES}, overriding the {@code UCX_TLS}
 *       / {@code UCX_NET_DEVICES} environment variables, which work as usual otherwise.</li>
 *   <li>The worker is created without {@code requestThreadSafety()}, i.e. in UCX's default
 *       {@code UCS_THREAD_MODE_SINGLE}: only the node leader thread that drives the collectives
 *       may call into this object (the {@link Transport} contract).</li>
 * </ul>
 */
public final class UcxTransport implements Transport {
    private static final Logger LOG = LoggerFactory.getLogger(UcxTransport.class);

    /**
     * UCP's keepalive round, unless {@code UCX_KEEPALIVE_INTERVAL} says otherwise: UCX 1.13's
     * default (20 s) is longer than sharp4j's timeout, see "Failures" above.
     */
    static final String KEEPALIVE_INTERVAL = "500ms";

    /**
     * UCX's log level unless {@code UCX_LOG_LEVEL} says otherwise: errors only, so that UCX's
     * API-version warning (see above) stays off the program's stdout.
     */
    static final String LOG_LEVEL = "error";

    /** UCX's TCP send and receive segments where the network is TCP: see "UCX over TCP" in the class comment. */
    static final String TCP_TX_SEG = "64k";
    /**
     * Above every host-path message (a posted part's fragment of at most {@code
     * HostStep.MAX_PART_FRAG_BYTES}, 512 KiB, plus UCX's headers), so that each arrives in one
     * receive segment: UCX delivers a message of one segment whole, one of several in pieces that
     * it copies together. Derived from the largest fragment (64 KiB above it: 576k), so the two
     * cannot drift apart.
     */
    static final String TCP_RX_SEG = (org.sharp4j.Config.MAX_INTER_FRAGMENT / 1024 + 64) + "k";
    /**
     * UCX's rendezvous threshold where the network is TCP: the receive segment, above every
     * host-path message (see {@link #TCP_RX_SEG}), so that all go eagerly; see "UCX over TCP".
     */
    static final String TCP_RNDV_THRESH = TCP_RX_SEG;

    /**
     * The entries the transport adds to the context's configuration, each unless the configuration
     * or the environment ({@code UCX_...}) sets it: the keepalive interval ("Failures"), the log
     * level ("UCX on this machine") and, where the network is TCP ({@code TLS=tcp} in the
     * configuration or {@code UCX_TLS=tcp}, or neither and no RDMA device), the TCP segment sizes and
     * the rendezvous threshold ("UCX over TCP"). UCP hands
     * entries it does not know (the segment sizes are UCT's TCP fields) to the transports it opens.
     */
    static Map<String, String> contextDefaults(Map<String, String> ucxConfig, java.util.function.Function<String, String> env) {
        return contextDefaults(ucxConfig, env, rdmaDevices());
    }

    /** {@link #contextDefaults(Map, java.util.function.Function)} on a host with or without RDMA devices. */
    static Map<String, String> contextDefaults(Map<String, String> ucxConfig, java.util.function.Function<String, String> env,
            boolean rdmaDevices) {
        Map<String, String> m = new LinkedHashMap<>();
        if (!ucxConfig.containsKey("KEEPALIVE_INTERVAL") && env.apply("UCX_KEEPALIVE_INTERVAL") == null) {
            m.put("KEEPALIVE_INTERVAL", KEEPALIVE_INTERVAL);
        }
        if (!ucxConfig.containsKey("LOG_LEVEL") && env.apply("UCX_LOG_LEVEL") == null) {
            m.put("LOG_LEVEL", LOG_LEVEL);
        }
        // larger segments, eager messages
        if (tcpNetwork(ucxConfig, env, rdmaDevices)) {
            for (String[] kv : new String[][] {{"TX_SEG_SIZE", TCP_TX_SEG}, {"RX_SEG_SIZE", TCP_RX_SEG}}) {
                if (!ucxConfig.containsKey(kv[0]) && !ucxConfig.containsKey("TCP_" + kv[0]) && env.apply("UCX_TCP_" + kv[0]) == null) {
                    m.put(kv[0], kv[1]);
                }
            }
            if (!ucxConfig.containsKey("RNDV_THRESH") && env.apply("UCX_RNDV_THRESH") == null) {
                m.put("RNDV_THRESH", TCP_RNDV_THRESH);
            }
        }
        return m;
    }

    /**
     * Whether the network is TCP: named alone, or UCX's choice on a host with no RDMA device (UCX's
     * other network transports need one; shared memory is ruled out).
     */
    static boolean tcpNetwork(Map<String, String> ucxConfig, java.util.function.Function<String, String> env, boolean rdmaDevices) {
        String tls = ucxConfig.containsKey("TLS") ? ucxConfig.get("TLS") : env.apply("UCX_TLS");
        return tls != null ? tls.trim().equalsIgnoreCase("tcp") : !rdmaDevices;
    }

    /**
     * Whether the transport makes a send worker ({@value #SPLIT_PROPERTY}: {@code auto} where the
     * network is TCP, {@code on}, {@code off}); throws IllegalArgumentException naming the property
     * for any other value.
     */
    static boolean splitWorkers(String split, Map<String, String> ucxConfig, java.util.function.Function<String, String> env,
            boolean rdmaDevices) {
        String v = split == null ? "auto" : split.trim().toLowerCase(Locale.ROOT);
        switch (v) {
            case "auto":
                return tcpNetwork(ucxConfig, env, rdmaDevices);
            case "on":
                return true;
            case "off":
                return false;
            default:
                throw new IllegalArgumentException(SPLIT_PROPERTY + " must be auto, on or off, not '" + split + "'");
        }
    }

    /** Whether this host has RDMA devices ({@code /sys/class/infiniband}: InfiniBand, RoCE, iWARP). */
    static boolean rdmaDevices() {
        try (java.util.stream.Stream<Path> d = Files.list(Path.of("/sys/class/infiniband"))) {
            return d.findAny().isPresent();
        } catch (IOException | RuntimeException e) {
            return false; // no such class: no RDMA driver loaded
        }
    }

    /** UCX transports for the inter-node path (UCX's {@code TLS}, e.g. {@code tcp}, {@code rc,ud}). */
    public static final String TLS_PROPERTY = "sharp4j.ucx.tls";
    /** UCX network devices (UCX's {@code NET_DEVICES}, e.g. {@code eth0}, {@code mlx5_0:1}). */
    public static final String DEVICES_PROPERTY = "sharp4j.ucx.net.devices";
    /**
     * {@code auto} (default: a send worker where the network is TCP), {@code on} or {@code off}: see
     * "A second worker for long messages over TCP" in the class comment.
     */
    public static final String SPLIT_PROPERTY = "sharp4j.ucx.split";
    /**
     * {@code auto} (default: bbr becomes reno), {@code keep} or a TCP congestion control's
     * name for the sockets UCX opens where the network is TCP: see {@link TcpCongestion}.
     */
    public static final String CONGESTION_PROPERTY = "sharp4j.ucx.tcp.congestion";
    /** Messages of at least this many bytes go from the send worker when there is one. */
    public static final int SPLIT_MIN_BYTES = 64 * 1024;
    /** How often an idle send worker is driven, in progress calls (a power of two). */
    static final int TX_IDLE_PROGRESS = 16;
    /** Request handles per transport. */
    public static final int DEFAULT_POOL = 256;

    static final int PEER_SHIFT = 48;
    static final int MAX_PEERS = 1 << 16;
    /** Tag of the setup handshake (consumed before the transport is handed out). */
    static final long HANDSHAKE_TAG = TAG_LIMIT - 1;
    // jucx's status constants, read once jucx has loaded (a static initialiser here would load it
    // and turn a missing libucp into an UnsatisfiedLinkError where loadError() should answer)
    private final int statusOk = UcsConstants.STATUS.UCS_OK;
    private final int statusTruncated = UcsConstants.STATUS.UCS_ERR_MESSAGE_TRUNCATED;
    /** {@code reqLen} of a receive that a longer waiting message truncated at its post (reported by {@link #test}). */
    private static final int TRUNCATED_AT_POST = -2;
    /** How long {@link #cancel} waits for UCX to let go of a receive before it reports the peer. */
    private static final long CANCEL_WAIT_NANOS = 10_000_000_000L;
    private static final long CLOSE_MILLIS = 5_000;
    /** The bound of {@link #closeAfterFailure()}: enough for flushes to live peers over TCP. */
    private static final long CLOSE_AFTER_FAILURE_MILLIS = 300;

    private final int me;
    private final int peers;
    private final int[] ranks;
    private final UcpContext context;
    private final UcpWorker worker;
    /**
     * Whether there is a send worker for messages of at least {@link #SPLIT_MIN_BYTES}, the worker
     * (made on the first such send: a job of short messages never has one), its endpoints (made on
     * first use), and its bookkeeping: sends posted on it and not yet seen complete, which
     * requests those are (counted from the post until tested: see {@link #send}), the events its
     * last progress reported, and the idle tick. The driving thread only.
     */
    private final boolean split;
    /** Sets the congestion control of the sockets UCX opens (null where the network is not TCP); driving thread only. */
    private final TcpCongestion congestion;
    private UcpWorker txWorker;
    private final UcpEndpoint[] txEps;
    private int txPending;
    private final boolean[] txCounted;
    private int txBusy;
    private int txTick;
    /**
     * {@link #heating}: 7 while the engine heats (then {@link #test} reports one completed send in
     * eight, by {@code heatTick}, as in flight, once), else 0 (never). One branch decides it, taken
     * both ways in the heating and never outside, so it leaves no trap. Driving thread only.
     */
    private int heatMask;
    private int heatTick;
    /** Receives of messages already waiting in UCX (the probe found them): see {@link UcpTagRecv}. */
    private final UcpTagRecv waitingRecv;
    private final UcpEndpoint[] eps;
    /** Every peer's worker address (from setup), for endpoints made on first use. */
    private final byte[][] workerAddress;
    private int endpoints;

    // the request pool: slot h is pending iff reqs[h] != null (a jucx request), nreq[h] != 0 (a
    // receive of a waiting message, see UcpTagRecv) or done[h] (such a receive completed when posted)
    private final UcpRequest[] reqs;
    private final long[] nreq;
    private final boolean[] done;
    private final int[] reqPeer;
    /** Sends: the length; receives: the length if it completed when posted (done), else -1 (then UCX reports it). */
    private final int[] reqLen;
    private final boolean[] reqRecv;
    private final int[] free;
    private int freeTop;
    /** Requests given up on by cancelAll (sends, or receives UCX could not cancel), kept until close. */
    private final UcpRequest[] orphans;
    private int orphanCount;

    // failed peers: status != 0 once the endpoint's error handler ran; failOrder: 1 for the first
    // peer seen failing, 2 for the next, ... (0 while alive), so a report can name the first (peerFailure)
    private final int[] failStatus;
    private final String[] failText;
    private final int[] failOrder;
    private int failures;
    private boolean closing;
    private boolean closed;
    private long sends;
    /** What {@code worker.progress()} returned, summed ({@link #progressEvents}); the driving thread only. */
    private long events;

    // native address per direct buffer (identity cache)
    private final ByteBuffer[] cacheBuf = new ByteBuffer[4];
    private final long[] cacheAddr = new long[4];
    private int cacheNext;

    private UcxTransport(int me, int[] ranks, UcpContext context, UcpWorker worker, boolean split, int pool,
            TcpCongestion congestion) {
        this.me = me;
        this.congestion = congestion;
        this.peers = ranks.length;
        this.ranks = ranks.clone();
        this.context = context;
        this.worker = worker;
        this.split = split;
        this.txEps = split ? new UcpEndpoint[peers] : null;
        this.txCounted = new boolean[pool];
        this.eps = new UcpEndpoint[peers];
        this.workerAddress = new byte[peers][];
        this.reqs = new UcpRequest[pool];
        this.nreq = new long[pool];
        this.done = new boolean[pool];
        this.waitingRecv = new UcpTagRecv(worker.getNativeId());
        this.reqPeer = new int[pool];
        this.reqLen = new int[pool];
        this.reqRecv = new boolean[pool];
        this.free = new int[pool];
        for (int i = 0; i < pool; i++) {
            free[i] = pool - 1 - i;
        }
        this.freeTop = pool;
        this.orphans = new UcpRequest[pool];
        this.failStatus = new int[peers];
        this.failText = new String[peers];
        this.failOrder = new int[peers];
    }

    // ------------------------------------------------------------------ loading

    /** Null when jucx and UCX's native libraries load in this JVM, else what is missing and how to get it. */
    public static String loadError() {
        return Native.ERROR;
    }

    private static final class Native {
        static final String ERROR = tryLoad();

        private static String tryLoad() {
            try {
                UcxMemoryHooks.beforeUcxLoads(); // before libucs's constructor patches libc under the JVM's threads
                org.openucx.jucx.NativeLibs.load();
                new UcpParams().requestTagFeature(); // initialises UcpConstants: the first call into libjucx
                removeExtractedLibrary();
                return UcpTagRecv.ERROR; // libucp is loaded now (libjucx needs it): the direct receive binds to it
            } catch (NoClassDefFoundError e) {
                return "the jucx jar (org.openucx:jucx 1.15.0) is not on the class path (" + e.getMessage() + ")";
            } catch (UnsatisfiedLinkError e) {
                removeExtractedLibrary();
                return "UCX's native libraries cannot be loaded: " + e.getMessage()
                        + ". Install UCX (Debian/Ubuntu: apt-get install libucx0; RHEL/Rocky: dnf install ucx) or load"
                        + " the cluster's UCX module so that libucp.so.0 is found (ld.so.conf or LD_LIBRARY_PATH)";
            } catch (Throwable e) {
                return "jucx cannot be initialised: " + e;
            }
        }
    }

    /**
     * jucx extracts its native library from the jar into a {@code jucx*} directory under
     * {@code java.io.tmpdir} that only a normal JVM exit removes (deleteOnExit), so every kill -9
     * left one behind. Once loaded, the library stays mapped without its file: find the directory
     * from this process's mappings ({@code /proc/self/maps}; jucx's own field for it is reset by
     * its class initialiser) and remove it now.
     */
    private static void removeExtractedLibrary() {
        try {
            String tmp = Path.of(System.getProperty("java.io.tmpdir")).toRealPath().toString();
            for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
                int i = line.indexOf('/');
                if (i < 0 || !line.contains("libjucx")) {
                    continue;
                }
                Path lib = Path.of(line.substring(i).replace(" (deleted)", "").trim());
                Path dir = lib.getParent();
                if (dir != null && dir.getFileName().toString().startsWith("jucx") && dir.getParent() != null
                        && dir.getParent().toString().equals(tmp)) {
                    try (java.util.stream.Stream<Path> files = Files.list(dir)) {
                        for (Path x : (Iterable<Path>) files::iterator) {
                            Files.deleteIfExists(x);
                        }
                    }
                    Files.deleteIfExists(dir);
                }
            }
        } catch (IOException | RuntimeException e) {
            LOG.debug("sharp4j: could not remove jucx's extracted library: {}", e.toString());
        }
    }

    /** UCX configuration from {@value #TLS_PROPERTY} and {@value #DEVICES_PROPERTY} (UCX names, without {@code UCX_}). */
    public static Map<String, String> configFromProperties(Properties p) {
        Map<String, String> m = new LinkedHashMap<>();
        String tls = p.getProperty(TLS_PROPERTY);
        if (tls != null && !tls.isBlank()) {
            m.put("TLS", tls.trim());
        }
        String dev = p.getProperty(DEVICES_PROPERTY);
        if (dev != null && !dev.isBlank()) {
            m.put("NET_DEVICES", dev.trim());
        }
        return m;
    }

    // ------------------------------------------------------------------ setup

    /**
     * Collective over {@code boot}: every rank of the job calls it. Builds the transport among the
     * ranks in {@code leaders} (peer i is global rank {@code leaders[i]}).
     *
     * @param ucxConfig UCX configuration entries (e.g. {@code TLS=tcp}), may be empty
     * @param timeoutNanos how long the handshake may wait for a peer
     * @return the transport on the ranks in {@code leaders}, null on the others
     * @throws Sharp4jException on every rank if any leader failed, naming it and UCX's reason
     */
    public static UcxTransport connect(Bootstrap boot, int[] leaders, Map<String, String> ucxConfig, long timeoutNanos) {
        return connect(boot, leaders, ucxConfig, timeoutNanos, DEFAULT_POOL);
    }

    public static UcxTransport connect(Bootstrap boot, int[] leaders, Map<String, String> ucxConfig, long timeoutNanos,
            int pool) {
        return connect(boot, leaders, ucxConfig, timeoutNanos, pool, "auto");
    }

    /**
     * @param split {@value #SPLIT_PROPERTY}: {@code auto}, {@code on} or {@code off} (anything else
     *        fails the setup on every rank, naming the property)
     */
    public static UcxTransport connect(Bootstrap boot, int[] leaders, Map<String, String> ucxConfig, long timeoutNanos,
            int pool, String split) {
        return connect(boot, leaders, ucxConfig, timeoutNanos, pool, split, "auto");
    }

    /**
     * @param split {@value #SPLIT_PROPERTY}: {@code auto}, {@code on} or {@code off}
     * @param congestion {@value TcpCongestion#PROPERTY}: {@code auto}, {@code keep} or a congestion
     *        control's name ({@link TcpCongestion}; applied where the network is TCP)
     *        (anything else fails the setup on every rank, naming the property)
     */
    public static UcxTransport connect(Bootstrap boot, int[] leaders, Map<String, String> ucxConfig, long timeoutNanos,
            int pool, String split, String congestion) {
        int peers = leaders.length;
        if (peers < 1 || peers > MAX_PEERS) {
            throw new IllegalArgumentException("UCX transport: " + peers + " peers (1.." + MAX_PEERS + ")");
        }
        int me = -1;
        for (int i = 0; i < peers; i++) {
            if (leaders[i] == boot.rank()) {
                me = i;
            }
        }
        // Round 1: context, worker, address.
        UcxTransport t = null;
        byte[] mine = new byte[0];
        if (me >= 0) {
            String err = loadError();
            boolean splitOn = false;
            TcpCongestion cc = null;
            if (err == null) {
                try {
                    splitOn = splitWorkers(split, ucxConfig, System::getenv, rdmaDevices());
                    cc = TcpCongestion.of(congestion);
                    if (!tcpNetwork(ucxConfig, System::getenv, rdmaDevices())) {
                        cc = null; // RDMA: UCX's TCP sockets carry no data
                    }
                } catch (IllegalArgumentException e) {
                    err = e.getMessage(); // every rank fails with it (below), none touched UCX
                }
            }
            if (err == null) {
                UcpContext ctx = null;
                UcpWorker w = null;
                try {
                    UcpParams params = new UcpParams().requestTagFeature().setEstimatedNumEps(peers);
                    contextDefaults(ucxConfig, System::getenv).forEach(params::setConfig);
                    ucxConfig.forEach(params::setConfig);
                    ctx = new UcpContext(params);
                    Map<Integer, String> before = cc == null ? null : cc.snapshot();
                    w = ctx.newWorker(new UcpWorkerParams()); // UCS_THREAD_MODE_SINGLE
                    if (cc != null) {
                        cc.applySince(before); // its listening sockets: the connections it accepts inherit it
                    }
                    ByteBuffer a = w.getAddress();
                    mine = new byte[1 + a.remaining()];
                    mine[0] = 1;
                    a.get(mine, 1, a.remaining());
                    t = new UcxTransport(me, leaders, ctx, w, splitOn, pool, cc);
                } catch (RuntimeException | Error e) {
                    if (w != null) {
                        w.close();
                    }
                    if (ctx != null) {
                        ctx.close();
                    }
                    t = null;
                    err = "cannot create a UCX context/worker" + (ucxConfig.isEmpty() ? "" : " with " + ucxConfig) + ": "
                            + ucxText(e);
                }
            }
            if (err != null) {
                mine = error(err);
            }
        }
        byte[][] all = boot.allgather(mine);
        String failed = firstError(all, leaders);
        if (failed != null) {
            if (t != null) {
                t.close();
            }
            throw new Sharp4jException("UCX setup failed: " + failed);
        }
        // Round 2: endpoints and one handshake per pair.
        mine = new byte[0];
        if (t != null) {
            String err;
            try {
                err = t.connectPeers(all, timeoutNanos);
            } catch (RuntimeException e) {
                err = e.getMessage();
            }
            mine = err == null ? new byte[] {1} : error(err);
        }
        all = boot.allgather(mine);
        failed = firstError(all, leaders);
        if (failed != null) {
            if (t != null) {
                t.close();
            }
            throw new Sharp4jException("UCX setup failed: " + failed);
        }
        return t;
    }

    private static byte[] error(String text) {
        byte[] b = text.getBytes(StandardCharsets.UTF_8);
        byte[] out = new byte[1 + b.length];
        out[0] = 2;
        System.arraycopy(b, 0, out, 1, b.length);
        return out;
    }

    private static String firstError(byte[][] all, int[] leaders) {
        for (int r = 0; r < all.length; r++) {
            if (all[r].length > 0 && all[r][0] == 2) {
                int node = -1;
                for (int i = 0; i < leaders.length; i++) {
                    if (leaders[i] == r) {
                        node = i;
                    }
                }
                return "node leader rank " + r + " (node " + node + "): " + new String(all[r], 1, all[r].length - 1,
                        StandardCharsets.UTF_8);
            }
        }
        return null;
    }

    /**
     * Setup with O(log n) peers: keeps every leader's worker address (the bootstrap gave them all),
     * and exchanges one handshake with {@code me + 2^i} and {@code me - 2^i mod n} for every
     * {@code 2^i < n} (2 ceil(log2 n) messages), which connects those endpoints now, checks the
     * peer numbering and reachability, and costs O(log n) endpoints, requests and file
     * descriptors per leader instead of n-1. Other endpoints are made when a pattern first uses
     * the peer ({@link #endpoint}). Null when all is well, else the reason.
     */
    private String connectPeers(byte[][] addresses, long timeoutNanos) {
        for (int p = 0; p < peers; p++) {
            if (p != me) {
                byte[] a = addresses[ranks[p]];
                workerAddress[p] = java.util.Arrays.copyOfRange(a, 1, a.length);
            }
        }
        int rounds = 0;
        for (int d = 1; d < peers; d <<= 1) {
            rounds++;
        }
        ByteBuffer out = ByteBuffer.allocateDirect(4).order(ByteOrder.nativeOrder());
        out.putInt(0, me);
        ByteBuffer in = ByteBuffer.allocateDirect(4 * Math.max(1, rounds)).order(ByteOrder.nativeOrder());
        int[] handles = new int[2 * rounds];
        int[] from = new int[rounds];
        int n = 0;
        int k = 0;
        for (int d = 1; d < peers; d <<= 1) {
            from[k] = Math.floorMod(me - d, peers);
            handles[n++] = recv(from[k], HANDSHAKE_TAG, in, 4 * k, 4);
            handles[n++] = send((me + d) % peers, HANDSHAKE_TAG, out, 0, 4);
            k++;
        }
        long deadline = System.nanoTime() + timeoutNanos;
        int pending = n;
        long park = 1_000;
        while (pending > 0) {
            pending = 0;
            for (int i = 0; i < n; i++) {
                if (handles[i] >= 0) {
                    int peer = reqPeer[handles[i]];
                    int got;
                    try {
                        got = test(handles[i]);
                    } catch (Sharp4jException e) {
                        cancelAll();
                        return e.getMessage() + " (during the UCX connection handshake)";
                    }
                    if (got >= 0) {
                        handles[i] = -1;
                    } else {
                        pending++;
                        if (System.nanoTime() - deadline > 0) {
                            cancelAll();
                            return "no UCX handshake with node leader rank " + ranks[peer] + " (node " + peer + ") within "
                                    + timeoutNanos / 1_000_000_000L + " s (unreachable? check " + TLS_PROPERTY + " / "
                                    + DEVICES_PROPERTY + " or UCX_TLS / UCX_NET_DEVICES)";
                        }
                    }
                }
            }
            if (pending > 0) {
                LockSupport.parkNanos(park);
                park = Math.min(2 * park, 1_000_000);
            }
        }
        for (int i = 0; i < rounds; i++) {
            if (in.getInt(4 * i) != from[i]) {
                return "UCX handshake from node " + from[i] + " carried peer index " + in.getInt(4 * i);
            }
        }
        return null;
    }

    /**
     * The endpoint to {@code p}, made on first use (peer error handling, the handler that records a
     * failed peer). A receive from p makes it too: a peer's failure is seen through its endpoint.
     */
    private UcpEndpoint endpoint(int p) {
        UcpEndpoint ep = eps[p];
        if (ep == null) {
            ep = eps[p] = newEndpoint(worker, p, "");
        }
        return ep;
    }

    /**
     * The send worker's endpoint to {@code p}'s receiving worker, made on the first long send to
     * it (the send worker too, on the first of all); the same error handling as {@link #endpoint}.
     */
    private UcpEndpoint txEndpoint(int p) {
        UcpEndpoint ep = txEps[p];
        if (ep != null) {
            return ep;
        }
        if (txWorker == null) {
            try {
                Map<Integer, String> before = congestion == null ? null : congestion.snapshot();
                txWorker = context.newWorker(new UcpWorkerParams()); // UCS_THREAD_MODE_SINGLE, as the first
                if (congestion != null) {
                    congestion.applySince(before);
                }
            } catch (UcxException e) {
                throw new Sharp4jException("rank " + ranks[me] + ": cannot create the UCX send worker for long messages: "
                        + ucxText(e) + " (-D" + SPLIT_PROPERTY + "=off does without it)");
            }
        }
        return txEps[p] = newEndpoint(txWorker, p, " (long messages)");
    }

    /** An endpoint of {@code w} to {@code p}'s receiving worker: peer error handling, the handler that records a failed peer. */
    private UcpEndpoint newEndpoint(UcpWorker w, int p, String what) {
        ByteBuffer addr = ByteBuffer.allocateDirect(workerAddress[p].length);
        addr.put(workerAddress[p]).flip();
        final int peer = p;
        UcpEndpointParams params = new UcpEndpointParams().setUcpAddress(addr).setPeerErrorHandlingMode()
                .setErrorHandler((e, status, text) -> peerFailed(peer, status, text))
                .setName("sharp4j-node" + me + "-to-node" + p + (what.isEmpty() ? "" : "-long"));
        UcpEndpoint ep;
        Map<Integer, String> before = congestion == null ? null : congestion.snapshot();
        try {
            ep = w.newEndpoint(params);
        } catch (UcxException e) {
            throw new Sharp4jException("rank " + ranks[me] + ": cannot create a UCX endpoint" + what + " to node leader rank "
                    + ranks[p] + " (node " + p + "): " + ucxText(e));
        }
        endpoints++;
        if (congestion != null) {
            congestion.applySince(before); // the socket UCX opened to connect it
        }
        return ep;
    }

    /** Whether long messages go from a send worker of their own ("A second worker for long messages over TCP"). */
    public boolean split() {
        return split;
    }

    /**
     * What was done to the congestion control of UCX's sockets so far ({@link TcpCongestion}), e.g.
     * {@code "auto: 3 sockets to reno"}, {@code "keep (no socket changed)"}; null where the network is not TCP.
     */
    public String congestion() {
        if (congestion == null) {
            return null;
        }
        String done = congestion.switched() == 0 ? congestion.policy() + " (no socket changed)"
                : congestion.policy() + ": " + congestion.switched() + " sockets to " + congestion.switchedTo();
        return congestion.refused() == null ? done : done + "; refused: " + congestion.refused();
    }

    /** The first congestion control the kernel refused for UCX's sockets and why, or null. */
    public String congestionRefused() {
        return congestion == null ? null : congestion.refused();
    }

    /** Endpoints made so far (O(log n) for the k-nomial patterns; reports, tests). */
    public int endpoints() {
        return endpoints;
    }


    /** The endpoint error handler: record the first failure of {@code peer}. Never throws (it runs inside UCX). */
    private void peerFailed(int peer, int status, String text) {
        if (failStatus[peer] == 0) {
            failText[peer] = text;
            failStatus[peer] = status == 0 ? UcsConstants.STATUS.UCS_ERR_CONNECTION_RESET : status;
            failOrder[peer] = ++failures;
            if (!closing) {
                LOG.debug("sharp4j: UCX endpoint to node leader rank {} (node {}) failed: {}", ranks[peer], peer, text);
            }
        }
    }

    // ------------------------------------------------------------------ Transport

    @Override
    public int peer() {
        return me;
    }

    @Override
    public int peers() {
        return peers;
    }

    @Override
    public int globalRank(int peer) {
        return ranks[peer];
    }

    @Override
    public int send(int peer, long tag, ByteBuffer buf, int off, int len) {
        sends++;
        checkPost(peer, tag, buf, off, len);
        if (failStatus[peer] != 0) {
            throw peerFailure(peer);
        }
        final boolean viaTx = split && len >= SPLIT_MIN_BYTES;
        UcpEndpoint ep = viaTx ? txEndpoint(peer) : endpoint(peer);
        long a = address(buf) + off; // before a handle is taken: a heap buffer is refused without using one
        int h = take();
        UcpRequest r;
        try {
            r = ep.sendTaggedNonBlocking(a, len, (long) me << PEER_SHIFT | tag, null);
        } catch (UcxException e) {
            free[freeTop++] = h;
            throw failure(peer, false, e.getStatus(), ucxText(e));
        } catch (RuntimeException e) { // a fault inside jucx's JNI code, not UCX's status: name the peer all the same
            free[freeTop++] = h;
            throw jucxFault(peer, false, e);
        }
        reqs[h] = r;
        reqPeer[h] = peer;
        reqLen[h] = len;
        reqRecv[h] = false;
        // Counted until tested, even if UCX completed it at once: whether a send completes at once is
        // timing (the socket's room), and a branch on it went one way in the engine's heating, in
        // lockstep, so C2 compiled the other as a trap that a program's first long sends took (JFR:
        // unstable_if here). Until tested, a completed send only keeps the send worker driven.
        if (viaTx) {
            txCounted[h] = true;
            txPending++;
        }
        return h;
    }

    @Override
    public int recv(int peer, long tag, ByteBuffer buf, int off, int len) {
        checkPost(peer, tag, buf, off, len);
        if (failStatus[peer] != 0) {
            throw peerFailure(peer);
        }
        endpoint(peer); // its failure is seen through its endpoint
        long a = address(buf) + off;
        int h = take();
        long ucxTag = (long) peer << PEER_SHIFT | tag;
        return postRecv(h, peer, a, len, ucxTag, -1L);
    }

    /**
     * A receive into slot {@code h}. A message that already waits in UCX (a non-removing probe
     * finds it; nothing arrives in between, since only this thread progresses the worker) is
     * received through {@link UcpTagRecv}, because jucx's receive of a complete multi-fragment
     * eager message crashes on UCX before 1.17; any other receive is posted through jucx and
     * completes from {@code worker.progress()}.
     */
    private int postRecv(int h, int peer, long address, int len, long tag, long mask) {
        reqPeer[h] = peer;
        reqRecv[h] = true;
        reqLen[h] = -1;
        try {
            UcpTagMessage waiting = worker.tagProbeNonBlocking(tag, mask, false);
            if (waiting != null) {
                long x = waitingRecv.post(address, len, tag, mask);
                if (x < 0) {
                    // received at once: the probe's length (UCX up to 1.15 leaves the info empty then)
                    done[h] = true;
                    reqLen[h] = (int) waiting.getRecvLength();
                } else {
                    nreq[h] = x;
                }
            } else {
                reqs[h] = worker.recvTaggedNonBlocking(address, len, tag, mask, null);
            }
        } catch (UcpTagRecv.Status e) {
            if (e.status == statusTruncated) {
                // A longer message that was already there, consumed at once: reported by test, as the
                // Transport contract says for every truncated receive (not from the post).
                done[h] = true;
                reqLen[h] = TRUNCATED_AT_POST;
                return h;
            }
            free[freeTop++] = h;
            throw failure(peer, true, e.status, null);
        } catch (UcxException e) {
            free[freeTop++] = h;
            throw failure(peer, true, e.getStatus(), ucxText(e));
        } catch (RuntimeException e) {
            free[freeTop++] = h;
            throw jucxFault(peer, true, e);
        }
        return h;
    }

    @Override
    public int recvAny(long tag, ByteBuffer buf, int off, int len) {
        Objects.checkFromIndexSize(off, len, buf.capacity());
        if (tag < 0 || tag >= TAG_LIMIT) {
            throw new IllegalArgumentException("UCX transport: tag " + tag + " outside 0..2^48-1");
        }
        if (closed) {
            throw new IllegalStateException("UCX transport is closed");
        }
        long a = address(buf) + off;
        int h = take();
        long mask = TAG_LIMIT - 1; // the source bits are left out: any peer
        return postRecv(h, -1, a, len, tag, mask);
    }

    @Override
    public int test(int request) {
        progress();
        UcpRequest r = reqs[request];
        if (r == null) {
            return testWaitingRecv(request);
        }
        int peer = reqPeer[request];
        // heating (heatMask 7): one test in eight of a completed send says "in flight" (see heating); else never
        if (!r.isCompleted() || (++heatTick & heatMask) == 1 && !reqRecv[request]) {
            if (peer >= 0 && failStatus[peer] != 0) {
                throw peerFailure(peer);
            }
            return -1;
        }
        int status = r.getStatus();
        if (txCounted[request]) {
            txCounted[request] = false;
            txPending--;
        }
        boolean isRecv = reqRecv[request];
        int len = reqLen[request];
        reqs[request] = null;
        free[freeTop++] = request;
        if (status == statusOk) {
            return !isRecv || len >= 0 ? len : (int) r.getRecvSize();
        }
        throw failure(peer, isRecv, status, null);
    }

    /** {@link #test} of a receive posted through {@link UcpTagRecv}. */
    private int testWaitingRecv(int request) {
        int peer = reqPeer[request];
        if (done[request]) {
            done[request] = false;
            free[freeTop++] = request;
            if (reqLen[request] == TRUNCATED_AT_POST) {
                throw failure(peer, true, statusTruncated, null);
            }
            return reqLen[request];
        }
        long x = nreq[request];
        if (x == 0) {
            throw new IllegalStateException("UCX transport: request " + request + " is not pending");
        }
        int status = UcpTagRecv.status(x);
        if (status == UcpTagRecv.INPROGRESS) {
            if (peer >= 0 && failStatus[peer] != 0) {
                throw peerFailure(peer);
            }
            return -1;
        }
        long len = waitingRecv.length(x);
        UcpTagRecv.free(x);
        nreq[request] = 0;
        free[freeTop++] = request;
        if (status == statusOk) {
            return (int) len;
        }
        throw failure(peer, true, status, null);
    }

    /**
     * {@inheritDoc} A receive posted through jucx is cancelled ({@code ucp_request_cancel}: a
     * receive not matched yet completes at once, cancelled); one posted through {@link UcpTagRecv}
     * found its message already there, so it is left to complete. Either way this drives the worker
     * until UCX is done with the buffer, failing as {@link #test} would if the peer fails meanwhile.
     */
    @Override
    public void cancel(int request) {
        final int peer = reqPeer[request];
        UcpRequest r = reqs[request];
        if (r != null) {
            if (!r.isCompleted()) {
                try {
                    worker.cancelRequest(r);
                } catch (UcxException ignored) {
                    // completed meanwhile
                }
            }
            final long start = System.nanoTime();
            while (!r.isCompleted()) {
                progress();
                cancelWaitCheck(peer, start);
            }
            reqs[request] = null;
        } else if (done[request]) {
            done[request] = false;
        } else if (nreq[request] != 0) {
            long x = nreq[request];
            final long start = System.nanoTime();
            while (UcpTagRecv.status(x) == UcpTagRecv.INPROGRESS) { // a matched message, in transfer
                progress();
                cancelWaitCheck(peer, start);
            }
            UcpTagRecv.free(x);
            nreq[request] = 0;
        } else {
            throw new IllegalStateException("UCX transport: request " + request + " is not pending");
        }
        free[freeTop++] = request;
    }

    /**
     * {@link #cancel}'s waits: a peer that failed is named at once; one whose message, matched, does
     * not finish arriving within {@link #CANCEL_WAIT_NANOS} (stopped in the middle of it) is named too,
     * rather than waited for forever. A cancelled receive that nothing matched completes at once.
     */
    private void cancelWaitCheck(int peer, long start) {
        if (peer >= 0 && failStatus[peer] != 0) {
            throw peerFailure(peer);
        }
        if (System.nanoTime() - start > CANCEL_WAIT_NANOS) {
            throw new Sharp4jException("rank " + ranks[me] + ": UCX did not release a cancelled receive from node leader rank "
                    + (peer >= 0 ? ranks[peer] + " (node " + peer + ")" : "(any)") + " within " + CANCEL_WAIT_NANOS / 1_000_000 + " ms");
        }
    }

    @Override
    public long sendCount() {
        return sends;
    }

    @Override
    public long progressEvents() {
        return events;
    }

    @Override
    public long probe(long tag, long mask) {
        progress();
        // The source lies above bit 48 of UCX's tag: the mask leaves it out, so any peer matches.
        UcpTagMessage m = worker.tagProbeNonBlocking(tag & (TAG_LIMIT - 1), mask & (TAG_LIMIT - 1), false);
        return m == null ? -1 : m.getSenderTag() & (TAG_LIMIT - 1);
    }

    /**
     * Sends over TCP between lockstep ranks were always complete when tested in the heating, so C2
     * compiled "still in flight" as a trap in the host path's rounds (JFR on the netns rig:
     * unstable_if in {@code PostedRounds.advance} at a send's test, during a program's first
     * long calls); a real network is slower than the heating's small calls.
     */
    @Override
    public void heating(boolean on) {
        heatMask = on ? 7 : 0;
    }

    @Override
    public void progress() {
        try {
            events += worker.progress();
            // one branch for the three reasons (counts are never negative; the last term is 1 on every
            // TX_IDLE_PROGRESS-th call): which of them holds is timing, and a branch per reason went one way in
            // the engine's heating, so C2 compiled the other as a trap (JFR: unstable_if at txBusy, during a
            // program's first long calls between nodes)
            final int idle = ((++txTick & (TX_IDLE_PROGRESS - 1)) - 1) >>> 31;
            if (txWorker != null && (txPending | txBusy | idle) != 0) {
                int n = txWorker.progress();
                txBusy = n;
                events += n;
            }
        } catch (Exception e) { // an exception thrown by a callback inside UCX: we install none that throws
            throw new Sharp4jException("UCX progress failed: " + e, e);
        }
    }

    @Override
    public void cancelAll() {
        for (int h = 0; h < reqs.length; h++) {
            UcpRequest r = reqs[h];
            if (r != null && reqRecv[h] && !r.isCompleted()) {
                try {
                    worker.cancelRequest(r);
                } catch (UcxException ignored) {
                    // completed meanwhile
                }
            }
            if (nreq[h] != 0 && UcpTagRecv.status(nreq[h]) == UcpTagRecv.INPROGRESS) {
                waitingRecv.cancel(nreq[h]); // a matched message in transfer: UCX may not cancel it
            }
        }
        // Cancelled receives complete at once; sends complete once UCX has handed them over (or the
        // peer failed). Give them a moment, then keep what is still pending until close.
        long deadline = System.nanoTime() + 200_000_000L;
        boolean pending = true;
        while (pending) {
            progress();
            pending = false;
            for (int h = 0; h < reqs.length; h++) {
                if (done[h]) {
                    done[h] = false;
                    free[freeTop++] = h;
                } else if (nreq[h] != 0) {
                    // released now: UCX frees it when it completes, and a released request does
                    // not keep the worker from being destroyed
                    boolean complete = UcpTagRecv.status(nreq[h]) != UcpTagRecv.INPROGRESS;
                    if (complete || System.nanoTime() - deadline > 0 || reqPeer[h] >= 0 && failStatus[reqPeer[h]] != 0) {
                        UcpTagRecv.free(nreq[h]);
                        nreq[h] = 0;
                        free[freeTop++] = h;
                    } else {
                        pending = true;
                    }
                }
                UcpRequest r = reqs[h];
                if (r != null) {
                    if (r.isCompleted()) {
                        reqs[h] = null;
                        free[freeTop++] = h;
                    } else if (System.nanoTime() - deadline > 0 || reqPeer[h] >= 0 && failStatus[reqPeer[h]] != 0) {
                        orphans[orphanCount++ % orphans.length] = r;
                        reqs[h] = null;
                        free[freeTop++] = h;
                    } else {
                        pending = true;
                    }
                }
            }
            if (pending) {
                LockSupport.parkNanos(100_000);
            }
        }
        java.util.Arrays.fill(txCounted, false); // every request is free or orphaned now
        txPending = 0;
    }

    /**
     * Local: closes the endpoints (flushing what was sent, so that peers still finishing the last
     * collective get it; by force to peers that failed), then the worker and the context. Bounded:
     * after {@value #CLOSE_MILLIS} ms it stops waiting. UCX must not destroy a worker while any of
     * its requests is outstanding (UCX 1.13 aborts the process: {@code ucp_worker_destroy}:
     * "Assertion req->flags & UCP_REQUEST_FLAG_RELEASED"), and an endpoint must be closed once
     * (a second close logs "ep has already been closed"): so when a stuck or unreachable peer keeps
     * a close or a send pending past the bound, the worker and context are left to the process's
     * exit rather than destroyed under it. Leaking them is the lesser harm, and only happens after
     * a failure.
     */
    @Override
    public void close() {
        close(CLOSE_MILLIS);
    }

    /**
     * After a failure the peer that caused it may be stopped (SIGSTOP, a partition): its flushes and
     * sends would keep the normal close waiting its full {@value #CLOSE_MILLIS} ms, which the rank's
     * error then waits for too (a program's try-with-resources closes before the error is printed).
     */
    @Override
    public void closeAfterFailure() {
        close(CLOSE_AFTER_FAILURE_MILLIS);
    }

    private void close(long boundMillis) {
        if (closed) {
            return;
        }
        closed = true;
        closing = true;
        boolean quiescent = false;
        try {
            for (int h = 0; h < reqs.length; h++) {
                if (reqs[h] != null && reqRecv[h] && !reqs[h].isCompleted()) {
                    try {
                        worker.cancelRequest(reqs[h]);
                    } catch (UcxException ignored) {
                        // completed meanwhile
                    }
                }
                if (nreq[h] != 0) {
                    if (UcpTagRecv.status(nreq[h]) == UcpTagRecv.INPROGRESS) {
                        waitingRecv.cancel(nreq[h]);
                    }
                    UcpTagRecv.free(nreq[h]); // released: UCX frees it on completion, the worker may go
                    nreq[h] = 0;
                }
            }
            UcpRequest[] closeReqs = new UcpRequest[2 * peers];
            for (int p = 0; p < peers; p++) {
                for (int k = 0; k < 2; k++) {
                    UcpEndpoint ep = k == 0 ? eps[p] : txEps == null ? null : txEps[p];
                    if (ep != null) {
                        try {
                            closeReqs[2 * p + k] = failStatus[p] != 0 ? ep.closeNonBlockingForce() : ep.closeNonBlockingFlush();
                        } catch (UcxException e) {
                            closeReqs[2 * p + k] = null;
                        }
                    }
                }
            }
            long deadline = System.nanoTime() + boundMillis * 1_000_000L;
            while (true) {
                try {
                    worker.progress();
                    if (txWorker != null) {
                        txWorker.progress();
                    }
                } catch (Exception ignored) {
                    // closing
                }
                boolean pending = false;
                for (UcpRequest c : closeReqs) {
                    pending |= c != null && !c.isCompleted();
                }
                for (UcpRequest r : reqs) {
                    pending |= r != null && !r.isCompleted();
                }
                for (int i = 0; i < Math.min(orphanCount, orphans.length); i++) {
                    pending |= orphans[i] != null && !orphans[i].isCompleted();
                }
                if (!pending) {
                    quiescent = true;
                    break;
                }
                if (System.nanoTime() - deadline > 0) {
                    break;
                }
                LockSupport.parkNanos(50_000);
            }
        } finally {
            if (quiescent) {
                try {
                    if (txWorker != null) {
                        txWorker.close();
                    }
                    worker.close();
                } finally {
                    context.close();
                    waitingRecv.close();
                }
            } else {
                LOG.debug("sharp4j: UCX requests of node {} still pending {} ms after close (a stuck or unreachable peer): "
                        + "the worker is left to the process's exit", me, boundMillis);
            }
        }
    }

    // ------------------------------------------------------------------ helpers

    private void checkPost(int peer, long tag, ByteBuffer buf, int off, int len) {
        if (peer < 0 || peer >= peers || peer == me) {
            throw new IllegalArgumentException("UCX transport: peer " + peer + " (this is peer " + me + " of " + peers + ")");
        }
        if (tag < 0 || tag >= TAG_LIMIT) {
            throw new IllegalArgumentException("UCX transport: tag " + tag + " outside 0..2^48-1");
        }
        Objects.checkFromIndexSize(off, len, buf.capacity());
        if (closed) {
            throw new IllegalStateException("UCX transport is closed");
        }
    }

    private int take() {
        if (freeTop == 0) {
            throw new Sharp4jException("UCX transport: all " + reqs.length + " request handles are pending");
        }
        return free[--freeTop];
    }

    private long address(ByteBuffer buf) {
        for (int i = 0; i < cacheBuf.length; i++) {
            if (cacheBuf[i] == buf) {
                return cacheAddr[i];
            }
        }
        if (!buf.isDirect()) {
            throw new IllegalArgumentException("UCX transport: the buffer must be direct");
        }
        long a = UcxUtils.getAddress(buf);
        int i = cacheNext;
        cacheNext = (i + 1) & (cacheBuf.length - 1);
        cacheBuf[i] = buf;
        cacheAddr[i] = a;
        return a;
    }

    /**
     * The failure of a request with {@code peer}, which has failed. If another peer failed before it
     * (its endpoint's error handler ran first, through a request or UCP's keepalive), that one is
     * named first: a leader that gave up on a dead peer and exited disconnects too, and a survivor
     * that was waiting only on it must blame the dead peer, not the messenger. Error path only: the
     * scan is O(peers).
     */
    private PeerFailureException peerFailure(int peer) {
        int first = peer;
        for (int q = 0; q < peers; q++) {
            if (failOrder[q] != 0 && failOrder[q] < failOrder[first]) {
                first = q;
            }
        }
        String msg = "rank " + ranks[me] + ": node leader rank " + ranks[first] + " (node " + first + ") disconnected: " + failText[first];
        if (first == peer) {
            return new PeerFailureException(msg, new int[] {ranks[peer]});
        }
        return new PeerFailureException(msg + "; then node leader rank " + ranks[peer] + " (node " + peer + ") disconnected: "
                + failText[peer], new int[] {ranks[first], ranks[peer]});
    }

    private Sharp4jException failure(int peer, boolean isRecv, int status, String text) {
        if (peer < 0) {
            return new Sharp4jException("rank " + ranks[me] + ": UCX receive from any node leader failed: "
                    + (text != null ? text : statusName(status)));
        }
        if (failStatus[peer] == 0 && (status == UcsConstants.STATUS.UCS_ERR_ENDPOINT_TIMEOUT
                || status == UcsConstants.STATUS.UCS_ERR_CONNECTION_RESET || status == UcsConstants.STATUS.UCS_ERR_UNREACHABLE)) {
            // UCX may complete a request with its endpoint's error before it runs the error handler
            // (a later progress): the peer has failed all the same, and is named as such
            peerFailed(peer, status, text != null ? text : statusName(status));
        }
        if (failStatus[peer] != 0) {
            return peerFailure(peer);
        }
        if (status == statusTruncated) {
            return new TruncatedException(peer, "rank " + ranks[me] + ": UCX: a message from node leader rank " + ranks[peer] + " (node " + peer
                    + ") is longer than the receive posted for it (the node leaders disagree on the call)");
        }
        return new Sharp4jException("rank " + ranks[me] + ": UCX " + (isRecv ? "receive from" : "send to") + " node leader rank " + ranks[peer]
                + " (node " + peer + ") failed: " + (text != null ? text : statusName(status)));
    }

    private Sharp4jException jucxFault(int peer, boolean isRecv, RuntimeException e) {
        String who = peer < 0 ? "any node leader" : "node leader rank " + ranks[peer] + " (node " + peer + ")";
        return new Sharp4jException("rank " + ranks[me] + ": UCX " + (isRecv ? "receive from " : "send to ") + who + " failed inside jucx: " + e, e);
    }

    /** UCX's own text for a jucx exception (jucx puts {@code ucs_status_string} in the message). */
    private static String ucxText(Throwable e) {
        String m = e.getMessage();
        if (e instanceof UcxException && ((UcxException) e).getStatus() != 0) {
            return m + " (" + statusName(((UcxException) e).getStatus()) + ")";
        }
        return m != null ? m : e.toString();
    }

    /** UCX's name of a status code, e.g. {@code UCS_ERR_CONNECTION_RESET (-25)}. */
    static String statusName(int status) {
        for (Field f : UcsConstants.STATUS.class.getFields()) {
            if (Modifier.isStatic(f.getModifiers()) && f.getType() == int.class && !f.getName().startsWith("UCS_ERR_FIRST")
                    && !f.getName().startsWith("UCS_ERR_LAST")) {
                try {
                    if (f.getInt(null) == status) {
                        return f.getName() + " (" + status + ")";
                    }
                } catch (IllegalAccessException ignored) {
                    // public field
                }
            }
        }
        return "UCX status " + status;
    }

    /** Where this process loaded libucp from (for logs), or null. */
    public static String libucpPath() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
                int i = line.indexOf('/');
                if (i >= 0 && line.contains("libucp.so")) {
                    return line.substring(i);
                }
            }
        } catch (IOException | RuntimeException ignored) {
            // not Linux
        }
        return null;
    }

    /** A one-line description of the UCX configuration in effect, for the log. */
    static String describeConfig(Map<String, String> ucxConfig) {
        String tls = ucxConfig.containsKey("TLS") ? ucxConfig.get("TLS") + " (" + TLS_PROPERTY + ")"
                : System.getenv("UCX_TLS") != null ? System.getenv("UCX_TLS") + " (UCX_TLS)" : "UCX's choice";
        String dev = ucxConfig.containsKey("NET_DEVICES") ? ucxConfig.get("NET_DEVICES") + " (" + DEVICES_PROPERTY + ")"
                : System.getenv("UCX_NET_DEVICES") != null ? System.getenv("UCX_NET_DEVICES") + " (UCX_NET_DEVICES)" : "all";
        return "transports " + tls + ", devices " + dev;
    }

    @Override
    public String toString() {
        return String.format(Locale.ROOT, "UcxTransport[node %d of %d]", me, peers);
    }
}

