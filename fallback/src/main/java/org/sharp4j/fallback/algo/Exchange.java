package org.sharp4j.fallback.algo;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.Sharp4jException;
import org.sharp4j.coll.CallStatus;
import org.sharp4j.coll.Desc;
import org.sharp4j.coll.Reductions;
import org.sharp4j.fallback.transport.Transport;
import org.sharp4j.shm.Waiter;

/**
 * What every k-nomial algorithm of the host path does in a round: post the receives and sends of
 * one group, wait for exactly those requests, and reduce in group-position order. One per step;
 * everything (scratch, request handles, the condition the {@link Waiter} polls) is allocated at
 * construction, so a round allocates nothing.
 *
 * <h2>Two kinds of round</h2>
 * <ul>
 *   <li><b>Spine rounds</b> (tag kind {@link #KIND_SPINE}) carry a 48-byte header in front of a
 *   payload of at most {@link #spineBytes()}: the caller's call descriptor and {@link CallStatus},
 *   merged group by group, so that the header is allreduced along the recursive k-nomial pattern of
 *   the <em>spine radix</em> (a job-wide constant). Receives are posted with the full slot size,
 *   so a peer that disagrees on the call (another count, type, collective, algorithm) can never
 *   truncate or overrun anything: its message is one message matched by one receive, its header
 *   says what it called, and a node whose merged status is not ok sends headers only and combines
 *   nothing. Every node runs the same spine rounds whatever it was called with, so a mismatch
 *   ends in the same status on every node instead of a hang. A payload longer than
 *   {@link #splitBytes()} travels <em>split</em> (see below).</li>
 *   <li><b>Data rounds</b> (tag kind {@link #KIND_DATA}) move raw payload with no header, in
 *   fragments of {@link #fragBytes()}, two fragments in flight per peer (scratch slots 0 and 1),
 *   straight from and (for copies) straight into the caller's buffer. They run only after a spine
 *   that ended ok, i.e. when every node agreed on the call, so sizes match exactly.</li>
 * </ul>
 *
 * <h2>Split spine messages</h2>
 * A spine message is one contiguous message, so its payload is staged behind the header: a copy
 * of the payload per send (a 512 KiB copy took 13 us here, hot in the cache: as long as the round
 * trip the merging saves). Above {@link #splitBytes()}, the header goes alone (its length field
 * {@code H_LEN} with {@link #SPLIT} set) and the payload as a second message straight from the
 * caller's memory, tagged with fragment 1 of the round (the header has fragment 0: the two may
 * travel on different sockets, so they are told apart by tag, not by order). Who may expect what:
 * <ul>
 *   <li>a receiver whose status is ok and that expects a payload longer than {@link #splitBytes()}
 *       from a position posts the payload's receive (the rest of that position's slot) with the
 *       header's, before any send: it lands where a whole message's payload would;</li>
 *   <li>the header says what came: a split payload of that length (awaited), or a payload inside
 *       the header's message, or none (the sender's status was not ok, or it disagrees on the
 *       call): then the payload receive that will never match is cancelled;</li>
 *   <li>a receiver that posted no payload receive (its status was not ok, or it expected less)
 *       and reads {@link #SPLIT} in a header receives the payload all the same, into that slot,
 *       and drops it: no message of the call is left behind, whatever the nodes called.</li>
 * </ul>
 * The payload is at most {@link #spineBytes()} on every node (it is merged only up to it), so it
 * fits the slot whatever the receiver expected. In a round that folds with one other member and
 * reads this node's data from a {@link #source} that shares no memory with the buffer, the
 * expected payload is received into the buffer, where the fold's result goes, and folded there
 * ({@code u = own op u} at position 0, {@code u op own} at 1: the bracket of
 * {@link #combineOrdered}), as {@link PostedRounds} does and for its reason (UCX copies every
 * byte it receives out of its own buffer: into the scratch, the fold read those lines back and
 * wrote the result's; into the result, it reads lines just written and writes them once); that
 * receive takes exactly the expected length, so a longer payload from a node that disagrees is
 * truncated and is a mismatch, and the buffer's content is then undefined, as after any failed call.
 *
 * <h2>Own data read where it lies</h2>
 * {@link #source} names memory holding this node's data for a call run on spine rounds (the
 * merged forms): the first round that reads this node's data sends it from there and folds it
 * from there as its own operand ({@link #combineOrdered}'s {@code own}), writing the result to the
 * buffer; later rounds read the buffer, as without a source. The same operations on the same
 * operands, so the same bits, without the caller's copy of its input into its output.
 *
 * <h2>Tags (48 bits)</h2>
 * <pre>
 *   bits 44-47 kind (1 spine, 2 data, 3 abort; 4-8 an offload's recovery: see HostStep)
 *   bits 20-43 call sequence mod 2^24
 *   bits 14-19 round (0 fold-in, 1.. iterations, then allgather / fold-out)   bits 0-13 fragment mod 2^14
 * </pre>
 * Sequence and fragment numbers wrap safely: messages of one pair and tag are matched in posting
 * order, calls never overlap, and a data round has at most two fragments in flight per peer.
 *
 * <h2>Reduction order (bit-identical results on every node)</h2>
 * In a group of g members at positions 0..g-1 every member computes
 * {@code ((p0 op p1) op p2) ... op p(g-1)}, left to right by position, whichever position it holds
 * itself (the kernels compute {@code dst = a op b} with a the left operand). With its own data at
 * position m &gt; 0 a member accumulates in the slot of position 0 and writes the last step into
 * its buffer: {@code acc = p0; acc = acc op p1 ...; buf = acc op p(g-1)}, where p_m is read from
 * the buffer. A proxy folds in its extra as {@code proxy op extra}. So for n=8, k=2 the result is
 * {@code ((x0 op x1) op (x2 op x3)) op ((x4 op x5) op (x6 op x7))} on every node, in every
 * algorithm that follows the pattern (recursive k-ing and the reduce-scatter of SRA bracket
 * identically). The k-nomial reduce tree folds a parent's children in increasing position after
 * the parent's own value.
 *
 * <h2>Header (48 bytes, this buffer order)</h2>
 * <pre>
 *   0 desc of the group's representative (position 0)   8 status code   16 descA   24 descB
 *   32 representative's global rank   36 payload bytes   40 magic   44 call sequence (low 32 bits)
 * </pre>
 * Merge of a group's headers by position: the first non-zero code wins; else the first position
 * whose desc differs from position 0's records {@code mismatch(rank0, desc0, rankJ, descJ)}; the
 * representative stays position 0. Every member merges the same headers in the same order, so
 * after the spine every node holds the same status; a status that is ok means every node called
 * with the same descriptor (a group ok has all members equal to its representative, inductively).
 */
