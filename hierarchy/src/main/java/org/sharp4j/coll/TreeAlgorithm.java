package org.sharp4j.coll;

import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.tuning.Collective;

/**
 * Small messages up k-nomial trees, down by flat release (paper 004's phases with paper 001's
 * trees).
 *
 * <h2>The math</h2>
 * In a level of q members, member m's children in the k-nomial tree of radix k are
 * {@code m + j k^l} for {@code j = 1..k-1} and every position l below m's lowest non-zero base-k
 * digit (member 0: every l with {@code k^l < q}), in increasing distance. A member waits for its
 * children in that order and folds {@code acc = acc op child}; so for k = 2 and q = 8 the root
 * computes {@code ((x0 op x1) op (x2 op x3)) op ((x4 op x5) op (x6 op x7))}. Cost (paper 001):
 * {@code (k-1)(a + b m) ceil(log_k q)} up, plus one flat release down: two cache-line transfers
 * per call at least, which is why {@link ExchangeAlgorithm} wins for the smallest messages.
 *
 * <h2>Per call</h2>
 * <ol>
 *   <li>phase 1: fold up the socket's tree into the accumulator, which lives where the parent
 *       reads it: inline in the control block up to 40 bytes, else in the slot (or, for a leaf
 *       whose input is in its shared buffer, the parent reads that in place);</li>
 *   <li>phase 2: socket leaders fold up the tree of the node's socket leaders;</li>
 *   <li>phase 3: the node leader runs the inter-node step on the node's result;</li>
 *   <li>phases 4-5: the root of each level publishes RELEASED with the status; socket leaders
 *       copy an Allreduce's result next to their socket first. Reduce delivers only at the root,
 *       which reads the node leader's accumulator.</li>
 * </ol>
 * Every rank ends with the root's verdict (which merged every member's), so a mismatch throws
 * the same {@code ArgumentMismatchException} everywhere; except in a Reduce on one socket and one
 * node, whose members other than member 0 and the root return once they published (unless their
 * subtree showed a mismatch) and learn a mismatch from a later call or close, as described in
 * {@link ExchangeAlgorithm} ("Who returns when").
 */
final class TreeAlgorithm {
    private final Engine e;

    TreeAlgorithm(Engine e) {
        this.e = e;
    }

    /** @param radix the tree's radix for this call (the same on every rank), from the table segment the engine looked up */
    void run(Collective kind, DataType t, Op op, int root, int count, long desc, int radix) {
        final Engine e = this.e;
        final ShmLevel sock = e.sock;
        final ShmLevel node = e.node;
        final CallStatus st = e.st;
        final long s = e.nextSeq();
        final int set = ShmLevel.set(s);
        final int bytes = t == null ? 0 : count * t.size;
        final ShmLevel top = e.socketCount > 1 && e.socketLeader ? node : sock;
        final int acc = top.dataOff(set, top.me, bytes);
        final int[] sockKids = sock.childrenFor(radix);
        // A flat Reduce's members other than member 0 and the root publish and go (see
        // ExchangeAlgorithm, "Who returns when"), unless their subtree showed a mismatch.
        final boolean mayGo = kind == Collective.REDUCE && e.flat && e.rank != root && sock.me != 0;
        if (bytes > 0) {
            // A leaf with a parent lets the parent read its shared buffer in place, if it waits for
            // the release (which says the parent read it); one that goes copies. (A lone rank is
            // its own root: its accumulator must be filled for phase 3 and the release.)
            boolean leafWithParent = sockKids.length == 0 && top == sock && sock.me != 0;
            if (leafWithParent && !mayGo && bytes > ShmLevel.INLINE_BYTES && e.src.isShared()) {
                desc |= Desc.SHARED; // zero copy: the parent reads this rank's shared buffer in place
            } else {
                // A Reduce's leaf that goes writes what only its parent reads, after it left: with
                // non-temporal stores from Payload.STREAM_MIN_BYTES (see there).
                e.src.copyIn(top, acc, t, 0, count, mayGo && bytes >= Payload.STREAM_MIN_BYTES);
            }
        }
        st.reset();
        sock.foldChildren(sockKids, set, s, desc, top.buf, acc, count, t, op, e.waiter, st, e.rank);          // phase 1
        if (top == node) {
            node.foldChildren(node.childrenFor(radix), set, s, desc, top.buf, acc, count, t, op, e.waiter, st, e.rank); // phase 2
        }
        ShmLevel res = top;
        int resOff;
        if (top.me != 0) {
            top.publish(set, ShmLevel.ARRIVED, s, desc, st);
            if (mayGo && st.ok()) {
                e.wentAhead(s);
                return;
            }
            st.reset(); // the root's verdict (which includes ours) is what every rank reports
            top.await(set, 0, ShmLevel.RELEASED, s, e.waiter, st);                                // wait for phase 4/5
            resOff = top.dataOff(set, 0, bytes);
        } else {
            if (e.inter != null) {
                e.interNode(kind, top.buf, acc, count, t, op, root, desc);                         // phase 3
            }
            top.publish(set, ShmLevel.RELEASED, s, desc, st);
            resOff = acc;
        }
        if (top == node && sock.members > 1) {                                                    // phase 4
            int mine = sock.dataOff(set, 0, bytes);
            if (kind == Collective.ALLREDUCE && bytes > 0 && st.ok()) {
                ShmLevel.copy(sock.buf, mine, res.buf, resOff, bytes);
                res = sock;
                resOff = mine;
            }
            sock.publish(set, ShmLevel.RELEASED, s, desc, st);
        }
        if (!st.ok()) {
            throw st.toException();
        }
        if (kind == Collective.ALLREDUCE) {
            e.dst.copyOut(res, resOff, t, 0, count);
        } else if (kind == Collective.REDUCE && e.rank == root) {
            ShmLevel nl = e.socketCount > 1 ? node : sock;   // the node leader's top level
            e.dst.copyOut(nl, nl.dataOff(set, 0, bytes), t, 0, count);
        }
    }
}
