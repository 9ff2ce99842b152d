package org.sharp4j.coll;

import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.shm.Flags;
import org.sharp4j.shm.Waiter;
import org.sharp4j.tuning.Collective;

/**
 * Long Allreduce and Reduce inside one socket of one node: the tiled reduce-scatter and read-out,
 * software-pipelined over three chunks, with no step that waits for every member at once after
 * the call's first chunk.
 *
 * <h2>The math</h2>
 * As {@link TiledAlgorithm}: a chunk of n elements is cut into q cache-line-aligned tiles of
 * {@code t = ceil(ceil(n/q)/L)*L} elements; member m owns tile m and computes, for each element i
 * of it, {@code ((x0[i] op x1[i]) op x2[i]) ... op x(q-1)[i]}, left to right over the members, so
 * the bits are tiled's (and the direct Reduce's) whichever member computes them. Per chunk a
 * member moves {@code (q-1)/q n} in (a direct buffer's own tile is folded where it lies; an array
 * is copied whole, {@code n}; the shared buffer not at all), folds its tile ({@code n} reads, its
 * own part in place), writes the tile to the shared result and, when it gets the result, straight
 * into its own output as well, and copies the other {@code q-1} tiles out: {@code (q-1)/q n} out.
 * Against tiled, the work is the same; what changes is who waits for whom.
 *
 * <h2>The pipeline</h2>
 * Chunk c of a call has sequence number {@code b+c} (b: the call's first). Step j of a member:
 * <ol>
 *   <li>copy chunk j into its slot and publish {@code (b+j, ARRIVED)};</li>
 *   <li>fold its tile of chunk j-1 once every member's {@code (b+j-1, ARRIVED)} is there, and
 *       publish {@code (b+j-1, TILED)};</li>
 *   <li>copy out chunk j-2, each tile as soon as its owner's {@code (b+j-2, TILED)} is there, and
 *       publish {@code (b+j-2, RELEASED)}: "I read nothing of chunk j-2 any more".</li>
 * </ol>
 * So a member waits for another only across a full step of slack: a peer that is late by less
 * than a step (a descheduled vCPU, a slower copy) costs nothing, where tiled's lockstep pays every
 * skew twice per chunk. Each tile is read as soon as its owner publishes it (per-tile flags).
 * The first chunk is the exception: every member waits for every ARRIVED of chunk 0 and compares
 * the call signatures (the first member, in member order, whose descriptor differs from member
 * 0's is the verdict, the same on every rank) before it writes anything of chunk 1, so that a
 * mismatch ends every rank's call after exactly one sequence number, whatever algorithm each took.
 *
 * <h2>Reuse (all flags in {@link ShmLevel}'s control blocks: release stores, acquire loads)</h2>
 * <ul>
 *   <li>Chunk c's slot, result tile and control block live in set {@code (b+c) mod 4}, last used by
 *       chunk c-4. Before writing any of it (step c) a member acquires every member's
 *       {@code state >= (b+c-4, RELEASED)} in that set (states only grow: a later ARRIVED there
 *       counts too, and is published only after that member's RELEASED of c-4). RELEASED of c-4
 *       comes after the member's fold of c-4 (the only reads of slots) and its read-out of c-4
 *       (the only reads of result tiles). So slots are gated by releases two steps back, and
 *       there are up to three chunks in flight: copied, folded, read out.</li>
 *   <li>For c &lt; 4 the previous use is an earlier call. Chunk 0's writes (slot, control block)
 *       need every reader of sequence number b-4 done: the engine's guard (every member arrived
 *       at b-3, ShmLevel's rule); its result tile is written only after every member's ARRIVED of
 *       b, and a member arrives at a call only after finishing the ones before. Chunks 1-3 come
 *       after that wait too.</li>
 *   <li>ShmLevel's rule for later calls reads "arrived at x" as "done reading everything up to
 *       x-1": here ARRIVED of chunk c comes before the reads of c-1 and c-2. So a member ends
 *       the call with three more sequence numbers, {@code b+K}, {@code b+K+1}, {@code b+K+2} (K
 *       chunks), publishing their ARRIVED (state word only, nothing else of those sets) after its
 *       last read of the call. Any later call's wait "every member arrived at n-3" (exchange,
 *       tree, go-ahead Reduce) or at n-1 (tiled) then lands on one of those three or later, which
 *       mean what the rule says; the engine is told only that every member arrived at b
 *       ({@link Engine#arrivedKnownAt}), which is all this rank observed in that sense.</li>
 * </ul>
 *
 * <h2>Streaming stores</h2>
 * From {@link Payload#STREAM_MIN_BYTES}, when this rank's timings say so ({@link StoreChoice}:
 * on separate cores; ranks on one core's two hardware threads do better with ordinary stores),
 * what the other members read next is written with non-temporal stores where the data is in
 * direct buffers: the copy of a chunk into the slot
 * ({@code Payload.copyIn(..., streaming)}), and the folded tile, which is folded into this rank's
 * own output first and then streamed from there into the result area (a member that gets no
 * result, or whose output is an input the fold reads later, folds into private scratch and streams
 * from there: {@link TileFold}). Those lines were read by the other members in the call before,
 * and an ordinary store to each waited for the other core to give it up. OSU port,
 * {@code --compare mpi}, same processes, 64 KiB-16 MiB, alternating runs with and without:
 * 2 ranks 0.57-1.13 of Open MPI Java against 0.77-1.67 (the
 * copy alone: 0.89-1.23 against 1.20-1.58, in a slower phase); 4 ranks on 2 cores 0.18-0.96
 * against 0.25-1.67. Arrays are copied into the slot with ordinary stores.
 *
 * <h2>Reduce: nobody waits for the root</h2>
 * Every member folds its tile (the fold is spread over the socket, where the direct Reduce's root
 * folds q-1 passes alone); only the root reads the tiles out. A non-root member returns after
 * its fold of the last chunk (its input was copied into its slot; the caller may reuse it at
 * once). A non-root whose input is its shared buffer, read in place by every tile owner, first
 * waits for every member's TILED of the last chunk. Its next call waits for the root only where
 * it would write a set the root may still read (the guard above, on the root's trailing arrivals).
 *
 * <h2>Failures</h2>
 * Every wait goes through the engine's {@link Waiter}, so a dead or stopped member is named by the
 * liveness probe or the timeout, on every rank that waits for it; a mismatch is found at chunk 0
 * (member 0 then publishes RELEASED for members on the tree or exchange, as tiled does).
 */
