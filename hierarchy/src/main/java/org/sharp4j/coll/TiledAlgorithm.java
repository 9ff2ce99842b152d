package org.sharp4j.coll;

import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.shm.Flags;
import org.sharp4j.shm.Waiter;
import org.sharp4j.tuning.Collective;

/**
 * Long vectors: a reduce-scatter in cache-line-aligned tiles, then everyone reads the tiles
 * (paper 001's tiled reduce, UCC/xhc's copy-in reduce-scatter), chunk by chunk of at most a slot.
 *
 * <h2>The math</h2>
 * A chunk of n elements is cut into q tiles of {@code ceil(ceil(n/q)/L)*L} elements (L elements
 * per 64-byte line, so no two ranks write one line); member m owns tile m and computes, for every
 * element i of it, {@code ((x0[i] op x1[i]) op x2[i]) ... op x(q-1)[i]}: left to right over the
 * members, the same bits whichever member computes them. Each rank moves about
 * {@code n (copy in) + n (reads for its tile) + n/q (its tile) + n (copy out)} elements per chunk,
 * against {@code q n} for a leader that reduces alone: bandwidth-bound work spread over the socket.
 * Only the other members read a member's slot, and only their tiles of it: so a member whose input
 * is a direct buffer copies in only the others' tiles ({@code (q-1)/q n}) and folds its own tile
 * from its buffer in place; an array is copied whole (the kernels read buffers), and an input in
 * the shared buffer not at all. What each form costs per rank and chunk, beyond the fold's reads:
 * array {@code n} in + {@code n} out, direct buffer {@code (q-1)/q n} in + {@code n} out, shared
 * buffer {@code 0} in + {@code n} out.
 * Across sockets the socket leaders repeat it over the sockets' results (left to right over
 * sockets), then the node leader runs phase 3 on the chunk.
 *
 * <h2>One socket: no central synchronisation</h2>
 * Per chunk every member publishes ARRIVED once its input is in its slot (or, zero copy, in its
 * shared buffer), waits for every member's ARRIVED (checking every call signature: the verdict
 * is the first member, in member order, whose signature differs from member 0's, so every rank
 * reaches the same one without a release), reduces its tile into {@code result[set]} and
 * publishes TILED. An Allreduce then copies each tile out as soon as its owner published it; a
 * Reduce's root does the same, and the other ranks return right away (their inputs were copied
 * into their slots; an input read in place from a shared buffer is waited for first): a Reduce
 * does not wait for its root. With several nodes the node leader waits for every tile, runs
 * phase 3 on the chunk and releases it. Slot and result reuse need no acknowledgment: see
 * {@link ShmLevel}'s reuse rule (a member writes its tile of chunk c only after every member's
 * ARRIVED of chunk c, i.e. after every member finished chunk c-1, including a Reduce root's read-out).
 *
 * <h2>Several nodes: phase 3 in parts, several in flight</h2>
 * The node leader hands phase 3 the call's first chunk alone and blocking: its inter-node argument
 * check (the host path's spine) covers the whole call's descriptor, and every node leader ends it
 * with the same status (not ok: every rank throws after it). That is the call's only argument
 * check. (On the host path a Reduce of several chunks checks with its first line only, and the
 * rest of that chunk follows at once as a later part, blocking: {@code Engine.interFirst}. A long
 * Reduce's data then goes up the tree to the root's node, never both ways.) Every later chunk c is
 * <em>posted</em> as a later part of the call ({@code
 * InterNodeStep.post}, in place on the chunk's result set, no argument check), and the leader goes
 * straight on with chunk c+1 while the part travels between nodes; its waits for the members'
 * tiles drive the parts in flight ({@code progress}). After posting chunk c the leader awaits the
 * part of chunk c-L (L = lag = D - 1, D = {@code sharp4j.internode.pipeline} chunks in flight, 1 to
 * 4, the same on every rank) and publishes it by a release store of its sequence number in its
 * progress line ({@link #P_PARTS}, one writer, only grows); every member, after publishing its
 * TILED of chunk c, acquires that word for chunk c-L and copies chunk c-L out. The rest are
 * released in order at the call's end. Every node posts the same parts (one per chunk, cut by
 * chunk index) in the same order. Why the sets' reuse stays safe without acknowledgment, for
 * L &lt;= 3 = {@link ShmLevel#SLOT_SETS} - 1:
 * <ul>
 *   <li>chunk c's result set is next written by tiles of chunk c+4, after every member's ARRIVED
 *       of c+4, among them the leader's, which it publishes only after it finished chunk c+3,
 *       where it awaited chunk c's part (c &lt;= c+3-L): phase 3 no longer touches the set; and
 *       after every member finished chunk c+3, by which it copied out every chunk up to c+3-L &gt;= c;</li>
 *   <li>the release word is not a set's control block, so nothing overwrites it (the first
 *       chunk's RELEASED, which carries the call's status, is read at chunk 0 as before);</li>
 *   <li>slots and the ARRIVED/TILED words are used as before.</li>
 * </ul>
 * A step that keeps fewer parts in flight than L + 1 has its oldest part awaited before a new one
 * is posted; a step without parts in flight (SHARP, which pipelines each chunk into its own
 * operations; shared memory) runs each part at its post. No staging: a part is a chunk in its
 * result set. A member whose part fails learns it as with any phase-3 failure (the leader tells
 * the node: its waits fail at their next probe).
 *
 * <h2>One rank per node</h2>
 * With one rank per node (every node, so the same on every rank) nothing is reduced inside a node:
 * {@link #solo} runs phase 3 on the user's memory directly: the first chunk (a long Reduce's first
 * line: {@code Engine.interFirst}; or the whole call where the step runs it merged: {@code
 * Engine.interSoloFirst}) alone and blocking with the argument check (where the call's radix is the
 * spine's its data rides on the spine's messages: no separate barrier), then parts of {@link #SOLO_CHUNKS} chunks (1 MiB with the default slots: the host path sends
 * a part in fragments of up to 512 KiB, and over TCP fewer, larger messages cost less), posted as above. Not with an offload
 * (SHARP takes at most a slot per phase-3 call and registers the memory it is given: it keeps the
 * segment's few windows) nor with {@code sharp4j.internode.pipeline=1}: both keep the path above. Where the rank gets
 * the result in a direct or shared buffer and its input is not an array, in place in the output;
 * otherwise through a private ring of parts (copied out if the rank gets the result). The input:
 * a direct or shared buffer that the output does not overlap is read where it lies by the posted
 * parts (their first round reads it, the result goes to the output or the ring: {@code
 * Schedule.source}), and by the first, blocking part where the step runs it on its spine's rounds
 * (the host path: {@code Exchange.source}; other steps copy it); an array (or an overlapping
 * output) is copied part by part. What each form costs per call: input and output the same
 * buffer: nothing; direct or shared buffers: nothing on the host path where the first part runs
 * merged, else a copy of the first part; an array input: a copy in; an array output: a copy out.
 *
 * <h2>Several sockets</h2>
 * Phase 1 as above into the node segment, phase 2 by the socket leaders over the sockets' results,
 * then one central release per chunk from the node leader (after phase 3); everyone copies the
 * chunk out of the node segment.
 */
