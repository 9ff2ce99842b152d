package org.sharp4j.sharp;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.atomic.AtomicLong;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.coll.CallStatus;
import org.sharp4j.coll.Desc;
import org.sharp4j.shm.Waiter;
import org.sharp4j.spi.InterNodeStep;
import org.sharp4j.spi.RecoverableStep;
import org.sharp4j.tuning.Collective;
import org.sharp4j.tuning.CompiledTable;
import org.sharp4j.spi.Warnings;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Phase 3 through SHARP on one node leader, with the host path for what SHARP does not take and
 * for recovering what it failed.
 *
 * <h2>Dispatch</h2>
 * Every phase-3 call gets a number {@code k} (1, 2, ...), the same on every node leader since all
 * make the same calls. Call k goes to SHARP when SHARP is still on at k ({@code k < disabledFrom}),
 * the type and op are in the capability masks agreed at setup (PROD is not) and
 * {@code 0 < bytes <= max} for its collective (Barrier: when the table gives it to SHARP); else to
 * the host path. The decision depends only on the call and on k, so it is the same everywhere.
 *
 * <h2>Success: no host message</h2>
 * A SHARP call is posted nonblocking and out of place (the input stays where the engine put it;
 * the switch writes into one of two registered result buffers of this step), then completed by
 * polling {@code sharp_coll_req_test} through the engine's {@link Waiter} (spin, yield, park,
 * failure probe, abort). The switch computes one result, so every leader whose request completes
 * with status 0 holds the same bits: it copies them out and returns. Nothing else travels.
 *
 * <h2>Long messages: several operations per call</h2>
 * A call larger than one chunk ({@code sharp4j.sharp.chunk.bytes}, at most the payload the
 * capabilities report; the smallest over the leaders) goes as 1 + ceil(count / chunk elements)
 * operations, a number that depends only on the call: first a <em>descriptor check</em>, a
 * 2-element MINLOC of (d, 0) and (~d, 0) with d the call's descriptor, which gives (min d, ~max d),
 * so every leader sees whether every leader made the same call; then the chunks in order, each out
 * of place into the result buffer, up to {@code sharp4j.sharp.pipeline} operations in flight,
 * streaming aggregation from SHARP_COLL_SAT_THRESHOLD where the capabilities report SAT. A leader
 * takes the result only when every operation completed with status 0 and the check agreed.
 * sharp4j's own calls never use MINLOC, so no data operation can pass for a check. The switch
 * matches operations by their number, so every leader must have taken the same numbers before its
 * next call; this holds on success (the same count everywhere) and is restored after a failure:
 * a leader that leaves a call early (failed post or completion, recovery wake-up, time limit)
 * abandons its requests in flight, and after the recovery (which every leader that did not
 * complete the call is in) posts and abandons the operations it had not posted ({@code drain}).
 * A leader that completed the call posted all of them (completing the last one needs every
 * leader's contribution to it). When the check disagrees, or the recovery finds that the leaders
 * disagree, their operation counts may differ and no numbering can be trusted: SHARP is switched
 * off from the next call on, on every leader (nobody completed the call, so nobody posted the next).
 *
 * <h2>Failure: every leader ends the same way</h2>
 * A leader whose call k did not complete with status 0 (refused or failed at post, failed at
 * completion, poisoned because another leader abandoned it, or not complete within a quarter of
 * {@code sharp4j.timeout}) abandons its request and runs the <em>recovery</em> of call k on the
 * host path ({@link RecoverableStep#recoveryCollective}):
 * <ol>
 *   <li>phase 0, an Allreduce (LONG, BOR) of {@code [flag | result]} in which leaders that
 *       completed call k contribute flag 1 and the switch's result, the others zeros. It carries the
 *       call's descriptor, so leaders that disagree on the call all end with the same
 *       ArgumentMismatch;</li>
 *   <li>if any leader had the result, everyone takes it: BOR of identical bits and zeros is those
 *       bits;</li>
 *   <li>otherwise phase 1 redoes call k on the host path.</li>
 * </ol>
 * Why everyone can take part: a leader that failed call k is still inside it. A leader that
 * completed call k may have moved on, but not past call k+1: call k+1 (SHARP or host) cannot
 * complete without the recovering leader. It keeps the result and descriptor of its last
 * successful SHARP call (the other result buffer), and every wait it makes (SHARP's here, the host
 * path's) probes for recovery wake-ups and serves phase 0 with them, nested. Why phase 1 has its
 * inputs: if nobody completed call k, every leader is still inside call k, and posts are out of
 * place. Why the same result everywhere: either the switch's one result, or the host path's
 * reduction, which every leader computes alike. A call that nobody completed because a leader died
 * or stopped ends in the host path's waits: the peer failure or timeout that names it, on every
 * leader (aborts propagate).
 *
 * <p>Every leader runs every recovery once, so the failure count is the same everywhere; when it
 * reaches {@code sharp4j.sharp.max.failures} SHARP is switched off from call k+2 on, on every
 * leader: a leader that completed call k may already have posted call k+1 to SHARP, never k+2.
 *
 * <p>One thread: the node leader's (the engine's phase-3 caller). The listener runs on that thread
 * too, from inside its waits. No allocation per call.
 */
final class SharpStep implements InterNodeStep, RecoverableStep.Listener {
    private static final Logger LOG = LoggerFactory.getLogger(SharpStep.class);

    /** sharp_datatype by DataType ordinal (INT, LONG, FLOAT, DOUBLE). */
    static final int[] DTYPE = new int[DataType.values().length];
    /** sharp_reduce_op by Op ordinal. */
    static final int[] OP = new int[Op.values().length];

    static {
        DTYPE[DataType.INT.ordinal()] = SharpAbi.DTYPE_INT;
        DTYPE[DataType.LONG.ordinal()] = SharpAbi.DTYPE_LONG;
        DTYPE[DataType.FLOAT.ordinal()] = SharpAbi.DTYPE_FLOAT;
        DTYPE[DataType.DOUBLE.ordinal()] = SharpAbi.DTYPE_DOUBLE;
        OP[Op.SUM.ordinal()] = SharpAbi.OP_SUM;
        OP[Op.PROD.ordinal()] = SharpAbi.OP_PROD;
        OP[Op.MIN.ordinal()] = SharpAbi.OP_MIN;
        OP[Op.MAX.ordinal()] = SharpAbi.OP_MAX;
        OP[Op.BAND.ordinal()] = SharpAbi.OP_BAND;
        OP[Op.BOR.ordinal()] = SharpAbi.OP_BOR;
        OP[Op.BXOR.ordinal()] = SharpAbi.OP_BXOR;
        OP[Op.LAND.ordinal()] = SharpAbi.OP_LAND;
        OP[Op.LOR.ordinal()] = SharpAbi.OP_LOR;
    }

    /** Process-wide counters over all node leaders (tests and diagnostics). */
    static final AtomicLong SHARP_CALLS = new AtomicLong();
    static final AtomicLong HOST_CALLS = new AtomicLong();
    static final AtomicLong FALLBACKS = new AtomicLong();
    /** Host-path messages sent by node leaders while their SHARP calls succeeded: the design says 0. */
    static final AtomicLong HOST_MESSAGES_ON_SUCCESS = new AtomicLong();
    /** Operations posted with streaming aggregation (only chunks of SAT size: the count costs nothing per small call). */
    static final AtomicLong STREAMING_OPS = new AtomicLong();
    /** The most operations of one call seen in flight at once on any leader (tests: the pipeline depth in force). */
    static final AtomicLong MOST_IN_FLIGHT = new AtomicLong();

    private final RecoverableStep host;
    private final SharpTeam team;
    private final Waiter waiter;
    private final int node;
    private final int nodes;
    private final int awaited;
    private final long dtypeMask;
    private final long opMask;
    /** Largest message SHARP takes, per collective (inclusive; -1: never). */
    private final long[] maxBytes;
    private final int maxFailures;
    private final long sharpWaitNanos;
    private final String hostName;

    /** This leader's phase-3 calls so far (the number of the current one while it runs). */
    private long call;
    /** SHARP is off from this call on (the same on every leader). */
    private long disabledFrom = Long.MAX_VALUE;
    private int failures;

    /** Two registered result buffers: the current SHARP call's, and the kept result of the last successful one. */
    private final ByteBuffer[] out = new ByteBuffer[2];
    private final long[] outAddr = new long[2];
    /** Their size: the largest phase-3 message SHARP takes. */
    private final int cap;
    /** Bytes per SHARP operation (the same on every leader: the smallest setting, at most the payload and 1 MiB). */
    private final int chunkBytes;
    /** Whether some call SHARP takes needs more than one operation (cap > chunkBytes). */
    private final boolean multiOp;
    /**
     * Operations of one call in flight at once: sharp4j.sharp.pipeline as the leaders agreed it (0: unset), else the
     * tuning table's {@code pipeline=} for the call (the same table job-wide); {@link #depth} is the current call's.
     */
    private final int depthOverride;
    private final CompiledTable table;
    private int depth;
    /** Handles of the current call's operations in flight, by operation index mod depth. */
    private final long[] inflight = new long[SharpSettings.MAX_PIPELINE];
    /** Streaming aggregation for operations of at least satBytes (capabilities report SAT; else MAX_VALUE). */
    private final long satBytes;
    /** The descriptor check of a multi-operation call: 2 (LONG value, INT tag) pairs in, 2 out. */
    private final ByteBuffer check;
    private final long checkAddr;
    /** Operations of the current call posted so far (each takes its number on the switch, also a failed post). */
    private int posted;
    private long keptCall = -1;
    private long keptDesc;
    private int keptBytes;
    private int keptBuf;
    private boolean keptServed;
    /** The SHARP call in flight (its number), -1 when none; a recovery wake-up for it ends its wait. */
    private long current = -1;
    private boolean joinRequested;
    private final ByteBuffer phase0;
    private final CallStatus rst = new CallStatus();
    private final SharpWait wait = new SharpWait();
    // address of the last input buffer (a direct ByteBuffer: one JNA call per new buffer object)
    private ByteBuffer lastIn;
    private long lastInAddr;
    private boolean closed;

    /** Calls of this leader that SHARP completed / that went to the host path / that it recovered (failed on some leader). */
    long sharpCalls;
    long hostCalls;
    long fallbacks;

    SharpStep(RecoverableStep host, SharpTeam team, Waiter waiter, long dtypeMask, long opMask, long[] maxBytes,
            int maxFailures, int node, int nodes, int nextLeaderRank) {
        this(host, team, waiter, dtypeMask, opMask, maxBytes, maxFailures, node, nodes, nextLeaderRank, Integer.MAX_VALUE,
                (int) Math.min(SharpTeam.WINDOW, Math.max(8, team.payload & ~7L)), CompiledTable.DEFAULT_SHARP_PIPELINE, null,
                Long.MAX_VALUE);
    }

    /**
     * @param slotBytes the largest phase-3 message the engine hands over (its slot)
     * @param chunkBytes bytes per SHARP operation, a multiple of 8, at most {@link SharpTeam#WINDOW}; the same on every leader
     * @param depth operations in flight, 1..{@link SharpSettings#MAX_PIPELINE}, the same on every leader; 0: the table's per call
     * @param table the job's compiled tuning table (its sharp rules' {@code pipeline=}), used where depth is 0
     * @param satBytes streaming aggregation from this operation size on (Long.MAX_VALUE: never)
     */
    SharpStep(RecoverableStep host, SharpTeam team, Waiter waiter, long dtypeMask, long opMask, long[] maxBytes,
            int maxFailures, int node, int nodes, int nextLeaderRank, int slotBytes, int chunkBytes, int depth, CompiledTable table,
            long satBytes) {
        this.host = host;
        this.team = team;
        this.waiter = waiter;
        this.node = node;
        this.nodes = nodes;
        this.awaited = nextLeaderRank;
        this.dtypeMask = dtypeMask;
        this.opMask = opMask;
        this.maxBytes = maxBytes.clone();
        this.maxFailures = maxFailures;
        this.hostName = host.name();
        this.sharpWaitNanos = Math.max(50_000_000L, waiter.policy().timeoutNanos / 4);
        long max = 8;
        for (long m : maxBytes) {
            max = Math.max(max, m);
        }
        // (a table rule to inf gives max = Long.MAX_VALUE - 1: round up without overflowing)
        this.cap = (int) Math.min(Math.min(Integer.MAX_VALUE - 64, slotBytes), (Math.min(max, Integer.MAX_VALUE) + 7) & ~7L);
        if (chunkBytes < 8 || (chunkBytes & 7) != 0 || chunkBytes > SharpTeam.WINDOW) {
            throw new IllegalArgumentException("SHARP chunk of " + chunkBytes + " bytes: a multiple of 8 up to 1 MiB");
        }
        this.chunkBytes = chunkBytes;
        // A multi-operation call starts with a descriptor check (MINLOC, which sharp4j's own calls never
        // use); without MINLOC or INT tags every call must fit one operation.
        boolean canCheck = (opMask >>> SharpAbi.OP_MINLOC & 1) != 0 && (team.tagDtypes >>> SharpAbi.DTYPE_INT & 1) != 0
                && (dtypeMask >>> SharpAbi.DTYPE_LONG & 1) != 0;
        if (!canCheck) {
            for (int i = 0; i < this.maxBytes.length; i++) {
                this.maxBytes[i] = Math.min(this.maxBytes[i], chunkBytes);
            }
        }
        this.multiOp = canCheck && cap > chunkBytes;
        if (depth < 0 || depth > SharpSettings.MAX_PIPELINE || (depth == 0 && table == null)) {
            throw new IllegalArgumentException("SHARP pipeline depth " + depth + ": 1.." + SharpSettings.MAX_PIPELINE
                    + ", or 0 with a tuning table");
        }
        this.depthOverride = depth;
        this.table = table;
        this.depth = depth > 0 ? depth : CompiledTable.DEFAULT_SHARP_PIPELINE;
        this.satBytes = satBytes;
        this.check = ByteBuffer.allocateDirect(64).order(ByteOrder.nativeOrder());
        this.checkAddr = SharpTeam.address(check);
        for (int i = 0; i < 2; i++) {
            out[i] = ByteBuffer.allocateDirect(cap).order(ByteOrder.nativeOrder());
            outAddr[i] = SharpTeam.address(out[i]);
        }
        this.phase0 = ByteBuffer.allocateDirect(cap + 8).order(ByteOrder.nativeOrder());
        host.recoveryListener(this);
    }

    @Override
    public String name() {
        return "SHARP";
    }

    /** Whether call {@code k} goes to SHARP (the same decision on every leader). */
    /**
     * Whether SHARP takes this call (or this part of a long call): {@code callBytes} is the whole
     * call's size ({@link Desc#callBytes}), so every part of a call goes the same way, the way the
     * table's rule for the call's size says.
     */
    boolean eligible(long k, Collective c, ByteBuffer buf, int count, DataType type, Op op, long callBytes) {
        if (k >= disabledFrom) {
            return false;
        }
        if (c == Collective.BARRIER) {
            return maxBytes[c.ordinal()] >= 0;
        }
        if (count <= 0 || !buf.isDirect()) {
            return false;
        }
        return callBytes <= maxBytes[c.ordinal()] && (dtypeMask >>> DTYPE[type.ordinal()] & 1) != 0
                && (opMask >>> OP[op.ordinal()] & 1) != 0;
    }

    boolean enabled() {
        return call + 1 < disabledFrom;
    }

    @Override
    public void allreduce(ByteBuffer buf, int off, int count, DataType type, Op op, long desc, CallStatus status) {
        run(Collective.ALLREDUCE, buf, off, count, type, op, -1, desc, status);
    }

    @Override
    public void reduce(ByteBuffer buf, int off, int count, DataType type, Op op, int rootNode, long desc, CallStatus status) {
        run(Collective.REDUCE, buf, off, count, type, op, rootNode, desc, status);
    }

    @Override
    public void barrier(long desc, CallStatus status) {
        run(Collective.BARRIER, null, 0, 0, null, null, -1, desc, status);
    }

    private void run(Collective c, ByteBuffer buf, int off, int count, DataType t, Op op, int rootNode, long desc,
            CallStatus status) {
        final long k = ++call;
        final long callBytes = Desc.callBytes(desc, count, t);
        if (!eligible(k, c, buf, count, t, op, callBytes)) {
            hostCalls++;
            HOST_CALLS.incrementAndGet();
            switch (c) {
                case ALLREDUCE: host.allreduce(buf, off, count, t, op, desc, status); break;
                case REDUCE: host.reduce(buf, off, count, t, op, rootNode, desc, status); break;
                default: host.barrier(desc, status); break;
            }
            return;
        }
        final int bytes = t == null ? 0 : count * t.size;
        final int cur = keptCall >= 0 ? keptBuf ^ 1 : 0; // never the kept result's buffer
        current = k;
        joinRequested = false;
        final long sent0 = host.messagesSent();
        try {
            int ops = operations(c, count, t);
            depth = depthFor(c, callBytes); // the table's depth for the whole call, not this part
            int rc = sharp(c, buf, off, count, t, op, desc, cur, ops);
            if (rc == 0) {
                if (bytes > 0) {
                    buf.put(off, out[cur], 0, bytes);
                }
                keptCall = k;
                keptDesc = desc & ~Desc.SHARED;
                keptBytes = bytes;
                keptBuf = cur;
                keptServed = false;
                sharpCalls++;
                SHARP_CALLS.incrementAndGet();
                long sent = host.messagesSent() - sent0;
                if (sent != 0) {
                    HOST_MESSAGES_ON_SUCCESS.addAndGet(sent); // (served another call's recovery meanwhile)
                }
                return;
            }
            if (recover(k, c, buf, off, count, t, op, rootNode, desc, status, rc)) {
                drain(c, buf, off, count, t, op, cur, ops);
            }
        } finally {
            current = -1;
        }
    }

    /** Operations of call (c, bytes) in flight at once: the same on every leader (agreed setting, or the job-wide table). */
    int depthFor(Collective c, long bytes) {
        return depthOverride > 0 ? depthOverride : table.sharpPipeline(c, bytes);
    }

    /**
     * SHARP operations of a call: 1 for a barrier or a call of at most one chunk; else the descriptor
     * check plus one per chunk. It depends only on the call, so leaders that agree on the call post
     * the same number, and every operation has the same number on every leader.
     */
    private int operations(Collective c, int count, DataType t) {
        if (c == Collective.BARRIER || (long) count * t.size <= chunkBytes) {
            return 1;
        }
        int elems = chunkBytes / t.size;
        return 1 + (count + elems - 1) / elems;
    }

    /**
     * Posts the call's operations with up to {@code depth} in flight and completes them in order.
     * Returns 0 when every one completed with status 0 (and, for several, the descriptor check
     * showed that every leader made the same call), else the failure's code, having abandoned every
     * request still in flight; {@link #posted} tells how many operation numbers the call took.
     */
    private int sharp(Collective c, ByteBuffer buf, int off, int count, DataType t, Op op, long desc, int cur, int ops) {
        final int w = depth;
        posted = 0;
        int done = 0;
        while (done < ops) {
            while (posted < ops && posted - done < w) {
                int rc = post(c, buf, off, count, t, op, desc, cur, ops, posted);
                posted++; // a refused or failed post takes its number too
                if (rc != 0) {
                    abandon(done, posted - 1);
                    return rc;
                }
                inflight[(posted - 1) % w] = team.handle();
            }
            if (posted - done > MOST_IN_FLIGHT.get()) {
                MOST_IN_FLIGHT.accumulateAndGet(posted - done, Math::max);
            }
            long h = inflight[done % w];
            if (!await(h)) {
                abandon(done, posted); // another leader recovers this call, or it took too long: the switch forgets them
                return joinRequested ? JOINED : TIMED_OUT;
            }
            int rc = team.status(h);
            done++;
            if (rc == 0 && ops > 1 && done == 1 && !sameCall(desc)) {
                rc = DISAGREE;
            }
            if (rc != 0) {
                abandon(done, posted);
                return rc;
            }
        }
        return 0;
    }

    /**
     * Operation {@code j} of the call: a barrier; the whole call; or, of several, first the
     * descriptor check, then chunk j-1 out of place into the current result buffer (each within
     * one registration window pair, see SharpTeam).
     */
    private int post(Collective c, ByteBuffer buf, int off, int count, DataType t, Op op, long desc, int cur, int ops, int j) {
        if (c == Collective.BARRIER) {
            return team.barrierNb();
        }
        if (ops > 1 && j == 0) {
            long d = desc & ~Desc.SHARED;
            check.putLong(0, d).putInt(8, 0).putLong(12, ~d).putInt(20, 0);
            return team.allreduceNb(checkAddr, team.mr(0, checkAddr, 24, checkAddr, checkAddr + 64), checkAddr + 32,
                    team.mr(1, checkAddr + 32, 24, checkAddr, checkAddr + 64), 24, 2, SharpAbi.DTYPE_LONG, SharpAbi.OP_MINLOC,
                    SharpAbi.AGGREGATION_NONE);
        }
        int elems = ops == 1 ? count : chunkBytes / t.size;
        long first = ops == 1 ? 0 : (long) (j - 1) * elems;
        int n = (int) Math.min(elems, count - first);
        long nb = (long) n * t.size;
        long base = address(buf);
        long src = base + off + first * t.size;
        long dst = outAddr[cur] + first * t.size;
        int mode = SharpAbi.AGGREGATION_NONE;
        if (nb >= satBytes) {
            mode = SharpAbi.AGGREGATION_STREAMING;
            STREAMING_OPS.incrementAndGet();
        }
        return team.allreduceNb(src, team.mr(0, src, nb, base, base + buf.capacity()), dst,
                team.mr(1, dst, nb, outAddr[cur], outAddr[cur] + cap), nb, n, DTYPE[t.ordinal()], OP[op.ordinal()], mode);
    }

    /**
     * Whether the descriptor check found the same descriptor d everywhere: every leader
     * contributed (d, 0) and (~d, 0) to a MINLOC, which gives (min d, ~max d); both equal this
     * leader's only if min = max = d on every leader, so every leader sees a disagreement alike.
     */
    private boolean sameCall(long desc) {
        long d = desc & ~Desc.SHARED;
        return check.getLong(32) == d && check.getLong(44) == ~d;
    }

    /** Abandons the requests of operations [from, to) of the current call. */
    private void abandon(int from, int to) {
        for (int i = from; i < to; i++) {
            team.abandon(inflight[i % depth]);
        }
    }

    /**
     * After the recovery of a call this leader left early: posts the call's operations it had not
     * posted and abandons them at once, so that every leader has taken the same operation numbers
     * (the switch matches operations by number) before the next call.
     */
    private void drain(Collective c, ByteBuffer buf, int off, int count, DataType t, Op op, int cur, int ops) {
        while (posted < ops) {
            int rc = post(c, buf, off, count, t, op, 0, cur, ops, posted);
            posted++;
            if (rc == 0) {
                team.abandon(team.handle());
            }
        }
    }

    private long address(ByteBuffer buf) {
        if (buf != lastIn) {
            lastInAddr = SharpTeam.address(buf);
            lastIn = buf;
        }
        return lastInAddr;
    }

    /** Polls a request; true when it completed, false when the wait ended for a recovery or the SHARP time limit. */
    private boolean await(long h) {
        wait.h = h;
        wait.polls = 0;
        wait.deadline = System.nanoTime() + sharpWaitNanos;
        wait.completed = false;
        waiter.await(wait, awaited);
        return wait.completed;
    }

    /** What the waiter polls: the request; every 64 polls the library's progress, the host path's wake-ups and the clock. */
    private final class SharpWait implements Waiter.Condition {
        long h;
        int polls;
        long deadline;
        boolean completed;

        @Override
        public boolean done() {
            if (team.test(h)) {
                completed = true;
                return true;
            }
            if ((++polls & 63) == 0) {
                team.progress();
                host.pollRecovery(); // may serve an earlier call's recovery, or ask us to join this one's
                if (joinRequested) {
                    // Another leader recovers this call. Our own request may have completed since the test
                    // above (in progress(), or while this thread was preempted: the switch completes
                    // every leader's request at the same moment, so the leader that recovers first often
                    // finds the others just there). Then its status decides, as if the test had seen it:
                    // a failure is this leader's own (reported and recovered as such), a success is kept
                    // and serves the recovery (recoveryPending: the wake-up stays until joined). Only a
                    // request still open is abandoned (JOINED). SharpFallbackTest's completion-failure
                    // case lost one of its three warnings to this about once per full CI run.
                    completed = team.test(h);
                    return true;
                }
                if (System.nanoTime() - deadline > 0) {
                    return true;
                }
            }
            return false;
        }
    }

    /**
     * The recovery of call k on this leader, which did not complete it (class comment). Returns
     * whether the leaders agreed on the call (then the caller drains its unposted operations).
     */
    private boolean recover(long k, Collective c, ByteBuffer buf, int off, int count, DataType t, Op op, int rootNode, long desc,
            CallStatus status, int rc) {
        final int bytes = t == null ? 0 : count * t.size;
        final int words = 1 + (bytes + 7) / 8;
        zero(phase0, words * 8);
        desc &= ~Desc.SHARED;
        rst.reset();
        host.recoveryCollective(k, 0, Collective.ALLREDUCE, phase0, 0, words, DataType.LONG, Op.BOR, 0, desc, rst);
        if (!rst.ok()) {
            status.merge(rst); // leaders disagree on the call: the engine throws the same mismatch everywhere
            if (multiOp && k + 1 < disabledFrom) {
                // Leaders that disagree may have taken different numbers of operations: SHARP is off
                // from the next call on, on every leader (all of them are here: nobody completed call k).
                disabledFrom = k + 1;
                if (node == 0) {
                    LOG.warn("sharp4j: node leaders disagreed on SHARP {} (call {}); the host path ({}) carries every "
                            + "inter-node call from call {} on", Desc.describe(desc), k, hostName, disabledFrom);
                }
            }
            return false;
        }
        boolean someone = (phase0.getLong(0) & 1) != 0;
        if (someone) {
            if (bytes > 0) {
                buf.put(off, phase0, 8, bytes);
            }
        } else {
            host.recoveryCollective(k, 1, c, buf, off, count, t, op, rootNode < 0 ? 0 : rootNode, desc, status);
        }
        failed(k, desc, rc, someone);
        return true;
    }

    /** The listener: a recovery of the call ending in these 24 bits waits for this leader. */
    @Override
    public void recoveryPending(int callSeq24) {
        if (current >= 0 && (current & 0xFFFFFF) == callSeq24) {
            joinRequested = true; // the SHARP wait ends, abandons the request and joins the recovery
            return;
        }
        if (keptCall >= 0 && !keptServed && (keptCall & 0xFFFFFF) == callSeq24) {
            keptServed = true;
            int words = 1 + (keptBytes + 7) / 8;
            zero(phase0, words * 8);
            phase0.putLong(0, 1);
            if (keptBytes > 0) {
                phase0.put(8, out[keptBuf], 0, keptBytes);
            }
            CallStatus s = new CallStatus(); // failure path only
            host.recoveryCollective(keptCall, 0, Collective.ALLREDUCE, phase0, 0, words, DataType.LONG, Op.BOR, 0, keptDesc, s);
            failed(keptCall, keptDesc, 0, true);
        }
        // otherwise a later call's recovery: this leader joins it when it gets there
    }

    /** Codes of a call this leader abandoned: another leader started its recovery / it did not complete in time. */
    private static final int JOINED = Integer.MIN_VALUE;
    private static final int TIMED_OUT = Integer.MIN_VALUE + 1;
    /** Code of a multi-operation call whose descriptor check showed that the leaders made different calls. */
    private static final int DISAGREE = Integer.MIN_VALUE + 2;

    /**
     * Counts a recovery (every leader counts each one) and reports it: WARN on a leader whose own
     * SHARP call failed or timed out, DEBUG on one that only joined.
     */
    private void failed(long k, long desc, int rc, boolean fromSwitch) {
        failures++;
        fallbacks++;
        FALLBACKS.incrementAndGet();
        boolean switchOff = maxFailures > 0 && failures >= maxFailures && disabledFrom == Long.MAX_VALUE;
        if (switchOff) {
            disabledFrom = k + 2;
        }
        String how = fromSwitch ? "took the result of a node leader that completed it"
                : "redone on the host path (" + hostName + ") by every node leader";
        String of = maxFailures > 0 ? Integer.toString(maxFailures) : "unlimited";
        if (rc == TIMED_OUT) {
            Warnings.warn(LOG, "sharp4j: SHARP {} (call {}) did not complete within {} ms on node {}; {} [failure {} of {}]",
                    Desc.describe(desc), k, sharpWaitNanos / 1_000_000, node, how, failures, of);
        } else if (rc != 0 && rc != JOINED) {
            Warnings.warn(LOG, "sharp4j: SHARP {} (call {}) failed on node {} with {} ({}); {} [failure {} of {}]", Desc.describe(desc), k,
                    node, rc, team.lib.strerror(rc), how, failures, of);
        } else if (LOG.isDebugEnabled()) {
            LOG.debug("sharp4j: SHARP {} (call {}) failed on another node leader; node {} joined its recovery: {} [failure {} of {}]",
                    Desc.describe(desc), k, node, how, failures, of);
        }
        if (switchOff && node == 0) {
            Warnings.warn(LOG, "sharp4j: SHARP switched off for this job after {} failed operations ({}={}); the host path ({}) "
                    + "carries every inter-node call from call {} on", failures, SharpSettings.MAX_FAILURES, maxFailures, hostName,
                    disabledFrom);
        }
    }

    private static void zero(ByteBuffer b, int bytes) {
        for (int i = 0; i + 8 <= bytes; i += 8) {
            b.putLong(i, 0);
        }
    }

    /** Host-path messages sent by this leader so far (tests). */
    long hostMessages() {
        return host.messagesSent();
    }

    @Override
    public void abort(int rank, int blamed) {
        host.abort(rank, blamed); // failures travel on the host path
    }

    @Override
    public long abortWord() {
        return host.abortWord();
    }

    @Override
    public int askAlive(int node, long waitStartNanos, long graceNanos) {
        return host.askAlive(node, waitStartNanos, graceNanos);
    }

    @Override
    public void answerQueries() {
        host.answerQueries();
    }

    /** The host path's calls (what SHARP does not take, a recovery) vary their timing in the heating as on their own. */
    @Override
    public void heating(boolean on) {
        host.heating(on);
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            team.close();
        } finally {
            host.close();
        }
    }

    @Override
    public String toString() {
        return "SHARP node " + node + "/" + nodes + " (sharp " + sharpCalls + ", host " + hostCalls + ", fallbacks "
                + fallbacks + (enabled() ? "" : ", switched off") + ")";
    }
}