final class PipelinedAlgorithm {
    /** Sequence numbers a call takes after its chunks (see "Reuse"). */
    static final int TAIL = ShmLevel.SLOT_SETS - 1;

    private final Engine e;
    private final TileFold fold = new TileFold();

    PipelinedAlgorithm(Engine e) {
        this.e = e;
    }

    void run(Collective kind, DataType t, Op op, int root, int count, long desc, int chunkBytes) {
        final Engine e = this.e;
        final ShmLevel sock = e.sock;
        final CallStatus st = e.st;
        final Waiter w = e.waiter;
        final int size = t.size;
        final int chunkElems = chunkBytes / size;
        final int q = sock.members;
        final int me = sock.me;
        final Payload src = e.src;
        final Payload dst = e.dst;
        final boolean shared = src.isShared();
        final boolean gets = kind == Collective.ALLREDUCE || e.rank == root;
        // A direct buffer's own tile is folded where it lies (a shared buffer's all of it).
        final boolean ownInPlace = src.kind == Payload.BUFFER && src.buffer.isDirect();
        // My tile goes straight into my output when the output is memory the kernels write (a
        // buffer or the shared buffer) and not my own input that others still read in place.
        final boolean tileOut = gets && (dst.kind == Payload.BUFFER && dst.buffer.isDirect() || dst.kind == Payload.SHARED);
        // Streaming stores for the slot copies and the folded tiles (see "Streaming stores"), as this rank's
        // timings choose; the fold writes my output first only if it is no input the fold reads after its
        // first two (in place, members 0 and 1 only).
        final long bytes = (long) count * size;
        final long start = System.nanoTime();
        final boolean streaming = e.stores.streaming(bytes);
        final boolean outFirst = !(me >= 2 && Payload.overlaps(src, dst, t, count));
        if (shared) {
            desc |= Desc.SHARED;
        }
        final int chunks = Math.max(1, Engine.ceilDiv(count, chunkElems));
        final long b = e.nextSeq();
        // Step 0: chunk 0 in, then every arrival and the verdict.
        st.reset();
        copyIn(b, 0, count, chunkElems, size, t, q, me, ownInPlace, shared, streaming);
        sock.publish(ShmLevel.set(b), ShmLevel.ARRIVED, b, desc, st);
        sock.awaitArrivedAndCompare(ShmLevel.set(b), b, w, st);
        if (!st.ok()) {
            throw sock.verdictFailed(ShmLevel.set(b), b, desc, st);
        }
        final int last = gets ? chunks + 1 : chunks; // a member that reads nothing out stops after its last fold
        for (int j = 1; j <= last; j++) {
            if (j < chunks) { // 1. chunk j in
                final long s = e.nextSeq();
                final int set = ShmLevel.set(s);
                if (j >= ShmLevel.SLOT_SETS) {
                    // chunk s - SLOT_SETS, whose slots chunk s reuses, released by every member (its control
                    // blocks are those of its own set: control blocks rotate over more sets than slots)
                    final long back = s - ShmLevel.SLOT_SETS;
                    final int backSet = ShmLevel.set(back);
                    final long freed = ShmLevel.enc(back, ShmLevel.RELEASED);
                    for (int m = 0; m < q; m++) {
                        if (m != me) {
                            w.await(sock.buf, sock.ctl(backSet, m) + ShmLevel.STATE, freed, sock.ranks[m]);
                        }
                    }
                }
                copyIn(s, j, count, chunkElems, size, t, q, me, ownInPlace, shared, streaming);
                sock.publish(set, ShmLevel.ARRIVED, s, desc, st);
            }
            final int f = j - 1;
            if (f < chunks) { // 2. my tile of chunk f
                final long s = b + f;
                final int set = ShmLevel.set(s);
                if (f > 0) {
                    final long arrived = ShmLevel.enc(s, ShmLevel.ARRIVED);
                    for (int m = 0; m < q; m++) {
                        if (m != me) {
                            w.await(sock.buf, sock.ctl(set, m) + ShmLevel.STATE, arrived, sock.ranks[m]);
                        }
                    }
                }
                foldTile(s, f, count, chunkElems, size, t, op, q, me, ownInPlace, tileOut, streaming, outFirst);
                sock.publish(set, ShmLevel.TILED, s, desc, st);
                if (!gets) {
                    sock.publish(set, ShmLevel.RELEASED, s, desc, st); // its slots were my last reads of chunk f
                }
            }
            final int o = j - 2;
            if (o >= 0 && gets) { // 3. chunk o out, tile by tile
                final long s = b + o;
                final int set = ShmLevel.set(s);
                final int first = o * chunkElems;
                final int n = Math.min(chunkElems, count - first);
                final int tile = tile(n, q, size);
                final int res = sock.result(set);
                final long tiled = ShmLevel.enc(s, ShmLevel.TILED);
                for (int m = 0; m < q; m++) {
                    final int mlo = Math.min(n, m * tile);
                    final int mhi = Math.min(n, mlo + tile);
                    if (mhi > mlo && !(m == me && tileOut)) {
                        if (m != me) {
                            w.await(sock.buf, sock.ctl(set, m) + ShmLevel.STATE, tiled, sock.ranks[m]);
                        }
                        dst.copyOut(sock, res + mlo * size, t, first + mlo, mhi - mlo);
                    }
                }
                sock.publish(set, ShmLevel.RELEASED, s, desc, st);
            }
        }
        if (shared && !gets) {
            // Every tile owner reads my shared buffer in place: the caller may not touch it before they are done.
            final long s = b + chunks - 1;
            final long tiled = ShmLevel.enc(s, ShmLevel.TILED);
            for (int m = 0; m < q; m++) {
                if (m != me) {
                    w.await(sock.buf, sock.ctl(ShmLevel.set(s), m) + ShmLevel.STATE, tiled, sock.ranks[m]);
                }
            }
        }
        // The trailing arrivals: nothing of this call is read by this rank any more (see "Reuse").
        for (int k = 0; k < TAIL; k++) {
            final long s = e.nextSeq();
            Flags.release(sock.buf, sock.ctl(ShmLevel.set(s), me) + ShmLevel.STATE, ShmLevel.enc(s, ShmLevel.ARRIVED));
        }
        e.arrivedKnownAt(b);
        e.stores.record(bytes, streaming, System.nanoTime() - start);
    }

