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
    /** Private tile for a streamed fold that cannot go through the output first (grown once to the largest tile). */
    private ByteBuffer scratch = ByteBuffer.allocateDirect(0);

    /**
     * Folds elements {@code [lo, hi)} of the chunk that starts at element {@code first} of the
     * call, set {@code set}, into {@code sock.buf} at byte {@code to} and, unless {@code out} is
     * null, into {@code out} at byte {@code outOff} as well, from the same blocks (no second pass
     * over the tile).
     *
     * <p>With {@code streaming} (and the native kernels), the tile reaches {@code sock.buf} through a
     * copy with non-temporal stores, since the other members read it next ({@link
     * Payload#STREAM_MIN_BYTES}): folded into a direct {@code out} when {@code outFirst} (the fold may
     * write it before it reads every input: it is no input past the first two), then streamed from
     * there; otherwise folded into this rank's private scratch, streamed from there and, when
     * {@code out} is given, copied into it. One more pass over the tile, out of this core's cache.
     */
    void fold(Engine e, ShmLevel sock, int set, int first, int lo, int hi, DataType t, Op op, boolean ownInPlace, int to,
            ByteBuffer out, int outOff, boolean streaming, boolean outFirst) {
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
        } else if (streaming && NativeKernels.AVAILABLE) {
            final int bytes = (hi - lo) * size;
            final ByteBuffer via;
            final int viaOff;
            if (outFirst && out != null && out.isDirect()) {
                via = out;
                viaOff = outOff;
            } else {
                if (scratch.capacity() < bytes) {
                    scratch = ByteBuffer.allocateDirect(Math.max(bytes, 2 * scratch.capacity())).order(java.nio.ByteOrder.nativeOrder());
                }
                via = scratch;
                viaOff = 0;
            }
            Reductions.combineAll(t, op, via, viaOff, null, 0, xs, offs, q, hi - lo);
            Staging.check(sock.buf, to, bytes, true);
            Staging.check(via, viaOff, bytes, false);
            NativeKernels.copyStreaming(sock.buf, to, via, viaOff, bytes);
            if (out != null && via != out) {
                ShmLevel.copy(out, outOff, via, viaOff, bytes);
            }
        } else {
            Reductions.combineAll(t, op, sock.buf, to, out, outOff, xs, offs, q, hi - lo);
        }
        java.util.Arrays.fill(xs, 0, q, null); // keep no user buffer reachable
    }
}