public final class Exchange implements RoundSink {
    public static final int HDR = 48;
    static final int H_DESC = 0;
    static final int H_STATUS = 8;
    static final int H_RANK = 32;
    static final int H_LEN = 36;
    static final int H_MAGIC = 40;
    static final int H_SEQ = 44;
    static final int MAGIC = 0x53344A4B;

    public static final int KIND_SPINE = 1;
    public static final int KIND_DATA = 2;
    public static final int KIND_ABORT = 3;
    /** Phase 0 of an offload's recovery (spine only): its messages are also the trigger other leaders probe for. */
    public static final int KIND_RECOVERY = 4;
    /** Phase 1 of an offload's recovery (the call redone on the host path): spine and data. */
    public static final int KIND_REDO_SPINE = 5;
    public static final int KIND_REDO_DATA = 6;
    /** Phase 0's data rounds (a result longer than a fragment). */
    public static final int KIND_RECOVERY_DATA = 7;
    /** A recovery's wake-up (HostStep's dissemination): what other leaders' waits probe for. */
    public static final int KIND_RECOVERY_WAKE = 8;
    /** "Are you alive?" from a leader that timed out waiting for the receiver (its peer index in the seq field). */
    public static final int KIND_QUERY = 9;
    /** The answer to {@link #KIND_QUERY} (the answering leader's peer index in the seq field). */
    public static final int KIND_QUERY_REPLY = 10;
    /** Largest radix the algorithms take. */
    public static final int MAX_RADIX = 8;
    /** Rounds are 6 bits of the tag. */
    public static final int MAX_ROUND = 63;

