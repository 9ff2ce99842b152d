package org.sharp4j.sharp;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.atomic.AtomicLong;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.coll.CallStatus;
import org.sharp4j.coll.Desc;
import org.sharp4j.spi.InterNodeStep;
import org.sharp4j.tuning.Collective;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Phase 3 through SHARP on one node leader, around the host path.
 *
 * <p><b>Dispatch</b> (per call, the same on every node leader given the same call): SHARP when it is
 * still enabled, the type and op are in the capability masks agreed at setup (PROD is not), and
 * {@code 0 < bytes <= sharp4j.sharp.max.bytes}; otherwise the host path.
 *
 * <p><b>A SHARP call</b>: save the input (in place, a failed call may leave the buffer clobbered), post
 * the blocking Allreduce (Reduce is an Allreduce whose result only the root's node keeps, paper 004
 * Algorithm 1; Barrier is {@code sharp_coll_do_barrier}), then <b>agree</b>: one host-path Allreduce
 * (LONG, MIN) of this leader's outcome, carrying the call's descriptor, so that the host path also
 * compares the call between nodes and every leader ends with the same status. If any leader failed,
 * every leader restores its input and redoes the call on the host path; the lowest failing node
 * and its code are logged once (by node 0). After {@code sharp4j.sharp.max.failures} failures
 * SHARP is switched off for the job (the count is the same on every leader, so they all switch
 * together), with one more log line.
 */
final class SharpStep implements InterNodeStep {
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

    private final InterNodeStep host;
    private final SharpTeam team;
    private final OobChannel oob;
    private final int node;
    private final int nodes;
    private final long dtypeMask;
    private final long opMask;
    /** Largest message SHARP takes, per collective (inclusive; -1: never). */
    private final long[] maxBytes;
    private final int maxFailures;
    private final String hostName;
    private boolean enabled = true;
    private int failures;
    private ByteBuffer saved = ByteBuffer.allocateDirect(4096).order(ByteOrder.nativeOrder());
    private boolean closed;

    /** Calls of this leader that SHARP completed / that went to the host path / that SHARP failed. */
    long sharpCalls;
    long hostCalls;
    long fallbacks;

    SharpStep(InterNodeStep host, SharpTeam team, long dtypeMask, long opMask, long[] maxBytes, int maxFailures) {
        this.host = host;
        this.team = team;
        this.oob = team.oob;
        this.node = oob.rank();
        this.nodes = oob.size();
        this.dtypeMask = dtypeMask;
        this.opMask = opMask;
        this.maxBytes = maxBytes.clone();
        this.maxFailures = maxFailures;
        this.hostName = host.name();
    }

    @Override
    public String name() {
        return "SHARP";
    }

    /** Whether this call goes to SHARP (the same decision on every leader for the same call). */
    boolean eligible(Collective c, ByteBuffer buf, int count, DataType type, Op op) {
        if (!enabled || count <= 0 || !buf.isDirect()) {
            return false;
        }
        long bytes = (long) count * type.size;
        return bytes <= maxBytes[c.ordinal()] && (dtypeMask >>> DTYPE[type.ordinal()] & 1) != 0 && (opMask >>> OP[op.ordinal()] & 1) != 0;
    }

    boolean enabled() {
        return enabled;
    }

    @Override
    public void allreduce(ByteBuffer buf, int off, int count, DataType type, Op op, long desc, CallStatus status) {
        if (eligible(Collective.ALLREDUCE, buf, count, type, op)) {
            viaSharp(buf, off, count, type, op, -1, desc, status);
        } else {
            hostCalls++;
            HOST_CALLS.incrementAndGet();
            host.allreduce(buf, off, count, type, op, desc, status);
        }
    }

    @Override
    public void reduce(ByteBuffer buf, int off, int count, DataType type, Op op, int rootNode, long desc, CallStatus status) {
        if (eligible(Collective.REDUCE, buf, count, type, op)) {
            viaSharp(buf, off, count, type, op, rootNode, desc, status);
        } else {
            hostCalls++;
            HOST_CALLS.incrementAndGet();
            host.reduce(buf, off, count, type, op, rootNode, desc, status);
        }
    }

    @Override
    public void barrier(long desc, CallStatus status) {
        if (!enabled || maxBytes[Collective.BARRIER.ordinal()] < 0) {
            hostCalls++;
            HOST_CALLS.incrementAndGet();
            host.barrier(desc, status);
            return;
        }
        int rc;
        oob.begin(desc, status);
        try {
            rc = team.barrier();
        } finally {
            oob.end();
        }
        oob.rethrow();
        long outcome = oob.agree(rc, desc, status);
        if (!status.ok()) {
            return; // the nodes disagree on the call: every leader has the same status, the engine throws
        }
        if (outcome == OobChannel.ALL_OK) {
            succeeded();
            return;
        }
        host.barrier(desc, status); // (the agreement already synchronised everyone; this is the host's own barrier)
        failed(desc, outcome);
    }

    /** rootNode < 0: Allreduce. */
    private void viaSharp(ByteBuffer buf, int off, int count, DataType type, Op op, int rootNode, long desc, CallStatus status) {
        int bytes = count * type.size;
        if (saved.capacity() < bytes) {
            saved = ByteBuffer.allocateDirect(Math.max(bytes, 2 * saved.capacity())).order(ByteOrder.nativeOrder());
        }
        saved.put(0, buf, off, bytes);
        long base = team.base(buf);
        int rc;
        oob.begin(desc, status);
        try {
            rc = team.allreduce(base + off, bytes, count, DTYPE[type.ordinal()], OP[op.ordinal()], team.mr());
        } finally {
            oob.end();
        }
        oob.rethrow();
        long outcome = oob.agree(rc, desc, status);
        if (!status.ok()) {
            return; // a disagreement on the call, now known to every leader: the engine throws everywhere
        }
        if (outcome == OobChannel.ALL_OK) {
            succeeded();
            return;
        }
        buf.put(off, saved, 0, bytes);
        if (rootNode < 0) {
            host.allreduce(buf, off, count, type, op, desc, status);
        } else {
            host.reduce(buf, off, count, type, op, rootNode, desc, status);
        }
        failed(desc, outcome);
    }

    private void succeeded() {
        sharpCalls++;
        SHARP_CALLS.incrementAndGet();
    }

    private void failed(long desc, long outcome) {
        fallbacks++;
        FALLBACKS.incrementAndGet();
        failures++;
        int code = OobChannel.failedCode(outcome);
        boolean switchOff = maxFailures > 0 && failures >= maxFailures;
        if (node == 0) {
            LOG.warn("sharp4j: SHARP {} failed on node {} with {} ({}); finished on the host path ({}) by every node leader "
                    + "[failure {} of {}]", Desc.describe(desc), OobChannel.failedNode(outcome), code, team.lib.strerror(code),
                    hostName, failures, maxFailures > 0 ? Integer.toString(maxFailures) : "unlimited");
        }
        if (switchOff) {
            enabled = false;
            if (node == 0) {
                LOG.warn("sharp4j: SHARP switched off for this job after {} failed operations ({}={}); the host path ({}) "
                        + "carries every inter-node call from now on", failures, SharpSettings.MAX_FAILURES, maxFailures, hostName);
            }
        }
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
                + fallbacks + (enabled ? "" : ", switched off") + ")";
    }
}
