package org.sharp4j.coll;

import java.nio.ByteBuffer;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.shm.Flags;
import org.sharp4j.shm.Waiter;

/**
 * Long Reduce inside one socket of one node: the root folds every member's input, read where it
 * lies, straight into its output, chunk by chunk as the members publish them.
 *
 * <h2>The math</h2>
 * For every element i the root computes {@code ((x0[i] op x1[i]) op x2[i]) ... op x(q-1)[i]}, left
 * to right over the members: the bits of {@link TiledAlgorithm} (whose tiles fold in the same
 * order). Per chunk of n elements a non-root member copies its n elements into its slot (nothing
 * when its input is its shared buffer); the root reads its own input in place (a direct buffer or
 * its shared buffer; an array is copied into its slot first) and folds each piece ({@link #PIECE_BYTES}) of all q
 * inputs in one pass ({@link Reductions#combineAll}: every staged block of every input read once,
 * the result written once) into its output (a direct buffer or its shared buffer; for an array, the
 * result area, then one copy out). Critical path of the root for a message of N elements: q N
 * element reads and N writes (block copies: (q+1) N, where q-1 pairwise passes cost 3(q-1) N),
 * pipelined against the members' copies of N; the tiled Reduce pays copy-in N, a fold of N/q over
 * q inputs and copy-out N; Open MPI's two-rank reduce is one single copy of N (CMA) plus a fold of
 * N. Direct wins for small q (the built-in table uses it up to 4 ranks per node, where its root
 * measured faster) and the tiled or pipelined fold, spread over q ranks, for large q.
 *
 * <h2>Flags (all in {@link ShmLevel}'s control blocks; release stores, acquire loads)</h2>
 * <ul>
 *   <li>Member m, chunk of sequence number s: before writing anything of set(s) it acquires every
 *       other member's state {@code >= (s-2, ARRIVED)} (the <em>gate</em>); then it sets its
 *       progress word to {@code s << 20} (plain), publishes {@code (s, ARRIVED)} with the call's
 *       descriptor (release), and copies its chunk into its slot in pieces ({@link #PIECE_BYTES}), publishing
 *       {@code s << 20 | pieces done} on the progress word after each (release). The root
 *       publishes its ARRIVED at the start of its chunk, before folding it.</li>
 *   <li>The root acquires every member's {@code (s, ARRIVED)}, then piece by piece each member's
 *       progress {@code >= s << 20 | k+1} (acquire) in member order and folds the piece; when the
 *       chunk is folded it publishes {@code (s, TILED)}: "done reading chunk s". So the fold of
 *       piece k overlaps the members' copies of pieces k+1... A root behind its members (the
 *       acquired progress words say that every member published pieces past k) folds all of those
 *       in the same pass: one kernel call and one round of progress reads per run of ready pieces
 *       instead of per piece; the same operands in the same order, the same bits. Measured (OSU
 *       port, 2 ranks, this project's AMD VM, 3 rounds alternating with the build before, same
 *       processes as Open MPI Java): 512 KiB 24.8-25.5 us against 26.6-28.1, 1 MiB 46.4-48.3
 *       against 52.1-56.5, 2 MiB 88-106 against 110-142; 4 ranks on the 2 cores 2 MiB 253-271
 *       against 331-373.</li>
 *   <li>Reuse: a member arrives at s-2 only after it finished s-3 (for the root: after it read
 *       every slot of s-3), so the gate proves every reader of sequence numbers up to s-3 is done:
 *       enough for the slot and block of set(s) (last used by s-4), and, when this call ends at s,
 *       for the next call's first write (set(s+1), last used by s-3), which is the guarantee
 *       {@link ShmLevel}'s reuse rule asks of every algorithm. So a member never waits for the root,
 *       only for every member to have arrived two chunks back: up to two chunks in flight ahead of
 *       the root's fold, and no acknowledgment round.</li>
 * </ul>
 *
 * <h2>Copies the root reads: non-temporal stores</h2>
 * From {@link Payload#STREAM_MIN_BYTES} a non-root whose input is a direct buffer copies it with
 * non-temporal stores where the native kernels are loaded, unless its timings say ordinary stores
 * serve better ({@link StoreChoice}: ranks on the two hardware threads of one core). With ordinary stores every line the
 * root folds is modified in the copier's cache and moves between the cores on the root's read;
 * 2-rank Reduce (1 MiB, the OSU port and a loop of 40 x 200 calls, same machine) was then
 * bistable, 60-70 us or 160-280 us per call for seconds at a time, 0.27-1.98 against Open MPI Java
 * across runs, and with streaming stores 77-150 us and 0.45-0.81 (3 runs, 64 KiB-16 MiB). The
 * fence at the end of the copy orders it before the progress word's release. The root's own
 * copies (arrays) and the other algorithms keep ordinary stores.
 *
 * <h2>The cma Reduce: the root reads the members' inputs from their processes</h2>
 * With {@code cma} (the tuning table's {@code cma}, where the socket's ranks can read each other's
 * memory: {@link PeerReads}) a non-root whose input is a direct buffer copies nothing: it writes the
 * input's address into its {@link #ADDRESS} word (plain, before its ARRIVED, which orders it) and
 * its progress word says every piece is there. The root, having acquired that ARRIVED, reads the
 * member's part of each step ({@link #stageBytes}: up to 256 KiB per member) into a block of its own
 * ({@code process_vm_readv}: the kernel's copy, one system call per member and step) and folds the
 * step from there as from a slot: the same operands in the same order, the same bits. A member whose
 * input is an array copies into its slot, one whose input is its shared buffer is read in place, as
 * in the direct Reduce; the root's {@link #ADDRESS} read tells it which (0: not read from the
 * process). Who returns when: a member read from its process waits for the root's TILED of its last
 * chunk, as a shared-buffer member does (its buffer must not change before it is read); when the root
 * reads every other member from its process, it publishes each chunk's TILED once it has read the
 * chunk, before folding it, so the members return while it folds. Critical path of the root for q
 * members and N bytes: (q-1) N read by the kernel (lines clean in the members' caches, or, for an
 * input that did not change since the last call, still in the root's) and the fold of q N; the
 * members' copies of N are gone. Measured on the Intel VM (2 ranks, OSU port, same processes): 1.1-1.9x
 * faster than the direct Reduce at 16-256 KiB, slower from 512 KiB, where the reads no longer stay
 * in the root's L2 beside the fold; 3 and 4 ranks on those 2 cores slower (0.5-1.1x: the root reads
 * alone what the members copied; more cores were not at hand). The built-in table takes it for 2
 * ranks at 16-256 KiB.
 *
 * <h2>The split cma Reduce: every rank folds a slice</h2>
 * With {@code split} (the table's {@code cma_split}) and every member's input and the root's output
 * direct buffers, the root reading alone is replaced by {@link CmaSplitAlgorithm}: every member folds
 * a q-th of the message from all inputs and writes it into the root's output. At the first chunk
 * every rank writes its input's address into {@link #ADDRESS} and the root its output's into
 * {@link #OUT_ADDRESS} before its ARRIVED; after the verdict every rank reads the same words and
 * decides alike: split (the whole call in that one sequence number), or on as the cma Reduce.
 * Measured on the Intel VM (2 ranks, OSU port, same processes, blocks alternating): against the
 * direct Reduce, in the VM's fast phase (2 runs) 0.97-1.61x as fast at 512 KiB, 1.24-1.67x at 1 MiB,
 * 1.13-1.57x at 2-16 MiB; in its slow phase (4 runs; in C the split then gains nothing over the
 * copy either) 0.86-1.52x at 512 KiB, 0.96-1.12x at 1 MiB, 0.89-1.25x at 2-16 MiB; against the cma
 * Reduce slower at 64-256 KiB (0.8-0.9x: three system calls and a flag from every rank per call);
 * 4 ranks on 2 cores 0.64-0.68x at 512 KiB-1 MiB, 1.11-1.74x at 4-16 MiB (the direct and pipelined
 * Reduces there). The built-in table takes it for 2 ranks from 512 KiB and 4 from 4 MiB.
 *
 * <h2>The verdict (argument check)</h2>
 * Every rank, root or not, acquires every member's ARRIVED of the call's first chunk before it
 * goes past that chunk, and the verdict is the first member, in member order, whose descriptor
 * differs from member 0's: the same on every rank, as in the tiled and exchange algorithms, and
 * found after one sequence number on every rank (a member on another algorithm publishes at least
 * ARRIVED there too; member 0 then publishes RELEASED for members on the tree or exchange). This
 * wait costs a non-root the other members' first copy, never the root's fold.
 *
 * <h2>What a non-root gets</h2>
 * It returns when its last chunk is published (after the verdict of the first chunk), before the
 * root has read it: its input was copied, so the caller may reuse it at once. A non-root whose
 * input is its shared buffer waits for the root's TILED of the last chunk (the root reads that
 * buffer in place). If the root dies after a non-root returned, that non-root's call succeeded;
 * its next collective waits for the root (through the gate or any algorithm's flags) and throws
 * the {@code PeerFailureException} naming it.
 *
 * <p>Several sockets or nodes: the engine runs {@link TiledAlgorithm} instead (same bits).
 */