    static final int TRUNCATED = -2;
    /** In a header's {@code H_LEN}: the payload follows as a message of its own (class comment, "Split spine messages"). */
    static final int SPLIT = 1 << 31;
    /** The fragment number of a split payload's tag (its header has 0). */
    static final int SPLIT_FRAG = 1;

    /** The tag of a message: see the class comment. */
    public static long tag(int kind, long seq, int round, int frag) {
        return ((long) kind << 44) | ((seq & 0xFFFFFFL) << 20) | ((long) (round & 0x3F) << 14) | (frag & 0x3FFF);
    }

    private final Transport tr;
    private final Waiter waiter;
    private final int[] globalRank;
    private final int myRank;
    private final int frag;
    private final int slot;
    private final int split;
    /** This node's data for the next round that reads it ({@link #source}), or null: the buffer. */
    private ByteBuffer src;
    private int srcOff;
    private final int maxPeers;
    /** Per peer slot of a group, two slots of {@link #slot} bytes: receive fragments / spine receive + staged send. */
    private final ByteBuffer scratch;
    /** This node's current header (its state for the call). */
    private final ByteBuffer state;
    private final Pending pending = new Pending();

    private long seq;
    private long myDesc;
    private int spineKind = KIND_SPINE;
    private int dataKind = KIND_DATA;
    /** Called every 64 polls of a wait, on the transport's thread (an offload's recovery triggers), or null. */
    private Runnable sideWork;

    // The group of the next round, by position.
    private int g;
    private int mp;
    private final int[] peer = new int[MAX_RADIX];
    private final boolean[] sendTo = new boolean[MAX_RADIX];
    private final boolean[] recvFrom = new boolean[MAX_RADIX];
    private final int[] sOff = new int[MAX_RADIX];
    private final int[] sLen = new int[MAX_RADIX];
    private final int[] rOff = new int[MAX_RADIX];
    private final int[] rLen = new int[MAX_RADIX];
    private final int[] sreq = new int[2 * MAX_RADIX];
    private final int[] rreq = new int[2 * MAX_RADIX];
    private final int[] rbytes = new int[MAX_RADIX];
    /** Whether this round's one split payload receive goes into the buffer (see "Split spine messages"). */
    private boolean directIn;
    /** Whether the source and the buffer share memory. */
    private final Extents extents = new Extents();
    /** A spine round's split payload requests by position index (-1: none). */
    private final int[] psreq = new int[MAX_RADIX];
    private final int[] prreq = new int[MAX_RADIX];

    /**
     * @param fragBytes payload bytes per fragment, a multiple of 8 (the largest spine payload and
     *        the unit of pipelining); the scratch is {@code 2 * (HDR + fragBytes)} per peer of a group
     */
    public Exchange(Transport tr, Waiter waiter, int maxRadix, int fragBytes) {
        this(tr, waiter, maxRadix, fragBytes, fragBytes, fragBytes);
    }

    /**
     * @param fragBytes  payload bytes per fragment of the data rounds, a multiple of 8 (the unit of pipelining)
     * @param spineBytes the largest spine payload, a multiple of 8, at least {@code fragBytes}; the
     *                   scratch is {@code 2 * (HDR + spineBytes)} per peer of a group. Every node
     *                   must pass the same sizes.
     * @param splitBytes spine payloads longer than this travel split (class comment)
     */
    public Exchange(Transport tr, Waiter waiter, int maxRadix, int fragBytes, int spineBytes, int splitBytes) {
        if (fragBytes < 64 || fragBytes % 8 != 0) {
            throw new IllegalArgumentException("fragment bytes must be a multiple of 8 and >= 64: " + fragBytes);
        }
        if (spineBytes < fragBytes || spineBytes % 8 != 0) {
            throw new IllegalArgumentException("spine bytes must be a multiple of 8 and >= the fragment (" + fragBytes + "): "
                    + spineBytes);
        }
        if (splitBytes < 1) {
            throw new IllegalArgumentException("split bytes must be positive: " + splitBytes);
        }
        this.tr = tr;
        this.waiter = waiter;
        int n = tr.peers();
        this.globalRank = new int[n];
        for (int p = 0; p < n; p++) {
            globalRank[p] = tr.globalRank(p);
        }
        this.myRank = globalRank[tr.peer()];
        this.frag = fragBytes;
        this.slot = HDR + spineBytes;
        this.split = splitBytes;
        this.maxPeers = Math.max(1, Math.min(Math.min(maxRadix, MAX_RADIX), n) - 1);
        this.scratch = ByteBuffer.allocateDirect(2 * maxPeers * slot).order(ByteOrder.nativeOrder());
        this.state = ByteBuffer.allocateDirect(HDR).order(ByteOrder.nativeOrder());
    }

