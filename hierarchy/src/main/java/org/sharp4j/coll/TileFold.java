package org.sharp4j.coll;

import java.nio.ByteBuffer;
import org.sharp4j.DataType;
import org.sharp4j.Op;

/**
 * One member's tile of a chunk folded over every member's input of one socket, left to right
 * over the members ({@code ((x0 op x1) op x2) ... op x(q-1)}): the fold the tiled and pipelined
 * algorithms share, so both give the same bits. Inputs are read where they lie: a member whose
 * descriptor says SHARED from its shared buffer, this rank's own direct buffer in place when
 * {@code ownInPlace}, everyone else from their slot of the set.
 */
final class TileFold {
    private TileFold() {
    }

    /**
     * Folds elements {@code [lo, hi)} of the chunk that starts at element {@code first} of the
     * call, set {@code set}, into {@code sock.buf} at byte {@code to} and, unless {@code out} is
     * null, into {@code out} at byte {@code outOff} as well, written by the last step from the
     * same blocks (no second pass over the tile). The first step is {@code x0 op x1} in one pass
     * (no copy of x0); one member copies its input.
     */
    static void fold(Engine e, ShmLevel sock, int set, int first, int lo, int hi, DataType t, Op op, boolean ownInPlace, int to,
            ByteBuffer out, int outOff) {
        final int size = t.size;
        final int q = sock.members;
        final int me = sock.me;
        ByteBuffer prevBuf = sock.buf;
        int prev = 0;
        for (int m = 0; m < q; m++) {
            ByteBuffer fromBuf = sock.buf;
            int from;
            if (m == me && ownInPlace) {
                fromBuf = e.src.buffer;
                from = (e.src.off + first + lo) * size;
            } else {
                from = (Desc.shared(sock.descOf(set, m)) ? sock.shared(m) + first * size : sock.slot(set, m)) + lo * size;
            }
            if (q == 1) {
                ShmLevel.copy(sock.buf, to, fromBuf, from, (hi - lo) * size);
                if (out != null) {
                    ShmLevel.copy(out, outOff, fromBuf, from, (hi - lo) * size);
                }
            } else if (m == q - 1 && out != null) { // the last step: the result to both places
                Reductions.combine(t, op, sock.buf, to, out, outOff, m == 1 ? prevBuf : sock.buf, m == 1 ? prev : to, fromBuf, from,
                        hi - lo);
            } else if (m == 1) {
                Reductions.combine(t, op, sock.buf, to, prevBuf, prev, fromBuf, from, hi - lo);
            } else if (m > 1) {
                Reductions.combine(t, op, sock.buf, to, fromBuf, from, hi - lo);
            }
            prevBuf = fromBuf;
            prev = from;
        }
    }
}
