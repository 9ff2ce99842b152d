package org.sharp4j;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;
import org.sharp4j.coll.CallStatus;
import org.sharp4j.spi.InterNodeContext;
import org.sharp4j.spi.InterNodeProvider;
import org.sharp4j.spi.InterNodeStep;

/**
 * A test offload registered through META-INF/services: counts the calls it gets and passes them to
 * the host path it wraps. Off unless a test sets {@link #mode}, so other tests are unaffected.
 */
public final class CountingOffloadProvider implements InterNodeProvider {
    /** null: off everywhere; "all": usable on every rank; "not-rank-N": rank N objects. */
    public static volatile String mode;
    public static final AtomicInteger CALLS = new AtomicInteger();
    /** When >= 0: the leader of node {@link #failNode} throws a plain Sharp4jException at this (0-based) call. */
    public static volatile int failAtCall = -1;
    public static volatile int failNode = -1;

    @Override
    public String name() {
        return "counting offload";
    }

    @Override
    public boolean offload() {
        return true;
    }

    @Override
    public String unavailableReason(InterNodeContext ctx) {
        String m = mode;
        if (m == null) {
            return "disabled";
        }
        if (m.equals("not-rank-" + ctx.rank())) {
            return "rank " + ctx.rank() + " has no such network";
        }
        return null;
    }

    @Override
    public InterNodeStep create(InterNodeContext ctx, InterNodeStep host) {
        if (host == null) {
            return null;
        }
        final int node = ctx.node();
        final AtomicInteger mine = new AtomicInteger();
        return new InterNodeStep() {
            private void maybeFail() {
                if (node == failNode && mine.getAndIncrement() == failAtCall) {
                    throw new Sharp4jException("injected phase-3 error on node " + node + " (not a peer failure)");
                }
            }

            @Override
            public String name() {
                return "counting";
            }

            @Override
            public void allreduce(ByteBuffer buf, int off, int count, DataType type, Op op, long desc, CallStatus status) {
                CALLS.incrementAndGet();
                maybeFail();
                host.allreduce(buf, off, count, type, op, desc, status);
            }

            @Override
            public void reduce(ByteBuffer buf, int off, int count, DataType type, Op op, int rootNode, long desc, CallStatus status) {
                CALLS.incrementAndGet();
                host.reduce(buf, off, count, type, op, rootNode, desc, status);
            }

            @Override
            public void barrier(long desc, CallStatus status) {
                CALLS.incrementAndGet();
                maybeFail();
                host.barrier(desc, status);
            }

            @Override
            public void abort(int rank, int blamed) {
                host.abort(rank, blamed); // failures travel on the host path, as SHARP's do
            }

            @Override
            public long abortWord() {
                return host.abortWord();
            }

            @Override
            public void close() {
                host.close();
            }
        };
    }
}