final class TiledAlgorithm {
    private final Engine e;
    private final TileFold fold = new TileFold();

    TiledAlgorithm(Engine e) {
        this.e = e;
    }

    void run(Collective kind, DataType t, Op op, int root, int count, long desc, int chunkBytes) {
        if (e.topo.nodeCount() > 1 && e.topo.maxRanksPerNode() == 1 && e.interUnit > 1) { // job-wide, see "One rank per node"
            solo(kind, t, op, root, count, desc, chunkBytes);
        } else if (e.socketCount == 1) {
            flat(kind, t, op, root, count, desc, chunkBytes);
        } else {
            hierarchical(kind, t, op, root, count, desc, chunkBytes);
        }
    }

    /** One socket per node: see the class comment. */
    private void flat(Collective kind, DataType t, Op op, int root, int count, long desc, int chunkBytes) {
        final Engine e = this.e;
        final ShmLevel sock = e.sock;
        final CallStatus st = e.st;
        final Waiter w = e.waiter;
        final int size = t.size;
        final int chunkElems = chunkBytes / size;
        final int lineElems = 64 / size;
        final int q = sock.members;
        final int me = sock.me;
        final boolean shared = e.src.isShared();
        final boolean severalNodes = e.topo.nodeCount() > 1;
        final boolean gets = kind == Collective.ALLREDUCE || e.rank == root;
        // A direct buffer's own tile is folded where it lies: only the others' tiles are copied in.
        final boolean ownInPlace = e.src.kind == Payload.BUFFER && e.src.buffer.isDirect();
        if (shared) {
            desc |= Desc.SHARED;
        }
        // Phase 3 in parts (class comment): the first chunk alone, then every chunk posted, the
        // release of chunk c - lag after the post of chunk c.
        final int lag = severalNodes && count > chunkElems ? e.interLag() : 0;
        final int cap = lag > 0 && me == 0 ? e.interCap() : 0;
        final boolean progressing = cap > 0;
        long seq0 = 0; // sequence number of the call's first chunk
        int chunk = 0; // index of the chunk in this call
        for (int first = 0; first < count; first += chunkElems, chunk++) {
            final int n = Math.min(chunkElems, count - first);
            final long s = e.nextSeq();
            final int set = ShmLevel.set(s);
            if (chunk == 0) {
                seq0 = s;
            }
            st.reset();
            // My tile of the chunk (the others' tiles of my input are all they read of my slot).
            final int tile = Engine.ceilDiv(Engine.ceilDiv(n, q), lineElems) * lineElems;
            final int lo = Math.min(n, me * tile);
            final int hi = Math.min(n, lo + tile);
            if (ownInPlace) { // my own tile stays where it is: I fold it from the user's buffer
                e.src.copyIn(sock, sock.slot(set, me), t, first, lo);
                e.src.copyIn(sock, sock.slot(set, me) + hi * size, t, first + hi, n - hi);
            } else if (!shared) {
                e.src.copyIn(sock, sock.slot(set, me), t, first, n);
            }
            sock.publish(set, ShmLevel.ARRIVED, s, desc, st);
            // Every member's arrival and signature, before anything of this set is written.
            sock.awaitArrivedAndCompare(set, s, w, st);
            // My tile over all members, in member order.
            final int res = sock.result(set);
            if (hi > lo && st.ok()) {
                fold.fold(e, sock, set, first, lo, hi, t, op, ownInPlace, res + lo * size, null, 0, false, false);
            }
            sock.publish(set, ShmLevel.TILED, s, desc, st);
            if (severalNodes) {
                if (me == 0) {
                    for (int m = 1; m < q; m++) {
                        awaitTiled(set, m, s, desc, progressing);
                    }
                    if (chunk == 0) { // phase 3 of the first chunk checks the call, even after a mismatch: the others wait in it
                        e.interNodeFirst(kind, sock.buf, res, n, t, op, root, desc, count, chunkElems);
                        sock.publish(set, ShmLevel.RELEASED, s, desc, st);
                    } else {
                        if (cap > 0 && chunk - cap >= 1) { // the step keeps fewer parts in flight than the lag
                            e.interAwait(parts[(chunk - cap) & (ShmLevel.SLOT_SETS - 1)]);
                        }
                        parts[chunk & (ShmLevel.SLOT_SETS - 1)] = e.interPost(kind, sock.buf, res, n, t, op, root, desc);
                        if (chunk - lag >= 1) {
                            retire(chunk - lag, seq0, count, chunkElems, t, gets);
                        }
                        continue;
                    }
                } else {
                    if (chunk > 0) {
                        if (chunk - lag >= 1) {
                            collect(chunk - lag, seq0, count, chunkElems, t, gets);
                        }
                        continue; // on to the next chunk: its part is in flight
                    }
                    st.reset(); // the node leader's verdict, which merged every node's
                    sock.await(set, 0, ShmLevel.RELEASED, s, w, st);
                }
                if (!st.ok()) {
                    throw st.toException();
                }
                if (gets) {
                    e.dst.copyOut(sock, res, t, first, n);
                }
                continue;
            }
            if (!st.ok()) {
                throw sock.verdictFailed(set, s, desc, st);
            }
            if (gets) {
                // Each tile as soon as its owner published it.
                for (int m = 0; m < q; m++) {
                    int mlo = Math.min(n, m * tile);
                    int mhi = Math.min(n, mlo + tile);
                    if (mhi > mlo) {
                        w.await(sock.buf, sock.ctl(set, m) + ShmLevel.STATE, ShmLevel.enc(s, ShmLevel.TILED), sock.ranks[m]);
                        e.dst.copyOut(sock, res + mlo * size, t, first + mlo, mhi - mlo);
                    }
                }
            } else if (shared) {
                // A Reduce's non-root returns without its result; but others read its shared buffer in place.
                for (int m = 0; m < q; m++) {
                    w.await(sock.buf, sock.ctl(set, m) + ShmLevel.STATE, ShmLevel.enc(s, ShmLevel.TILED), sock.ranks[m]);
                }
            }
        }
        if (severalNodes) { // the parts still in flight, in order: the call ends with its last chunk released
            for (int c = Math.max(1, chunk - lag); c < chunk; c++) {
                if (me == 0) {
                    retire(c, seq0, count, chunkElems, t, gets);
                } else {
                    collect(c, seq0, count, chunkElems, t, gets);
                }
            }
        }
    }

