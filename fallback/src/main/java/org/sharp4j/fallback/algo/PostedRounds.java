package org.sharp4j.fallback.algo;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.sharp4j.Sharp4jException;
import org.sharp4j.coll.Reductions;
import org.sharp4j.fallback.transport.Transport;

/**
 * The data rounds of one part of a long call ({@link Schedule}), run without blocking: {@link
 * #advance} does whatever has become possible (tests the requests of the current fragment, folds
 * it, posts the fragment two ahead, moves to the next round) and returns at the first request still
 * in flight. So a node leader can keep several parts in flight between nodes while it reduces the
 * next chunks on its node, and drive them from its waits.
 *
 * <h2>What a round does</h2>
 * Exactly what {@link Exchange#dataRound} does, as a state machine: fragments of {@code fragBytes}
 * (two in flight per peer, in scratch slots 0 and 1 by fragment parity), fragment f of the receive
 * region folded in group-position order ({@link Exchange#combineOrdered}, the same bracket) once
 * fragment f arrived from every member and this node's sends of fragment f completed; copies land
 * in the buffer directly. With a source ({@link Schedule#source}) the part's first round that
 * reads this node's data sends it from the source and folds it from there into the buffer. The
 * tags are the data rounds' ({@link Exchange#tag}) with this part's own sequence number, so parts
 * in flight together never match each other's messages.
 *
 * <h2>One peer's fragments straight into the result</h2>
 * A round that folds with one other member (a group of two: recursive doubling, SRA radix 2, a
 * binomial tree's first child, a non-power group's extra node at its proxy) and reads this node's
 * data from a source that shares no memory with the buffer ({@link #direct}) posts its receives
 * into the buffer itself, where the fold's result goes, and folds there: {@code u = x op u} at
 * position 0, {@code u = u op x} at position 1 (the bracket {@code p0 op p1} of
 * {@link Exchange#combineOrdered}, so the same bits). Nothing else reads that region of the buffer
 * during the round: its sends read the source (the round is the part's first to read this node's
 * data, see {@link Schedule#source}), and fragment f+1 lands in another range while fragment f is
 * folded. Why: every byte received through UCX is copied out of its receive buffer; into the
 * scratch, that copy wrote lines the fold then read back and the result's lines were written
 * again; into the result, the fold reads lines just written and writes them once. Measured on the
 * netns rig (2 hosts x 1 rank, alternating runs, 3 rounds, TCP): Allreduce 0.87-0.99x the time of
 * the scratch path at 512 KiB-16 MiB (one 2 MiB row 0.68), Reduce 0.83-0.97x. The source and the buffer must not share
 * memory, or the receive would overwrite what this node still sends and folds: checked by their
 * extents ({@link Extents#disjoint}), not just by identity.
 *
 * <p>One instance per part in flight, its own scratch ({@code 2 (k-1) fragBytes}) and request
 * handles; nothing is allocated per part. Single-threaded: the node leader's thread. A failure
 * (peer gone, transport error, a protocol error) throws from {@link #advance}; the requests left
 * are the transport's to cancel.
 */
public final class PostedRounds {
    private static final int K = Exchange.MAX_RADIX;

    private final Transport tr;
    private final int frag;
    private final int myRank;
    private final ByteBuffer scratch;
    private final Schedule sch = new Schedule();
    /** Request handles by {@code 2 * pi + fragment parity}; -1: none pending. */
    private final int[] sreq = new int[2 * K];
    private final int[] rreq = new int[2 * K];
    private final int dataKind;

    private long seq;
    private int r;
    private boolean inRound;
    private int nf;
    private int fc;
    private int cOff;
    private int cLen;
    private boolean done = true;
    /** Whether this part's source (if any) shares no memory with its buffer: see {@link #direct}. */
    private boolean separate;
    /** Whether a source and the buffer share memory (the last pair's addresses kept). */
    private final Extents extents = new Extents();