    public int fragBytes() {
        return frag;
    }

    /** The largest payload of a spine round (at least {@link #fragBytes()}): what the merged forms take. */
    public int spineBytes() {
        return slot - HDR;
    }

    /** Spine payloads longer than this travel split ("Split spine messages" in the class comment). */
    public int splitBytes() {
        return split;
    }

    /**
     * This node's data of the next call run on spine rounds lies at {@code src[srcOff, ...)}, laid
     * out as the buffer the call is given ("Own data read where it lies"); {@code null}: in the
     * buffer. Cleared by the first round that reads it and by {@link #begin}.
     */
    public void source(ByteBuffer src, int srcOff) {
        this.src = src;
        this.srcOff = srcOff;
    }

    /** Global rank of node {@code p}'s leader. */
    public int globalRank(int p) {
        return globalRank[p];
    }

    // ---------------------------------------------------------------- call state

    /** The tag kinds of the spine and data rounds from now on (a recovery's runner uses its own). */
    public void kinds(int spine, int data) {
        this.spineKind = spine;
        this.dataKind = data;
    }

    /** Work done every 64 polls while a round waits (slow path), e.g. serving another leader's recovery; null: none. */
    public void sideWork(Runnable r) {
        this.sideWork = r;
    }

    /** Starts a call: this node's header holds {@code desc} and the status it arrived with. */
    public void begin(long seq, long desc, CallStatus in) {
        this.src = null;
        this.seq = seq;
        this.myDesc = desc;
        state.putLong(H_DESC, desc);
        in.writeRaw(state, H_STATUS);
        state.putInt(H_RANK, myRank);
        state.putInt(H_LEN, 0);
        state.putInt(H_MAGIC, MAGIC);
        state.putInt(H_SEQ, (int) seq);
    }

    /** Whether the status merged so far is ok. */
    public boolean ok() {
        return state.getLong(H_STATUS) == 0;
    }

    /** Ends a call: {@code out} becomes the merged status. */
    public void end(CallStatus out) {
        out.readRaw(state, H_STATUS);
    }

    private void mismatch(int rankA, long descA, int rankB, long descB) {
        if (ok()) {
            state.putLong(H_STATUS, code(rankA, rankB));
            state.putLong(H_STATUS + 8, descA);
            state.putLong(H_STATUS + 16, descB);
        }
    }

    private static long code(int rankA, int rankB) {
        return ((long) (rankA + 1) << 32) | ((rankB + 1) & 0xFFFFFFFFL);
    }

    // ---------------------------------------------------------------- group of a round

    /** Starts describing a round's group: {@code g} members, this node at position {@code mp}. */
    @Override
    public void group(int g, int mp) {
        this.g = g;
        this.mp = mp;
        for (int i = 0; i < g; i++) {
            sendTo[i] = false;
            recvFrom[i] = false;
        }
    }

    /** Position {@code pos} is node {@code p}. */
    @Override
    public void member(int pos, int p) {
        peer[pos] = p;
    }

    /** Send elements {@code [off, off+len)} of the buffer to position {@code pos}. */
    @Override
    public void sendTo(int pos, int off, int len) {
        sendTo[pos] = true;
        sOff[pos] = off;
        sLen[pos] = len;
    }

    /** Receive {@code len} elements from position {@code pos}, combined into (or copied to) elements {@code [off, off+len)}. */
    @Override
    public void recvFrom(int pos, int off, int len) {
        recvFrom[pos] = true;
        rOff[pos] = off;
        rLen[pos] = len;
    }

    private int pi(int pos) {
        return pos < mp ? pos : pos - 1;
    }

    private int slotOff(int pi, int s) {
        return (2 * pi + s) * slot;
    }

    // ---------------------------------------------------------------- waiting