    /**
     * Chunks per part of the one-rank-per-node path ({@link #solo}; the same on every node, as the
     * slot size is): 1 MiB with the default 64 KiB slots, so that the host path sends a part in
     * fragments of up to 512 KiB ({@code HostStep}'s "Large fragments": over TCP fewer, larger
     * messages cost less). Measured on the netns rig, 2 hosts x 1 rank, Allreduce against Open MPI's
     * C library, best of two alternating runs, with 512 KiB fragments: parts of 1 MiB 0.94-1.28x its
     * time at 1-16 MiB (0.53-0.77x at 64-512 KiB), where parts of 4 chunks with 128 KiB fragments
     * took 1.20-1.48x.
     */
    static final int SOLO_CHUNKS = 16;
    /** The one-rank-per-node path's ring of parts whose data cannot be reduced in place (SLOT_SETS parts), made at its first use. */
    private Payload.Views soloRing;

    /**
     * Several nodes of one rank each (the same on every rank: the topology's largest node has one
     * rank): no rank to reduce with inside the node, so phase 3 runs on the user's memory itself: the
     * first part (a chunk, a long Reduce's first line, or a call the step runs whole: {@link Engine#interSoloFirst}) alone
     * and blocking (its spine checks the call), then parts of {@link #SOLO_CHUNKS}
     * chunks posted, each released {@code lag} parts after its post as on the shared-memory path
     * (the same parts on every node, whatever each rank's buffers). Where this rank gets the result
     * in a direct buffer or its shared buffer and its input is not an array, phase 3 works in place
     * in the output (the input copied there part by part, nothing if it is the same memory: one
     * copy per call at most, against an array's copy in and out); otherwise each part goes through a
     * private ring of SLOT_SETS parts (copy in, and out if this rank gets the result).
     */
    private void solo(Collective kind, DataType t, Op op, int root, int count, long desc, int chunkBytes) {
        final Engine e = this.e;
        final Payload src = e.src;
        final Payload dst = e.dst;
        final int size = t.size;
        final int partElems = SOLO_CHUNKS * (chunkBytes / size);
        final int partBytes = partElems * size;
        final boolean gets = kind == Collective.ALLREDUCE || e.rank == root;
        final boolean inDst = gets && src.kind != Payload.ARRAY
                && (dst.kind == Payload.BUFFER && dst.buffer.isDirect() || dst.kind == Payload.SHARED);
        final int chunkElems = chunkBytes / size;
        // the first part: a chunk, a long Reduce's head, or a call the step runs whole (Engine.interSoloFirst: an
        // Allreduce of at most 128 KiB, a Reduce of at most 512 KiB, which may exceed a part's place in the ring when
        // the table's chunk is short); its data rides on the spine's messages
        final int firstElems = e.interSoloFirst(kind, count, chunkElems, t);
        final java.nio.ByteBuffer wb;
        final int base;
        if (inDst) {
            wb = dst.kind == Payload.SHARED ? dst.sharedLevel.buf : dst.buffer;
            base = dst.kind == Payload.SHARED ? dst.sharedOff : dst.off * size;
        } else {
            final int ringBytes = Math.max(ShmLevel.SLOT_SETS * partBytes, firstElems * size);
            if (soloRing == null || soloRing.buf.capacity() < ringBytes) {
                soloRing = new Payload.Views(ringBytes); // once per communicator and chunk size
            }
            wb = soloRing.buf;
            base = 0;
        }
        final java.nio.ByteBuffer from = src.kind == Payload.SHARED ? src.sharedLevel.buf : src.buffer;
        final int fromBase = src.kind == Payload.SHARED ? src.sharedOff : src.off * size;
        final boolean sameMemory = inDst && from == wb && fromBase == base;
        // Every part reads this rank's input where it lies (InterNodeStep#post's and #run's source
        // forms) when it is memory the transport sends from (a direct or the shared buffer) and the
        // output does not share it: no copy into the output, or into the ring for a Reduce's
        // non-root. The first part, blocking, is copied by a step that cannot read it in place (the
        // host path reads it in place where it runs on the spine's rounds).
        final boolean readsInPlace = !sameMemory && (src.kind == Payload.SHARED || src.kind == Payload.BUFFER && src.buffer.isDirect())
                && (!gets || !Payload.overlaps(src, dst, t, count));
        final int lag = count > chunkElems ? e.interLag() : 0;
        final int cap = e.interCap();
        final CallStatus st = e.st;
        int part = 0;
        for (int first = 0; first < count; first = soloFirst(++part, firstElems, partElems)) {
            final int n = Math.min(part == 0 ? firstElems : partElems, count - first);
            e.nextSeq(); // one per part: the diagnostics' progress
            final int at = inDst ? base + first * size : (part & (ShmLevel.SLOT_SETS - 1)) * partBytes;
            final boolean inPlace = readsInPlace;
            if (inPlace) {
                // nothing to copy: the part's rounds read the input at from[fromBase + first * size] (the
                // first part's too where the step can: InterNodeStep#run copies where it cannot)
            } else if (!inDst) {
                src.copyIn(soloRing, at, t, first, n);
            } else if (!sameMemory) {
                ShmLevel.copy(wb, at, from, fromBase + first * size, n * size);
            }
            if (part == 0) {
                st.reset();
                if (inPlace) {
                    e.interNodeFrom(kind, from, fromBase + first * size, wb, at, n, t, op, root, desc);
                } else {
                    e.interNode(kind, wb, at, n, t, op, root, desc, false);
                }
                if (!st.ok()) {
                    throw st.toException();
                }
                if (gets && !inDst) {
                    dst.copyOut(soloRing, at, t, first, n);
                }
                continue;
            }
            if (cap > 0 && part - cap >= 1) {
                e.interAwait(parts[(part - cap) & (ShmLevel.SLOT_SETS - 1)]);
            }
            parts[part & (ShmLevel.SLOT_SETS - 1)] = inPlace ? e.interPost(kind, from, fromBase + first * size, wb, at, n, t, op, root, desc)
                    : e.interPost(kind, wb, at, n, t, op, root, desc);
            if (part - lag >= 1) {
                soloRetire(part - lag, firstElems, partElems, count, t, gets && !inDst);
            }
        }
        for (int c = Math.max(1, part - lag); c < part; c++) {
            soloRetire(c, firstElems, partElems, count, t, gets && !inDst);
        }
    }

