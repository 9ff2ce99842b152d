package org.sharp4j.coll;

import java.nio.ByteBuffer;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.shm.Flags;
import org.sharp4j.shm.Waiter;
import org.sharp4j.tuning.Collective;

/**
 * Small messages in one cache-line transfer: every member of a level publishes its contribution
 * next to its arrival flag, and every member reads all of them and folds them itself.
 *
 * <h2>The math</h2>
 * A tree moves the data up, then the result down: at least two cache-line transfers on the
 * critical path, {@code 2 (a + b m)} with one level (paper 001's cost model), and more with
 * {@code log_k q} levels. Here member m writes its line ({@code ARRIVED}, call signature, up to 40
 * bytes inline; longer data in its slot) and reads the q-1 others: one transfer on the critical
 * path, the q-1 reads overlapping as independent misses, {@code a + (q-1) b m} in all. Every
 * member folds the contributions itself, in the bracket of the k-nomial tree of the radix the
 * table gives the call (the tree algorithm's: for k = 2 and 4 members {@code (x0 op x1) op (x2 op
 * x3)}, which is also Open MPI's recursive doubling), into private buffers (not a line anyone
 * polls), so all get the same bits without a release, and the same bits as the tree algorithm. Barrier is
 * the same exchange without data; Reduce is the exchange of an Allreduce whose result only the
 * root keeps (it costs the same single transfer). The call signatures are compared on every
 * member against member 0's: the verdict (the first member in member order whose signature
 * differs) is the same everywhere, again without a release. It pays while q-1 line reads cost
 * less than a second transfer: small q (a socket's ranks, the node's socket leaders) and small
 * messages; the tuning table decides.
 *
 * <h2>Levels</h2>
 * <ul>
 *   <li>one socket, one node: the exchange is the whole collective;</li>
 *   <li>several sockets: the socket leaders (who hold their socket's result after phase 1)
 *       exchange once more in the node segment (phase 2, the same bracket over sockets);</li>
 *   <li>several nodes: the node leader runs phase 3 on the node's result;</li>
 *   <li>then each level's member 0 publishes RELEASED with the verdict, the result in the second
 *       line of its control block (never the first, which holds its own input that slower members
 *       may still be reading), or in the level's result area above 40 bytes; the members below
 *       wait for it (phases 4-5). RELEASED on member 0's block is what every algorithm's members
 *       wait for, so ranks whose calls differ and took different algorithms still all end.</li>
 * </ul>
 * Reuse: see "Who returns when" below and {@link ShmLevel}.
 *
 * <h2>Who returns when (a Reduce on one socket)</h2>
 * On a flat level (one socket, one node, no phase 3), in a Reduce, every member other than member
 * 0 and the root (a <i>leaf</i> here) copies its contribution into its line or slot of set s,
 * publishes ARRIVED and returns: it reads nothing of call s, so it needs no other rank to be
 * scheduled. Member 0 and the root wait for every arrival; the root folds in the bracket above and
 * keeps the result (its own input it publishes nowhere: nobody reads it); member 0 only compares
 * the signatures (and on a mismatch publishes RELEASED, for members whose calls took the tree or
 * the tiled algorithm). {@link TreeAlgorithm}'s flat
 * Reduce does the same: a member other than member 0 and the root folds its children, publishes
 * ARRIVED and returns, unless its subtree showed a mismatch (then it waits for member 0's
 * verdict); one that goes copies its input instead of lending its shared buffer.
 *
 * <p><b>Reuse, derived.</b> Set s is written again at call s + SETS. The readers of what member m
 * wrote in call s: in an exchange Allreduce or Barrier every member, in an exchange Reduce member 0
 * and the root (leaves read nothing), in the tree m's parent and, for member 0's release, every
 * member that waits for it, in the tiled algorithm every member; each of them reads it before it
 * leaves s. A rank's calls are sequential and every algorithm publishes at least ARRIVED on the
 * socket control block for every sequence number, so a reader of s is done once it arrived at
 * s + 1. Hence the rule: <b>a member writes anything of set n only once every member arrived at
 * n - SETS + 1</b>, or n - SLOT_SETS + 1 for a call that writes a slot or the result area (the
 * tree; the exchange above {@link ShmLevel#EXCHANGE_BYTES}), whose sets rotate over fewer
 * (member j's state in that set is at least {@code enc(n - SETS + 1, ARRIVED)};
 * states only grow, so a later call there counts too). The release/acquire pair: a reader's reads
 * of call n - SETS precede, in program order, its release store of ARRIVED for n - SETS + 1; the
 * writer acquires that flag before its first store of call n. {@link Engine#run} enforces it
 * before it dispatches: a rank that observed every member's arrival at its previous call (every
 * algorithm does, except a leaf that went ahead) has it already; a leaf that went ahead waits
 * there, so leaves run at most SETS - 1 calls ahead of the slowest member (SLOT_SETS - 1 above
 * EXCHANGE_BYTES and on the tree). Before a tiled call
 * the engine asks for arrivals at n - 1, the older and stronger rule that algorithm was written
 * against. Interleavings: an Allreduce or Barrier after leaf Reduces reads only data of its own
 * call, written after the writers' guards; a root that was a leaf of the previous calls reads the
 * leaves' data of its call only; changing roots change who reads, not the rule, which counts
 * arrivals, not roles.
 *
 * <p><b>The Barrier's own line.</b> A Barrier on the flat exchange publishes as every call does (state,
 * signature and status on the line of its set), then its sequence number s in its Barrier word
 * ({@link ShmLevel#barrierWord}: one fixed line per member, release), beside it the first sequence
 * number of the run of consecutive such Barriers that s ends (stored before it), and waits
 * for each other member's Barrier word instead of polling that member's line of the set. Only these
 * Barriers write the two words, each its own sequence number: a member whose word is at least s and
 * whose run began at s or earlier made a Barrier at s (every Barrier has the same signature, a flat
 * one a clean status), and its line of set s is visible with the word, so the lean verdict would
 * have passed, and "observed every arrival at s" holds for the reuse rule and the pending verdicts as
 * before. The run is what lets a member that already went on into the next Barrier count (calls back
 * to back); a word past s alone would not say that call s was a Barrier (calls that differ, then a
 * leaf's Reduces, then a Barrier: MismatchAndFailureTest, "a late Barrier among Reduces"). A word
 * below s after a few polls ({@link Waiter#glance}), or a run that began after s, sends this member
 * to the set's line and the verdict as before, so a mismatch, a late or dead peer and the timeout
 * are handled there.
 *
 * <p>Why: a reader that polls one fixed line finds the writer's store sooner than one that polls a
 * new line each call. The protocol in C (osu-bench/bench/shm-small-floor.c, 2 processes, same
 * minutes, slow phase, 3 rounds alternating, P50): the Barrier over the sets' lines 0.321 us, with
 * this word 0.286-0.291 (set line first or the word first alike), the least barrier (one word per
 * rank and nothing else) 0.285. In Java, 2026-12-08, slow phase, 2 ranks, the OSU port ({@code OsuBarrier
 * --compare mpi -i 100000 -z -f}) alternating with the build before and OMB's C {@code osu_barrier}: P50
 * 0.28-0.31 us against 0.32-0.34 (8 rounds), OMB C 0.45 (0.62-0.69x against 0.71-0.76x); OSU's Java
 * OSUBarrier through the agent, calls back to back, 0.34-0.39 against 0.37-0.40 (4 pairs); 4 and 8 ranks
 * on 2 cores the same (no spinning there: one look, then the set's line).
 *
 * <p><b>The verdict.</b> Every member that waits for the others compares every signature against
 * member 0's (the first differing member in member order): member 0 and the root of a Reduce,
 * every member of the other calls, so all that throw throw the same. Member 0 never goes ahead, so
 * a mismatch is always seen, even when no rank named itself root. When member 0's call ends with a
 * mismatch (whatever the algorithm), the engine records its sequence number and status in the
 * level header's verdict record of that set ({@link ShmLevel#writeVerdict}) before member 0
 * publishes anything later: its release store of {@code P_DONE} at the end of the call, then its
 * ARRIVED of the next, which a leaf acquires before it reads the record. A leaf keeps the calls it
 * went ahead of (at most one per set) and looks their records up once it knows member 0 arrived at
 * a later call: at the end of any later call that observed every member (an Allreduce, a Barrier,
 * a tree or tiled call, a Reduce as root or member 0), and at the latest in the guard of call
 * c + SETS, which waited for arrivals at c + 1. Member 0 can overwrite the record of c only with
 * one for c + SETS, which needs this leaf's arrival at c + SETS, after the lookup. That later call
 * completes (its result is delivered), then throws {@code ArgumentMismatchException} naming call c
 * ("an earlier call"); the communicator stays usable, as after any mismatch. {@code close()} waits
 * (failure probes and the timeout apply) until member 0 finished every such call and throws the
 * same, after releasing. A leaf whose root never comes is named at the timeout by member 0 and,
 * once its sets run out, by the leaf itself.
 */