    /** Polls one request; what the waiter spins, yields and parks on. */
    private final class Pending implements Waiter.Condition {
        int req;
        int bytes;
        int polls;

        @Override
        public boolean done() {
            if (abortRequest != null) { // another thread aborted: end the wait here, on the transport's own thread
                throw new org.sharp4j.Sharp4jException(abortRequest);
            }
            Runnable side = sideWork;
            if (side != null && (++polls & 63) == 0) {
                side.run();
            }
            int r;
            try {
                r = tr.test(req);
            } catch (Transport.TruncatedException e) {
                bytes = TRUNCATED;
                return true;
            }
            if (r < 0) {
                return false;
            }
            bytes = r;
            return true;
        }

        @Override
        public long activity() {
            return tr.progressEvents(); // no naps while messages move (Waiter.Condition#activity)
        }
    }

    /** Set by another thread (volatile: read once per poll, a plain load on x86) to end the current wait with an error. */
    private volatile String abortRequest;

    /**
     * Makes the thread inside a call stop waiting and fail with {@code reason}, so that the single
     * thread that drives the transport is the one that tells the peers (see HostStep.abort).
     */
    public void requestAbort(String reason) {
        abortRequest = reason;
    }

    private int await(int req, int node) {
        pending.req = req;
        waiter.await(pending, globalRank[node]);
        return pending.bytes;
    }

    // ---------------------------------------------------------------- spine rounds

    /**
     * One spine round of the current group: every receive is a header plus at most
     * {@link #spineBytes()}, every send this node's header plus (while its status is ok) the
     * elements named by {@link #sendTo}, split above {@link #splitBytes()}. Then either
     * {@code take} (fold-out at an extra: adopt the one sender's header, copy its payload if ok)
     * or merge the headers of all g positions and, if still ok, combine the received payloads into
     * the receive region in position order.
     */
    public void spineRound(int round, ByteBuffer u, int uOff, DataType t, Op op, boolean take) {
        final long tg = tag(spineKind, seq, round, 0);
        final long tp = tag(spineKind, seq, round, SPLIT_FRAG);
        final int size = t == null ? 0 : t.size;
        final boolean okNow = ok();
        // Own data: the source for the first round that reads it (sends it, or folds it), else the buffer.
        boolean reads = false;
        if (okNow && src != null) {
            for (int pos = 0; pos < g; pos++) {
                if (pos != mp && (sendTo[pos] && sLen[pos] > 0 || recvFrom[pos] && rLen[pos] > 0)) {
                    reads = true;
                }
            }
        }
        final ByteBuffer own = reads ? src : u;
        final int ownOff = reads ? srcOff : uOff;
        if (reads) {
            src = null;
        }
        // One peer's split payload straight into the result (see "Split spine messages"): this round
        // folds with one other member and reads this node's data from a source apart from the buffer.
        final boolean direct = reads && g == 2 && !take && extents.disjoint(own, u);
        for (int pos = 0; pos < g; pos++) {
            if (pos != mp && recvFrom[pos]) {
                final int pi = pi(pos);
                rreq[pi] = tr.recv(peer[pos], tg, scratch, slotOff(pi, 0), slot);
                // the payload's receive where a split payload is expected (see "Split spine messages")
                if (okNow && (long) rLen[pos] * size > split) {
                    prreq[pi] = direct ? tr.recv(peer[pos], tp, u, uOff + rOff[pos] * size, rLen[pos] * size)
                            : tr.recv(peer[pos], tp, scratch, slotOff(pi, 0) + HDR, slot - HDR);
                    directIn = direct;
                } else {
                    prreq[pi] = -1;
                    directIn = false;
                }
            }
        }
        int stagedAt = -1;
        int stagedOff = 0;
        int stagedLen = 0;
        for (int pos = 0; pos < g; pos++) {
            if (pos == mp || !sendTo[pos]) {
                continue;
            }
            final int pi = pi(pos);
            final int plen = okNow ? sLen[pos] : 0;
            final int bytes = plen * size;
            final boolean splits = bytes > split;
            int at;
            if (stagedAt >= 0 && stagedOff == sOff[pos] && stagedLen == plen) {
                at = stagedAt;
            } else {
                at = slotOff(pi, 1);
                scratch.put(at, state, 0, HDR);
                scratch.putInt(at + H_LEN, splits ? bytes | SPLIT : bytes);
                if (plen > 0 && !splits) {
                    scratch.put(at + HDR, own, ownOff + sOff[pos] * size, bytes);
                }
                stagedAt = at;
                stagedOff = sOff[pos];
                stagedLen = plen;
            }
            sreq[pi] = tr.send(peer[pos], tg, scratch, at, splits ? HDR : HDR + bytes);
            psreq[pi] = splits ? tr.send(peer[pos], tp, own, ownOff + sOff[pos] * size, bytes) : -1;
        }
        int any = -1;
        for (int pos = 0; pos < g; pos++) {
            if (pos != mp && recvFrom[pos]) {
                final int pi = pi(pos);
                int b = await(rreq[pi], peer[pos]);
                sanitize(pos, b);
                rbytes[pi] = payload(pos, b, tp);
                any = pos;
            }
        }
        for (int pos = 0; pos < g; pos++) {
            if (pos != mp && sendTo[pos]) {
                await(sreq[pi(pos)], peer[pos]);
                if (psreq[pi(pos)] >= 0) {
                    await(psreq[pi(pos)], peer[pos]);
                }
            }
        }
        if (any < 0) {
            return;
        }
        final int len = rLen[any];
        if (take) {
            int at = slotOff(pi(any), 0);
            state.put(H_DESC, scratch, at + H_DESC, H_LEN - H_DESC); // desc, status, rank
            if (ok() && len > 0) {
                if (rbytes[pi(any)] == HDR + len * size) {
                    u.put(uOff + rOff[any] * size, scratch, at + HDR, len * size);
                } else {
                    wrongLength(any);
                }
            }
            return;
        }
        merge();
        if (ok() && len > 0) {
            for (int pos = 0; pos < g; pos++) {
                if (pos != mp && rbytes[pi(pos)] != HDR + len * size) {
                    wrongLength(pos); // cannot happen between nodes that agree on the call
                }
            }
            if (ok() && directIn) { // the peer's payload is in u already: u = own op u at position 0, u op own at 1
                final int at = uOff + rOff[any] * size;
                final int ownAt = ownOff + rOff[any] * size;
                if (mp == 0) {
                    Reductions.combine(t, op, u, at, own, ownAt, u, at, len);
                } else {
                    Reductions.combine(t, op, u, at, own, ownAt, len);
                }
            } else if (ok()) {
                combineOrdered(u, uOff + rOff[any] * size, own, ownOff + rOff[any] * size, len, t, op, g, mp, scratch, slot, 0, HDR);
            }
        }
    }

