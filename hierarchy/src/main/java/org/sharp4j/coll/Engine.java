package org.sharp4j.coll;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.sharp4j.ArgumentMismatchException;
import org.sharp4j.Config;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.PeerFailureException;
import org.sharp4j.Sharp4jException;
import org.sharp4j.bootstrap.Bootstrap;
import org.sharp4j.shm.Flags;
import org.sharp4j.shm.Segment;
import org.sharp4j.shm.WaitPolicy;
import org.sharp4j.shm.Waiter;
import org.sharp4j.spi.InterNodeStep;
import org.sharp4j.topology.CpuTopology;
import org.sharp4j.topology.RankInfo;
import org.sharp4j.topology.Topology;
import org.sharp4j.tuning.Collective;
import org.sharp4j.tuning.CompiledTable;
import org.sharp4j.tuning.IntraNodeAlgorithm;
import org.sharp4j.tuning.IntraNodeTuning;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One rank's view of the socket-aware five-phase hierarchy (paper 004, section IV):
 *
 * <ol>
 *   <li>intra-socket reduce to the socket leader (k-nomial tree, or tiled reduce-scatter),</li>
 *   <li>inter-socket reduce among socket leaders to the node leader (node segment),</li>
 *   <li>inter-node step among node leaders ({@link InterNodeStep}; nothing with one node),</li>
 *   <li>inter-socket broadcast: socket leaders copy the result next to their socket,</li>
 *   <li>intra-socket broadcast: members read it from their socket leader.</li>
 * </ol>
 *
 * Reduce runs phases 1-3 towards the root's node and delivers the data only to the root; Barrier
 * is the same flow with no data (gather flags up, release flags down, paper 004 IV-D). Every
 * collective ends with a release or an exchange that carries the call's status, so argument
 * mismatches throw on every rank and slots are reusable later (see {@link ShmLevel}); the one
 * exception, a Reduce on one socket and one node whose non-root members return once they published,
 * is described in {@link ExchangeAlgorithm} ("Who returns when"): {@link #run} keeps its reuse
 * rule and hands those members the verdict later.
 *
 * <h2>Who may touch what, when</h2>
 * <ul>
 *   <li>One thread at a time runs a collective ({@link #run}, the warm-up), as with
 *       MPI_THREAD_SERIALIZED; it alone touches {@link #src}, {@link #dst}, the call status, the
 *       sequence number, the segments' data and phase 3. {@code state} enforces it: a
 *       compare-and-set IDLE -&gt; BUSY at entry (a second thread gets {@link IllegalStateException}
 *       before touching anything), and a release store BUSY -&gt; IDLE at exit. The exit is not a
 *       compare-and-set because nobody else writes the state while it is BUSY, except a close
 *       from the calling thread itself (below).</li>
 *   <li><b>The lease.</b> A locked instruction waits until the thread's earlier stores are visible
 *       everywhere, and a call's last stores are flags a peer polls, a cache-line transfer away: in a
 *       loop of small Reduces the compare-and-set was the leaf's most expensive instruction. So the
 *       thread that last entered through the compare-and-set holds a {@code lease} (where
 *       {@link ProcessFence} works: Linux's membarrier) and enters later calls with plain
 *       instructions: it stores its lease's {@code inside} = 1, then loads the state (IDLE),
 *       {@code closeRequested} (false) and {@code lease} (still its own); any other answer, and it
 *       takes its store back and goes the slow way. The other side of that Dekker pair is rare and
 *       pays for both: another thread's entry (after its compare-and-set made the state BUSY) and a
 *       close (after its compare-and-set made it CLOSED) run {@link ProcessFence} and only then read
 *       {@code inside}; either the holder saw their store, or they see its 1 (then the entry throws
 *       as above, and the close aborts the call and waits for its exit's release store of 0 before it
 *       frees anything). An entry that finds another holder outside revokes its lease, under BUSY;
 *       a lease is granted, under BUSY, to a thread's second call in a row through the
 *       compare-and-set, or a later one where leases were revoked before they paid for the barrier
 *       (threads that take turns every call or every few calls: {@link #leaseRun}).
 *       A close from inside a leased call on its own thread marks the call, whose exit releases.</li>
 *   <li>{@link #abort} may come from any thread at any time: it records its reason (volatile,
 *       which this rank's own waits see at their next failure probe, so a watchdog's abort ends
 *       its own rank's wait too), compare-and-sets the node's abort word (the first giver wins, so
 *       every rank reports the same culprit) and tells phase 3 (which hands it to the thread
 *       inside a call). It holds {@code teardown} while it does, and release takes it before it
 *       frees anything: an abort never writes into an unmapped segment or a closed step, and one
 *       that comes after the close does nothing.</li>
 *   <li>{@link #close} may come from any thread. It sets {@code closeRequested} (volatile), then
 *       IDLE -&gt; CLOSED releases at once. While another thread is inside a call (BUSY) it aborts
 *       that call and waits until the state is IDLE again, then closes: the release store at the
 *       call's exit happens-before the closer's compare-and-set that reads it, so nothing the call
 *       touched is freed under it. A call that enters after the request (its compare-and-set
 *       comes after the closer's volatile write in the synchronisation order) sees
 *       {@code closeRequested}, leaves at once and throws, so a caller in a tight loop cannot
 *       starve the close. A close from inside a call on the calling thread itself (a callback)
 *       cannot wait for its own exit: it moves BUSY -&gt; CLOSE_PENDING, and that thread releases on
 *       its way out (the exit reads {@code closeRequested} first). While the JVM shuts down, a close
 *       aborts the running call and returns without waiting (nothing would be freed then). Mappings are
 *       released only when no call can touch them, never while the JVM shuts down (a shutdown
 *       hook runs while the main thread may still poll a flag; the process is exiting anyway),
 *       and not while a {@code SharedBuffer} view handed to the user may still be read (the
 *       garbage collector unmaps it once unreachable).</li>
 * </ul>
 */
public final class Engine implements Waiter.FailureProbe, AutoCloseable {
    /**
     * The program's other communication library's progress ({@link Bootstrap#progress}), or null;
     * the waits past their spin budget call it ({@link #outsideProgress}).
     */
    private final Runnable outside;
    private static final Logger LOG = LoggerFactory.getLogger(Engine.class);

    final int rank;
    final int size;
    final Topology topo;
    final int nodeIndex;
    final int socketIndexInNode;
    final int socketCount;
    final boolean socketLeader;
    final boolean nodeLeader;
    final int localIndex;
    /** Phase 1/5 level: this rank's socket. */
    final ShmLevel sock;
    /** Phase 2/4 level: the node's socket leaders (one member when the node has one socket); also holds progress lines. */
    final ShmLevel node;
    /** Phase 3, on node leaders of multi-node jobs; null otherwise. */
    final InterNodeStep inter;
    final IntraNodeTuning tuning;
    /** The tuning rules resolved for this job's shape (nodes, max ranks per node): consulted on every call. */
    final CompiledTable table;
    private final Config cfg;
    private final long[] callsBy = new long[IntraNodeAlgorithm.values().length];
    private final TreeAlgorithm tree = new TreeAlgorithm(this);
    private final TiledAlgorithm tiled = new TiledAlgorithm(this);
    private final DirectReduceAlgorithm direct = new DirectReduceAlgorithm(this);
    /** The split cma Allreduce, and the split step of the cma_split Reduce ({@link DirectReduceAlgorithm}). */
    final CmaSplitAlgorithm cmaSplit = new CmaSplitAlgorithm(this);
    private final PipelinedAlgorithm pipelined = new PipelinedAlgorithm(this);
    /** Streaming or ordinary stores for what the long algorithms' readers read next (this rank's own choice). */
    final StoreChoice stores;
    /** Whether {@link DirectReduceAlgorithm} and {@link PipelinedAlgorithm} apply: one node of one socket (the same on every rank). */
    private final boolean directApplies;
    /** The heating's forced table segment for long calls, -1 otherwise ({@link #heatPath}). */
    private int heatSegment = -1;
    /** The heating's forced chunk for long calls (at most the table's), 0 otherwise ({@link #heatPath}). */
    private int heatChunk;
    /** Ranks outnumber the CPUs of this rank's kernel (see the constructor): waits do not spin, and the heating runs the long paths. */
    private final boolean oversubscribed;
    private final ExchangeAlgorithm exchange;
    final Waiter waiter;
    final CallStatus st = new CallStatus();
    public final Payload src = new Payload();
    public final Payload dst = new Payload();
    private final int chunkBytes;
    /**
     * Chunks of a long tiled call in flight between nodes ({@code sharp4j.internode.pipeline}), the
     * same on every rank: 1 unless there are several nodes and every node has one socket (the flat
     * tiled path; see {@link TiledAlgorithm}).
     */
    int interUnit = 1;
    /**
     * Whether a long Reduce's first phase-3 part is cut down to its head ({@link #interFirst}): on
     * the host path, not with an offload (SHARP reduces in the network either way). The same on
     * every rank of the job.
     */
    private boolean interHeadSplit;
    /** Bytes of a long Reduce's first phase-3 part on the host path ({@link #interFirst}): a line. */
    static final int REDUCE_HEAD_BYTES = 64;
    private final long[] pids;
    /**
     * Why the members of this rank's socket do not read each other's memory ({@link PeerReads}), or
     * null when they do: then the cma algorithms run as such, not as the direct or pipelined ones.
     * Decided at creation, the same on every member (the reason may differ).
     */
    private final String peerReadsWhyNot;
    /**
     * Why the built-in table's cma and cma_split Reduces run as the direct Reduce here, and its
     * cma_split Allreduces of more than two members as the pipelined one: no peer reads
     * ({@link #peerReadsWhyNot}), or reading another process costs too much on this machine
     * ({@link PeerReads#costGate}); null where they run. A table file's or override's cma is followed
     * wherever the ranks can read each other. The same on every member of the socket.
     */
    private final String builtInCmaWhyNot;
    /**
     * Why the built-in table's cma_split Allreduce of two members runs as the pipelined one here: as
     * {@link #builtInCmaWhyNot}, with the higher bound {@link PeerReads#pairSplitGate} sets. The same
     * on every member of the socket.
     */
    private final String builtInPairSplitWhyNot;
    private final boolean[] onMyHost;
    private final int[] localRanks;
    private final long myPid;
    private final String interName;
    private final List<Segment> segments = new ArrayList<>();
    private long seq;
    /** This rank's progress line in the node segment (see ShmLevel's layout). */
    private int progressLine;
    /**
     * Per collective (by ordinal): the largest byte count up to which the table's first segment
     * holds and names the exchange (-1: none), so that small calls skip the lookup; and that
     * segment's index. Set once the table is compiled; the same on every rank.
     */
    private final long[] exchangeUpTo = new long[Collective.values().length];
    private final int[] exchangeSegment = new int[Collective.values().length];
    /** Set by the closing thread before the inter-node step's close (its meeting waits through {@link #check}), read there for messages. */
    private boolean closing;
    /**
     * One socket on one node and no inter-node step: the socket is the only level with data, and
     * a Reduce's non-root members other than member 0 return as soon as they published (see
     * {@link ExchangeAlgorithm}, "Who returns when"). Set once in the constructor.
     */
    boolean flat;
    /** Every member of the socket arrived at this sequence number or later, as this rank observed (flat only). */
    private long knownAll;
    /** The current call returned without observing every member's arrival (set by the algorithm). */
    private boolean wentAhead;
    /** What the current call's algorithm knows of every member's arrival when it is less than its last seq (-1: all of it). */
    private long arrivedKnownAt = -1;
    /**
     * Calls this rank returned from before their verdict was known, oldest first: a ring of SETS
     * entries, pendingHead to pendingHead + pendingCount - 1 (mod SETS); flat only. Calls enter in
     * increasing order (wentAhead) and leave oldest first once member 0 finished them (checkPending:
     * its verdicts are final in call order), so a call settles in O(1) however many sets there are,
     * instead of a scan of all SETS entries twice per call for a leaf that runs ahead. At most SETS
     * are pending: the reuse gate keeps a leaf within SETS - 1 calls of the slowest member.
     */
    private final long[] pending = new long[ShmLevel.SETS];
    private int pendingHead;
    private int pendingCount;
    /** Scratch for reading a recorded verdict (slow path). */
    private final CallStatus earlierStatus = new CallStatus();
    private Collective current = Collective.BARRIER;
    /** The failure that made this communicator unusable (written by the calling thread or an aborting one). */
    private volatile RuntimeException broken;
    /** Why {@link #abort} was called (null if it was not): ends this rank's own waits at their next probe. */
    private volatile String abortReason;

    // Progress line fields (see ShmLevel's layout): written on the slow path only.
    private static final int P_PID = 0;
    private static final int P_SEQ = 8;
    private static final int P_WAITS_FOR = 16;
    private static final int P_HEARTBEAT = 24;
    /** Last sequence number whose call this rank finished (member 0 of a flat level only; release store). */
    private static final int P_DONE = 32;

    private static final int IDLE = 0;
    private static final int BUSY = 1;
    private static final int CLOSE_PENDING = 2;
    private static final int CLOSED = 3;
    private static final VarHandle STATE;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(Engine.class, "state", int.class);
            INSIDE = MethodHandles.lookup().findVarHandle(Lease.class, "inside", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /**
     * A thread's permission to enter without the compare-and-set (class comment, "Who may touch what"), and
     * whether it is inside a call: {@code inside} is written by that thread only (opaque 1 at entry, release
     * 0 at exit), and read by others with acquire after a {@link ProcessFence}.
     */
    private static final class Lease {
        final Thread thread;
        /** {@link Engine#leasedEntries} when granted: how long a lease served, when it is revoked. */
        final long grantedAt;
        @SuppressWarnings("unused") // through INSIDE
        private int inside;

        Lease(Thread thread, long grantedAt) {
            this.thread = thread;
            this.grantedAt = grantedAt;
        }
    }

    private static final VarHandle INSIDE;
    /**
     * The lease of the last thread that entered through the compare-and-set, or null (always null where
     * {@link ProcessFence#AVAILABLE} is false). Written by that thread under BUSY, when no other holder
     * is inside; read by every entry.
     */
    private volatile Lease lease;
    /** A close from inside a call on its lease, on its own thread: that call's exit releases. That thread only. */
    private boolean releaseAtExit;
    /**
     * Calls entered on a lease ({@link #leasedEntries()}, {@link Lease#grantedAt}); written by the leased thread inside
     * its call, read by slow entries under BUSY (after the holder's exit: its release of {@code inside}, or the state's).
     */
    private long leasedEntries;

    /** IDLE, BUSY (a thread is inside a call), CLOSE_PENDING (closed from inside a call by its own thread), CLOSED. */
    @SuppressWarnings("unused") // through STATE
    private volatile int state;
    /** Set once by {@link #close} before it looks at the state; read by every entry and exit (a plain load on x86). */
    private volatile boolean closeRequested;
    /**
     * The thread inside a call, or the last one that was (diagnostics only: written after the
     * compare-and-set that admits it, and only when it changes; read only while the state is BUSY).
     */
    private Thread busyThread;
    /** A SharedBuffer view went to the user: the mapping may be read after close, so only the GC may unmap it. Written under {@link #teardown}. */
    private boolean viewsOut;
    /**
     * Orders {@link #abort} (any thread) against {@link #release} (the closing thread): an abort
     * writes the abort words in the segments and drives the inter-node step, and release unmaps
     * the segments (JDK 17: at once, with {@code invokeCleaner}) and closes the step. Without it, a
     * watchdog's abort that was preempted after recording its reason could resume after its own
     * rank had seen the reason, failed the call and closed, and compare-and-set a word in unmapped
     * memory: a SIGSEGV of the whole JVM. Held by abort for its whole relay (microseconds; at most the
     * host path's 200 ms abort flush), by {@link #sharedView} to record {@link #viewsOut}, and by
     * release only to set {@link #released}; never on a call's path.
     */
    private final Object teardown = new Object();
    /** Guarded by {@link #teardown}: release has begun, so an abort has nothing left to tell and must touch nothing. */
    private boolean released;
    /** Tests only: runs inside {@link #abort} after the reason is recorded and before the peers are told (a preempted watchdog). */
    static volatile Runnable abortPauseForTest;

    /** The largest slot {@link #autoSlotBytes} picks. */
    static final int AUTO_SLOT_MAX_BYTES = 512 * 1024;
    /** What {@link #autoSlotBytes} lets one socket's segment take at most (and at most a quarter of the file system it lives on). */
    static final long AUTO_SLOT_SEGMENT_BUDGET = 32L << 20;

    /**
     * The slot (and chunk) of {@code sharp4j.slot.bytes=auto}: on one socket of one node (where the
     * pipelined and the direct algorithms run, and there is no phase 3) the largest power of two up
     * to {@value #AUTO_SLOT_MAX_BYTES} whose socket segment, {@code SLOT_SETS (members + 1) slot} plus the exchange areas and
     * the shared buffers, stays within {@value #AUTO_SLOT_SEGMENT_BUDGET} bytes and a quarter of
     * the segments' file system (a container's 64 MiB {@code /dev/shm} still fits; the smallest size
     * any rank read, exchanged in the engine's first allgather), and no larger than the shared
     * buffer; elsewhere {@link Config#DEFAULT_SLOT_BYTES}. Every input is the same on every rank
     * (the topology, the job-wide settings, that agreed size), so every rank picks the same slot.
     *
     * <p>Why: each chunk of a long call costs its members a synchronisation (an arrival, a tile
     * flag, a release); fewer, larger chunks pay it less often. OSU ports {@code --compare mpi}, 64 KiB-16 MiB,
     * slots 64, 128, 256 and 512 KiB alternating in 3 rounds, P50 with a 512 KiB slot over the
     * same with 64 KiB in the same round: 2 ranks Reduce 0.73-0.98 from 512 KiB (Allreduce
     * 0.65-0.83 in two rounds, 0.97-1.13 in a third), 4 ranks on 2 cores Reduce 0.37-1.0 and
     * Allreduce 0.33-0.86 from 128 KiB; 64 KiB (one chunk either way) alike. Not across sockets or
     * nodes: there the slot is also phase 3's part (which must be the same on every node, and
     * whose pipelining wants parts) and the hierarchical tiled algorithm's chunk, not measured larger.
     */
    static int autoSlotBytes(int nodes, int socketsOfNode0, int members, int sharedBytes, long fsTotalBytes) {
        if (nodes != 1 || socketsOfNode0 != 1) {
            return Config.DEFAULT_SLOT_BYTES;
        }
        long budget = Math.min(AUTO_SLOT_SEGMENT_BUDGET, fsTotalBytes / 4);
        for (int s = AUTO_SLOT_MAX_BYTES; s > Config.DEFAULT_SLOT_BYTES; s >>= 1) {
            if (s <= sharedBytes && ShmLevel.size(members, s, sharedBytes, 0) <= budget) {
                return s;
            }
        }
        return Config.DEFAULT_SLOT_BYTES;
    }

    /** The size of the file system holding the segments (0 if it cannot be read: then the default slot). */
    private static long shmTotalBytes(Path dir) {
        try {
            return java.nio.file.Files.getFileStore(dir).getTotalSpace();
        } catch (java.io.IOException | RuntimeException e) {
            return 0;
        }
    }

    /** Builds the hierarchy; collective over the bootstrap (every rank must call it). */
    public static Engine create(Bootstrap boot, Config cfg) {
        return new Engine(boot, cfg);
    }

    private Engine(Bootstrap boot, Config cfg) {
        this.outside = boot.progress();
        this.rank = boot.rank();
        this.size = boot.size();
        CpuTopology cpu = CpuTopology.detect();
        String realHost = realHostname();
        String host = cfg.hostname() != null ? cfg.hostname() : realHost;
        this.myPid = ProcessHandle.current().pid();
        // One allgather carries the topology, the real host and the job-wide settings.
        String settings = String.join("\u0001", cfg.jobWideSettings());
        // ... and, for sharp4j.slot.bytes=auto, the size of the file system the segments live on (the pick takes
        // the smallest any rank saw, so that every rank picks the same slot: autoSlotBytes)
        long fsTotal = cfg.slotAuto() ? shmTotalBytes(cfg.shmDir()) : 0;
        // ... and the kernel this rank runs on, to count the ranks that share its CPUs (see oversubscribed below)
        String kernel = kernelId(realHost);
        // ... and, for the cma Reduce, the word of its memory this rank offers to be read ("-": it cannot take part)
        String cmaNot = PeerReads.prepare(cfg.cma());
        String cmaOffer = cmaNot == null ? PeerReads.offer(cfg.cmaCostGate()) : "-";
        RankInfo mine = new RankInfo(host + "\u0000" + realHost + "\u0000" + kernel + "\u0000" + fsTotal + "\u0000" + cmaOffer
                + "\u0000" + settings, cpu.socket, cpu.numaNode, cpu.socketsOnHost, myPid);
        byte[][] all = boot.allgather(mine.encode());
        RankInfo[] infos = new RankInfo[size];
        String[] realHosts = new String[size];
        String[] kernels = new String[size];
        String[] settingsOf = new String[size];
        String[] cmaOffers = new String[size];
        long fsTotalMin = Long.MAX_VALUE;
        for (int r = 0; r < size; r++) {
            RankInfo ri = RankInfo.decode(all[r]);
            String[] hh = ri.hostname.split("\u0000", 6);
            realHosts[r] = hh[1];
            kernels[r] = hh[2];
            fsTotalMin = Math.min(fsTotalMin, Long.parseLong(hh[3]));
            cmaOffers[r] = hh[4];
            settingsOf[r] = hh[5];
            infos[r] = new RankInfo(hh[0], ri.socket, ri.numaNode, ri.socketsOnHost, ri.pid);
        }
        checkSameSettings(settingsOf); // before any shared state: every rank throws the same error
        this.topo = Topology.compute(infos, cfg.simulatedNodes(), cfg.simulatedSockets(), cfg.groupByNuma());
        // sharp4j.slot.bytes=auto: the slot for this shape, from job-wide inputs only (every rank picks the same)
        cfg = cfg.withResolvedSlot(autoSlotBytes(topo.nodeCount(), topo.socketCount(0), size, cfg.sharedBytes(), fsTotalMin));
        this.cfg = cfg;
        this.stores = new StoreChoice(cfg.stores());
        this.table = cfg.tuningTable().compile(topo.nodeCount(), topo.maxRanksPerNode());
        this.tuning = table.summary();
        this.nodeIndex = topo.nodeOf(rank);
        this.socketIndexInNode = topo.socketOf(rank);
        this.socketCount = topo.socketCount(nodeIndex);
        this.directApplies = topo.nodeCount() == 1 && socketCount == 1;
        for (Collective c : Collective.values()) {
            // the lookup's answer for [0, INLINE_BYTES] when one segment covers it and names the exchange
            int i0 = table.intraIndex(c, 0);
            boolean one = table.intraIndex(c, ShmLevel.INLINE_BYTES) == i0;
            exchangeUpTo[c.ordinal()] = one && table.intraAlgorithmAt(c, i0) == IntraNodeAlgorithm.EXCHANGE ? ShmLevel.INLINE_BYTES : -1;
            exchangeSegment[c.ordinal()] = i0;
        }
        int[] sockRanks = topo.socketRanks(nodeIndex, socketIndexInNode);
        int sockMe = topo.socketIndex(rank);
        this.socketLeader = sockMe == 0;
        this.localRanks = topo.nodeRanks(nodeIndex);
        this.localIndex = topo.localIndex(rank);
        this.nodeLeader = localIndex == 0;
        this.pids = new long[size];
        this.onMyHost = new boolean[size];
        int onKernel = 0;
        for (int r = 0; r < size; r++) {
            pids[r] = infos[r].pid;
            onMyHost[r] = realHosts[r].equals(realHost);
            onKernel += kernels[r].equals(kernel) ? 1 : 0;
        }
        // Ranks outnumber the CPUs they share: do not spin, they share cores (bound or not): yield at
        // once. Counted by kernel, not by host name: containers or network namespaces with host names
        // of their own on one machine (several "hosts" of a test rig, pods of one node) share its
        // CPUs, which is what onlineCpus counts (the kernel's, not a container's quota).
        this.oversubscribed = onKernel > org.sharp4j.topology.CpuTopology.onlineCpus();
        this.waiter = new Waiter(WaitPolicy.parse(cfg.waitSpec(), WaitPolicy.defaults(oversubscribed, cfg.timeoutNanos())), this);
        this.chunkBytes = cfg.slotBytes();
        this.exchange = new ExchangeAlgorithm(this, chunkBytes, Math.max(topo.maxRanksPerNode(), 2));
        // This rank's part of the peer-reads decision: it can read every other member of its socket (PeerReads)
        String cmaMine = cmaNot;
        if (cmaMine == null && sockRanks.length > 1 && directApplies) {
            cmaMine = probePeerReads(sockRanks, cmaOffers);
        } else if (cmaMine == null) {
            cmaMine = directApplies ? "one rank on the socket" : "several sockets or nodes (the cma Reduce runs on one socket of one node)";
        }

        // Segment files: one per socket (created and first-touched by its leader), one per node.
        // (A path is named here; nothing exists until the leaders create them below.)
        Path dir = cfg.shmDir();
        String base = "sharp4j-" + boot.jobId() + "-n" + nodeIndex;
        Path sockPath = dir.resolve(base + "-s" + socketIndexInNode);
        Path nodePath = dir.resolve(base);
        int slot = cfg.slotBytes();
        int shared = cfg.sharedBytes();
        int nodeSlot = socketCount > 1 ? slot : 0;
        int[] sockLeaders = new int[socketCount];
        for (int s = 0; s < socketCount; s++) {
            sockLeaders[s] = topo.socketLeader(nodeIndex, s);
        }
        Segment sockSeg = null;
        Segment nodeSeg = null;
        // Every local rank registers both names for unlinking at exit while they are linked, so a
        // rank that exits (or gets SIGTERM) in this window removes them even if the creator was
        // killed with -9; after the barrier below, every rank has mapped them and they are unlinked.
        CleanupOnExit.register(sockPath);
        CleanupOnExit.register(nodePath);
        InterNodeSteps.Choice phase3 = null;
        try {
            try {
                try {
                    if (socketLeader) {
                        sockSeg = Segment.create(sockPath, ShmLevel.size(sockRanks.length, slot, shared, 0));
                        segments.add(sockSeg);
                    }
                    if (nodeLeader) {
                        nodeSeg = Segment.create(nodePath, ShmLevel.size(socketCount, nodeSlot, 0, localRanks.length));
                        segments.add(nodeSeg);
                    }
                } catch (RuntimeException e) {
                    agree(boot, e, "creating the shared-memory segments", false); // tells every rank, then throws here too
                }
                ShmLevel sockLvl = null;
                ShmLevel nodeLvl = null;
                if (sockSeg != null) {
                    sockLvl = new ShmLevel(sockSeg, sockRanks.length, sockMe, sockRanks, tuning.treeRadix(), slot, shared, 0);
                    sockLvl.writeHeader();
                }
                if (nodeSeg != null) {
                    nodeLvl = new ShmLevel(nodeSeg, socketCount, socketLeader ? socketIndexInNode : -1, sockLeaders,
                            tuning.treeRadix(), nodeSlot, 0, localRanks.length);
                    nodeLvl.writeHeader();
                }
                pauseForFaultInjection(); // the window in which the names exist (tests kill a rank here)
                // every segment exists, or every rank throws; and whether every member of each socket can read the others
                byte[] canRead = agree(boot, null, "creating the shared-memory segments", cmaMine == null);
                String cmaWhyNot = cmaMine;
                for (int r : sockRanks) {
                    if (cmaWhyNot == null && canRead[r] == 0) {
                        cmaWhyNot = "rank " + r + " cannot read every other rank of its socket (its debug log says why)";
                    }
                }
                this.peerReadsWhyNot = cmaWhyNot;
                this.builtInCmaWhyNot = cmaWhyNot != null ? cmaWhyNot : PeerReads.costGate(sockRanks, cmaOffers);
                this.builtInPairSplitWhyNot = cmaWhyNot != null ? cmaWhyNot : PeerReads.pairSplitGate(sockRanks, cmaOffers);
                if (cmaMine != null) {
                    LOG.debug("rank {}: no peer reads (cma and cma_split run as direct or pipelined): {}", rank, cmaMine);
                } else {
                    LOG.debug("rank {}: peer reads; its read cost (PeerReads.offer: address:value:cost) {}; the built-in cma algorithms: {};"
                            + " the built-in split Allreduce of two ranks: {}", rank, cmaOffer, builtInCmaWhyNot == null ? "yes" : builtInCmaWhyNot,
                            builtInPairSplitWhyNot == null ? "yes" : builtInPairSplitWhyNot);
                }
                if (sockSeg == null) {
                    sockSeg = Segment.open(sockPath, ShmLevel.size(sockRanks.length, slot, shared, 0));
                    segments.add(sockSeg);
                    sockLvl = new ShmLevel(sockSeg, sockRanks.length, sockMe, sockRanks, tuning.treeRadix(), slot, shared, 0);
                    sockLvl.checkHeader();
                }
                if (nodeSeg == null) {
                    nodeSeg = Segment.open(nodePath, ShmLevel.size(socketCount, nodeSlot, 0, localRanks.length));
                    segments.add(nodeSeg);
                    nodeLvl = new ShmLevel(nodeSeg, socketCount, socketLeader ? socketIndexInNode : -1, sockLeaders,
                            tuning.treeRadix(), nodeSlot, 0, localRanks.length);
                    nodeLvl.checkHeader();
                }
                this.sock = sockLvl;
                this.node = nodeLvl;
                this.progressLine = node.progress(localIndex);
                Flags.put(node.buf, node.progress(localIndex) + P_PID, myPid);
                Flags.put(node.buf, node.progress(localIndex) + P_WAITS_FOR, -1);
                Flags.volatileSet(node.buf, node.progress(localIndex) + P_SEQ, 0);
                boot.barrier(); // every local rank mapped its segments
            } finally {
                // Unlinked as soon as every local rank has mapped them (or on failure): from here a
                // kill -9 leaks nothing. Idempotent, so every rank does it.
                Segment.unlinkQuietly(sockPath);
                Segment.unlinkQuietly(nodePath);
                CleanupOnExit.unregister(sockPath);
                CleanupOnExit.unregister(nodePath);
            }
            phase3 = InterNodeSteps.create(boot, cfg, topo, this);
            this.inter = phase3.step;
            this.interName = phase3.description;
            this.flat = socketCount == 1 && inter == null && topo.nodeCount() == 1;
            // Units need every node on the flat tiled path; an offload (SHARP) pipelines a slot into
            // its own operations and keeps one phase-3 call per slot (the choice is the same on every rank).
            boolean allFlat = true;
            for (int nd = 0; nd < topo.nodeCount(); nd++) {
                allFlat &= topo.socketCount(nd) == 1;
            }
            this.interUnit = topo.nodeCount() > 1 && allFlat && !phase3.offloaded ? cfg.interPipeline() : 1;
            this.interHeadSplit = topo.nodeCount() > 1 && !phase3.offloaded;
            if (cfg.warmupRounds() > 0) {
                Payload.loadBufferClasses(); // before anything is compiled against fewer of them
                waiter.heating(true); // yield to this JVM's compiler threads rather than spin against them
                try {
                    warmUp(cfg.warmupRounds());
                } finally {
                    waiter.heating(false);
                }
                heatPending = true; // the Communicator over this engine heats through its public methods, then calls heated()
            }
        } catch (RuntimeException | Error e) {
            // Nothing built here may outlive a failed creation: the UCX worker, the SHARP context, the mappings.
            try {
                if (phase3 != null && phase3.step != null) {
                    phase3.step.close();
                }
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            for (Segment sg : segments) {
                sg.close();
            }
            segments.clear();
            throw e;
        }
        java.util.Arrays.fill(callsBy, 0);
        exchange.readAheads = 0;
        LIVE.add(this);
        if (rank == 0) {
            LOG.info("sharp4j: {}; intra-node {}; inter-node {}; slot {} B, shared buffer {} B; wait {}", topo, tuning,
                    interName, slot, shared, waiter.policy());
        }
    }

    /**
     * Runs every path of the hot code a few times while the JIT is still profiling (collective:
     * every rank does the same calls). HotSpot's C2 compiles branches it has never seen taken as
     * traps; the first call that takes one (a message that outgrows the 40-byte inline area, a
     * first Reduce, a first direct buffer) would then throw the compiled collective away and run
     * it interpreted for milliseconds while it recompiles. Measured: a 64 B Allreduce right after
     * 32 B ones averaged 19.5 us instead of 0.2 us over 3,000 calls. With every branch in the
     * profile, C2 compiles them all and changing message sizes costs nothing.
     * {@code sharp4j.warmup=0} turns it off.
     */
    private void warmUp(int rounds) {
        // One size per segment of the table (each algorithm, each radix), the first past the inline
        // area, and one tiled call of two chunks: every path the calls of this job can take.
        long[] starts = table.intraStarts(Collective.ALLREDUCE);
        int limit = Math.max(1, Math.min(sock.sharedBytes, 2 * chunkBytes + 8) / 8);
        int[] counts = new int[starts.length + 2];
        int n = 0;
        for (long st : starts) {
            counts[n++] = (int) Math.min(limit, Math.max(1, (st + 7) / 8));
        }
        counts[n++] = ShmLevel.INLINE_BYTES / 8 + 1;
        counts[n++] = Math.min(limit, chunkBytes / 8 + 1);
        int big = 1;
        for (int c : counts) {
            big = Math.max(big, c);
        }
        int small = Math.min(big, Math.max(ShmLevel.INLINE_BYTES / 8 + 1, (int) Math.min(limit, starts.length > 1 ? (starts[1] + 7) / 8 : 1)));
        double[] d = new double[big];
        double[] r = new double[big];
        java.nio.ByteBuffer bd = java.nio.ByteBuffer.allocateDirect(big * 8).order(java.nio.ByteOrder.nativeOrder());
        java.nio.ByteBuffer br = java.nio.ByteBuffer.allocateDirect(big * 8).order(java.nio.ByteOrder.nativeOrder());
        // Every type at every size, long calls too: a long FLOAT call that only DOUBLE ones had
        // profiled threw the compiled staged kernels away at a program's first long call (seen:
        // the first size of an osu_reduce run 3-4x slow while foldFloatSum and stagedFloat recompiled).
        Object[] arrays = {new int[big], new long[big], new float[big], d};
        Object[] outs = {new int[big], new long[big], new float[big], r};
        for (int i = 0; i < rounds; i++) {
            int root = i % size;
            for (int k = 0; k < n; k++) {
                int count = counts[k];
                boolean large = count > small;
                if (large && i % 4 != 0) {
                    continue; // long calls cost time; every fourth round profiles them enough
                }
                for (int a = 0; a < arrays.length; a++) {
                    DataType t = DataType.ofArray(arrays[a]);
                    src.array(arrays[a], 0);
                    dst.array(outs[a], 0);
                    run(Collective.ALLREDUCE, t, Op.SUM, 0, count);
                    src.array(arrays[a], 0);
                    dst.array(outs[a], 0);
                    run(Collective.REDUCE, t, Op.MAX, root, count);
                }
                src.buffer(bd, 0);
                dst.buffer(br, 0);
                run(Collective.ALLREDUCE, DataType.DOUBLE, Op.SUM, 0, count);
                src.buffer(bd, 0);
                dst.buffer(br, 0);
                run(Collective.REDUCE, DataType.FLOAT, Op.SUM, root, count); // direct buffers fold in place (the OSU ports' form)
                if (count * 8L <= sock.sharedBytes) {
                    useShared(src);
                    useShared(dst);
                    run(Collective.ALLREDUCE, DataType.DOUBLE, Op.SUM, 0, count);
                }
            }
            src.none();
            dst.none();
            run(Collective.BARRIER, null, null, 0, 0);
        }
        src.none();
        dst.none();
        java.util.Arrays.fill(r, 0);
    }


    /** Whether a communicator of this JVM already heated the hot path (the JIT's compiled code is JVM-wide). */
    private static volatile boolean heatedInThisJvm;
    /** Whether the communicator over this engine still has to heat the hot path (warm-up on, not yet done). */
    private boolean heatPending;
    /** Small calls per collective this communicator's heating ran (0 when no rank needed it). */
    private int heatCalls;
    /** Long calls per collective this communicator's heating ran (0 when no rank needed it). */
    private int heatLongCalls;

    /**
     * Why the cma Reduce runs as the direct one on this communicator (the socket's ranks do not read
     * each other's memory, see {@link PeerReads}), or null when it runs as such.
     */
    public String peerReadsWhyNot() {
        return peerReadsWhyNot;
    }

    /**
     * Why the built-in table's cma and cma_split Reduces run as direct here, and its cma_split Allreduces of
     * more than two members as pipelined ({@link PeerReads#costGate}), or null.
     */
    public String builtInCmaWhyNot() {
        return builtInCmaWhyNot;
    }

    /** Why the built-in table's cma_split Allreduce of two members runs as pipelined here ({@link PeerReads#pairSplitGate}), or null. */
    public String builtInPairSplitWhyNot() {
        return builtInPairSplitWhyNot;
    }

    /** The direct Reduce's folds on this rank (a root) that took more pieces than their step's: its members were ahead. */
    public long directWideFolds() {
        return direct.wideFolds;
    }

    /** Reduces and Allreduces this rank ran split (the table's {@code cma_split} with every buffer in its process). */
    public long cmaSplitCalls() {
        return cmaSplit.splitCalls;
    }

    /**
     * Copies {@code bytes} of socket member {@code m}'s memory at {@code remote} into {@code dst} at
     * {@code dOff} ({@link PeerReads}); a failure gives up on the job, blaming {@code m}'s rank when
     * its process is gone and this rank otherwise, and throws the error naming it.
     */
    void readPeer(int m, long remote, java.nio.ByteBuffer dst, int dOff, int bytes) {
        int r = sock.ranks[m];
        long errno = PeerReads.read(pids[r], remote, dst, dOff, bytes);
        if (errno != 0) {
            peerAccessFailed(r, errno, "reading rank " + r + "'s input", remote, bytes);
        }
    }

    /**
     * Copies {@code bytes} of {@code src} at {@code sOff} to socket member {@code m}'s memory at
     * {@code remote} (the split cma Reduce: a member's part of the result into its root's output);
     * a failure as in {@link #readPeer}.
     */
    void writePeer(int m, long remote, java.nio.ByteBuffer src, int sOff, int bytes) {
        int r = sock.ranks[m];
        long errno = PeerReads.write(pids[r], remote, src, sOff, bytes);
        if (errno != 0) {
            peerAccessFailed(r, errno, "writing rank " + r + "'s output", remote, bytes);
        }
    }

    /** A read or write of rank {@code r}'s memory failed with {@code errno}: gives up on the job and throws, see {@link #readPeer}. */
    private void peerAccessFailed(int r, long errno, String doing, long remote, int bytes) {
        String what = current.name().toLowerCase() + " #" + seq;
        if (errno == PeerReads.ESRCH || !ProcessHandle.of(pids[r]).map(ProcessHandle::isAlive).orElse(false)) {
            giveUp(r);
            throw new PeerFailureException("rank " + rank + ": rank " + r + " died (process " + pids[r] + " gone) during " + what,
                    new int[] {r});
        }
        giveUp(rank);
        throw new Sharp4jException("rank " + rank + ": " + doing + " (" + bytes + " bytes at 0x" + Long.toHexString(remote)
                + " in process " + pids[r] + ") during " + what + " failed: " + PeerReads.errnoName(errno));
    }

    /** Whether the ranks on this rank's kernel outnumber its CPUs (they then share cores; local to the node). */
    public boolean oversubscribed() {
        return oversubscribed;
    }

    /**
     * Whether the communicator over this engine still has to heat the hot path: warm-up is on
     * ({@code sharp4j.warmup} rounds above 0) and it has not been done. The heating itself is
     * {@code Communicator}'s, through its public methods, so that their code is compiled too.
     */
    public boolean heatPending() {
        return heatPending;
    }

    /** Whether a communicator of this JVM has heated the hot path already. */
    public static boolean heatedInThisJvm() {
        return heatedInThisJvm;
    }

    /**
     * The heating's calls on the long-message paths of collective {@code c} in this job: one per
     * distinct path above {@code above} bytes, where a path is the intra-node algorithm this engine
     * runs ({@link #algorithmAt}), whether the call spans more than one chunk, and, across nodes,
     * the inter-node algorithm and radix of the table; for the communicator's heating, which runs
     * each so that C2 compiles these paths before the program's first long call. Each entry packs a
     * message size ({@link #heatPathBytes}), and where the call must take another table segment
     * than its size's or a shorter chunk, those ({@link #heatPathSegment}, {@link #heatPathChunk};
     * set for the call by {@link #heatPath}).
     *
     * <p>Candidates are the powers of two from 8 KiB to twice the chunk and twice the chunk plus a
     * line (three chunks, the last a short one), each taking its size's segment, and across nodes
     * the powers of two above those up to {@value #HEAT_INTER_MAX_BYTES}, where the inter-node table
     * (keyed by the call's size, as {@code HostStep} reads it) changes its algorithm or radix (the
     * key took the inter-node algorithm at the chunk's size before, and the 2-node SRA from 512 KiB
     * was never heated), and the first size whose later part is a whole one ({@link #pathKey}) if
     * within that bound. A segment of the table that begins above those (the 4-rank pipelined Reduce from 8 MiB) is heated with its
     * segment forced: without it C2 compiled the path's own branches, from an Allreduce profile or
     * none, during the program's first 100-200 such calls (4 ranks on 2 CPUs: calls of 30-80 ms
     * against a median of 7-10). On one node a call of several chunks runs {@value #HEAT_CHUNKS}
     * chunks of at most {@value #HEAT_CHUNK_BYTES} bytes and a line, its segment the one of its
     * size at the real chunk: the pipelined algorithm's steps from chunk {@code SLOT_SETS} on (a set
     * reused within the call) are taken only from the fifth chunk, and heated with three chunks
     * they were compiled as a trap that a program's first call of five chunks took (LogCompilation:
     * unstable_if in {@code PipelinedAlgorithm.run}); five chunks of the slot (512 KiB) would cost
     * each heating call 2.5 MiB. Across nodes the calls keep the slot (64 KiB there).
     *
     * <p>Local: ranks of different nodes may see different paths (sockets per node), so the heating
     * takes rank 0's list.
     */
    public long[] longPathBytes(Collective c, long above) {
        final boolean oneNode = topo.nodeCount() == 1;
        java.util.List<Long> cand = new java.util.ArrayList<>();
        long several = 2L * chunkBytes + 64;
        for (long b = 8192; b <= 2L * chunkBytes; b <<= 1) {
            cand.add(b);
        }
        cand.add(several);
        if (!oneNode) {
            // the inter-node table is keyed by the call's size (HostStep), not the chunk's: its segments up to
            // HEAT_INTER_MAX_BYTES by their own size (the SRA radix 2 of 2 nodes from 2 MiB)
            for (long b = Long.highestOneBit(several) * 2; b <= HEAT_INTER_MAX_BYTES; b <<= 1) {
                cand.add(b);
            }
            // and the first size whose later part is a whole one (pathKey), within the same bound: between 2 nodes
            // of one rank the recursive doubling of whole parts runs from there (320 KiB with the defaults) to the
            // SRA's 512 KiB
            long whole = (long) chunkBytes * (interUnit + 1);
            if (whole <= HEAT_INTER_MAX_BYTES) {
                cand.add(whole);
                java.util.Collections.sort(cand);
            }
        }
        final int hc = Math.min(chunkBytes, HEAT_CHUNK_BYTES);
        java.util.Set<String> seen = new java.util.HashSet<>();
        java.util.Set<Integer> hit = new java.util.HashSet<>();
        java.util.List<Long> out = new java.util.ArrayList<>();
        for (long b : cand) {
            if (b <= above) {
                continue;
            }
            int i = table.intraIndex(c, b);
            hit.add(i);
            if (seen.add(pathKey(c, i, b))) {
                out.add(oneNode && b > chunkBytes ? heatPathOf((long) HEAT_CHUNKS * hc + 64, i, hc) : b);
            }
        }
        // segments of the table from 8 KiB that no candidate fell in: those that begin above the candidates, and
        // those between two of them (direct at 256 KiB + 1 to 512 KiB - 1, between cma and cma_split): within the
        // chunk at their first size rounded up to a line, above it in several chunks with the segment forced,
        // unless a candidate already took that path
        long[] starts = table.intraStarts(c);
        for (int i = 0; i < starts.length; i++) {
            long first = (starts[i] + 63) & ~63L;
            if (starts[i] < 8192 || first <= above || hit.contains(i)) {
                continue;
            }
            if (first <= chunkBytes && starts[i] <= several) {
                if (seen.add(pathKey(c, i, first))) {
                    out.add(first);
                }
            } else if (seen.add(pathKey(c, i, several))) {
                out.add(oneNode ? heatPathOf((long) HEAT_CHUNKS * hc + 64, i, hc) : heatPathOf(several, i, 0));
            }
        }
        return out.stream().mapToLong(Long::longValue).toArray();
    }

    /**
     * Across nodes, the heating's cheap path of several chunks for collective {@code c} (0 on one
     * node): {@value #HEAT_CHUNKS} chunks of {@value #HEAT_INTER_CHUNK_BYTES} bytes and a line, in
     * the segment of a real several-chunk call (twice the chunk and a line), so that it runs the
     * same methods as a program's long calls (the chunk loops, phase 3's posted parts, their data
     * rounds, waits and the transport) with 41 KB per call instead of 128 KiB-2 MiB. The communicator's
     * heating takes it for most of its long calls; the real long paths of {@link #longPathBytes}
     * keep the rest, so their own branches (the SRA rounds, the transport's long messages) are
     * profiled too.
     *
     * <p>Why: C2 compiles a method once it has run about 5,000 times. Across nodes the heating's
     * long calls cost their bytes on the network (about 0.3 ms each on average between two hosts
     * of the netns rig), so its 1.5 s budget ran about 1,750 per collective, and C2 compiled the
     * long path's methods ({@code TiledAlgorithm.solo}, {@code HostStep.await},
     * {@code Exchange.dataRound}: {@code -XX:+PrintCompilation}) during the program's first
     * 3,000-5,000 long calls, on the CPU that mpirun binds the rank and its compiler threads to.
     * Both leaders' compilers then took their CPUs for milliseconds at a time: a 2-host 1 MiB
     * Allreduce ({@code -x 100 -i 3000}) had P90 6.4 ms and P99 10.7 ms against a P50 of 0.9 ms,
     * and 0.9 and 1.2 ms with 8,000 calls of warm-up.
     */
    public long cheapLongPath(Collective c) {
        if (topo.nodeCount() == 1 || c == Collective.BARRIER) {
            return 0;
        }
        int hc = Math.min(chunkBytes, HEAT_INTER_CHUNK_BYTES);
        return heatPathOf((long) HEAT_CHUNKS * hc + 64, table.intraIndex(c, 2L * chunkBytes + 64), hc);
    }

    /**
     * Across nodes, in the flat tiled path (0 elsewhere): the heating's call of more later parts
     * than phase 3 keeps in flight ({@link #interCap}) and lags behind ({@link #interLag}), at
     * {@link #cheapLongPath}'s chunk (forced) and segment, so that the posting loop's steady state
     * (a part retired, and one awaited for room, inside the loop) is heated too. The paths of
     * {@link #longPathBytes} have at most {@code interLag() + 1} parts there (a part is
     * {@link TiledAlgorithm#SOLO_CHUNKS} chunks: 1 MiB at 64 KiB chunks, and the 2 MiB path is the
     * 512 KiB SRA's), and C2 compiled that step of {@code TiledAlgorithm.solo} as a trap that a
     * program's first call of 4 MiB or more took (JFR on the netns rig, {@code mpiapps.Deopts}).
     * About 800 KB: the communicator's heating takes it rarely ({@code HEAT_MANY_PARTS_EVERY}).
     */
    public long manyPartsPath(Collective c) {
        if (topo.nodeCount() == 1 || interUnit <= 1 || c == Collective.BARRIER) {
            return 0;
        }
        int pc = Math.min(chunkBytes, HEAT_INTER_CHUNK_BYTES);
        long parts = Math.max(interLag(), interCap()) + 2L;
        return heatPathOf(pc * (1 + parts * TiledAlgorithm.SOLO_CHUNKS) + 64, table.intraIndex(c, 2L * chunkBytes + 64), pc);
    }

    /** The chunk of {@link #cheapLongPath}. */
    static final int HEAT_INTER_CHUNK_BYTES = 8 * 1024;

    /** The longest call the heating makes across nodes to reach an inter-node segment of the table ({@link #longPathBytes}). */
    static final long HEAT_INTER_MAX_BYTES = 2L << 20;

    /** Chunks of a several-chunk heating call on one node ({@link #longPathBytes}): one more than the slot sets. */
    static final int HEAT_CHUNKS = ShmLevel.SLOT_SETS + 1;
    /** The chunk of a several-chunk heating call on one node, at most ({@link #longPathBytes}). */
    static final int HEAT_CHUNK_BYTES = 64 * 1024;

    /**
     * What makes a long path distinct ({@link #longPathBytes}): the algorithm, several chunks or one, and across
     * nodes the inter-node step and whether a later part of the call is a whole one ({@link #interUnit} chunks:
     * its messages and folds are the longest; without it the 2-node recursive doubling below 2 MiB was heated at
     * 128 KiB only, whose later part is one chunk, and a program's 1 MiB calls, with parts of four, had P90s of
     * 2.8-4.2 ms, 2 rounds, where the build before, which heated 512 KiB as the SRA path, had 1.0-1.2).
     */
    private String pathKey(Collective c, int segment, long b) {
        IntraNodeAlgorithm a = algorithmAt(c, segment, b);
        return a + "/" + (b > chunkBytes) + (topo.nodeCount() == 1 ? ""
                : "/" + table.interAlgorithm(c, b) + table.interRadix(c, b) + "/" + (b >= (long) chunkBytes * (interUnit + 1)));
    }

    /** Where {@link #longPathBytes} keeps a forced segment (+1) and a forced chunk (log2, 0: none) above the size. */
    private static final int HEAT_SEGMENT_SHIFT = 40;
    private static final int HEAT_CHUNK_SHIFT = 56;

    private static long heatPathOf(long bytes, int segment, int chunk) {
        return bytes | (long) (segment + 1) << HEAT_SEGMENT_SHIFT
                | (chunk > 0 ? (long) Integer.numberOfTrailingZeros(chunk) << HEAT_CHUNK_SHIFT : 0);
    }

    /** The message size of a heating path of {@link #longPathBytes}. */
    public static long heatPathBytes(long path) {
        return path & ((1L << HEAT_SEGMENT_SHIFT) - 1);
    }

    /** The table segment a heating path of {@link #longPathBytes} forces, or -1 (its size's own). */
    public static int heatPathSegment(long path) {
        return (int) ((path >>> HEAT_SEGMENT_SHIFT) & 0xFFFF) - 1;
    }

    /** The chunk a heating path of {@link #longPathBytes} forces (a power of two), or 0 (the table's). */
    public static int heatPathChunk(long path) {
        int log = (int) (path >>> HEAT_CHUNK_SHIFT);
        return log == 0 ? 0 : 1 << log;
    }

    /** Whether heating path {@code path} of {@link #longPathBytes} is a call of several chunks. */
    public boolean heatPathSeveralChunks(long path) {
        return heatPathChunk(path) > 0 || heatPathBytes(path) > chunkBytes;
    }

    /**
     * The heating only: the next calls take the table segment and the chunk that heating path
     * {@code path} of {@link #longPathBytes} forces, if any (long calls only, past the exchange's
     * inline sizes), until {@code heatPath(0)}. So the heating runs an algorithm the table routes
     * only much longer calls to (the pipelined Reduce of 4 ranks from 8 MiB), and calls of more
     * chunks than it could afford at the slot's size, and C2 compiles them from the heating's
     * profile instead of against the program's first such calls. Every rank forces the same in the
     * same call (rank 0's list). Read and written by the calling thread only; nothing forced outside
     * the heating.
     */
    public void heatPath(long path) {
        this.heatSegment = heatPathSegment(path);
        this.heatChunk = heatPathChunk(path);
    }

    /**
     * Called once by the communicator after its heating ran {@code calls} calls per collective (0:
     * no rank needed it; the same number on every rank): sleeps until the JIT settled. The
     * communicator then lines the ranks up with a bootstrap barrier (they settle for different
     * times, and the program's first call must not wait out the skew).
     */
    public void heated(int calls, int longCalls, long startNanos) {
        heatPending = false;
        java.util.Arrays.fill(callsBy, 0); // the program's calls are counted from here (the counters are diagnostics)
        exchange.readAheads = 0;
        heatCalls = calls;
        heatLongCalls = longCalls;
        if (calls > 0) {
            heatedInThisJvm = true;
        }
        long t1 = System.nanoTime();
        settleJit();
        if (rank == 0) {
            LOG.debug("sharp4j: {} small and {} long hot calls took {} ms, then the JIT settled in {} ms", calls, longCalls,
                    (t1 - startNanos) / 1_000_000,
                    (System.nanoTime() - t1) / 1_000_000);
        }
    }

    /**
     * Sleeps (never spins: the compiler threads may share this rank's core) until this JVM's JIT
     * has compiled nothing for 30 ms, at most 1 s, so that the compilations the warm-up queued do
     * not run against the program's first calls. Local; the first call lines the ranks up.
     */
    private static void settleJit() {
        JitIdle.await(1_000, 30);
    }

    /**
     * A setup step's outcome agreed over the bootstrap (an allgather, which also orders the step
     * before whatever follows on every rank): if any rank failed, every rank throws the same error,
     * naming the first failing rank, instead of the others waiting in the next barrier for a rank
     * that left. {@code mine} is this rank's failure or null. The same exchange carries one flag
     * per rank ({@code flag}), returned by rank when no rank failed.
     */
    private byte[] agree(Bootstrap boot, RuntimeException mine, String step, boolean flag) {
        byte[] text = mine == null ? new byte[0] : String.valueOf(mine.getMessage()).getBytes(java.nio.charset.StandardCharsets.UTF_8);
        byte[] msg = new byte[1 + text.length];
        msg[0] = (byte) ((flag ? 1 : 0) | (mine != null ? 2 : 0)); // bit 0 the flag, bit 1 failed (the text may be empty)
        System.arraycopy(text, 0, msg, 1, text.length);
        byte[][] all = boot.allgather(msg);
        byte[] flags = new byte[all.length];
        for (int r = 0; r < all.length; r++) {
            if (all[r].length > 0 && (all[r][0] & 2) != 0) {
                String t = "rank " + r + " failed " + step + ": " + new String(all[r], 1, all[r].length - 1,
                        java.nio.charset.StandardCharsets.UTF_8);
                throw mine != null ? new Sharp4jException(t, mine) : new Sharp4jException(t);
            }
            flags[r] = (byte) (all[r].length > 0 ? all[r][0] & 1 : 0);
        }
        return flags;
    }

    /**
     * Reads the word every other member of this rank's socket offered at creation ({@link PeerReads}):
     * null when every read returned the offered value, otherwise the first failure.
     */
    private String probePeerReads(int[] sockRanks, String[] offers) {
        java.nio.ByteBuffer scratch = java.nio.ByteBuffer.allocateDirect(8);
        for (int r : sockRanks) {
            if (r == rank) {
                continue;
            }
            String o = offers[r];
            int colon = o.indexOf(':');
            if (colon < 0) {
                return "rank " + r + " does not offer its memory to be read (sharp4j.cma=off there, or no native kernels)";
            }
            int end = o.indexOf(':', colon + 1); // address:value:cost (PeerReads.offer)
            String failed = PeerReads.probe(pids[r], Long.parseLong(o.substring(0, colon)),
                    Long.parseLong(end < 0 ? o.substring(colon + 1) : o.substring(colon + 1, end)), scratch);
            if (failed != null) {
                return "rank " + rank + " reading rank " + r + ": " + failed;
            }
        }
        return null;
    }

    /**
     * Fault injection ({@code -Dsharp4j.debug.setupPause=MS}): sleeps while the segment files are
     * linked, so that a test can kill a rank inside the setup window and check that nothing leaks.
     * Read once per communicator creation; 0 (the default) costs nothing.
     */
    private static void pauseForFaultInjection() {
        long ms = Long.getLong("sharp4j.debug.setupPause", 0L);
        if (ms > 0) {
            System.out.println("sharp4j: setup window open for " + ms + " ms (sharp4j.debug.setupPause), pid "
                    + ProcessHandle.current().pid());
            System.out.flush();
            try {
                Thread.sleep(ms);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Throws, on every rank alike, if a rank's job-wide settings differ from rank 0's, naming them. */
    private static void checkSameSettings(String[] settingsOf) {
        String[] base = settingsOf[0].split("\u0001");
        for (int r = 1; r < settingsOf.length; r++) {
            if (settingsOf[r].equals(settingsOf[0])) {
                continue;
            }
            String[] mine = settingsOf[r].split("\u0001");
            List<String> diff = new ArrayList<>();
            for (int i = 0; i < Math.max(base.length, mine.length); i++) {
                String a = i < base.length ? base[i] : "?";
                String b = i < mine.length ? mine[i] : "?";
                if (!a.equals(b)) {
                    diff.add(b + " (rank 0: " + a.substring(a.indexOf('=') + 1) + ")");
                }
            }
            throw new Sharp4jException("ranks were started with different sharp4j settings, which must be the same on every"
                    + " rank: rank " + r + " has " + String.join(", ", diff));
        }
    }

    /**
     * The identity of the running kernel (its boot id, which containers and namespaces on one
     * machine share and no two machines have), or the host name where there is none (not Linux).
     */
    static String kernelId(String realHost) {
        try {
            String id = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/sys/kernel/random/boot_id")).trim();
            if (!id.isEmpty()) {
                return "boot:" + id;
            }
        } catch (java.io.IOException | RuntimeException e) {
            // not Linux: the host name stands for the machine
        }
        return "host:" + realHost;
    }

    private static String realHostname() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (UnknownHostException e) {
            String h = System.getenv("HOSTNAME");
            return h != null ? h : "localhost";
        }
    }

    public Topology topology() {
        return topo;
    }

    public int rank() {
        return rank;
    }

    public int size() {
        return size;
    }

    public IntraNodeTuning tuning() {
        return tuning;
    }

    /** The tuning table resolved for this job (what {@code sharp4j info} prints). */
    public CompiledTable table() {
        return table;
    }

    /** The configuration this communicator was built with. */
    public Config config() {
        return cfg;
    }

    /** Small calls per collective run at creation to get the hot path compiled (0: this JVM had run them). */
    public int heatCalls() {
        return heatCalls;
    }

    /** Long calls per collective this communicator's heating ran, all ranks alike (0 when no rank needed it). */
    public int heatLongCalls() {
        return heatLongCalls;
    }

    /** Tests only: make this JVM look fresh to the next communicator's heating. */
    static void forgetHeatForTests() {
        heatedInThisJvm = false;
    }

    /** Calls (since creation, warm-up excluded) that ran the intra-node algorithm {@code a}. */
    public long calls(IntraNodeAlgorithm a) {
        return callsBy[a.ordinal()];
    }

    /** Calls entered on a lease, without the compare-and-set (class comment, "The lease"; diagnostics, for tests). */
    public long leasedEntries() {
        return leasedEntries;
    }

    /** Whether calls can enter on a lease here ({@link ProcessFence#AVAILABLE}; for tests). */
    public static boolean leasesAvailable() {
        return ProcessFence.AVAILABLE;
    }

    /**
     * Calls (warm-up excluded) in which this rank, the root of a two-member Reduce, read the leaf's
     * data before its flag because the leaf had run ahead (ExchangeAlgorithm.runPair, "reads ahead").
     */
    public long readAheads() {
        return exchange.readAheads;
    }

    /** The k-nomial radix a tree call of {@code bytes} uses (from the table; the same on every rank). */
    public int treeRadix(Collective c, long bytes) {
        return table.treeRadix(c, bytes);
    }

    public String interNodeName() {
        return interName;
    }

    public Waiter waiter() {
        return waiter;
    }

    /**
     * Around the heating (the calling thread): the waits spin briefly ({@link Waiter#heating}) and
     * the inter-node step varies its timing outcomes ({@link InterNodeStep#heating}).
     */
    public void heating(boolean on) {
        waiter.heating(on);
        if (inter != null) {
            inter.heating(on);
        }
    }

    /**
     * Messages this rank has sent between nodes as its node's leader (diagnostics and tests), or -1
     * where it is not a leader or its step does not count them.
     */
    public long interMessagesSent() {
        return inter instanceof org.sharp4j.spi.RecoverableStep ? ((org.sharp4j.spi.RecoverableStep) inter).messagesSent() : -1;
    }

    /** Chunks of a long call in flight between nodes ({@code sharp4j.internode.pipeline}, or 1 where the flat tiled path does not apply). */
    public int interUnit() {
        return interUnit;
    }

    /** Bytes of this rank's shared buffer. */
    public int sharedBytes() {
        return sock.sharedBytes;
    }

    /**
     * A view of this rank's shared buffer (native order, position 0, limit = its size). Under
     * {@link #teardown}, so that a close on another thread either sees {@link #viewsOut} and leaves
     * the mapping to the GC, or has begun and this throws instead of handing out unmapped memory.
     */
    public java.nio.ByteBuffer sharedView() {
        synchronized (teardown) {
            if (released) {
                throw new IllegalStateException("communicator is closed");
            }
            viewsOut = true;
        }
        int off = sock.shared(sock.me);
        java.nio.ByteBuffer b = sock.buf.duplicate().position(off).limit(off + sock.sharedBytes).slice();
        return b.order(java.nio.ByteOrder.nativeOrder());
    }

    /** Points {@link #src} or {@link #dst} at this rank's shared buffer. */
    public void useShared(Payload p) {
        p.shared(sock, sock.shared(sock.me));
    }

    /** Which intra-node algorithm a call of {@code bytes} uses (the same on every rank). */
    public IntraNodeAlgorithm algorithm(Collective c, long bytes) {
        return algorithmAt(c, table.intraIndex(c, bytes), bytes);
    }

    /**
     * The table's choice, corrected where it cannot apply: a barrier moves no data to tile (it
     * takes the tree), the tree and the exchange hold a message in one slot (larger ones run tiled),
     * and the direct Reduce and the pipelined algorithm run on one socket of one node (elsewhere, and
     * for other collectives than the direct Reduce's, tiled); the cma Reduces as well, and as the direct
     * one where the socket's ranks cannot read each other's memory ({@link #peerReadsWhyNot}); the split cma
     * Allreduce as well, and as the pipelined one there. The built-in table's cma Reduces, and its split
     * Allreduces of more than two members, run as the direct and the pipelined one where reading another
     * process is costly ({@link #builtInCmaWhyNot}); its split Allreduce of two members where it is more
     * costly still ({@link #builtInPairSplitWhyNot}).
     */
    private IntraNodeAlgorithm algorithmAt(Collective c, int segment, long bytes) {
        IntraNodeAlgorithm a = table.intraAlgorithmAt(c, segment);
        if (c == Collective.BARRIER) {
            return a == IntraNodeAlgorithm.TILED || a == IntraNodeAlgorithm.DIRECT || a == IntraNodeAlgorithm.PIPELINED
                    || a == IntraNodeAlgorithm.CMA || a == IntraNodeAlgorithm.CMA_SPLIT ? IntraNodeAlgorithm.TREE : a;
        }
        if (a == IntraNodeAlgorithm.CMA_SPLIT && c == Collective.ALLREDUCE) {
            if (!directApplies) {
                return IntraNodeAlgorithm.TILED;
            }
            // the built-in table's split Allreduce of more than two members only where reading another process is
            // cheap (builtInCmaWhyNot): each member reads q-1 others per step, one system call each. Measured where
            // it is not (AMD EPYC VM with PTI, read cost 3.6-3.9): 4 ranks, OSU port, blocks alternating in the same
            // processes, the pipelined one 1.11-1.56x as fast at 256 KiB-16 MiB (2 runs); 2 ranks mixed (0.38-1.70),
            // and against Open MPI Java the split one 0.44-0.87 at every size, the pipelined one 0.80-0.82 at 256 KiB;
            // two members have a bound of their own (PeerReads.READ_COST_MAX_PAIR: each reads and writes half)
            boolean gated = (sock.members > 2 ? builtInCmaWhyNot : builtInPairSplitWhyNot) != null && table.intraBuiltInAt(c, segment);
            return peerReadsWhyNot == null && !gated ? a : IntraNodeAlgorithm.PIPELINED;
        }
        if (a == IntraNodeAlgorithm.CMA || a == IntraNodeAlgorithm.CMA_SPLIT) {
            if (c != Collective.REDUCE || !directApplies) {
                return IntraNodeAlgorithm.TILED;
            }
            // the built-in table's choice only where reading another process is cheap (builtInCmaWhyNot), a
            // table file's or override's wherever the ranks can read each other
            return peerReadsWhyNot == null && (builtInCmaWhyNot == null || !table.intraBuiltInAt(c, segment)) ? a : IntraNodeAlgorithm.DIRECT;
        }
        if (a == IntraNodeAlgorithm.PIPELINED) {
            return directApplies ? a : IntraNodeAlgorithm.TILED;
        }
        if (a == IntraNodeAlgorithm.DIRECT) {
            return c == Collective.REDUCE && directApplies ? a : IntraNodeAlgorithm.TILED;
        }
        return a != IntraNodeAlgorithm.TILED && bytes > chunkBytes ? IntraNodeAlgorithm.TILED : a;
    }

    /** The chunk of a long call in table segment {@code i}: the rule's, at most the slot; in the heating at most its chunk. */
    private int chunkAt(Collective kind, int i) {
        int chunk = table.chunkAt(kind, i);
        chunk = chunk <= 0 || chunk > chunkBytes ? chunkBytes : chunk;
        return heatChunk > 0 ? Math.min(chunk, heatChunk) : chunk;
    }

    /** Throws if an earlier failure broke this communicator. */
    public void checkUsable() {
        if (broken != null) {
            throw new Sharp4jException("communicator unusable after an earlier failure: " + broken.getMessage(), broken);
        }
    }

    /**
     * Runs one collective with {@link #src} and {@link #dst} already set. {@code type} is null for
     * Barrier. Arguments were validated by the caller.
     *
     * <p>An {@link ArgumentMismatchException} leaves the communicator usable: every rank got the same
     * verdict through the releases. Any other failure after this rank entered (a dead peer, a
     * phase-3 error of any kind, an abort) gives up on the job at once, so that this node's ranks and
     * the other node leaders fail now instead of at their timeout, and breaks the communicator.
     */
    public void run(Collective kind, DataType type, Op op, int root, int count) {
        final boolean leased = enterCall();
        final long callSeq = seq + 1;
        ArgumentMismatchException earlier = null;
        try {
            checkUsable();
            if (current != kind) {
                current = kind; // only when it changes: a reference store costs a GC barrier (G1: a fence)
            }
            long desc = kind == Collective.BARRIER ? Desc.make(kind, DataType.INT, Op.SUM, 0, 0)
                    : Desc.make(kind, type, op, kind == Collective.REDUCE ? root : 0, count);
            long bytes = type == null ? 0 : (long) count * type.size;
            final int i;
            final IntraNodeAlgorithm a;
            if (bytes <= exchangeUpTo[kind.ordinal()]) {
                i = exchangeSegment[kind.ordinal()]; // what the lookup and algorithmAt give for these sizes
                a = IntraNodeAlgorithm.EXCHANGE;
            } else {
                i = heatSegment < 0 ? table.intraIndex(kind, bytes) : heatSegment;
                // a heating call of several short chunks (heatPath) stands for a call of several slots
                a = algorithmAt(kind, i, heatChunk > 0 ? Long.MAX_VALUE : bytes);
            }
            if (flat) {
                // Reuse (ExchangeAlgorithm, "Who returns when"; ShmLevel, "Reuse"): the exchange up to
                // EXCHANGE_BYTES writes only control blocks and exchange areas of set n, once every member
                // arrived at n - SETS + 1; the exchange above it and the tree write slots too, once every
                // member arrived at n - SLOT_SETS + 1; the tiled algorithm keeps the older, stronger
                // precondition (every member arrived at n - 1).
                long need = seq + 1 - (a == IntraNodeAlgorithm.TILED ? 1
                        : a == IntraNodeAlgorithm.EXCHANGE && bytes <= ShmLevel.EXCHANGE_BYTES ? ShmLevel.SETS - 1 : ShmLevel.SLOT_SETS - 1);
                if (need > knownAll) {
                    // The reuse gate: every member arrived at call need (its state in that set is at least
                    // need's ARRIVED; states only grow, so a later call there counts too). Written out here, not
                    // as a method of its own: a non-root of a run of Reduces waits here before every call, and
                    // a method of 90 bytes is inlined only where C2 saw its call site taken often, which the
                    // heating's first compile of run had not (Communicator.REDUCE_RUN): the method was then
                    // called, compiled by C2 during a program's first Reduce row, on the non-root's core.
                    // Tried and dropped (2026-12-02, OSU port, 2 ranks, Reduce 4-256 B, alternating): a leaf
                    // reading member 0's P_DONE instead (one word that can clear several calls at once), with
                    // and without the root loading the leaf's next line at the end of its call: no gain alone,
                    // and with both P50 0.10-0.12 us against 0.10-0.11, P90 0.12-0.21 against 0.10-0.13 (fast
                    // phase, 4-32 B). The leaf waits for the root either way. Tried again (2026-12-03) where a
                    // leaf does run ahead, OSU's Java OSUReduce (calls back to back) through the agent, 2 ranks,
                    // 10 pairs against this build: both together (the root loading the leaf's next two lines
                    // as its call starts) changed neither of the VM's phases (16-256 B 0.10-0.20 us or
                    // 0.29-0.40, against 0.09-0.20 or 0.20-0.42); nor did a build without the compare-and-set
                    // at a call's entry (0.09-0.23 or 0.31-0.35), nor a leaf reading the next call's gate right
                    // after it published, so that the read overlaps its store (two runs of 10: per size 0.68-1.14x
                    // this build, noise). What did help there: more sets, so that a leaf runs further ahead
                    // (ShmLevel.SETS for the exchange up to EXCHANGE_BYTES: 8, then 32 since 2026-12-03; see there).
                    int set = ShmLevel.set(need);
                    long target = ShmLevel.enc(need, ShmLevel.ARRIVED);
                    for (int m = 0; m < sock.members; m++) {
                        if (m != sock.me) {
                            waiter.await(sock.buf, sock.ctl(set, m) + ShmLevel.STATE, target, sock.ranks[m]);
                        }
                    }
                    knownAll = need;
                }
                if (pendingCount > 0) {
                    earlier = checkPending(null);
                }
            }
            callsBy[a.ordinal()]++;
            wentAhead = false;
            arrivedKnownAt = -1;
            switch (a) {
                case EXCHANGE:
                    // two members with operands in place: ExchangeAlgorithm.runPair (through run) from 41 B, see PAIR_BYTES
                    if (flat && (bytes <= ShmLevel.INLINE_BYTES
                            || bytes <= ExchangeAlgorithm.PAIR_BYTES && sock.members == 2 && !ExchangeAlgorithm.operandsInPlace(src, dst, type, count))) {
                        exchange.runInline(kind, type, op, root, count, desc, table.treeRadixAt(kind, i));
                    } else {
                        exchange.run(kind, type, op, root, count, desc, table.treeRadixAt(kind, i));
                    }
                    break;
                case TREE:
                    tree.run(kind, type, op, root, count, desc, table.treeRadixAt(kind, i));
                    break;
                case DIRECT:
                    direct.run(type, op, root, count, desc, chunkAt(kind, i), false, false);
                    break;
                case CMA:
                    direct.run(type, op, root, count, desc, chunkAt(kind, i), true, false);
                    break;
                case CMA_SPLIT:
                    if (kind != Collective.ALLREDUCE) {
                        direct.run(type, op, root, count, desc, chunkAt(kind, i), true, true);
                    } else if (!cmaSplit.allreduce(type, op, count, desc)) {
                        // a buffer not in its process (decided alike on every rank): pipelined, from the next sequence number
                        pipelined.run(kind, type, op, root, count, desc, chunkAt(kind, i));
                    }
                    break;
                case PIPELINED:
                    pipelined.run(kind, type, op, root, count, desc, chunkAt(kind, i));
                    break;
                default:
                    tiled.run(kind, type, op, root, count, desc, chunkAt(kind, i));
                    break;
            }
            if (flat) {
                if (!wentAhead) {
                    // every algorithm but a member that went ahead observed every arrival at its last seq,
                    // except the direct Reduce's non-roots, which know less and say so (arrivedKnownAt)
                    knownAll = arrivedKnownAt < 0 ? seq : Math.max(knownAll, arrivedKnownAt);
                }
                if (pendingCount > 0) {
                    earlier = checkPending(earlier);
                }
            }
        } catch (ArgumentMismatchException e) {
            if (flat) {
                knownAll = seq; // a mismatch is only found after every arrival was seen
                if (sock.me == 0) {
                    sock.writeVerdict(callSeq, st); // for members that returned before the verdict; P_DONE publishes it
                }
            }
            if (earlier != null) {
                e.addSuppressed(earlier);
            }
            throw e;
        } catch (RuntimeException e) {
            failed(e);
            throw e;
        } catch (Error e) {
            failed(new Sharp4jException("rank " + rank + ": " + e, e));
            throw e;
        } finally {
            if (flat && sock.me == 0) {
                Flags.release(node.buf, progressLine + P_DONE, seq); // after the verdict record
            }
            exitCall(leased);
        }
        if (earlier != null) {
            throw earlier; // this call completed (its result is delivered): the error is an earlier call's
        }
    }

    /**
     * Called by an algorithm whose rank returns knowing its verdict but not every member's arrival
     * at the call's last sequence number: only that every member arrived at {@code s} (the direct
     * Reduce's non-roots: the first chunk's verdict and their gate two chunks back). Overstating it
     * would let a later call write a set that a slow root still reads.
     */
    void arrivedKnownAt(long s) {
        arrivedKnownAt = s;
    }

    /** Called by an algorithm when this rank returns from call {@code s} before its verdict is known (flat only). */
    void wentAhead(long s) {
        wentAhead = true;
        if (pendingCount == ShmLevel.SETS) { // the reuse gate's bound broken: a verdict would be lost
            throw new IllegalStateException("rank " + rank + ": more than " + ShmLevel.SETS + " calls pending at #" + s);
        }
        pending[(pendingHead + pendingCount++) & (ShmLevel.SETS - 1)] = s;
    }

    /**
     * Looks up the verdicts of the calls this rank went ahead of that are final: member 0 arrived
     * at a later call (so it finished them, verdict recorded first), which {@code knownAll} says.
     * Returns the first mismatch found (further ones suppressed into it), or {@code prior}.
     */
    private ArgumentMismatchException checkPending(ArgumentMismatchException prior) {
        ArgumentMismatchException first = prior;
        while (pendingCount > 0 && pending[pendingHead] < knownAll) {
            first = settleOldest(first);
        }
        return first;
    }

    /** Takes the oldest pending call off the ring and adds its verdict, if a mismatch, to {@code first}. */
    private ArgumentMismatchException settleOldest(ArgumentMismatchException first) {
        long c = pending[pendingHead];
        pendingHead = (pendingHead + 1) & (ShmLevel.SETS - 1);
        pendingCount--;
        ArgumentMismatchException x = verdictOf(c);
        if (x == null) {
            return first;
        }
        if (first == null) {
            return x;
        }
        first.addSuppressed(x);
        return first;
    }

    private ArgumentMismatchException verdictOf(long c) {
        if (!sock.verdictOf(c, earlierStatus)) {
            return null;
        }
        return new ArgumentMismatchException("rank " + rank + ": an earlier call (collective #" + c
                + ", from which this rank returned before the arguments were compared) failed: "
                + earlierStatus.toException().getMessage());
    }

    /**
     * At close: waits until member 0 finished every call this rank went ahead of, and returns the
     * first recorded mismatch among them (or null). Slow path; failures end the wait as in a call.
     */
    private RuntimeException drainPending() {
        ArgumentMismatchException first = null;
        int line = node.progress(topo.localIndex(sock.ranks[0]));
        while (pendingCount > 0) {
            waiter.await(node.buf, line + P_DONE, pending[pendingHead], sock.ranks[0]);
            first = settleOldest(first);
        }
        return first;
    }

    /** A failure inside a call: tell everyone (first giver wins) and keep the communicator broken. */
    private void failed(RuntimeException e) {
        if (broken == null) {
            broken = e;
        }
        int blamed = -1;
        if (e instanceof PeerFailureException) {
            int[] r = ((PeerFailureException) e).ranks();
            blamed = r.length > 0 ? r[0] : -1;
        }
        giveUp(blamed);
    }

    /**
     * Admits this thread to a call (class comment, "Who may touch what"). Returns whether it came in on
     * its lease, which {@link #exitCall(boolean)} must be told.
     */
    private boolean enterCall() {
        final Lease l = lease;
        if (l != null && l.thread == Thread.currentThread() && (int) INSIDE.get(l) == 0) { // 1: a call from inside one (enterSlow)
            INSIDE.setOpaque(l, 1);
            // Dekker against enterSlow, close and closeNow: this store, then these loads, and no fence between
            // (ProcessFence: the other side makes both). C2 keeps the opaque store before the acquire loads:
            // it puts compiler-only barriers around every VarHandle access that has a memory order.
            if ((int) STATE.getAcquire(this) == IDLE && !closeRequested && lease == l) {
                leasedEntries++;
                return true;
            }
            INSIDE.setRelease(l, 0); // a close or another thread came first: the slow path says which
        }
        enterSlow();
        return false;
    }

    private void enterSlow() {
        if (!STATE.compareAndSet(this, IDLE, BUSY)) {
            int st = (int) STATE.getVolatile(this);
            if (st == CLOSED || st == CLOSE_PENDING) {
                throw new IllegalStateException("communicator is closed");
            }
            throw twoThreads(busyThread);
        }
        if (closeRequested) {
            // a close is waiting for the state to be IDLE (see the class comment): give it back untouched
            STATE.setRelease(this, IDLE);
            throw new IllegalStateException("communicator is closed");
        }
        Thread t = Thread.currentThread();
        Lease l = lease;
        if (l != null && holderInside(l, t)) {
            STATE.setRelease(this, IDLE);
            if (l.thread == t) {
                // its own flag: a collective called from inside one on the same thread (a callback), which the
                // compare-and-set alone caught while the outer call held BUSY; on a lease the state is IDLE
                throw new IllegalStateException("communicator used from inside one of its own collectives: thread '" + t.getName()
                        + "' called a collective while inside one (from a callback of that call?); one call at a time");
            }
            throw twoThreads(l.thread);
        }
        // Under BUSY, the holder (if any) inside nothing: no leased entry can succeed meanwhile.
        if (l != null && l.thread != t) {
            lease = null; // another thread calls: the holder's next call goes the slow way
            leaseRun = leasedEntries - l.grantedAt >= LEASE_PAYS_AFTER ? 2 : Math.min(2 * leaseRun, MAX_LEASE_RUN);
        }
        sameThreadRun = busyThread == t ? Math.min(sameThreadRun + 1, MAX_LEASE_RUN) : 1;
        if (ProcessFence.AVAILABLE && lease == null && sameThreadRun >= leaseRun) {
            lease = new Lease(t, leasedEntries);
        }
        if (busyThread != t) {
            busyThread = t; // only when it changes: a reference store costs a GC barrier (G1: a fence)
        }
    }

    /**
     * A lease that served fewer leased calls than this did not pay for the process-wide barrier its
     * revocation cost: a compare-and-set saved per call is tens of nanoseconds, the barrier 1 us on
     * this project's VM with no other thread of the process running and 21 us with one spinning on the
     * other CPU (an inter-processor interrupt in a VM; 49 us with three on two CPUs), so at 4,096 calls
     * a revocation costs at most about 5 ns per leased call.
     */
    public static final long LEASE_PAYS_AFTER = 4_096;
    /** The longest run of consecutive calls by one thread that {@link #leaseRun} asks before a lease. */
    static final int MAX_LEASE_RUN = 1 << 20;
    /**
     * Consecutive calls (through the compare-and-set) a thread makes before it is granted the lease:
     * 2, doubled by every revocation of a lease that served fewer than {@link #LEASE_PAYS_AFTER} calls
     * (threads that take turns every few calls would otherwise pay a process-wide barrier per turn),
     * back to 2 after one that served more. Written under BUSY by slow entries only.
     */
    private int leaseRun = 2;
    /** Consecutive slow entries by {@link #busyThread}, this one included. Written under BUSY by slow entries only. */
    private int sameThreadRun;

    /**
     * Whether lease {@code l}'s holder is inside a call, asked by thread {@code me} after its own store
     * that a leased entry reads (the state by compare-and-set, or {@code closeRequested}): for another
     * holder, after a {@link ProcessFence}, so that a holder's entry either saw that store or made its
     * own visible here.
     */
    private static boolean holderInside(Lease l, Thread me) {
        if (l.thread != me) {
            ProcessFence.run();
        }
        return (int) INSIDE.getAcquire(l) != 0;
    }

    private IllegalStateException twoThreads(Thread other) {
        return new IllegalStateException("communicator used by two threads at once: thread '" + Thread.currentThread().getName()
                + "' called a collective while thread '" + (other == null ? "?" : other.getName())
                + "' is inside one (one call at a time per communicator, as MPI_THREAD_SERIALIZED)");
    }

    private void exitCall(boolean leased) {
        if (leased) {
            // Release: every access of this call happens-before the acquire of 0 by a closer or a claimer.
            INSIDE.setRelease(lease, 0); // still this call's lease: nobody replaces a lease whose holder is inside
            if (releaseAtExit) {
                releaseAtExit = false; // this thread closed the communicator from inside this call (closeNow)
                release();
            }
        } else if (closeRequested) {
            exitClosing();
        } else {
            // Release: every access of this call happens-before the next entry's or a closer's
            // compare-and-set that reads IDLE. BUSY is this thread's own value: no one else writes it.
            STATE.setRelease(this, IDLE);
        }
    }

    private void exitClosing() {
        if ((int) STATE.getVolatile(this) == CLOSE_PENDING) {
            // this thread closed the communicator from inside its own call and left the release to its exit
            STATE.setVolatile(this, CLOSED);
            release();
        } else {
            STATE.setRelease(this, IDLE); // another thread's close waits for this (closeNow)
        }
    }

    /** The next call's sequence number (one per call or per chunk), recorded in this rank's progress line. */
    long nextSeq() {
        long s = ++seq;
        progressSeq(s);
        return s;
    }

    /**
     * The next sequence number without the progress record: for a call that publishes first and
     * then records it with {@link #progressSeq} before it waits (the record only serves failure
     * diagnostics, which run inside a wait).
     */
    long advanceSeq() {
        return ++seq;
    }

    /** The last sequence number used (measuring tools). */
    long seqForTests() {
        return seq;
    }

    /** Records in this rank's progress line that it entered call {@code s} (its own line; read by failure diagnostics only). */
    void progressSeq(long s) {
        // Plain release store into this rank's own line.
        Flags.release(node.buf, progressLine + P_SEQ, s);
    }

    void interNode(Collective kind, java.nio.ByteBuffer b, int off, int count, DataType t, Op op, int root, long desc) {
        interNode(kind, b, off, count, t, op, root, desc, false);
    }

    /**
     * Elements of a long call's first phase-3 part, the one whose spine checks the call: the chunk,
     * except for a Reduce of more than one chunk on the host path, whose first part is its first
     * {@link #REDUCE_HEAD_BYTES} (at least one element). That part rides on the spine as a merged
     * allreduce (every node's part to every node: cheap for a line, where a whole chunk would go
     * both ways and be folded on every node); the rest of the call goes up the tree to the root's
     * node only, and a non-root node is done once it has sent it. Depends only on the call's
     * arguments and job-wide settings, so leaders that agree on the call cut the same parts (and
     * leaders that do not are told so by that first part's spine).
     */
    int interFirst(Collective kind, int count, int chunkElems, DataType t) {
        if (kind != Collective.REDUCE || count <= chunkElems || !interHeadSplit) {
            return chunkElems;
        }
        return Math.max(1, Math.min(chunkElems, REDUCE_HEAD_BYTES / t.size));
    }

    /**
     * Elements of the first part of the one-rank-per-node path ({@link TiledAlgorithm}'s solo): the
     * whole call for an allreduce the inter-node step runs in one call with its argument check
     * merged in ({@link org.sharp4j.spi.InterNodeStep#mergedAllreduceBytes}: on the host path up to
     * its 128 KiB fragment), else {@link #interFirst}. A 128 KiB Allreduce between 3 rig hosts took
     * two rounds of recursive doubling one after the other as a chunk and a part (1.3x Open MPI Java's
     * time at P50), 0.59-0.74x that in one (0.95-0.98x Open MPI Java's in the same processes; two runs
     * of 6 rounds, jars alternating). A Reduce likewise up to {@link
     * org.sharp4j.spi.InterNodeStep#mergedReduceBytes} (on the host path up to its 512 KiB spine
     * slot at 2-3 nodes: one message carries the call and its check up the tree). Not for the heating's calls of short chunks ({@link #heatPath}):
     * they stand for calls of several slots, whose parts they must run.
     */
    int interSoloFirst(Collective kind, int count, int chunkElems, DataType t) {
        if (kind != Collective.BARRIER && count > chunkElems && inter != null && heatChunk == 0) {
            long bytes = (long) count * t.size;
            if (bytes <= (kind == Collective.ALLREDUCE ? inter.mergedAllreduceBytes(bytes) : inter.mergedReduceBytes(bytes))) {
                return count;
            }
        }
        return interFirst(kind, count, chunkElems, t);
    }

    /**
     * Phase 3 of a long call's first chunk of {@code n} elements (the blocking part that checks the
     * call): the part {@link #interFirst} gives, then, if that ended ok on every node, the rest of
     * the chunk as a later part (data rounds only), blocking.
     */
    void interNodeFirst(Collective kind, java.nio.ByteBuffer b, int off, int n, DataType t, Op op, int root, long desc,
            int count, int chunkElems) {
        final int head = interFirst(kind, count, chunkElems, t);
        if (head >= n) {
            interNode(kind, b, off, n, t, op, root, desc, false);
            return;
        }
        interNode(kind, b, off, head, t, op, root, desc, false);
        if (st.ok()) { // the same verdict on every node: all of them run the rest, or none
            interNode(kind, b, off + head * t.size, n - head, t, op, root, desc, true);
        }
    }

    /**
     * Chunks by which the release of a long call's chunk trails its post (the flat tiled path): the
     * chunks in flight minus one, at most {@link ShmLevel#SLOT_SETS} - 1 (the result sets). The same on
     * every rank of the job (members follow the leader's releases by it), so it does not depend on
     * the step, which only node leaders have: a step that keeps fewer parts in flight has its
     * oldest part awaited earlier ({@link #interCap}), and its release still comes at the lag.
     */
    int interLag() {
        return Math.max(0, Math.min(interUnit, ShmLevel.SLOT_SETS) - 1);
    }

    /** Parts the node leader's step keeps in flight at most (0: each part runs at its post). */
    int interCap() {
        return inter == null ? 0 : inter.partsInFlight();
    }

    /** Posts a later part of the call ({@link InterNodeStep#post}); a failure is the node's as in {@link #interNode}. */
    int interPost(Collective kind, java.nio.ByteBuffer b, int off, int count, DataType t, Op op, int root, long desc) {
        return interPost(kind, b, off, b, off, count, t, op, root, desc); // the source form with the buffer as its source
    }

    /** {@link #interPost} with this node's data read from {@code src} and the result in {@code b} ({@link InterNodeStep#post}'s source form). */
    int interPost(Collective kind, java.nio.ByteBuffer src, int srcOff, java.nio.ByteBuffer b, int off, int count, DataType t, Op op,
            int root, long desc) {
        try {
            return inter.post(kind, src, srcOff, b, off, count, t, op, topo.nodeOf(root), desc & ~Desc.SHARED, st);
        } catch (RuntimeException e) {
            failed(e);
            throw e;
        }
    }

    /** Waits for a posted part ({@link InterNodeStep#await}). */
    void interAwait(int part) {
        try {
            inter.await(part);
        } catch (RuntimeException e) {
            failed(e);
            throw e;
        }
    }

    /** Drives the posted parts once ({@link InterNodeStep#progress}), from the node leader's waits. */
    void interProgress() {
        try {
            inter.progress();
        } catch (RuntimeException e) {
            failed(e);
            throw e;
        }
    }

    /**
     * Phase 3 of a call's first part (or a whole call) with this node's data read from {@code src}
     * and the result in {@code b} ({@link InterNodeStep#run}: the step reads it in place where it
     * can, else copies); a failure is the node's as in {@link #interNode}.
     */
    void interNodeFrom(Collective kind, java.nio.ByteBuffer src, int srcOff, java.nio.ByteBuffer b, int off, int count, DataType t,
            Op op, int root, long desc) {
        try {
            inter.run(kind, src, srcOff, b, off, count, t, op, topo.nodeOf(root), desc & ~Desc.SHARED, st);
        } catch (RuntimeException e) {
            failed(e);
            throw e;
        }
    }

    /** Phase 3 of a part of a call; {@code more}: a later part (see {@link InterNodeStep}'s part methods). */
    void interNode(Collective kind, java.nio.ByteBuffer b, int off, int count, DataType t, Op op, int root, long desc,
            boolean more) {
        desc &= ~Desc.SHARED; // where this rank's input lay is a local matter
        try {
            switch (kind) {
                case ALLREDUCE:
                    inter.allreduce(b, off, count, t, op, desc, st, more);
                    break;
                case REDUCE:
                    inter.reduce(b, off, count, t, op, topo.nodeOf(root), desc, st, more);
                    break;
                default:
                    inter.barrier(desc, st);
                    break;
            }
        } catch (RuntimeException e) {
            // Failed between nodes (a leader died, the network broke, a transport or protocol error):
            // tell this node's ranks now, blaming the same rank if there is one, rather than leaving
            // them to wait for the release until their timeout. (run() would too; this is earlier.)
            failed(e);
            throw e;
        }
    }

    static int ceilDiv(int a, int b) {
        return (a + b - 1) / b;
    }

    /**
     * Called by the {@link Waiter} every 20 ms of a slow wait, in this order: fail at once if this
     * rank was aborted (from another thread), if another rank already gave up (its blame is the
     * one reported, so a rank that gave up and exited is not later reported as "died"), or if the
     * awaited rank's process is gone (only that one: probing every local rank made P^2 /proc reads
     * per node; a dead rank further away is found by the rank that waits for it, which gives up);
     * after the timeout, name the ranks that never entered this collective.
     */
    @Override
    public void check(int awaitedRank, long waitedNanos, long timeoutNanos) {
        String what = closing ? "close (the node leaders' meeting after " + current.name().toLowerCase() + " #" + seq + ")"
                : current.name().toLowerCase() + " #" + seq;
        String own = abortReason;
        if (own != null) {
            throw new Sharp4jException("rank " + rank + ": aborted during " + what + ": " + own);
        }
        throwIfAnotherGaveUp(what);
        if (awaitedRank >= 0 && awaitedRank < size && onMyHost[awaitedRank] && pids[awaitedRank] != myPid
                && !ProcessHandle.of(pids[awaitedRank]).map(ProcessHandle::isAlive).orElse(false)) {
            giveUp(awaitedRank);
            throw new PeerFailureException("rank " + rank + ": rank " + awaitedRank + " died (process "
                    + pids[awaitedRank] + " gone) during " + what, new int[] {awaitedRank});
        }
        if (inter != null) {
            inter.answerQueries(); // other leaders that time out waiting for this one ask whether it is alive
        }
        // Tell the node what this rank waits for, and that it is alive and waiting (see culprit()).
        int line = node.progress(localIndex);
        Flags.volatileSet(node.buf, line + P_WAITS_FOR, awaitedRank);
        Flags.volatileSet(node.buf, line + P_HEARTBEAT, System.nanoTime());
        if (waitedNanos >= timeoutNanos) {
            List<Integer> behind = new ArrayList<>();
            for (int j = 0; j < localRanks.length; j++) {
                if (Flags.volatileGet(node.buf, node.progress(j) + P_SEQ) < seq) {
                    behind.add(localRanks[j]);
                }
            }
            if (!behind.isEmpty()) {
                // A rank still in an earlier call that is alive and waiting (fresh heartbeat) is held
                // up by another: name only the ranks that are not waiting or stopped beating.
                long now = System.nanoTime();
                List<Integer> stuck = new ArrayList<>();
                for (int r : behind) {
                    if (!aliveAndWaiting(r, now, timeoutNanos)) {
                        stuck.add(r);
                    }
                }
                List<Integer> named = stuck.isEmpty() ? behind : stuck;
                List<Integer> held = new ArrayList<>(behind);
                held.removeAll(named);
                throwIfAnotherGaveUp(what); // one that gave up while we looked (it left its wait): its blame, not ours
                giveUp(named.get(0));
                throw new PeerFailureException("rank " + rank + ": timed out after "
                        + String.format("%.1f", timeoutNanos / 1e9) + " s in " + what + " waiting for rank "
                        + awaitedRank + "; rank(s) " + named + " did not arrive"
                        + (held.isEmpty() ? "" : " (rank(s) " + held + " wait behind them)") + " (sharp4j.timeout)",
                        named.stream().mapToInt(Integer::intValue).toArray());
            }
            int stuck = culprit(awaitedRank, timeoutNanos);
            if (stuck == REMOTE && waitedNanos < 2 * timeoutNanos) {
                return; // the chain of waits leaves the node: our leader, waiting across nodes, will name the culprit
            }
            if (stuck >= 0 && inter != null && topo.nodeOf(stuck) != nodeIndex && waitedNanos < 2 * timeoutNanos) {
                // A leader on another node: alive and waiting for a third, or the culprit? Ask it.
                long grace = Math.min(1_000_000_000L, Math.max(100_000_000L, timeoutNanos / 4));
                if (inter.askAlive(topo.nodeOf(stuck), System.nanoTime() - waitedNanos, grace) != InterNodeStep.PEER_SILENT) {
                    return; // it answered (the leader at the end of the chain names the culprit), or may still
                }
            }
            int blamed = stuck >= 0 ? stuck : awaitedRank;
            throwIfAnotherGaveUp(what); // a rank that gave up while we followed the chain left its wait: report its blame
            giveUp(blamed);
            throw new PeerFailureException("rank " + rank + ": timed out after "
                    + String.format("%.1f", timeoutNanos / 1e9) + " s in " + what + " waiting for rank " + awaitedRank
                    + (blamed == awaitedRank ? "" : ", which waits for rank " + blamed) + "; rank " + blamed
                    + (topo.nodeOf(blamed) == nodeIndex ? " entered it but stopped making progress" : " did not answer")
                    + " (sharp4j.timeout)", new int[] {blamed});
        }
    }

    /**
     * Throws the failure another rank gave up with, if one did (this node's abort word, then the
     * other node leaders'), relaying it as the giver said it so every rank reports the same culprit.
     * Checked first at every probe, and again just before this rank blames someone at its timeout:
     * ranks whose timeouts end together race, and a rank that gave up in between has left its wait,
     * so the chain of waits would otherwise name it instead of the culprit it named.
     */
    private void throwIfAnotherGaveUp(String what) {
        long abort = node.abortWord();
        if (abort == 0 && inter != null) {
            abort = inter.abortWord();
        }
        if (abort != 0 && (int) abort != rank + 1) {
            int giver = (int) abort - 1;
            int blamed = (int) (abort >>> 32) - 1;
            relay(giver, blamed); // as the giver said it: every rank of this node reports the same culprit
            throw new PeerFailureException("rank " + rank + ": rank " + giver + " gave up on the job during " + what
                    + (blamed >= 0 && blamed != giver ? " because of rank " + blamed : "") + "; see its error",
                    blamed >= 0 ? new int[] {blamed} : new int[] {giver});
        }
    }

    private static final int REMOTE = -2;

    /**
     * Follows the chain of waits from {@code awaited} through this node's progress lines: every
     * rank waiting in a failure-probed wait records whom it waits for and refreshes a heartbeat at
     * each probe (every 20 ms). The first rank of the chain that is not waiting, or whose heartbeat
     * is stale (a stopped or hung process), is the culprit; {@link #REMOTE} when the chain leaves
     * this node (a node leader waiting across nodes: it names the culprit itself, and its abort
     * reaches us). Slow path only (at the timeout). Relies on {@code System.nanoTime} being the
     * host's monotonic clock, shared by its processes (HotSpot on Linux: CLOCK_MONOTONIC).
     */
    private int culprit(int awaited, long timeoutNanos) {
        long now = System.nanoTime();
        int r = awaited;
        for (int hops = 0; hops <= localRanks.length; hops++) {
            if (r < 0 || r >= size) {
                return -1;
            }
            if (topo.nodeOf(r) != nodeIndex) {
                return hops == 0 ? r : REMOTE; // waiting on another node directly: that leader is the one that did not answer
            }
            if (r == rank) {
                return -1; // a cycle through this rank: cannot tell, blame the awaited rank
            }
            if (!aliveAndWaiting(r, now, timeoutNanos)) {
                return r;
            }
            r = (int) Flags.volatileGet(node.buf, node.progress(topo.localIndex(r)) + P_WAITS_FOR);
        }
        return -1;
    }

    /**
     * Whether local rank {@code r} sits in a failure-probed wait with a fresh heartbeat (refreshed
     * every 20 ms; stale after timeout/4, between 100 ms and 1 s): held up by someone else rather
     * than stopped or busy elsewhere.
     */
    private boolean aliveAndWaiting(int r, long now, long timeoutNanos) {
        long stale = Math.min(1_000_000_000L, Math.max(100_000_000L, timeoutNanos / 4));
        int line = node.progress(topo.localIndex(r));
        return Flags.volatileGet(node.buf, line + P_WAITS_FOR) >= 0 && now - Flags.volatileGet(node.buf, line + P_HEARTBEAT) <= stale;
    }

    @Override
    public void outsideProgress() {
        Runnable p = outside;
        if (p != null) {
            p.run();
        }
    }

    @Override
    public void waitEnded() {
        Flags.volatileSet(node.buf, node.progress(localIndex) + P_WAITS_FOR, -1);
    }

    /** This rank gives up on the job, blaming {@code blamed} (or -1). */
    private void giveUp(int blamed) {
        relay(rank, blamed);
    }

    /**
     * Tells this node's ranks and the other node leaders that {@code giver} gave up blaming
     * {@code blamed}; the first word set on each level stays (compare-and-set), so a relayed abort
     * keeps its original giver and blame.
     */
    private void relay(int giver, int blamed) {
        node.abort(giver, blamed);
        if (inter != null) {
            inter.abort(giver, blamed);
        }
    }

    /**
     * Gives up on the job, like MPI_Abort for the peers: ranks waiting in a collective with this
     * rank (on this node, and node leaders of simulated nodes) fail within milliseconds instead of
     * at the timeout, and so does this rank's own thread if it is inside a call. Any thread; local;
     * it waits only for another thread's abort that is relaying (see {@link #teardown}); the
     * communicator is unusable afterwards. Once the communicator is closed (its resources released)
     * it does nothing.
     */
    public void abort(String reason) {
        synchronized (teardown) {
            if (released) {
                return; // closed: the segments may be unmapped and the step closed (see teardown)
            }
            if (abortReason == null) {
                abortReason = reason == null ? "abort()" : reason;
            }
            if (broken == null) {
                broken = new Sharp4jException("aborted by this rank: " + abortReason);
            }
            Runnable pause = abortPauseForTest;
            if (pause != null) {
                pause.run();
            }
            giveUp(rank);
        }
    }

    /**
     * Releases this rank's resources (see the class comment for who may call it when). Local: no
     * synchronisation with other ranks, except that a rank whose last calls were flat Reduces it
     * returned from early first waits until member 0 finished them, and then (after releasing)
     * throws {@link ArgumentMismatchException} if one of them was a mismatch (see
     * {@link ExchangeAlgorithm}, "Who returns when"). Idempotent.
     */
    @Override
    public void close() {
        RuntimeException verdict = null;
        if (pendingCount > 0 && broken == null && STATE.compareAndSet(this, IDLE, BUSY)) {
            Lease l = lease;
            if (l != null && holderInside(l, Thread.currentThread())) {
                STATE.setRelease(this, IDLE); // a call is running on its lease (here: from inside it): closeNow ends it
            } else {
                // Calls this rank returned from before their arguments were compared: a mismatch among
                // them must not go unreported, so wait (bounded by the failure probes and the timeout)
                // until member 0 finished them and look their verdicts up.
                busyThread = Thread.currentThread();
                try {
                    verdict = drainPending();
                } catch (RuntimeException e) {
                    verdict = e;
                } finally {
                    exitCall(false);
                }
            }
        }
        closeNow();
        if (verdict != null) {
            throw verdict;
        }
    }

    private void closeNow() {
        closeRequested = true; // before the state is read: see the class comment
        Thread me = Thread.currentThread();
        boolean aborted = false;
        long abortedAt = 0;
        while (true) {
            int st = (int) STATE.getVolatile(this);
            if (st == IDLE) {
                if (STATE.compareAndSet(this, IDLE, CLOSED)) {
                    // No entry succeeds from here: a slow one's compare-and-set fails, and a leased one sees
                    // CLOSED, or else its store of inside is visible to holderInside (its Dekker).
                    Lease l = lease;
                    if (l != null && holderInside(l, me)) {
                        if (l.thread == me) {
                            // inside a call on its lease on this very thread (a callback): the exit releases
                            releaseAtExit = true;
                            abort("communicator closed from inside a collective by its own thread '" + me.getName() + "'");
                            return;
                        }
                        if (!awaitLeasedExit(l, me)) {
                            return; // the JVM is shutting down: nothing is freed (see release)
                        }
                    }
                    release();
                    return;
                }
            } else if (st == BUSY && busyThread == me) {
                // inside a call on this very thread (a callback): it cannot be waited for. (busyThread can
                // also be stale for an instant while another thread's call enters: two threads at once, a
                // program error. Then that call's exit may store IDLE over CLOSE_PENDING, and the memory
                // stays allocated until the process exits; it is never freed under a call.)
                if (STATE.compareAndSet(this, BUSY, CLOSE_PENDING)) {
                    abort("communicator closed from inside a collective by its own thread '" + me.getName() + "'");
                    return; // the exit releases (exitClosing)
                }
            } else if (st == BUSY) {
                long now = System.nanoTime();
                if (!aborted) {
                    Thread t = busyThread;
                    abort("communicator closed by thread '" + me.getName() + "' while thread '"
                            + (t == null ? "?" : t.getName()) + "' was inside a collective");
                    aborted = true;
                    abortedAt = now;
                    if (shuttingDown()) {
                        // a shutdown hook (the agent's): release would free nothing now (see release), and the
                        // exit must not wait on a call that may be stuck where the abort does not reach
                        return;
                    }
                } else if (now - abortedAt > cfg.timeoutNanos() + 10_000_000_000L) {
                    // the abort ends every wait within the timeout: this thread is stopped (a debugger) or hung
                    // outside sharp4j's waits; nothing is freed, since it may still read the segments
                    Thread t = busyThread;
                    throw new IllegalStateException("close: thread '" + (t == null ? "?" : t.getName())
                            + "' is still inside a collective " + (now - abortedAt) / 1_000_000_000L
                            + " s after the close aborted it; its resources stay allocated");
                }
                java.util.concurrent.locks.LockSupport.parkNanos(50_000L);
            } else {
                return; // CLOSE_PENDING or CLOSED: closed already
            }
        }
    }

    /**
     * closeNow, once the state is CLOSED and another thread is inside a call on its lease: aborts that
     * call and waits until it is out (its release store of inside 0), as for a call under BUSY. Returns
     * false when the JVM is shutting down (then nothing may be freed and nobody waits).
     */
    private boolean awaitLeasedExit(Lease l, Thread me) {
        abort("communicator closed by thread '" + me.getName() + "' while thread '" + l.thread.getName() + "' was inside a collective");
        if (shuttingDown()) {
            return false;
        }
        long abortedAt = System.nanoTime();
        while ((int) INSIDE.getAcquire(l) != 0) {
            if (System.nanoTime() - abortedAt > cfg.timeoutNanos() + 10_000_000_000L) {
                throw new IllegalStateException("close: thread '" + l.thread.getName() + "' is still inside a collective "
                        + (System.nanoTime() - abortedAt) / 1_000_000_000L + " s after the close aborted it; its resources stay allocated");
            }
            java.util.concurrent.locks.LockSupport.parkNanos(50_000L);
        }
        return true;
    }

    /** Communicators of this JVM not closed yet, for the shutdown hook below. */
    private static final java.util.Set<Engine> LIVE = java.util.concurrent.ConcurrentHashMap.newKeySet();

    static {
        // SIGTERM (scancel, mpirun's abort, the launcher's) or System.exit while a collective runs:
        // give up on the job so that the peers fail now, naming this rank, instead of at their
        // timeout. Nothing is closed or unmapped here (see the class comment).
        try {
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                if (ProcessFence.AVAILABLE) {
                    ProcessFence.run(); // a leased caller's inside store, if made, is visible below
                }
                for (Engine e : LIVE) {
                    Lease l = e.lease;
                    if ((int) STATE.getVolatile(e) == BUSY || l != null && (int) INSIDE.getAcquire(l) != 0) {
                        e.abort("the JVM is shutting down (SIGTERM, or System.exit) during " + e.current.name().toLowerCase()
                                + " #" + e.seq);
                    }
                }
            }, "sharp4j-shutdown"));
        } catch (IllegalStateException alreadyShuttingDown) {
            // nothing to tell anyone
        }
    }

    /** Called once, by the thread that moved the state to CLOSED, when no call can be running. */
    private void release() {
        synchronized (teardown) {
            released = true; // an abort still relaying has finished; later ones touch nothing
        }
        LIVE.remove(this);
        src.clear(); // the user's last buffers (Payload keeps them between calls)
        dst.clear();
        if (shuttingDown()) {
            // The process is exiting: the kernel unmaps, and sockets and fabric resources go with it.
            // Touching them here could only crash or stall the exit (a thread may still poll a flag).
            return;
        }
        try {
            if (inter != null) {
                closing = true; // the node leaders meet before they close: a timeout there names the close
                inter.close();
            }
        } finally {
            if (!viewsOut) {
                for (Segment s : segments) {
                    s.close();
                }
            }
            segments.clear();
        }
    }

    /** Whether the JVM is running its shutdown hooks (the documented way to ask: adding a hook fails then). */
    private static boolean shuttingDown() {
        Thread probe = new Thread(() -> { });
        try {
            Runtime.getRuntime().addShutdownHook(probe);
            Runtime.getRuntime().removeShutdownHook(probe);
            return false;
        } catch (IllegalStateException e) {
            return true;
        }
    }
}