final class ExchangeAlgorithm {
    private final Engine e;
    /** Private accumulator: this rank's fold, written by this rank only (never polled by others). */
    private final Payload.Views accViews;
    private final ByteBuffer acc;
    /** Partial folds of subtrees, one per depth below the root's (allocated once; 1..log2 members). */
    private final Payload.Views[] levels;
    /**
     * This rank's contribution at the socket level as it published it, copied before it published:
     * the fold reads it from here, never back from its published line or slot, which a peer may
     * have fetched by then (a read back then costs a cache-line transfer per line; see runInline).
     */
    private final Payload.Views own;
    /** This rank's latest Barrier on the flat exchange (its sequence number), for the run start beside its Barrier word. */
    private long lastBarrier = -1;
    /** The first sequence number of the run of such Barriers that {@link #lastBarrier} ends. */
    private long barrierRun;
    /**
     * Private operands and results of {@link InlineData#fold2}, up to {@link #PAIR_BYTES} each: this
     * rank's contribution as it published it, the peer's as read from its line or slot, and the result.
     */
    private final long[] own8 = new long[PAIR_BYTES / 8];
    private final int[] own4 = new int[PAIR_BYTES / 4];
    private final long[] peer8 = new long[PAIR_BYTES / 8];
    private final int[] peer4 = new int[PAIR_BYTES / 4];
    private final long[] r8 = new long[PAIR_BYTES / 8];
    private final int[] r4 = new int[PAIR_BYTES / 4];