    /**
     * The bytes a position's spine message brought, header included, once its header arrived
     * ({@code bytes}, sanitized): a split payload is awaited (or, if this node posted no receive
     * for it, received into the slot all the same), and a payload receive that the header says
     * will not be matched is cancelled; so every message of the round is matched before it ends.
     */
    private int payload(int pos, int bytes, long tp) {
        final int pi = pi(pos);
        final int at = slotOff(pi, 0);
        final int hl = bytes >= HDR ? scratch.getInt(at + H_LEN) : 0;
        int posted = prreq[pi];
        prreq[pi] = -1;
        if (bytes != HDR || (hl & SPLIT) == 0 || scratch.getInt(at + H_MAGIC) != MAGIC) {
            if (posted >= 0) {
                tr.cancel(posted); // the header brought the payload, or none: nothing will match it
            }
            return bytes;
        }
        final int want = hl & ~SPLIT;
        if (want > slot - HDR) { // every node merges at most its slot: a peer that announces more runs other code
            throw new Sharp4jException("inter-node protocol error: rank " + globalRank[peer[pos]] + " announced a spine payload of "
                    + want + " bytes, more than the " + (slot - HDR) + " of a slot, to rank " + myRank);
        }
        if (posted < 0) { // not expected here: take it all the same (a call this node disagrees on, or a status not ok)
            directIn = false;
            posted = tr.recv(peer[pos], tp, scratch, at + HDR, slot - HDR);
        }
        int got = await(posted, peer[pos]);
        return got == TRUNCATED ? TRUNCATED : HDR + got;
    }
    /** A message that is not a header of this call (truncated, foreign) becomes a mismatch header from its sender. */
    private void sanitize(int pos, int bytes) {
        int at = slotOff(pi(pos), 0);
        if (bytes >= HDR && scratch.getInt(at + H_MAGIC) == MAGIC && scratch.getInt(at + H_SEQ) == (int) seq) {
            return;
        }
        int his = globalRank[peer[pos]];
        scratch.putLong(at + H_DESC, 0);
        scratch.putLong(at + H_STATUS, code(myRank, his));
        scratch.putLong(at + H_STATUS + 8, myDesc);
        scratch.putLong(at + H_STATUS + 16, 0);
        scratch.putInt(at + H_RANK, his);
        scratch.putInt(at + H_LEN, 0);
    }

