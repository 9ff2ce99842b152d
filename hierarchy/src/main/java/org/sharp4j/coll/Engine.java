package org.sharp4j.coll;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
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
 * collective ends with a release that carries the call's status, so argument mismatches throw on
 * every rank and slots are reusable two calls later (see {@link ShmLevel}).
 *
 * <p>Not thread-safe: one thread drives a communicator at a time, as with MPI_THREAD_SERIALIZED.
 */
public final class Engine implements Waiter.FailureProbe, AutoCloseable {
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
    private long treeCalls;
    private long tiledCalls;
    final Waiter waiter;
    final CallStatus st = new CallStatus();
    public final Payload src = new Payload();
    public final Payload dst = new Payload();
    private final int treeMaxBytes;
    private final int chunkBytes;
    private final long[] pids;
    private final boolean[] onMyHost;
    private final int[] localRanks;
    private final long myPid;
    private final String interName;
    private final List<Segment> segments = new ArrayList<>();
    private long seq;
    private Collective current = Collective.BARRIER;
    private Sharp4jException broken;

    /** Builds the hierarchy; collective over the bootstrap (every rank must call it). */
    public static Engine create(Bootstrap boot, Config cfg) {
        return new Engine(boot, cfg);
    }

    private Engine(Bootstrap boot, Config cfg) {
        this.rank = boot.rank();
        this.size = boot.size();
        this.cfg = cfg;
        CpuTopology cpu = CpuTopology.detect();
        String realHost = realHostname();
        String host = cfg.hostname() != null ? cfg.hostname() : realHost;
        this.myPid = ProcessHandle.current().pid();
        RankInfo mine = new RankInfo(host + "\u0000" + realHost, cpu.socket, cpu.numaNode, cpu.socketsOnHost, myPid);
        byte[][] all = boot.allgather(mine.encode());
        RankInfo[] infos = new RankInfo[size];
        String[] realHosts = new String[size];
        for (int r = 0; r < size; r++) {
            RankInfo ri = RankInfo.decode(all[r]);
            String[] hh = ri.hostname.split("\u0000", 2);
            realHosts[r] = hh[1];
            infos[r] = new RankInfo(hh[0], ri.socket, ri.numaNode, ri.socketsOnHost, ri.pid);
        }
        this.topo = Topology.compute(infos, cfg.simulatedNodes(), cfg.simulatedSockets(), cfg.groupByNuma());
        this.table = cfg.tuningTable().compile(topo.nodeCount(), topo.maxRanksPerNode());
        this.tuning = table.summary();
        this.nodeIndex = topo.nodeOf(rank);
        this.socketIndexInNode = topo.socketOf(rank);
        this.socketCount = topo.socketCount(nodeIndex);
        int[] sockRanks = topo.socketRanks(nodeIndex, socketIndexInNode);
        int sockMe = topo.socketIndex(rank);
        this.socketLeader = sockMe == 0;
        this.localRanks = topo.nodeRanks(nodeIndex);
        this.localIndex = topo.localIndex(rank);
        this.nodeLeader = localIndex == 0;
        this.pids = new long[size];
        this.onMyHost = new boolean[size];
        int onHost = 0;
        for (int r = 0; r < size; r++) {
            pids[r] = infos[r].pid;
            onMyHost[r] = realHosts[r].equals(realHost);
            onHost += onMyHost[r] ? 1 : 0;
        }
        // Ranks outnumber the host's CPUs: spin briefly, they share cores (bound or not).
        boolean oversubscribed = onHost > org.sharp4j.topology.CpuTopology.onlineCpus();
        this.waiter = new Waiter(WaitPolicy.parse(cfg.waitSpec(), WaitPolicy.defaults(oversubscribed, cfg.timeoutNanos())), this);
        this.treeMaxBytes = Math.min(table.tiledThreshold(Collective.ALLREDUCE), cfg.slotBytes());
        this.chunkBytes = cfg.slotBytes();

        // Segment files: one per socket (created and first-touched by its leader), one per node.
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
        List<Path> created = new ArrayList<>();
        try {
            if (socketLeader) {
                sockSeg = Segment.create(sockPath, ShmLevel.size(sockRanks.length, slot, shared, 0),
                        ShmLevel.touchBytes(sockRanks.length, slot, 0));
                created.add(sockPath);
                CleanupOnExit.register(sockPath);
            }
            if (nodeLeader) {
                nodeSeg = Segment.create(nodePath, ShmLevel.size(socketCount, nodeSlot, 0, localRanks.length),
                        ShmLevel.touchBytes(socketCount, nodeSlot, localRanks.length));
                created.add(nodePath);
                CleanupOnExit.register(nodePath);
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
            boot.barrier(); // every segment exists
            if (sockSeg == null) {
                sockSeg = Segment.open(sockPath, ShmLevel.size(sockRanks.length, slot, shared, 0));
                sockLvl = new ShmLevel(sockSeg, sockRanks.length, sockMe, sockRanks, tuning.treeRadix(), slot, shared, 0);
                sockLvl.checkHeader();
            }
            if (nodeSeg == null) {
                nodeSeg = Segment.open(nodePath, ShmLevel.size(socketCount, nodeSlot, 0, localRanks.length));
                nodeLvl = new ShmLevel(nodeSeg, socketCount, socketLeader ? socketIndexInNode : -1, sockLeaders,
                        tuning.treeRadix(), nodeSlot, 0, localRanks.length);
                nodeLvl.checkHeader();
            }
            segments.add(sockSeg);
            segments.add(nodeSeg);
            this.sock = sockLvl;
            this.node = nodeLvl;
            Flags.put(node.buf, node.progress(localIndex), myPid);
            Flags.volatileSet(node.buf, node.progress(localIndex) + 8, 0);
            InterNodeSteps.Choice phase3 = InterNodeSteps.create(boot, cfg, topo, this);
            this.inter = phase3.step;
            this.interName = phase3.description;
            boot.barrier(); // every rank mapped everything it needs
        } catch (RuntimeException e) {
            for (Segment s : segments) {
                s.close();
            }
            for (Path p : created) {
                Segment.unlink(p);
            }
            throw e;
        } finally {
            // Unlink as soon as every local rank has mapped (or on failure): from here a kill -9 leaks nothing.
            for (Path p : created) {
                Segment.unlink(p);
                CleanupOnExit.unregister(p);
            }
        }
        if (cfg.warmupRounds() > 0) {
            long t0 = System.nanoTime();
            warmUp(cfg.warmupRounds());
            if (rank == 0) {
                LOG.debug("sharp4j: warm-up of {} rounds took {} ms", cfg.warmupRounds(), (System.nanoTime() - t0) / 1_000_000);
            }
        }
        treeCalls = 0;
        tiledCalls = 0;
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
        int big = Math.max(treeMaxBytes, ShmLevel.INLINE_BYTES) / 8 + 1;   // first size past the tree: tiled
        int mid = ShmLevel.INLINE_BYTES / 8 + 1;                           // first size past inline: slot
        double[] d = new double[big];
        double[] r = new double[big];
        java.nio.ByteBuffer bd = java.nio.ByteBuffer.allocateDirect(big * 8);
        java.nio.ByteBuffer br = java.nio.ByteBuffer.allocateDirect(big * 8);
        Object[] arrays = {new int[mid], new long[mid], new float[mid], d};
        Object[] outs = {new int[mid], new long[mid], new float[mid], r};
        for (int i = 0; i < rounds; i++) {
            int root = i % size;
            for (int count : new int[] {1, mid}) {
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
                useShared(src);
                useShared(dst);
                run(Collective.ALLREDUCE, DataType.DOUBLE, Op.SUM, 0, count);
            }
            src.none();
            dst.none();
            run(Collective.BARRIER, null, null, 0, 0);
            if (i % 4 == 0 && big * 8L <= sock.sharedBytes) {
                src.array(d, 0);
                dst.array(r, 0);
                run(Collective.ALLREDUCE, DataType.DOUBLE, Op.SUM, 0, big);
                src.buffer(bd, 0);
                dst.buffer(br, 0);
                run(Collective.REDUCE, DataType.DOUBLE, Op.SUM, root, big);
            }
        }
        src.none();
        dst.none();
        java.util.Arrays.fill(r, 0);
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

    /** Calls (since creation, warm-up excluded) that ran the intra-node algorithm {@code a}. */
    public long calls(IntraNodeAlgorithm a) {
        return a == IntraNodeAlgorithm.TREE ? treeCalls : tiledCalls;
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

    /** Bytes of this rank's shared buffer. */
    public int sharedBytes() {
        return sock.sharedBytes;
    }

    /** A view of this rank's shared buffer (native order, position 0, limit = its size). */
    public java.nio.ByteBuffer sharedView() {
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
        if (c == Collective.BARRIER) {
            return IntraNodeAlgorithm.TREE; // no data to tile
        }
        return treeAt(c, table.intraIndex(c, bytes), bytes) ? IntraNodeAlgorithm.TREE : IntraNodeAlgorithm.TILED;
    }

    /** The tree accumulates in a slot: larger messages run tiled whatever the table says. */
    private boolean treeAt(Collective c, int segment, long bytes) {
        return table.intraAlgorithmAt(c, segment) == IntraNodeAlgorithm.TREE && bytes <= chunkBytes;
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
     */
    public void run(Collective kind, DataType type, Op op, int root, int count) {
        checkUsable();
        current = kind;
        long desc = kind == Collective.BARRIER ? Desc.make(kind, DataType.INT, Op.SUM, 0, 0)
                : Desc.make(kind, type, op, kind == Collective.REDUCE ? root : 0, count);
        try {
            if (kind == Collective.BARRIER) {
                treeCalls++;
                tree(kind, type, op, root, count, desc);
                return;
            }
            long bytes = (long) count * type.size;
            int i = table.intraIndex(kind, bytes);
            if (treeAt(kind, i, bytes)) {
                treeCalls++;
                tree(kind, type, op, root, count, desc);
            } else {
                tiledCalls++;
                int chunk = table.chunkAt(kind, i);
                tiled(kind, type, op, root, count, desc, chunk <= 0 || chunk > chunkBytes ? chunkBytes : chunk);
            }
        } catch (PeerFailureException e) {
            broken = e;
            throw e;
        }
    }

    private void enter(long s) {
        // Plain release store into this rank's own line: read only by failure diagnostics.
        Flags.release(node.buf, node.progress(localIndex) + 8, s);
    }

    /**
     * Small messages: k-nomial fold up the socket tree (phase 1), up the tree of socket leaders
     * (phase 2), inter-node step at the node leader (phase 3), then flat releases down (4, 5).
     * The accumulator lives where this rank's parent reads it: at its top level, inline in its
     * control block for up to 40 bytes, else in its slot.
     */
    private void tree(Collective kind, DataType t, Op op, int root, int count, long desc) {
        final long s = ++seq;
        final int set = (int) (s & 1);
        enter(s);
        final int bytes = t == null ? 0 : count * t.size;
        final ShmLevel top = socketCount > 1 && socketLeader ? node : sock;
        final int acc = top.dataOff(set, top.me, bytes);
        final int radix = table.treeRadix(kind, bytes);   // the same on every rank for this call
        final int[] sockKids = sock.childrenFor(radix);
        if (bytes > 0) {
            // A leaf with a parent lets the parent read its shared buffer in place. (A lone rank
            // is its own root: its accumulator must be filled for phase 3 and the release.)
            boolean leafWithParent = sockKids.length == 0 && top == sock && sock.me != 0;
            if (leafWithParent && bytes > ShmLevel.INLINE_BYTES && src.isShared()) {
                desc |= Desc.SHARED; // zero copy: the parent reads this rank's shared buffer in place
            } else {
                src.copyIn(top, acc, t, 0, count);
            }
        }
        st.reset();
        sock.foldChildren(sockKids, set, s, desc, top.buf, acc, count, t, op, waiter, st, rank);         // phase 1
        if (top == node) {
            node.foldChildren(node.childrenFor(radix), set, s, desc, top.buf, acc, count, t, op, waiter, st, rank); // phase 2
        }
        ShmLevel res = top;
        int resOff;
        if (top.me != 0) {
            top.publish(set, ShmLevel.ARRIVED, s, desc, st);
            st.reset(); // the root's verdict (which includes ours) is what every rank reports
            top.await(set, 0, ShmLevel.RELEASED, s, waiter, st);                               // wait for phase 4/5
            resOff = top.dataOff(set, 0, bytes);
        } else {
            if (inter != null) {
                interNode(kind, top.buf, acc, count, t, op, root, desc);                      // phase 3
            }
            top.publish(set, ShmLevel.RELEASED, s, desc, st);
            resOff = acc;
        }
        if (top == node && sock.members > 1) {                                                // phase 4
            int mine = sock.dataOff(set, 0, bytes);
            if (kind == Collective.ALLREDUCE && bytes > 0 && st.ok()) {
                ShmLevel.copy(sock.buf, mine, res.buf, resOff, bytes);
                res = sock;
                resOff = mine;
            }
            sock.publish(set, ShmLevel.RELEASED, s, desc, st);
        }
        if (!st.ok()) {
            throw st.toException();
        }
        if (kind == Collective.ALLREDUCE) {
            dst.copyOut(res, resOff, t, 0, count);
        } else if (kind == Collective.REDUCE && rank == root) {
            ShmLevel nl = socketCount > 1 ? node : sock;   // the node leader's top level
            dst.copyOut(nl, nl.dataOff(set, 0, bytes), t, 0, count);
        }
    }

    /**
     * Long vectors, per chunk of at most a slot: every rank of a socket reduces its
     * cache-line-aligned tile of the chunk over all the socket's contributions, in member order
     * (phase 1 as a reduce-scatter); socket leaders do the same over sockets (phase 2); the node
     * leader runs the inter-node step on the whole chunk (phase 3); then everyone copies the
     * result out (phases 4-5 as one-stage broadcast). Chunks alternate between the two sets, so
     * chunk i+1's copy-in overlaps slower ranks' copy-out of chunk i.
     */
    private void tiled(Collective kind, DataType t, Op op, int root, int count, long desc, int chunkBytes) {
        final int size = t.size;
        final int chunkElems = chunkBytes / size;
        final int lineElems = 64 / size;
        final boolean wantResult = kind == Collective.ALLREDUCE || rank == root;
        final ShmLevel resLvl = socketCount > 1 ? node : sock;
        if (src.isShared()) {
            desc |= Desc.SHARED;
        }
        for (int first = 0; first < count; first += chunkElems) {
            final int n = Math.min(chunkElems, count - first);
            final long s = ++seq;
            final int set = (int) (s & 1);
            enter(s);
            st.reset();
            final int q = sock.members;
            final int me = sock.me;
            if (!src.isShared()) {
                src.copyIn(sock, sock.slot(set, me), t, first, n);
            }
            sock.publish(set, ShmLevel.ARRIVED, s, desc, st);
            // Phase 1: my tile over all members of my socket, in member order.
            int tile = ceilDiv(ceilDiv(n, q), lineElems) * lineElems;
            int lo = Math.min(n, me * tile);
            int hi = Math.min(n, lo + tile);
            ShmLevel out = socketCount > 1 ? node : sock;
            int outBase = socketCount > 1 ? node.slot(set, socketIndexInNode) : sock.result(set);
            int prev = 0;
            for (int m = 0; m < q; m++) {
                sock.awaitChecked(set, m, ShmLevel.ARRIVED, s, desc, waiter, st, rank);
                if (hi > lo && st.ok()) {
                    int from = (Desc.shared(sock.descOf(set, m)) ? sock.shared(m) + first * size : sock.slot(set, m)) + lo * size;
                    int to = outBase + lo * size;
                    if (q == 1) {
                        ShmLevel.copy(out.buf, to, sock.buf, from, (hi - lo) * size);
                    } else if (m == 1) {
                        Reductions.combine(t, op, out.buf, to, sock.buf, prev, sock.buf, from, hi - lo); // x0 op x1 in one pass
                    } else if (m > 1) {
                        Reductions.combine(t, op, out.buf, to, sock.buf, from, hi - lo);
                    }
                    prev = from;
                }
            }
            sock.publish(set, ShmLevel.TILED, s, desc, st);
            // Phase 2: socket leaders reduce node tiles over the sockets' results.
            if (socketCount > 1 && socketLeader) {
                for (int m = 1; m < q; m++) {
                    sock.awaitTiled(set, m, s, desc, waiter, st);
                }
                node.publish(set, ShmLevel.ARRIVED, s, desc, st);
                int ntile = ceilDiv(ceilDiv(n, socketCount), lineElems) * lineElems;
                int nlo = Math.min(n, node.me * ntile);
                int nhi = Math.min(n, nlo + ntile);
                for (int m = 0; m < socketCount; m++) {
                    node.awaitChecked(set, m, ShmLevel.ARRIVED, s, desc, waiter, st, rank);
                    if (nhi > nlo && st.ok()) {
                        int from = node.slot(set, m) + nlo * size;
                        int to = node.result(set) + nlo * size;
                        if (m == 1) {
                            Reductions.combine(t, op, node.buf, to, node.buf, node.slot(set, 0) + nlo * size, node.buf, from, nhi - nlo);
                        } else if (m > 1) {
                            Reductions.combine(t, op, node.buf, to, node.buf, from, nhi - nlo);
                        }
                    }
                }
                node.publish(set, ShmLevel.TILED, s, desc, st);
            }
            final int resOff = resLvl.result(set);
            if (nodeLeader) {
                ShmLevel top = socketCount > 1 ? node : sock;
                for (int m = 1; m < top.members; m++) {
                    top.awaitTiled(set, m, s, desc, waiter, st);
                }
                if (inter != null) { // even after a mismatch: the other node leaders are waiting in it
                    interNode(kind, resLvl.buf, resOff, n, t, op, root, desc);                  // phase 3
                }
                top.publish(set, ShmLevel.RELEASED, s, desc, st);
                if (top == node && q > 1) {
                    sock.publish(set, ShmLevel.RELEASED, s, desc, st);
                }
            } else if (socketCount > 1 && socketLeader) {
                st.reset();
                node.await(set, 0, ShmLevel.RELEASED, s, waiter, st);
                if (q > 1) {
                    sock.publish(set, ShmLevel.RELEASED, s, desc, st);
                }
            } else {
                st.reset();
                sock.await(set, 0, ShmLevel.RELEASED, s, waiter, st);
            }
            if (!st.ok()) {
                throw st.toException();
            }
            if (wantResult) {
                dst.copyOut(resLvl, resOff, t, first, n);
            }
        }
    }

    private void interNode(Collective kind, java.nio.ByteBuffer b, int off, int count, DataType t, Op op, int root, long desc) {
        desc &= ~Desc.SHARED; // where this rank's input lay is a local matter
        try {
            switch (kind) {
                case ALLREDUCE:
                    inter.allreduce(b, off, count, t, op, desc, st);
                    break;
                case REDUCE:
                    inter.reduce(b, off, count, t, op, topo.nodeOf(root), desc, st);
                    break;
                default:
                    inter.barrier(desc, st);
                    break;
            }
        } catch (PeerFailureException e) {
            // Failed between nodes (a leader died, the network broke): tell this node's ranks now,
            // blaming the same rank, rather than leaving them to wait for the release until their timeout.
            int[] blamed = e.ranks();
            giveUp(blamed.length > 0 ? blamed[0] : -1);
            throw e;
        }
    }

    static int ceilDiv(int a, int b) {
        return (a + b - 1) / b;
    }

    /**
     * Called by the {@link Waiter} every 20 ms of a slow wait: fail at once if a local peer
     * process died or another rank already gave up, and after the timeout name the ranks that
     * never entered this collective.
     */
    @Override
    public void check(int awaitedRank, long waitedNanos, long timeoutNanos) {
        String what = current.name().toLowerCase() + " #" + seq;
        List<Integer> dead = new ArrayList<>();
        for (int r = 0; r < size; r++) {
            if (onMyHost[r] && pids[r] != myPid && !ProcessHandle.of(pids[r]).map(ProcessHandle::isAlive).orElse(false)) {
                dead.add(r);
            }
        }
        if (!dead.isEmpty()) {
            giveUp(dead.get(0));
            throw new PeerFailureException("rank " + rank + ": peer rank(s) " + dead + " died (process gone) during " + what
                    + " while waiting for rank " + awaitedRank, dead.stream().mapToInt(Integer::intValue).toArray());
        }
        long abort = node.abortWord();
        if (abort == 0 && inter != null) {
            abort = inter.abortWord();
        }
        if (abort != 0 && (int) abort != rank + 1) {
            int giver = (int) abort - 1;
            int blamed = (int) (abort >>> 32) - 1;
            giveUp(blamed);
            throw new PeerFailureException("rank " + rank + ": rank " + giver + " gave up on the job during " + what
                    + (blamed >= 0 ? " because of rank " + blamed : "") + "; see its error",
                    blamed >= 0 ? new int[] {blamed} : new int[] {giver});
        }
        if (waitedNanos >= timeoutNanos) {
            List<Integer> behind = new ArrayList<>();
            for (int j = 0; j < localRanks.length; j++) {
                if (Flags.volatileGet(node.buf, node.progress(j) + 8) < seq) {
                    behind.add(localRanks[j]);
                }
            }
            boolean awaitedIsLocal = topo.nodeOf(awaitedRank) == nodeIndex;
            if (behind.isEmpty() && awaitedIsLocal && topo.nodeCount() > 1 && waitedNanos < 2 * timeoutNanos) {
                return; // the whole node arrived: the culprit is on another node and our leader will name it
            }
            if (behind.isEmpty()) {
                behind.add(awaitedRank);
            }
            giveUp(behind.get(0));
            throw new PeerFailureException("rank " + rank + ": timed out after "
                    + String.format("%.1f", timeoutNanos / 1e9) + " s in " + what + " waiting for rank "
                    + awaitedRank + "; rank(s) " + behind + " did not arrive (sharp4j.timeout)",
                    behind.stream().mapToInt(Integer::intValue).toArray());
        }
    }

    private void giveUp(int blamed) {
        node.abort(rank, blamed);
        if (inter != null) {
            inter.abort(rank, blamed);
        }
    }

    /**
     * Gives up on the job, like MPI_Abort for the peers: ranks waiting in a collective with this
     * rank (on this node, and node leaders of simulated nodes) fail within milliseconds instead of
     * at the timeout. Local and non-blocking; the communicator is unusable afterwards.
     */
    public void abort(String reason) {
        giveUp(rank);
        if (broken == null) {
            broken = new Sharp4jException("aborted by this rank: " + reason);
        }
    }

    @Override
    public void close() {
        if (inter != null) {
            inter.close();
        }
        for (Segment s : segments) {
            s.close();
        }
        segments.clear();
    }
}