    /**
     * Up to this many bytes a flat exchange of two members runs {@link #runInline} with the data in
     * the slot (above {@link ShmLevel#INLINE_BYTES}): the same lines and the same bits as
     * {@link #run}, without its layers (the accumulator, the kernel dispatch, the copy back of this
     * rank's input and the copy out). A C ping-pong of a flag line plus a data line on this machine
     * cost what the flag line alone did, so what the OSU port showed at 64 B (0.44-0.47 us against
     * 8 B's 0.33 in the machine's slow phase, where Open MPI Java's two cost the same 0.58) was the
     * path, not the transfer. Measured (OSU port, 2 ranks, alternating jars, Open MPI Java in the
     * same processes): 64 B Allreduce 0.35 us (0.58x Open MPI) against 0.44 (0.76x) in the slow
     * phase, equal in the fast one (0.16-0.17). Above 64 B the element-by-element moves lose to the
     * general path's bulk kernels: with this bound at 256 B, a 256 B Allreduce took 0.27-0.28 us
     * against 0.20-0.21 in the fast phase.
     *
     * <p>That comparison was against {@link #run}'s general layers; {@link #runPair}, which came
     * later, serves operands that lie in direct or shared buffers without them, and from 41 B it
     * beats this path: the engine sends a call here above {@link ShmLevel#INLINE_BYTES} only when
     * {@link #operandsInPlace} says no (arrays). Measured at 64 B (OSU port, direct buffers, 2
     * ranks, jars alternating per round, 20,000 calls, pairs in the same phase of the machine):
     * Reduce 0.286-0.301 us against 0.301-0.341 in 5 pairs of 5 (x Open MPI Java 0.62-0.65
     * against 0.65-0.72), Allreduce even (0.120-0.336 against 0.131-0.356, 3 pairs of 5).
     */
    static final int PAIR_BYTES = 64;

    ExchangeAlgorithm(Engine e, int maxBytes, int maxMembers) {
        this.e = e;
        this.accViews = new Payload.Views(Math.max(64, maxBytes));
        this.acc = accViews.buf;
        int depth = 1;
        for (int m = 1; m < maxMembers; m <<= 1) {
            depth++;
        }
        this.own = new Payload.Views(Math.max(64, maxBytes));
        this.levels = new Payload.Views[depth + 1];
        for (int d = 1; d < levels.length; d++) {
            levels[d] = new Payload.Views(Math.max(64, maxBytes));
        }
    }

    /** @param radix the tree's radix for this call (its bracket), from the table segment the engine looked up */
    void run(Collective kind, DataType t, Op op, int root, int count, long desc, int radix) {
        final Engine e = this.e;
        final ShmLevel sock = e.sock;
        final CallStatus st = e.st;
        final long s = e.nextSeq();
        final int set = ShmLevel.set(s);
        final int bytes = t == null ? 0 : count * t.size;
        st.reset();
        if (kind == Collective.REDUCE && e.flat && e.rank != root && sock.me != 0) {
            // A Reduce's leaf: publish and go (class comment, "Who returns when"). The engine made
            // sure this set is free; member 0 and the root compare the signatures.
            if (bytes > 0) {
                e.src.copyIn(sock, sock.exchangeOff(set, sock.me, bytes), t, 0, count);
            }
            sock.publish(set, ShmLevel.ARRIVED, s, desc, st);
            e.wentAhead(s);
            return;
        }
        if (e.flat && sock.members == 2 && bytes > 0 && operandsInPlace(e.src, e.dst, t, count)) {
            runPair(kind, t, op, root, count, desc, radix, s, set, bytes);
            return;
        }
        // Phase 1: publish, then read everyone (this rank's own input is read back from its private copy).
        if (bytes > 0 && kind == Collective.REDUCE && e.flat && e.rank == root) {
            // A flat Reduce's root publishes no data: nobody reads it (member 0 compares the
            // signatures only, leaves read nothing; see runPair). Its fold reads the private copy.
            e.src.copyIn(own, 0, t, 0, count);
        } else if (bytes > 0) {
            // Always a copy, also from the shared buffer: nothing tells a member when the others have
            // read its input (no release follows the fold), and an in-place result would overwrite it.
            int at = sock.exchangeOff(set, sock.me, bytes);
            e.src.copyIn(sock, at, t, 0, count);
            ShmLevel.copy(own.buf, 0, sock.buf, at, bytes); // not yet published: no transfer
        }
        sock.publish(set, ShmLevel.ARRIVED, s, desc, st);
        // A flat Reduce's member 0 that is not the root only compares the signatures (no data to fold).
        final boolean foldData = !(kind == Collective.REDUCE && e.flat && e.rank != root);
        fold(sock, set, s, desc, count, t, op, foldData ? bytes : 0, radix);
        if (e.flat) {
            if (!st.ok()) {
                throw sock.verdictFailed(set, s, desc, st);
            }
            deliver(kind, t, root, count);
            return;
        }
        if (sock.me == 0) {
            if (e.socketCount > 1) {
                // Phase 2: the socket leaders exchange their sockets' results in the node segment.
                final ShmLevel node = e.node;
                if (bytes > 0) {
                    ShmLevel.copy(node.buf, node.exchangeOff(set, node.me, bytes), acc, 0, bytes);
                }
                node.publish(set, ShmLevel.ARRIVED, s, desc, st);
                fold(node, set, s, desc, count, t, op, bytes, radix);
                if (e.nodeLeader) {
                    phase3(kind, t, op, root, count, desc, bytes);
                    release(node, set, s, desc, bytes);
                } else {
                    receive(node, set, s, bytes);
                }
            } else {
                phase3(kind, t, op, root, count, desc, bytes);
            }
            if (sock.members > 1) {
                release(sock, set, s, desc, bytes);
            }
        } else {
            receive(sock, set, s, bytes);
        }
        if (!st.ok()) {
            throw st.toException();
        }
        deliver(kind, t, root, count);
    }