    private void wrongLength(int pos) {
        mismatch(myRank, myDesc, globalRank[peer[pos]], scratch.getLong(slotOff(pi(pos), 0) + H_DESC));
    }

    /** Merges the g headers of the group in position order into this node's header (class comment). */
    private void merge() {
        ByteBuffer rb = mp == 0 ? state : scratch;
        int ro = mp == 0 ? 0 : slotOff(pi(0), 0);
        final long repDesc = rb.getLong(ro + H_DESC);
        final int repRank = rb.getInt(ro + H_RANK);
        long c = 0;
        long a = 0;
        long b = 0;
        for (int pos = 0; pos < g; pos++) {
            ByteBuffer hb = pos == mp ? state : scratch;
            int ho = pos == mp ? 0 : slotOff(pi(pos), 0);
            long code = hb.getLong(ho + H_STATUS);
            if (code != 0) {
                c = code;
                a = hb.getLong(ho + H_STATUS + 8);
                b = hb.getLong(ho + H_STATUS + 16);
                break;
            }
            long d = hb.getLong(ho + H_DESC);
            if (pos > 0 && Desc.differs(repDesc, d)) {
                c = code(repRank, hb.getInt(ho + H_RANK));
                a = repDesc;
                b = d;
                break;
            }
        }
        state.putLong(H_DESC, repDesc);
        state.putInt(H_RANK, repRank);
        state.putLong(H_STATUS, c);
        state.putLong(H_STATUS + 8, a);
        state.putLong(H_STATUS + 16, b);
    }

    // ---------------------------------------------------------------- data rounds

    static int frags(int len, int fe) {
        return len <= 0 ? 0 : (len - 1) / fe + 1;
    }

    static int fragLen(int len, int f, int fe) {
        return Math.min(fe, len - f * fe);
    }

    /**
     * One data round of the current group, pipelined by fragments (two in flight per peer). With
     * {@code combine} every receive goes to scratch and fragment f of the receive region is reduced
     * in position order once fragment f arrived from every member and this node's sends of
     * fragment f completed (they may read the same region); without it receives land directly in
     * the buffer at their offsets (the regions must not overlap the ones being sent).
     */
    @Override
    public void dataRound(int round, ByteBuffer u, int uOff, DataType t, Op op, boolean combine) {
        final int size = t.size;
        final int fe = frag / size;
        int nf = 0;
        int cOff = 0;
        int cLen = 0;
        for (int pos = 0; pos < g; pos++) {
            if (pos == mp) {
                continue;
            }
            if (sendTo[pos]) {
                nf = Math.max(nf, frags(sLen[pos], fe));
            }
            if (recvFrom[pos]) {
                nf = Math.max(nf, frags(rLen[pos], fe));
                cOff = rOff[pos];
                cLen = rLen[pos];
            }
        }
        for (int f = 0; f < Math.min(nf, 2); f++) {
            post(round, f, u, uOff, size, fe, combine);
        }
        for (int f = 0; f < nf; f++) {
            final int s = f & 1;
            for (int pos = 0; pos < g; pos++) {
                if (pos != mp && recvFrom[pos] && f < frags(rLen[pos], fe)) {
                    int want = fragLen(rLen[pos], f, fe) * size;
                    int got = await(rreq[2 * pi(pos) + s], peer[pos]);
                    if (got != want) {
                        throw new Sharp4jException("inter-node protocol error: rank " + globalRank[peer[pos]] + " sent "
                                + (got == TRUNCATED ? "more than" : got + " bytes instead of") + " the " + want
                                + " bytes of fragment " + f + " of round " + round + " to rank " + myRank);
                    }
                }
            }
            for (int pos = 0; pos < g; pos++) {
                if (pos != mp && sendTo[pos] && f < frags(sLen[pos], fe)) {
                    await(sreq[2 * pi(pos) + s], peer[pos]);
                }
            }
            if (combine && f < frags(cLen, fe)) {
                combineOrdered(u, uOff + (cOff + f * fe) * size, fragLen(cLen, f, fe), t, op, s, 0);
            }
            if (f + 2 < nf) {
                post(round, f + 2, u, uOff, size, fe, combine);
            }
        }
    }