    /** First element of part {@code c} of {@link #solo}: the first part ({@code firstElems}), then parts of {@code partElems}. */
    private static int soloFirst(int c, int firstElems, int partElems) {
        return c == 0 ? 0 : firstElems + (c - 1) * partElems;
    }

    /** The end of part {@code c} of {@link #solo}: waits for it and copies it out of the ring if it went through it. */
    private void soloRetire(int c, int firstElems, int partElems, int count, DataType t, boolean out) {
        e.interAwait(parts[c & (ShmLevel.SLOT_SETS - 1)]);
        if (out) {
            int f = soloFirst(c, firstElems, partElems);
            e.dst.copyOut(soloRing, (c & (ShmLevel.SLOT_SETS - 1)) * partElems * t.size, t, f, Math.min(partElems, count - f));
        }
    }

    /** Handles of the parts in flight, by chunk index mod {@link ShmLevel#SLOT_SETS} (the lag is below it). */
    private final int[] parts = new int[ShmLevel.SLOT_SETS];

    /**
     * The node leader's end of chunk {@code c}'s part: waits for it (driving the others), publishes
     * that every chunk up to {@code c} is released ({@link #P_PARTS}, release store: the result set
     * holds the reduction over all nodes), and copies the chunk out if this rank gets the result.
     */
    private void retire(int c, long seq0, int count, int chunkElems, DataType t, boolean gets) {
        e.interAwait(parts[c & (ShmLevel.SLOT_SETS - 1)]);
        Flags.release(e.node.buf, e.node.progress(0) + P_PARTS, seq0 + c);
        if (gets) {
            int f = c * chunkElems;
            e.dst.copyOut(e.sock, e.sock.result(ShmLevel.set(seq0 + c)), t, f, Math.min(chunkElems, count - f));
        }
    }