    /**
     * {@link #run} for a flat exchange of two members whose input and output lie in memory the
     * kernels read in place (direct or shared buffers): {@code x0 op x1} straight from where the
     * operands lie (this rank's input in its own buffer, the peer's in its slot) into the output.
     * The same lines, verdict and bits as {@link #run} (the bracket of two members is that one
     * operation); what goes is its copy of the input into a private buffer, the fold into the
     * accumulator and the copy out: two passes over the message of the three {@link #run} makes
     * besides the one into the slot. This rank's input is read from its buffer, not back from its
     * slot (which the peer may have fetched by then: see {@link #own}). In place, the output is
     * the operand of this rank ({@code x0} on member 0, {@code x1} on member 1), read element by
     * element before each element is written ({@link Reductions#combine}). Up to
     * {@link ShmLevel#TOUCH_MAX_BYTES} the peer's lines are loaded before the fold, so that they
     * travel together ({@link ShmLevel#touch}).
     *
     * <p>Tried and dropped (2026-12-02, OSU port, 2 ranks, Allreduce, jars alternating, 2 rounds
     * each): loading one word of each of the peer's data lines in every poll of its flag, so that
     * they would arrive with it instead of one transfer after it: 64-256 B 0.47-0.51 us against
     * 0.39-0.48 before; loading them only with the first poll: 0.50-0.57 against 0.42-0.47. A
     * reader that pulls a line while its writer is still filling it makes the line move more than
     * once; flag last, data read after it, moves each line once. Nor did taking this rank's lines
     * of the next call's set for writing at the end of an Allreduce (a plain store into each, so
     * that the next call's stores would not wait for ownership; 2026-12-04, 4 alternating runs,
     * 4-256 B, here and in {@link #runInline}): 0.54-0.81x Open MPI Java against 0.54-0.70 in the
     * slow phase, 0.36-0.57 against 0.41-0.57 in the fast one.
     *
     * <p>The verdict waits on the peer's flag alone and reads its signature and status, as
     * {@link #runInline} does; the generic {@link #fold} (which also waits on and merges this
     * rank's own block) runs only when they differ, to build the same exception {@link #run}
     * would. Measured 2026-12-05 against the fold on every call (OSU port, 2 ranks, Allreduce,
     * {@code rig-compare.sh node:2 allreduce 4:256 10000 1} with the two builds alternating, 10
     * and 12 rounds each, per-size medians): 64 B 0.410/0.395 us against 0.435/0.420, 128 B
     * 0.410/0.420 against 0.420/0.430, 256 B 0.420/0.445 against 0.440/0.465; over Open MPI Java
     * 0.59-0.63x against 0.62-0.68x; 4-32 B and Reduce (10 rounds) unchanged.
     *
     * <p><b>A Reduce's root publishes no data</b>, here and in {@link #run}, as in
     * {@link #runInline}: nobody reads it (member 0, when it is not the root, compares the
     * signatures only; a leaf reads nothing; a peer whose call differs throws on the signature
     * before it uses any data). In lockstep (the OSU port, a barrier before every call) skipping
     * that copy changed nothing (2026-12-05, {@code rig-compare.sh}, Reduce, 10 rounds each:
     * 0.51-0.56x Open MPI Java against 0.51-0.55x); with calls back to back, where the root sets
     * the pace, it pays (2026-12-07, VM in its slow phase, one experiment build switched by a
     * property, alternating): {@code mpiapps.BackToBack reduce BYTES 20000 30}, x Open MPI Java
     * in the same processes, 2 rounds: 128 B 0.62 against 0.64-0.65, 256 B 0.66 against
     * 0.76-0.77, 64 B 0.36-0.37 against 0.37-0.83 (bimodal); OSU-style through the agent on
     * direct buffers ({@code mpiapps.OsuDirect reduce float bytebuffer}, 4 rounds), P50 mean over
     * the ranks 64 B 0.161-0.176 us against 0.170-0.211, 128 B 0.161-0.186 against 0.180-0.211
     * (Open MPI Java alone 0.206-0.211), 256-512 B within the runs' spread.
     *
     * <p>Tried and dropped (2026-12-06, 2 ranks, Allreduce, {@code rig-compare.sh node:2 allreduce
     * 64:256 10000 1}, both layouts in one build switched by a property, runs alternating): every
     * line its own arrival stamp (the control line with the first 40 B, then lines of an 8-byte
     * stamp and 56 B of data, the reader polling all of them together until each shows the call's
     * stamp), which a C model of two processes on this machine had put at 0.65-0.75x the flag-last
     * layout per call. Here it lost in every variant: 128 B 0.46-0.58 us against 0.36-0.44, 256 B
     * 0.52-0.87 against 0.38-0.48 (x Open MPI Java 0.75-1.40 against 0.58-0.63), 64 B even.
     * Publishing the control line last, waiting for it before the stamps, putting all the data in
     * stamped lines, or gathering the peer's pieces into one buffer for a single fold changed the
     * size of the loss, not its sign.
     *
     * <p><b>A Reduce's root reads ahead of a leaf that runs ahead</b> ({@link #leafAheadAt}).
     * Calls back to back (a loop of Reduces, as OSU's Java benchmarks and most programs' inner
     * loops make them): the leaf only publishes and goes, so it runs up to {@link ShmLevel#SETS}
     * - 1 calls ahead, and the root finds each call's data already published. It still reads it in
     * two serial steps: the leaf's flag line (one transfer), then, once the acquire says the data
     * is there, its data lines (another). Here, when the leaf's flag of the root's previous call
     * was already set at the root's first look, the root loads the leaf's data lines of this call
     * before it even looks at this call's flag: the loads go out together with the flag's, and
     * one transfer time covers both. The early loads only bring lines into the cache; the values
     * the fold uses are read again after the acquire (no load moves above an acquire, so none of
     * the early values can be used). Where the guess is wrong (the leaf is not ahead any more),
     * the early loads cost the leaf, which is writing those lines, a transfer back per line: so
     * only on evidence that it was ahead one call before. Only 129-256 B: at 64-128 B it gained
     * nothing and cost 5-10 ns, above {@link ShmLevel#EXCHANGE_BYTES} the slots rotate over
     * {@link ShmLevel#SLOT_SETS} sets (the leaf is at most 3 calls ahead) and an earlier variant
     * there lost. Measured (2026-12-07, OSU-style Reduce through the agent on direct buffers,
     * {@code mpi/bench/osu-direct-agent.sh reduce float bytebuffer 6} with the build before as
     * {@code BASE_AGENT}, machine in its slow phase): 256 B P50 (mean over ranks) 0.156-0.206 us
     * against 0.226-0.245, the root's 0.11-0.20 against 0.23-0.24; x Open MPI Java alone 0.80
     * against 1.10 (medians of 6 pairs); 64-128 B unchanged. A second series of 6 pairs: better in
     * 5, 0.93 against 1.10; the root's P50 0.12 where the leaf kept ahead, 0.19-0.42 where it did not
     * (then the leaf's own stores set the pace, and the root finds the flag unset). In the fast
     * phase (the two vCPUs on one core) 0.116-0.125 against 0.121-0.125. In lockstep (OSU port
     * Reduce, a barrier before every call) 256 B 0.29-0.30 us against 0.29-0.32, 3 alternating runs.
     */
    private void runPair(Collective kind, DataType t, Op op, int root, int count, long desc, int radix, long s, int set, int bytes) {
        final ShmLevel sock = e.sock;
        final CallStatus st = e.st;
        final int peer = 1 - sock.me;
        final long arrived = ShmLevel.enc(s, ShmLevel.ARRIVED);
        final boolean readsAhead = kind == Collective.REDUCE && e.rank == root && bytes > READ_AHEAD_ABOVE
                && bytes <= ShmLevel.EXCHANGE_BYTES;
        if (readsAhead && leafAheadAt == s - 1) {
            sock.touch(sock.exchangeOff(set, peer, bytes), bytes); // brings the lines only: see "reads ahead" above
            readAheads++;
        }
        if (kind != Collective.REDUCE || e.rank != root) { // a Reduce's root publishes no data (see above)
            e.src.copyIn(sock, sock.exchangeOff(set, sock.me, bytes), t, 0, count);
        }
        sock.publish(set, ShmLevel.ARRIVED, s, desc, st);
        if (readsAhead && Flags.acquire(sock.buf, sock.ctl(set, peer) + ShmLevel.STATE) >= arrived) {
            leafAheadAt = s; // the leaf had published this call before the root looked
        }
        if (!arrivedClean(sock, e.waiter, set, peer, arrived, desc)) {
            fold(sock, set, s, desc, count, t, op, 0, radix); // the verdict exactly as run() reaches it
            if (!st.ok()) {
                throw sock.verdictFailed(set, s, desc, st);
            }
        }
        if (kind == Collective.REDUCE && e.rank != root) {
            return; // member 0 of a Reduce rooted at member 1 compares the signatures only
        }
        final ByteBuffer x = e.src.memory();
        final int xOff = e.src.byteOffset(t, 0);
        final ByteBuffer out = e.dst.memory();
        final int outOff = e.dst.byteOffset(t, 0);
        final int peerOff = sock.exchangeOff(set, 1 - sock.me, bytes);
        sock.touch(peerOff, bytes);
        if (sock.me == 0) {
            Reductions.combine(t, op, out, outOff, x, xOff, sock.buf, peerOff, count);
        } else {
            Reductions.combine(t, op, out, outOff, sock.buf, peerOff, x, xOff, count);
        }
    }