final class DirectReduceAlgorithm {
    /**
     * Progress word in a member's control block (the inline data area, which this algorithm does
     * not use otherwise; written before the ARRIVED, so that the root, having acquired the ARRIVED,
     * never sees an earlier call's inline data there): {@code s << 20 | pieces of chunk s in the slot} (all of them: 0xFFFFF, for an input read in place), only growing; a slot holds fewer than 2^20 pieces.
     */
    static final int PROGRESS = ShmLevel.INLINE;
    /**
     * A member publishes its chunk in pieces of this many bytes, so that the root's fold overlaps the
     * copy. Each piece costs the member a fence and a release and the root a poll and a kernel call
     * (fewer since the root folds every run of published pieces at once); measured against 16 KiB
     * pieces (OSU port, 512 KiB chunks, same processes as Open MPI Java, runs alternating, AMD VM):
     * 32 KiB took 0.85-0.97x their time at 64 KiB-2 MiB (3 rounds), 64 KiB 0.74-0.96x from 512 KiB and
     * the same below it (3 rounds against 32 KiB), 128 KiB lost at 128 KiB (one piece: no overlap,
     * 1.1-1.2x) and gained little above; 4 ranks on the 2 cores, 64 KiB against 16 KiB: 1 MiB 91-106 us
     * against 119-176, 2 MiB 209-241 against 269-298.
     */
    static final int PIECE_BYTES = 64 * 1024;
    /**
     * Address word next to the progress word, written before the ARRIVED like it: in the cma Reduce,
     * where a member's input lies in its process (its element 0; the root adds the chunk's offset),
     * 0 when the member copies into its slot (always in the direct Reduce). The root writes its own
     * input's address there too at a call's first chunk in the cma Reduces (read by the members only
     * to decide the split).
     */
    static final int ADDRESS = PROGRESS + 8;
    /**
     * Output word next to the address word, written before the ARRIVED of a call's first sequence
     * number in the split cma algorithms ({@link CmaSplitAlgorithm}) by every rank that gets a result:
     * where its output lies in its process (element 0), 0 when the others may not write into it.
     */
    static final int OUT_ADDRESS = PROGRESS + 16;