    /** A member's end of chunk {@code c}: waits for the leader's release of it (acquire) and copies the chunk out. */
    private void collect(int c, long seq0, int count, int chunkElems, DataType t, boolean gets) {
        e.waiter.await(e.node.buf, e.node.progress(0) + P_PARTS, seq0 + c, e.sock.ranks[0]);
        if (gets) {
            int f = c * chunkElems;
            e.dst.copyOut(e.sock, e.sock.result(ShmLevel.set(seq0 + c)), t, f, Math.min(chunkElems, count - f));
        }
    }

    /**
     * The node leader waits for member {@code m}'s TILED as {@link ShmLevel#awaitTiled} does; with
     * parts in flight ({@code progressing}) its polls also drive them, since over TCP a part moves
     * only while its leader drives the transport.
     */
    private void awaitTiled(int set, int m, long s, long desc, boolean progressing) {
        final ShmLevel sock = e.sock;
        if (!progressing) {
            sock.awaitTiled(set, m, s, desc, e.waiter, e.st);
            return;
        }
        if (Desc.differs(sock.descOf(set, m), desc)) {
            return; // as ShmLevel.awaitTiled: a member that called something else may never publish TILED
        }
        final int ctl = sock.ctl(set, m);
        tiledOrParts.off = ctl + ShmLevel.STATE;
        tiledOrParts.target = ShmLevel.enc(s, ShmLevel.TILED);
        e.waiter.await(tiledOrParts, sock.ranks[m]);
        e.st.mergeFrom(sock.buf, ctl);
    }