    /**
     * The last call (sequence number) at which this rank, the root of a two-member Reduce of
     * {@link #READ_AHEAD_ABOVE}-{@link ShmLevel#EXCHANGE_BYTES} bytes in {@link #runPair}, found the
     * leaf's flag already set at its first look; -1 before any. Read and written by this rank's
     * calling thread only (calls are sequential).
     */
    private long leafAheadAt = -1;
    /** Calls at which {@link #runPair} read a leaf's data ahead (diagnostics, {@link Engine#readAheads}); this rank's thread only. */
    long readAheads;

    /** A Reduce's root reads a leaf's data ahead ({@link #runPair}) only above this many bytes (more than two lines). */
    static final int READ_AHEAD_ABOVE = 128;

    /**
     * Runs {@link #operandsInPlace} (and through it {@link Payload#overlaps}) over every pair of
     * six operands (none, an array, a direct buffer at two offsets whose ranges overlap, another
     * direct buffer, the shared buffer at two offsets) {@code rounds} times: local, no peer involved.
     * For the engine's heating ({@link Reductions#heatKernels}). The dispatch calls both for every
     * two members' call past the inline area, but C2 inlines neither into {@code Engine.run} (too
     * large for its call sites), so their own compiled versions count the calls, and the heating's
     * calls, half of them with buffers on both sides (two of its four forms), left them near C2's
     * thresholds: C2 compiled {@code Payload.overlaps} during an OSU-style Allreduce of typed float
     * buffers through the agent (MpiAgentIT, 1 run in 6 here), and {@code operandsInPlace} at the heating's very end on one rank
     * and not at all on the other (LogCompilation). A round makes 37 calls, 17 of which reach the
     * overlap check: 800 rounds (the heating's) are well past them. Returns how many pairs were in
     * place, 18 per round (so that nothing is dead code, and a test checks the answers).
     */
    static int heatOperandChecks(int rounds) {
        ByteBuffer b = ByteBuffer.allocateDirect(64);
        Payload[] p = new Payload[6];
        for (int i = 0; i < p.length; i++) {
            p[i] = new Payload();
        }
        p[0].none();
        p[1].array(new int[16], 0);
        p[2].buffer(b, 0);
        p[3].buffer(b, 4); // overlaps p[2] over 8 elements, not at the same start
        p[4].buffer(ByteBuffer.allocateDirect(64), 0);
        p[5].shared(null, 32); // the level is not read by these checks
        Payload shared0 = new Payload();
        shared0.shared(null, 0);
        int inPlace = 0;
        for (int r = 0; r < rounds; r++) {
            for (Payload src : p) {
                for (Payload dst : p) {
                    if (operandsInPlace(src, dst, DataType.INT, 8)) {
                        inPlace++;
                    }
                }
            }
            if (operandsInPlace(shared0, p[5], DataType.INT, 8)) {
                inPlace++;
            }
        }
        return inPlace;
    }

