package org.sharp4j.coll;

import java.nio.ByteBuffer;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.shm.Segment;
import org.sharp4j.shm.Waiter;
import org.sharp4j.spi.InterNodeStep;

/**
 * Phase 3 in shared memory, for simulated nodes that all live on one host: the node leaders form
 * one more {@link ShmLevel} and run the same k-nomial fold and flat release as the intra-node
 * phases, chunked by the slot size. It exists so that every phase of the hierarchy runs on one
 * machine; real clusters use the UCX or SHARP steps.
 *
 * <p>Reduce is an allreduce whose result only the root's node keeps (as SHARP does it, paper 004
 * Algorithm 1), so every node leader learns the call's status.
 */
final class ShmInterNode implements InterNodeStep {
    private final ShmLevel level;
    private final Waiter waiter;
    private final int rank;
    private final CallStatus local = new CallStatus();
    private long seq;

    ShmInterNode(Segment seg, int members, int me, int[] leaderRanks, int radix, int slotBytes, Waiter waiter, int rank,
            boolean creator) {
        this.level = new ShmLevel(seg, members, me, leaderRanks, radix, slotBytes, 0, 0);
        if (creator) {
            level.writeHeader();
        }
        this.waiter = waiter;
        this.rank = rank;
    }

    ShmLevel level() {
        return level;
    }

    @Override
    public String name() {
        return "shared memory (simulated nodes on one host)";
    }

    @Override
    public void allreduce(ByteBuffer buf, int off, int count, DataType type, Op op, long desc, CallStatus status) {
        int chunk = level.slotBytes / type.size;
        int first = 0;
        do {
            int n = Math.min(chunk, count - first);
            step(buf, off + first * type.size, n, type, op, desc, status);
            first += n;
        } while (first < count);
    }

    @Override
    public void reduce(ByteBuffer buf, int off, int count, DataType type, Op op, int rootNode, long desc, CallStatus status) {
        allreduce(buf, off, count, type, op, desc, status);
    }

    @Override
    public void barrier(long desc, CallStatus status) {
        step(null, 0, 0, null, null, desc, status);
    }

    /** One fold-up / release-down round over at most a slot of data. */
    private void step(ByteBuffer buf, int off, int count, DataType t, Op op, long desc, CallStatus status) {
        final long s = ++seq;
        final int set = ShmLevel.set(s);
        final int bytes = t == null ? 0 : count * t.size;
        final int acc = level.dataOff(set, level.me, bytes);
        if (bytes > 0) {
            ShmLevel.copy(level.buf, acc, buf, off, bytes);
        }
        local.reset();
        local.merge(status);
        level.foldChildren(set, s, desc, level.buf, acc, count, t, op, waiter, local, rank);
        int res = acc;
        if (level.me != 0) {
            level.publish(set, ShmLevel.ARRIVED, s, desc, local);
            local.reset();
            level.await(set, 0, ShmLevel.RELEASED, s, waiter, local);
            res = level.dataOff(set, 0, bytes);
        } else {
            level.publish(set, ShmLevel.RELEASED, s, desc, local);
        }
        if (bytes > 0) {
            ShmLevel.copy(buf, off, level.buf, res, bytes);
        }
        status.reset();
        status.merge(local);
    }

    @Override
    public void abort(int rank, int blamed) {
        level.abort(rank, blamed);
    }

    @Override
    public long abortWord() {
        return level.abortWord();
    }

    @Override
    public void close() {
        level.segment.close();
    }
}