    private final FlagOrParts tiledOrParts = new FlagOrParts();

    /** A flag of the socket segment reaching a target, phase 3's parts driven at every poll that finds it short. */
    private final class FlagOrParts implements Waiter.Condition {
        int off;
        long target;

        @Override
        public boolean done() {
            if (Flags.acquire(e.sock.buf, off) >= target) {
                return true;
            }
            e.interProgress();
            return false;
        }

        @Override
        public long activity() {
            return e.inter.activity(); // this leader drives phase 3's parts here: no naps while they move
        }
    }

    /**
     * The node leader's progress line word (node segment, {@code +40}; see {@link ShmLevel}'s layout):
     * the sequence number of the latest chunk whose phase-3 part completed. One writer (the node
     * leader, release store), only grows; the node's other ranks acquire it before reading the
     * chunk's result set.
     */
    static final int P_PARTS = 40;

    /**
     * Several sockets per node. Per chunk of at most a slot: every rank of a socket reduces its
     * cache-line-aligned tile of the chunk over all the socket's contributions, in member order
     * (phase 1 as a reduce-scatter); socket leaders do the same over sockets (phase 2); the node
     * leader runs the inter-node step on the whole chunk (phase 3); then everyone copies the
     * result out (phases 4-5 as one-stage broadcast). Chunks alternate between the two sets, so
     * chunk i+1's copy-in overlaps slower ranks' copy-out of chunk i.
     */
    private void hierarchical(Collective kind, DataType t, Op op, int root, int count, long desc, int chunkBytes) {
        final Engine e = this.e;
        final ShmLevel sock = e.sock;
        final ShmLevel node = e.node;
        final CallStatus st = e.st;
        final int socketCount = e.socketCount;
        final int size = t.size;
        final int chunkElems = chunkBytes / size;
        final int lineElems = 64 / size;
        final boolean wantResult = kind == Collective.ALLREDUCE || e.rank == root;
        final ShmLevel resLvl = socketCount > 1 ? node : sock;
        if (e.src.isShared()) {
            desc |= Desc.SHARED;
        }
        for (int first = 0; first < count; first += chunkElems) {
            final int n = Math.min(chunkElems, count - first);
            final long s = e.nextSeq();
            final int set = ShmLevel.set(s);
            st.reset();
            final boolean more = first > 0; // a later chunk: the first one's phase 3 checked the call
            final int q = sock.members;
            final int me = sock.me;
            if (!e.src.isShared()) {
                e.src.copyIn(sock, sock.slot(set, me), t, first, n);
            }
            sock.publish(set, ShmLevel.ARRIVED, s, desc, st);
            // Phase 1: my tile over all members of my socket, in member order.
            int tile = Engine.ceilDiv(Engine.ceilDiv(n, q), lineElems) * lineElems;
            int lo = Math.min(n, me * tile);
            int hi = Math.min(n, lo + tile);
            ShmLevel out = socketCount > 1 ? node : sock;
            int outBase = socketCount > 1 ? node.slot(set, e.socketIndexInNode) : sock.result(set);
            int prev = 0;
            for (int m = 0; m < q; m++) {
                sock.awaitChecked(set, m, ShmLevel.ARRIVED, s, desc, e.waiter, st, e.rank);
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
            if (socketCount > 1 && e.socketLeader) {
                for (int m = 1; m < q; m++) {
                    sock.awaitTiled(set, m, s, desc, e.waiter, st);
                }
                node.publish(set, ShmLevel.ARRIVED, s, desc, st);
                int ntile = Engine.ceilDiv(Engine.ceilDiv(n, socketCount), lineElems) * lineElems;
                int nlo = Math.min(n, node.me * ntile);
                int nhi = Math.min(n, nlo + ntile);
                for (int m = 0; m < socketCount; m++) {
                    node.awaitChecked(set, m, ShmLevel.ARRIVED, s, desc, e.waiter, st, e.rank);
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
            if (e.nodeLeader) {
                ShmLevel top = socketCount > 1 ? node : sock;
                for (int m = 1; m < top.members; m++) {
                    top.awaitTiled(set, m, s, desc, e.waiter, st);
                }
                if (e.inter != null) { // even after a mismatch: the other node leaders are waiting in it
                    if (more) {                                                                      // phase 3
                        e.interNode(kind, resLvl.buf, resOff, n, t, op, root, desc, true);
                    } else {
                        e.interNodeFirst(kind, resLvl.buf, resOff, n, t, op, root, desc, count, chunkElems);
                    }
                }
                top.publish(set, ShmLevel.RELEASED, s, desc, st);
                if (top == node && q > 1) {
                    sock.publish(set, ShmLevel.RELEASED, s, desc, st);
                }
            } else if (socketCount > 1 && e.socketLeader) {
                st.reset();
                node.await(set, 0, ShmLevel.RELEASED, s, e.waiter, st);
                if (q > 1) {
                    sock.publish(set, ShmLevel.RELEASED, s, desc, st);
                }
            } else {
                st.reset();
                sock.await(set, 0, ShmLevel.RELEASED, s, e.waiter, st);
            }
            if (!st.ok()) {
                throw st.toException();
            }
            if (wantResult) {
                e.dst.copyOut(resLvl, resOff, t, first, n);
            }
        }
    }
}