    /**
     * Whether {@link #runPair} serves a call with these buffers: input and output direct or shared
     * buffers (a Reduce's non-root member 0 has no output to check), and the output either
     * disjoint from the input or the very same elements (in place).
     */
    static boolean operandsInPlace(Payload src, Payload dst, DataType t, int count) {
        if (src.kind != Payload.BUFFER && src.kind != Payload.SHARED) {
            return false;
        }
        if (dst.kind == Payload.NONE) {
            return true;
        }
        if (dst.kind != Payload.BUFFER && dst.kind != Payload.SHARED) {
            return false;
        }
        if (!Payload.overlaps(src, dst, t, count)) {
            return true;
        }
        // Overlapping, so of the same kind (Payload.overlaps): in place when both start at the same element. Written
        // out here, not as a method of Payload: the heating's calls are rarely in place, so C2 compiled that method's
        // call site cold, and an agent program passing typed buffers (in place in the agent's scratch) made it hot:
        // Temurin 25 then compiled the method on its own during the program's calls (MpiAgentIT, 1 run in 3).
        return src.kind == Payload.BUFFER ? src.buffer == dst.buffer && src.off == dst.off : src.sharedOff == dst.sharedOff;
    }

    /**
     * {@link #run} on a flat level for a payload of at most {@link ShmLevel#INLINE_BYTES}, or of at
     * most {@link #PAIR_BYTES} with two members whose operands {@link #runPair} does not take
     * (arrays; the data then in the exchange area, published by the same
     * release of the line's state, read after its acquire as in {@link #run}): the same
     * protocol, lines, fold order and verdict, with the work ordered for latency. The input goes
     * straight from the user's buffer into this rank's line and the line is published first;
     * the diagnostics store of the sequence number follows it. The wait checks each peer's
     * signature and status in the line it just fetched; only if one differs (or carries an
     * error) does the general verdict pass ({@link #fold} without data: member 0's signature
     * against every member's, statuses merged) run, reading the same published lines again. With
     * two members the fold is {@code x0 op x1} straight into the user's output
     * ({@link InlineData#fold2}; the same bits as the bracket, which for two members is that one
     * operation), this rank's own operand read from its input ({@link InlineData#loadFrom}), never
     * back from its published line: read back after the peer fetched that line, it cost another
     * cache-line transfer (measured: +200 ns in this VM's slow phase, where a transfer costs
     * 150-300 ns). Read back right after this rank's own stores it cost as much whenever the peer
     * was polling that line: a Reduce's leaf that runs ahead waits at the reuse gate on the root's
     * line of the very set the root is writing, and the root's loads of its own fresh words then
     * waited for the line's round trips (perf, OsuDirect Reduce of 12-40 B through the agent, 2
     * ranks: the root's samples on those loads; its P50 0.18-0.26 us against 0.10-0.11 at 8 and
     * 24 B, whose loads C2 had folded into the stores). A two-member Reduce's root publishes no
     * data at all: nobody reads it, and fewer stores into the polled line leave fewer to bounce.
     * With more members, the bracket into the private accumulator as in {@link #run}.
     */
    void runInline(Collective kind, DataType t, Op op, int root, int count, long desc, int radix) {
        final Engine e = this.e;
        final ShmLevel sock = e.sock;
        final java.nio.ByteBuffer line = sock.buf;
        final long s = e.advanceSeq();
        final int set = ShmLevel.set(s);
        final int me = sock.me;
        final int ctl = sock.ctl(set, me);
        final int bytes = t == null ? 0 : count * t.size;
        if (bytes > 0) {
            final boolean folds = kind == Collective.ALLREDUCE || e.rank == root; // the ranks that fold below (a Reduce's others read no data)
            if (folds && sock.members == 2) {
                InlineData.loadFrom(e.src, t, count, own8, own4); // the private operand, from the input (never from the line)
            }
            if (kind != Collective.REDUCE || e.rank != root || sock.members != 2) { // a two-member Reduce's root publishes no data
                final int at = sock.exchangeOff(set, me, bytes); // this rank's line, or its exchange area above INLINE_BYTES (two members only)
                InlineData.copyIn(e.src, line, at, t, count);
                if (folds && sock.members != 2) {
                    ShmLevel.copy(own.buf, 0, line, at, bytes); // for subtree(), which folds other than two members
                }
            }
        }
        Flags.put(line, ctl + ShmLevel.DESC, desc);
        Flags.put(line, ctl + ShmLevel.STATUS, 0); // st.reset() then st.writeTo, as in run()
        final long arrived = ShmLevel.enc(s, ShmLevel.ARRIVED);
        Flags.release(line, ctl + ShmLevel.STATE, arrived);
        final boolean barrier = kind == Collective.BARRIER;
        if (barrier) {
            final int bw = sock.barrierWord(me);
            // The run's start: kept when the previous sequence number was this rank's Barrier, else s.
            // Without a branch (a mask), and stored every call (the word's line, which this store
            // owns anyway): a branch taken only when a run begins would be compiled as a trap when the
            // profile saw only long runs, and deoptimize runInline at the next new run.
            final long d = lastBarrier + 1 - s;
            final long newRun = (d | -d) >> 63; // -1 when the previous call was not this rank's Barrier
            barrierRun = (barrierRun & ~newRun) | (s & newRun);
            lastBarrier = s;
            Flags.put(line, bw + ShmLevel.BAR_RUN, barrierRun);
            // Release: after the run's start and this call's state, signature and status on the set's line
            // (and everything before them); a member that acquires s here may take them as read.
            Flags.release(line, bw, s);
        }
        e.progressSeq(s);
        final CallStatus st = e.st;
        st.reset();
        if (kind == Collective.REDUCE && e.rank != root && me != 0) {
            e.wentAhead(s); // a leaf: publish and go (class comment, "Who returns when")
            return;
        }
        final Waiter w = e.waiter;
        final int q = sock.members;
        boolean clean = true;
        for (int m = 0; m < q; m++) {
            if (m != me && !(barrier && sawBarrier(line, w, sock.barrierWord(m), s))) { // class comment, "The Barrier's own line"
                clean &= arrivedClean(sock, w, set, m, arrived, desc);
            }
        }
        if (!clean) {
            fold(sock, set, s, desc, count, t, op, 0, radix); // the verdict exactly as run() reaches it
            if (!st.ok()) {
                throw sock.verdictFailed(set, s, desc, st);
            }
        }
        if (bytes > 0 && (kind == Collective.ALLREDUCE || e.rank == root)) {
            if (q == 2) {
                // this rank's contribution from its private copy, never back from its published line
                InlineData.load(line, sock.exchangeOff(set, 1 - me, bytes), t, count, peer8, peer4);
                if (me == 0) {
                    InlineData.fold2(e.dst, t, op, own8, peer8, own4, peer4, count, r8, r4);
                } else {
                    InlineData.fold2(e.dst, t, op, peer8, own8, peer4, own4, count, r8, r4);
                }
            } else {
                subtree(sock, set, 0, q, Math.max(2, radix), 0, count, t, op, bytes);
                e.dst.copyOutFrom(accViews, t, count);
            }
        }
    }