    private void post(int round, int f, ByteBuffer u, int uOff, int size, int fe, boolean combine) {
        final long tg = tag(dataKind, seq, round, f);
        final int s = f & 1;
        for (int pos = 0; pos < g; pos++) {
            if (pos != mp && recvFrom[pos] && f < frags(rLen[pos], fe)) {
                int bytes = fragLen(rLen[pos], f, fe) * size;
                rreq[2 * pi(pos) + s] = combine ? tr.recv(peer[pos], tg, scratch, slotOff(pi(pos), s), bytes)
                        : tr.recv(peer[pos], tg, u, uOff + (rOff[pos] + f * fe) * size, bytes);
            }
        }
        for (int pos = 0; pos < g; pos++) {
            if (pos != mp && sendTo[pos] && f < frags(sLen[pos], fe)) {
                sreq[2 * pi(pos) + s] = tr.send(peer[pos], tg, u, uOff + (sOff[pos] + f * fe) * size,
                        fragLen(sLen[pos], f, fe) * size);
            }
        }
    }

    // ---------------------------------------------------------------- the ordered reduction

    /**
     * {@code u[at, at+cnt)} becomes {@code ((p0 op p1) op p2) ... op p(g-1)} by position, where
     * this node's p_mp is {@code u} itself and the others are in their scratch slot {@code s} at
     * {@code in} bytes into the slot. Positions that sent nothing in this round do not occur: in
     * a combining round every other member sends.
     */
    private void combineOrdered(ByteBuffer u, int at, int cnt, DataType t, Op op, int s, int in) {
        combineOrdered(u, at, u, at, cnt, t, op, g, mp, scratch, slot, s, in);
    }

    /**
     * The ordered reduction of a group of {@code g} with this node at position {@code mp}, the
     * others' data in {@code scratch} at {@code (2 * pi + s) * slot + in} (pi: the position's index
     * among the others): shared by the blocking rounds and {@link PostedRounds}, so both fold alike.
     * This node's operand is read from {@code own[ownAt, ...)} and the result written to
     * {@code u[at, ...)}: the same memory, or (a part's first round on the caller's input, see
     * {@link Schedule#source}) the input, read in place and never written; either way the same
     * operations on the same operands in the same order, so the same bits.
     */
    static void combineOrdered(ByteBuffer u, int at, ByteBuffer own, int ownAt, int cnt, DataType t, Op op, int g, int mp,
            ByteBuffer scratch, int slot, int s, int in) {
        if (mp == 0) {
            for (int pos = 1; pos < g; pos++) {
                if (pos == 1) {
                    Reductions.combine(t, op, u, at, own, ownAt, scratch, (2 * (pos - 1) + s) * slot + in, cnt); // u = p0 op p1
                } else {
                    Reductions.combine(t, op, u, at, scratch, (2 * (pos - 1) + s) * slot + in, cnt);
                }
            }
            return;
        }
        final int acc = s * slot + in; // position 0 is index 0 among the others
        for (int pos = 1; pos < g; pos++) {
            ByteBuffer xb = pos == mp ? own : scratch;
            int xo = pos == mp ? ownAt : (2 * (pos < mp ? pos : pos - 1) + s) * slot + in;
            if (pos == g - 1) {
                Reductions.combine(t, op, u, at, scratch, acc, xb, xo, cnt);
            } else {
                Reductions.combine(t, op, scratch, acc, scratch, acc, xb, xo, cnt);
            }
        }
    }
}