    /** Elements per tile of a chunk of {@code n}: cache-line aligned, so no two members write one line. */
    static int tile(int n, int q, int size) {
        final int lineElems = 64 / size;
        return Engine.ceilDiv(Engine.ceilDiv(n, q), lineElems) * lineElems;
    }

    /** Chunk {@code c} (sequence number {@code s}) of my input into my slot: what the tile owners read of it. */
    private void copyIn(long s, int c, int count, int chunkElems, int size, DataType t, int q, int me, boolean ownInPlace,
            boolean shared, boolean streaming) {
        if (shared) {
            return; // read in place
        }
        final ShmLevel sock = e.sock;
        final int first = c * chunkElems;
        final int n = Math.min(chunkElems, count - first);
        final int slot = sock.slot(ShmLevel.set(s), me);
        if (ownInPlace) { // the others' tiles only: my own stays in my buffer
            final int tile = tile(n, q, size);
            final int lo = Math.min(n, me * tile);
            final int hi = Math.min(n, lo + tile);
            e.src.copyIn(sock, slot, t, first, lo, streaming);
            e.src.copyIn(sock, slot + hi * size, t, first + hi, n - hi, streaming);
        } else {
            e.src.copyIn(sock, slot, t, first, n, streaming);
        }
    }

    /**
     * My tile of chunk {@code c} over every member's input, in member order, into the result area
     * and, if {@code tileOut}, into my output too, from the same staged blocks (then it is not
     * copied out again: one pass over the tile less).
     */
    private void foldTile(long s, int c, int count, int chunkElems, int size, DataType t, Op op, int q, int me, boolean ownInPlace,
            boolean tileOut, boolean streaming, boolean outFirst) {
        final ShmLevel sock = e.sock;
        final int set = ShmLevel.set(s);
        final int first = c * chunkElems;
        final int n = Math.min(chunkElems, count - first);
        final int tile = tile(n, q, size);
        final int lo = Math.min(n, me * tile);
        final int hi = Math.min(n, lo + tile);
        if (hi <= lo) {
            return;
        }
        final int to = sock.result(set) + lo * size;
        if (!tileOut) {
            fold.fold(e, sock, set, first, lo, hi, t, op, ownInPlace, to, null, 0, streaming, false);
        } else if (e.dst.kind == Payload.BUFFER) {
            fold.fold(e, sock, set, first, lo, hi, t, op, ownInPlace, to, e.dst.buffer, (e.dst.off + first + lo) * size, streaming,
                    outFirst);
        } else { // the shared buffer
            fold.fold(e, sock, set, first, lo, hi, t, op, ownInPlace, to, e.dst.sharedLevel.buf, e.dst.sharedOff + (first + lo) * size,
                    streaming, outFirst);
        }
    }
}