    /**
     * @param maxPeers the most other members of a group (radix - 1)
     * @param fragBytes payload bytes per fragment, a multiple of 8
     */
    public PostedRounds(Transport tr, int maxPeers, int fragBytes, int dataKind) {
        this.tr = tr;
        this.frag = fragBytes;
        this.myRank = tr.globalRank(tr.peer());
        this.dataKind = dataKind;
        this.scratch = ByteBuffer.allocateDirect(2 * Math.max(1, maxPeers) * fragBytes).order(ByteOrder.nativeOrder());
        java.util.Arrays.fill(sreq, -1);
        java.util.Arrays.fill(rreq, -1);
    }

    /** The schedule to record the next part's rounds into (cleared). */
    public Schedule schedule() {
        sch.clear();
        return sch;
    }

    /** Starts the recorded rounds under call sequence {@code seq} (tags); then {@link #advance} drives them. */
    public void start(long seq) {
        this.seq = seq;
        this.r = 0;
        this.inRound = false;
        this.done = sch.rounds == 0;
        this.separate = sch.x != null && sch.x != sch.u && extents.disjoint(sch.x, sch.u);
    }

    /**
     * Whether round {@code i} receives its one peer's fragments into the buffer and folds them
     * there (see "One peer's fragments straight into the result" above): a fold with one other
     * member, in the round that reads this node's data from a separate source.
     */
    private boolean direct(int i) {
        return separate && sch.combine[i] && sch.g[i] == 2 && sch.fromSource(i);
    }

    /** Whether every round completed. */
    public boolean done() {
        return done;
    }

    /**
     * Does what can be done without waiting; true once every round completed. Throws on a failed
     * request (the transport names the peer) or a fragment of the wrong length.
     */
    public boolean advance() {
        while (!done) {
            if (!inRound) {
                beginRound();
            }
            if (fc == nf) {
                inRound = false;
                if (++r == sch.rounds) {
                    done = true;
                }
                continue;
            }
            final int b = r * K;
            final int g = sch.g[r];
            final int mp = sch.mp[r];
            final int size = sch.t.size;
            final int fe = frag / size;
            final int s = fc & 1;
            for (int pos = 0; pos < g; pos++) {
                if (pos != mp && sch.recvFrom[b + pos] && fc < Exchange.frags(sch.rLen[b + pos], fe)) {
                    int i = 2 * pi(pos, mp) + s;
                    if (rreq[i] >= 0) {
                        int want = Exchange.fragLen(sch.rLen[b + pos], fc, fe) * size;
                        int got;
                        try {
                            got = tr.test(rreq[i]);
                        } catch (Transport.TruncatedException e) {
                            rreq[i] = -1;
                            throw protocol(pos, "more than", want);
                        }
                        if (got < 0) {
                            return false;
                        }
                        rreq[i] = -1;
                        if (got != want) {
                            throw protocol(pos, got + " bytes instead of", want);
                        }
                    }
                }
            }
            for (int pos = 0; pos < g; pos++) {
                if (pos != mp && sch.sendTo[b + pos] && fc < Exchange.frags(sch.sLen[b + pos], fe)) {
                    int i = 2 * pi(pos, mp) + s;
                    if (sreq[i] >= 0) {
                        if (tr.test(sreq[i]) < 0) {
                            return false;
                        }
                        sreq[i] = -1;
                    }
                }
            }
            if (sch.combine[r] && fc < Exchange.frags(cLen, fe)) {
                final int at = (cOff + fc * fe) * size;
                final boolean src = sch.fromSource(r);
                final int n = Exchange.fragLen(cLen, fc, fe);
                if (direct(r)) { // the peer's fragment is in the buffer: p0 op p1 in place
                    if (mp == 0) {
                        Reductions.combine(sch.t, sch.op, sch.u, sch.uOff + at, sch.x, sch.xOff + at, sch.u, sch.uOff + at, n);
                    } else {
                        Reductions.combine(sch.t, sch.op, sch.u, sch.uOff + at, sch.u, sch.uOff + at, sch.x, sch.xOff + at, n);
                    }
                } else {
                    Exchange.combineOrdered(sch.u, sch.uOff + at, src ? sch.x : sch.u, (src ? sch.xOff : sch.uOff) + at, n,
                            sch.t, sch.op, g, mp, scratch, frag, s, 0);
                }
            }
            if (fc + 2 < nf) {
                post(fc + 2);
            }
            fc++;
        }
        return true;
    }