    /**
     * Bytes the cma root stages per call of {@code process_vm_readv} over all members: one read per
     * member per step of {@code STAGE_BYTES / (q-1)} (64-256 KiB). A read costs a system call and the
     * pinning of the peer's pages, so few and large; the staged blocks stay in the root's L2 for the
     * fold. Measured in C on this project's Intel VM (2 ranks, the root's time per call, 256 KiB):
     * reads of 16 KiB 27.2 us, of 64 KiB 22.1, of 256 KiB 19.9 (osu-bench/bench/shm-reduce-floor.c, mode 3).
     */
    static final int STAGE_BYTES = 512 * 1024;

    private final Engine e;
    /** The root's operands of the current chunk (grown once to the member count; no allocation per call). */
    private ByteBuffer[] xBuf = new ByteBuffer[0];
    private int[] xOff = new int[0];
    /** The operands' offsets of the current piece. */
    private int[] pieceOff = new int[0];
    /** The cma root's reads: each member's input address (0: it copies into its slot), and the block they are read into. */
    private long[] remote = new long[0];
    private ByteBuffer stage;
    /** The root's folds that covered more than one step's pieces (tests and diagnostics: {@link Engine#directWideFolds}). */
    long wideFolds;

    DirectReduceAlgorithm(Engine e) {
        this.e = e;
    }