    /**
     * Whether the member whose Barrier word is at {@code bw} made a Barrier on the flat exchange at call
     * {@code s}: its latest such Barrier is at s or later (acquire) and the run of them that ends there
     * began at s or earlier (read after the acquire, so that run's start or a later run's, which would
     * begin after the latest and say no). Class comment, "The Barrier's own line".
     */
    private static boolean sawBarrier(ByteBuffer line, Waiter w, int bw, long s) {
        final long target = s + w.unreachableEveryOther(); // s, but out of reach every other time in the heating
        return w.glance(line, bw, target) >= target && Flags.plain(line, bw + ShmLevel.BAR_RUN) <= s;
    }

    /**
     * The lean verdict of {@link #runInline} and {@link #runPair}: waits for member {@code m}'s
     * ARRIVED of this call ({@code arrived}; the acquire that makes its line's words visible) and says
     * whether the signature it published equals {@code desc} and its status is clean, reading them
     * from the line that wait just fetched. When it says no, the caller runs {@link #fold} without
     * data, which builds the exception {@link #run} would (member 0's signature against every
     * member's, statuses merged). Small enough for C2 to inline into both (it did: PrintInlining).
     */
    private static boolean arrivedClean(ShmLevel lvl, Waiter w, int set, int m, long arrived, long desc) {
        final int c = lvl.ctl(set, m);
        w.await(lvl.buf, c + ShmLevel.STATE, arrived, lvl.ranks[m]);
        return !Desc.differs(Flags.plain(lvl.buf, c + ShmLevel.DESC), desc) & Flags.plain(lvl.buf, c + ShmLevel.STATUS) == 0;
    }