    /** The global rank of a peer this part waits for (for a timeout's blame), or -1 if none. */
    public int waitingFor() {
        if (done || !inRound) {
            return -1;
        }
        int b = r * K;
        for (int pos = 0; pos < sch.g[r]; pos++) {
            if (pos != sch.mp[r]) {
                int i = 2 * pi(pos, sch.mp[r]) + (fc & 1);
                if (rreq[i] >= 0 || sreq[i] >= 0) {
                    return tr.globalRank(sch.peer[b + pos]);
                }
            }
        }
        return -1;
    }

    /** Forgets the requests in flight after a failure (the transport cancels them): the part is dead. */
    public void abandon() {
        java.util.Arrays.fill(sreq, -1);
        java.util.Arrays.fill(rreq, -1);
        done = true;
    }

    private static int pi(int pos, int mp) {
        return pos < mp ? pos : pos - 1;
    }

    private void beginRound() {
        final int b = r * K;
        final int g = sch.g[r];
        final int mp = sch.mp[r];
        final int fe = frag / sch.t.size;
        nf = 0;
        cOff = 0;
        cLen = 0;
        for (int pos = 0; pos < g; pos++) {
            if (pos == mp) {
                continue;
            }
            if (sch.sendTo[b + pos]) {
                nf = Math.max(nf, Exchange.frags(sch.sLen[b + pos], fe));
            }
            if (sch.recvFrom[b + pos]) {
                nf = Math.max(nf, Exchange.frags(sch.rLen[b + pos], fe));
                cOff = sch.rOff[b + pos];
                cLen = sch.rLen[b + pos];
            }
        }
        fc = 0;
        inRound = true;
        for (int f = 0; f < Math.min(nf, 2); f++) {
            post(f);
        }
    }

    private void post(int f) {
        final int b = r * K;
        final int g = sch.g[r];
        final int mp = sch.mp[r];
        final int size = sch.t.size;
        final int fe = frag / size;
        final long tg = Exchange.tag(dataKind, seq, sch.round[r], f);
        final int s = f & 1;
        final boolean combine = sch.combine[r];
        for (int pos = 0; pos < g; pos++) {
            if (pos != mp && sch.recvFrom[b + pos] && f < Exchange.frags(sch.rLen[b + pos], fe)) {
                int bytes = Exchange.fragLen(sch.rLen[b + pos], f, fe) * size;
                int i = 2 * pi(pos, mp) + s;
                rreq[i] = combine && !direct(r) ? tr.recv(sch.peer[b + pos], tg, scratch, i * frag, bytes)
                        : tr.recv(sch.peer[b + pos], tg, sch.u, sch.uOff + (sch.rOff[b + pos] + f * fe) * size, bytes);
            }
        }
        final ByteBuffer from = sch.fromSource(r) ? sch.x : sch.u; // this node's own data: its first round reads the source
        final int fromOff = sch.fromSource(r) ? sch.xOff : sch.uOff;
        for (int pos = 0; pos < g; pos++) {
            if (pos != mp && sch.sendTo[b + pos] && f < Exchange.frags(sch.sLen[b + pos], fe)) {
                sreq[2 * pi(pos, mp) + s] = tr.send(sch.peer[b + pos], tg, from, fromOff + (sch.sOff[b + pos] + f * fe) * size,
                        Exchange.fragLen(sch.sLen[b + pos], f, fe) * size);
            }
        }
    }

    private Sharp4jException protocol(int pos, String what, int want) {
        return new Sharp4jException("inter-node protocol error: rank " + tr.globalRank(sch.peer[r * K + pos]) + " sent " + what
                + " the " + want + " bytes of fragment " + fc + " of round " + sch.round[r] + " to rank " + myRank);
    }
}