    /**
     * One node, one socket: see the class comment; {@code cma}: the cma Reduce (members' inputs read
     * by the root), {@code split} (with {@code cma}): the split cma Reduce where the call's buffers allow.
     */
    void run(DataType t, Op op, int root, int count, long desc, int chunkBytes, boolean cma, boolean split) {
        final Engine e = this.e;
        final ShmLevel sock = e.sock;
        final CallStatus st = e.st;
        final Waiter w = e.waiter;
        final int size = t.size;
        final int chunkElems = chunkBytes / size;
        final int q = sock.members;
        final int me = sock.me;
        final int r = e.topo.socketIndex(root);
        final Payload src = e.src;
        final Payload dst = e.dst;
        final boolean shared = src.isShared();
        if (shared) {
            desc |= Desc.SHARED;
        }
        final boolean isRoot = me == r;
        // The root reads its own input in place unless it is an array or its output overlaps it
        // and is written before it is read (the passes before member r's write the output).
        final boolean ownInPlace = isRoot && src.kind != Payload.ARRAY && !(r >= 2 && Payload.overlaps(src, dst, t, count));
        final int pieceElems = Math.max(1, Math.min(chunkElems, PIECE_BYTES / size));
        // A non-root's copies with streaming stores as its timings choose (StoreChoice; the root copies only arrays, ordinarily).
        final long bytes = (long) count * size;
        final long start = System.nanoTime();
        // cma: a member whose input is a direct buffer copies nothing; the root reads it in this process
        final boolean readMe = cma && !isRoot && src.kind == Payload.BUFFER && src.buffer.isDirect();
        final long myAddress = cma ? CmaSplitAlgorithm.inputAddress(src, t) : 0;
        // The split cma Reduce (CmaSplitAlgorithm): possible when every member's input and the root's output lie in their processes
        final boolean splitWanted = split && q >= 2 && myAddress != 0;
        final long outAddress = splitWanted && isRoot ? CmaSplitAlgorithm.outputAddress(dst, t, count, myAddress) : 0;
        final boolean streaming = !isRoot && !readMe && e.stores.streaming(bytes);
        // the root's step: a piece of every slot (PIECE_BYTES), or in the cma Reduce a read of every member's input
        final int stepElems = cma ? Math.max(pieceElems, Math.min(chunkElems, stageBytes(q) / size)) : pieceElems;
        if (xBuf.length < q) {
            xBuf = new ByteBuffer[q];
            xOff = new int[q];
            pieceOff = new int[q];
            remote = new long[q];
        }
        if (cma && isRoot && (stage == null || stage.capacity() < q * stageBytes(q))) {
            stage = ByteBuffer.allocateDirect(q * stageBytes(q)).order(java.nio.ByteOrder.nativeOrder());
        }
        long s = 0;
        long firstSeq = -1;
        int chunk = 0;
        for (int first = 0; first < count || chunk == 0; first += chunkElems, chunk++) {
            final int n = Math.min(chunkElems, count - first);
            s = e.nextSeq();
            if (chunk == 0) {
                firstSeq = s;
            }
            final int set = ShmLevel.set(s);
            st.reset();
            if (!isRoot || chunk == 0) {
                gate(sock, s, w);
            }
            if (isRoot) {
                if (!ownInPlace) {
                    src.copyIn(sock, sock.slot(set, me), t, first, n);
                }
                if (chunk == 0 && cma) {
                    // read by the members only to decide the split (after this ARRIVED, which orders them)
                    Flags.put(sock.buf, sock.ctl(set, me) + ADDRESS, myAddress);
                    Flags.put(sock.buf, sock.ctl(set, me) + OUT_ADDRESS, outAddress);
                }
                sock.publish(set, ShmLevel.ARRIVED, s, desc, st);
            } else {
                // Arrive first, then copy piece by piece, each published on the progress word: the
                // root folds a piece as soon as every member published it. The word held other data
                // (the inline area of earlier calls): it is reset before the ARRIVED that orders it.
                final int progress = sock.ctl(set, me) + PROGRESS;
                Flags.put(sock.buf, progress, (s << 20) | (shared || readMe ? 0xFFFFF : 0));
                Flags.put(sock.buf, sock.ctl(set, me) + ADDRESS, myAddress);
                sock.publish(set, ShmLevel.ARRIVED, s, desc, st);
                if (!shared && !readMe) {
                    int k = 0;
                    for (int p = 0; p < n || k == 0; p += pieceElems, k++) {
                        src.copyIn(sock, sock.slot(set, me) + p * size, t, first + p, Math.min(pieceElems, n - p), streaming);
                        Flags.release(sock.buf, progress, (s << 20) | (k + 1));
                    }
                }
            }
            if (chunk == 0) {
                sock.awaitArrivedAndCompare(set, s, w, st); // the verdict, the same on every rank
                if (!st.ok()) {
                    throw sock.verdictFailed(set, s, desc, st);
                }
                if (splitWanted && CmaSplitAlgorithm.splits(sock, set, r)) {
                    e.cmaSplit.run(t, op, r, count, s, set, desc); // the whole call, in this sequence number
                    break;
                }
            }
            if (!isRoot) {
                continue;
            }
            // The accumulator: the output itself, or (array) the result area.
            final ByteBuffer acc;
            final int accOff;
            if (dst.kind == Payload.BUFFER || dst.kind == Payload.SHARED) {
                acc = dst.memory();
                accOff = dst.byteOffset(t, first);
            } else {
                acc = sock.buf;
                accOff = sock.result(set);
            }
            // Member m's input of this chunk (m's own input read in place when it can be). When the root
            // reads every other member's input from its process, it is done with them once it has read
            // them: it says so then (TILED), before the fold, so that they return.
            boolean allRead = q > 1;
            boolean tiled = false;
            for (int m = 0; m < q; m++) {
                if (m == me) {
                    if (ownInPlace) {
                        xBuf[m] = src.memory();
                        xOff[m] = src.byteOffset(t, first);
                    } else {
                        xBuf[m] = sock.buf;
                        xOff[m] = sock.slot(set, me); // copied in above
                    }
                } else {
                    w.await(sock.buf, sock.ctl(set, m) + ShmLevel.STATE, ShmLevel.enc(s, ShmLevel.ARRIVED), sock.ranks[m]);
                    remote[m] = cma ? Flags.plain(sock.buf, sock.ctl(set, m) + ADDRESS) : 0; // ordered by the ARRIVED
                    if (remote[m] != 0) {
                        xBuf[m] = stage;
                        xOff[m] = m * stageBytes(q);
                    } else {
                        allRead = false;
                        xBuf[m] = sock.buf;
                        xOff[m] = Desc.shared(sock.descOf(set, m)) ? sock.shared(m) + first * size : sock.slot(set, m);
                    }
                }
            }
            // No member read from its process (remote all 0): every operand lies in a slot, a shared buffer or in place
            boolean readsSlots = true;
            for (int m = 0; m < q; m++) {
                readsSlots &= m == me || remote[m] == 0;
            }
            // Step by step as the members publish their pieces: every member's part of the step (read
            // from its process in the cma Reduce), then one pass over all of them, left to right over
            // members (Reductions.combineAll). A step waits for the pieces that cover it, and where every
            // operand lies in a slot or in place, takes every piece all members have published by then.
            for (int p = 0; p < n; ) {
                int len = Math.min(stepElems, n - p);
                final long ready = (s << 20) | ((p + len + pieceElems - 1) / pieceElems);
                final int po = p * size;
                // Pieces published beyond the step's, by every member whose slot is read: folded in the same
                // pass (a root behind its members makes one kernel call per run of ready pieces, not per piece)
                int upTo = readsSlots && q > 1 ? n : p + len; // alone (q = 1) nothing to run ahead of
                for (int m = 0; m < q; m++) {
                    if (m != me && remote[m] != 0) {
                        e.readPeer(m, remote[m] + (long) (first + p) * size, stage, xOff[m], len * size);
                        pieceOff[m] = xOff[m];
                        continue;
                    }
                    if (m != me) {
                        long v = w.await(sock.buf, sock.ctl(set, m) + PROGRESS, ready, sock.ranks[m]);
                        // v >= ready: the pieces of chunk s it says are there (0xFFFFF: all, an input read in place)
                        upTo = Math.min(upTo, v >>> 20 == s ? (int) Math.min(n, (v & 0xFFFFF) * pieceElems) : p + len);
                    }
                    pieceOff[m] = xOff[m] + po;
                }
                if (upTo - p > len) {
                    len = upTo - p;
                    wideFolds++;
                }
                if (allRead && p + len == n) {
                    sock.publish(set, ShmLevel.TILED, s, desc, st); // every input of the chunk read: see above
                    tiled = true;
                }
                if (q == 1) {
                    ShmLevel.copy(acc, accOff + po, xBuf[0], pieceOff[0], len * size);
                } else {
                    Reductions.combineAll(t, op, acc, accOff + po, null, 0, xBuf, pieceOff, q, len);
                }
                p += len;
            }
            if (dst.kind == Payload.ARRAY) {
                dst.copyOut(sock, accOff, t, first, n);
            }
            if (!tiled) {
                sock.publish(set, ShmLevel.TILED, s, desc, st);
            }
        }
        if ((shared || readMe) && !isRoot) {
            // The root reads this rank's shared buffer in place: the caller may not touch it before.
            w.await(sock.buf, sock.ctl(ShmLevel.set(s), r) + ShmLevel.STATE, ShmLevel.enc(s, ShmLevel.TILED), sock.ranks[r]);
        }
        if (!isRoot) {
            // A non-root saw every member's ARRIVED of the first chunk (the verdict) and, through its gate,
            // of the last chunk minus 2, not more: the engine's reuse bookkeeping must not assume the last.
            e.arrivedKnownAt(Math.max(s - 2, firstSeq));
            if (!readMe) {
                e.stores.record(bytes, streaming, System.nanoTime() - start); // a call that copied: its stores' time
            }
        }
    }

    /** Bytes the cma root reads per member per step: {@link #STAGE_BYTES} shared by the other members, 64-256 KiB in pages. */
    static int stageBytes(int q) {
        return Math.max(PIECE_BYTES, Math.min(256 * 1024, STAGE_BYTES / Math.max(1, q - 1))) & ~4095;
    }

    /** Every other member's state {@code >= (s-2, ARRIVED)}: see the class comment's reuse rule. */
    static void gate(ShmLevel sock, long s, Waiter w) {
        if (s <= 2) {
            return;
        }
        final long back = s - 2;
        final int set = ShmLevel.set(back);
        final long target = ShmLevel.enc(back, ShmLevel.ARRIVED);
        for (int m = 0; m < sock.members; m++) {
            if (m != sock.me) {
                w.await(sock.buf, sock.ctl(set, m) + ShmLevel.STATE, target, sock.ranks[m]);
            }
        }
    }

}