    /**
     * Waits for every member's ARRIVED in member order, checks each signature against member 0's,
     * merges the statuses they carry, and folds their data into {@link #acc} left to right.
     */
    private void fold(ShmLevel lvl, int set, long s, long desc, int count, DataType t, Op op, int bytes, int radix) {
        final CallStatus st = e.st;
        final Waiter w = e.waiter;
        final long arrived = ShmLevel.enc(s, ShmLevel.ARRIVED);
        final int q = lvl.members;
        long d0 = 0;
        for (int m = 0; m < q; m++) {
            int ctl = lvl.ctl(set, m);
            w.await(lvl.buf, ctl + ShmLevel.STATE, arrived, lvl.ranks[m]);
            long d = Flags.plain(lvl.buf, ctl + ShmLevel.DESC);
            st.mergeFrom(lvl.buf, ctl);
            if (m == 0) {
                d0 = d;
            } else if (Desc.differs(d, d0)) {
                st.mismatch(lvl.ranks[0], d0, lvl.ranks[m], d);
            }
        }
        if (bytes > 0 && st.ok()) {
            subtree(lvl, set, 0, q, Math.max(2, radix), 0, count, t, op, bytes);
        }
    }

    /**
     * {@code level[depth]} = the fold of member {@code i}'s k-nomial subtree (members
     * {@code i + j k^l} below {@code limit}, in increasing distance, {@code acc = acc op child}):
     * the tree algorithm's bracket, so both give the same bits. Depth is at most log2 of the
     * members, each with its own buffer (allocated once).
     */
    private void subtree(ShmLevel lvl, int set, int i, int limit, int k, int depth, int count, DataType t, Op op, int bytes) {
        ByteBuffer mine = depth == 0 ? acc : levels[depth].buf;
        // The first child (i + 1, a leaf) is folded in the same pass as the copy of member i's
        // own data: mine = x_i op x_(i+1), the same bits as a copy then mine = mine op x_(i+1).
        final boolean fused = limit > 1 && i + 1 < lvl.members;
        if (fused) {
            Reductions.combine(t, op, mine, 0, bufOf(lvl, i), offOf(lvl, set, i, bytes), bufOf(lvl, i + 1), offOf(lvl, set, i + 1, bytes),
                    count);
        } else {
            ShmLevel.copy(mine, 0, bufOf(lvl, i), offOf(lvl, set, i, bytes), bytes);
        }
        for (int pow = 1; pow < limit && pow < lvl.members; pow *= k) {
            for (int j = 1; j < k; j++) {
                int c = i + j * pow;
                if (c >= lvl.members) {
                    break;
                }
                if (c == i + 1) {
                    continue; // folded above (fused is true whenever the loop reaches it)
                }
                if (pow == 1) {
                    Reductions.combine(t, op, mine, 0, bufOf(lvl, c), offOf(lvl, set, c, bytes), count); // a leaf
                } else {
                    subtree(lvl, set, c, pow, k, depth + 1, count, t, op, bytes);
                    Reductions.combine(t, op, mine, 0, levels[depth + 1].buf, 0, count);
                }
            }
        }
    }

    /** Where member {@code m}'s contribution is read from: this rank's own private copy at the socket level, else its line or slot. */
    private ByteBuffer bufOf(ShmLevel lvl, int m) {
        return m == lvl.me && lvl == e.sock ? own.buf : lvl.buf;
    }

    private int offOf(ShmLevel lvl, int set, int m, int bytes) {
        return m == lvl.me && lvl == e.sock ? 0 : lvl.exchangeOff(set, m, bytes);
    }

    /** Phase 3 on the node's result, at the node leader (even after a mismatch: the other node leaders wait in it). */
    private void phase3(Collective kind, DataType t, Op op, int root, int count, long desc, int bytes) {
        if (e.inter != null) {
            e.interNode(kind, acc, 0, count, t, op, root, desc);
        }
    }

    /** Member 0 publishes the result (line 1 of its block, or the result area) and the verdict: RELEASED. */
    private void release(ShmLevel lvl, int set, long s, long desc, int bytes) {
        if (bytes > 0 && e.st.ok()) {
            ShmLevel.copy(lvl.buf, released(lvl, set, bytes), acc, 0, bytes);
        }
        lvl.publish(set, ShmLevel.RELEASED, s, desc, e.st);
    }

    /** Waits for member 0's RELEASED and takes its verdict and result. */
    private void receive(ShmLevel lvl, int set, long s, int bytes) {
        e.st.reset(); // member 0's verdict, which merged every node's
        lvl.await(set, 0, ShmLevel.RELEASED, s, e.waiter, e.st);
        if (bytes > 0 && e.st.ok()) {
            ShmLevel.copy(acc, 0, lvl.buf, released(lvl, set, bytes), bytes);
        }
    }

    private static int released(ShmLevel lvl, int set, int bytes) {
        return lvl.exchangeReleased(set, bytes);
    }

    private void deliver(Collective kind, DataType t, int root, int count) {
        if (kind == Collective.ALLREDUCE || kind == Collective.REDUCE && e.rank == root) {
            e.dst.copyOutFrom(accViews, t, count);
        }
    }
}
