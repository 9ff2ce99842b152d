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
        int cap = (int) Math.min(Integer.MAX_VALUE - 64, (max + 7) & ~7L);
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
    boolean eligible(long k, Collective c, ByteBuffer buf, int count, DataType type, Op op) {
        if (k >= disabledFrom) {
            return false;
        }
        if (c == Collective.BARRIER) {
            return maxBytes[c.ordinal()] >= 0;
        }
        if (count <= 0 || !buf.isDirect()) {
            return false;
        }
        long bytes = (long) count * type.size;
        return bytes <= maxBytes[c.ordinal()] && (dtypeMask >>> DTYPE[type.ordinal()] & 1) != 0
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
        if (!eligible(k, c, buf, count, t, op)) {
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
            int rc;
            if (c == Collective.BARRIER) {
                rc = team.barrierNb();
            } else {
                long src = address(buf) + off;
                rc = team.allreduceNb(src, outAddr[cur], bytes, count, DTYPE[t.ordinal()], OP[op.ordinal()]);
            }
            if (rc == 0) {
                long h = team.handle();
                if (await(h)) {
                    rc = team.status(h);
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
                } else {
                    team.abandon(h); // another leader recovers this call, or it took too long: the switch forgets it
                    rc = joinRequested ? JOINED : TIMED_OUT;
                }
            }
            recover(k, c, buf, off, count, t, op, rootNode, desc, status, rc);
        } finally {
            current = -1;
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
                    return true;
                }
                if (System.nanoTime() - deadline > 0) {
                    return true;
                }
            }
            return false;
        }
    }

    /** The recovery of call k on this leader, which did not complete it (class comment). */
    private void recover(long k, Collective c, ByteBuffer buf, int off, int count, DataType t, Op op, int rootNode, long desc,
            CallStatus status, int rc) {
        final int bytes = t == null ? 0 : count * t.size;
        final int words = 1 + (bytes + 7) / 8;
        zero(phase0, words * 8);
        desc &= ~Desc.SHARED;
        rst.reset();
        host.recoveryCollective(k, 0, Collective.ALLREDUCE, phase0, 0, words, DataType.LONG, Op.BOR, 0, desc, rst);
        if (!rst.ok()) {
            status.merge(rst); // leaders disagree on the call: the engine throws the same mismatch everywhere
            return;
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
