package org.sharp4j.coll;

import java.nio.ByteBuffer;
import org.sharp4j.DataType;
import org.sharp4j.Op;

/**
 * One member's tile of a chunk folded over every member's input of one socket, left to right
 * over the members ({@code ((x0 op x1) op x2) ... op x(q-1)}): the fold the tiled and pipelined
 * algorithms share, so both give the same bits. Inputs are read where they lie: a member whose
 * descriptor says SHARED from its shared buffer, this rank's own direct buffer in place when
 * {@code ownInPlace}, everyone else from their slot of the set. The q inputs are folded in one
 * pass ({@link Reductions#combineAll}: each staged block of every input read once, the tile
 * written once), not q-1 passes over the tile.
 *
 * <p>One instance per algorithm object (its operand arrays are scratch, sized once to the socket):
 * used by the one thread that runs the engine's calls.
 */
final class TileFold {
    private ByteBuffer[] xs = new ByteBuffer[0];
    private int[] offs = new int[0];

    /**
     * Folds elements {@code [lo, hi)} of the chunk that starts at element {@code first} of the
     * call, set {@code set}, into {@code sock.buf} at byte {@code to} and, unless {@code out} is
     * null, into {@code out} at byte {@code outOff} as well, from the same blocks (no second pass
     * over the tile). With {@code streaming}, a direct {@code out} and the native kernels, the tile
     * is folded into {@code out} alone and then copied from there into {@code sock.buf} with
     * non-temporal stores (the other members read it next: see {@link Payload#STREAM_MIN_BYTES}):
     * a second pass over the tile, out of this core's cache.
     */
    void fold(Engine e, ShmLevel sock, int set, int first, int lo, int hi, DataType t, Op op, boolean ownInPlace, int to,
            ByteBuffer out, int outOff, boolean streaming) {
        final int size = t.size;
        final int q = sock.members;
        final int me = sock.me;
        if (xs.length < q) {
            xs = new ByteBuffer[q];
            offs = new int[q];
        }
        for (int m = 0; m < q; m++) {
            if (m == me && ownInPlace) {
                xs[m] = e.src.buffer;
                offs[m] = (e.src.off + first + lo) * size;
            } else {
                xs[m] = sock.buf;
                offs[m] = (Desc.shared(sock.descOf(set, m)) ? sock.shared(m) + first * size : sock.slot(set, m)) + lo * size;
            }
        }
        if (q == 1) {
            ShmLevel.copy(sock.buf, to, xs[0], offs[0], (hi - lo) * size);
            if (out != null) {
                ShmLevel.copy(out, outOff, xs[0], offs[0], (hi - lo) * size);
            }
        } else if (streaming && out != null && out.isDirect() && NativeKernels.AVAILABLE) {
            final long bytes = (long) (hi - lo) * size;
            Reductions.combineAll(t, op, out, outOff, null, 0, xs, offs, q, hi - lo);
            Staging.check(sock.buf, to, bytes, true);
            Staging.check(out, outOff, bytes, false);
            NativeKernels.copyStreaming(sock.buf, to, out, outOff, bytes);
        } else {
            Reductions.combineAll(t, op, sock.buf, to, out, outOff, xs, offs, q, hi - lo);
        }
        java.util.Arrays.fill(xs, 0, q, null); // keep no user buffer reachable
    }
}
