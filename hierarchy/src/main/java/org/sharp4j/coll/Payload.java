package org.sharp4j.coll;

import java.nio.ByteBuffer;
import org.sharp4j.DataType;

/**
 * A user's side of a collective (input or output): a Java array, a direct ByteBuffer, the rank's
 * shared buffer inside the segment, or nothing. One mutable instance per role per communicator,
 * set before each call, so the hot path allocates nothing.
 *
 * <p>Copies go through absolute bulk operations ({@code DoubleBuffer.put(int, double[], int, int)},
 * {@code ByteBuffer.put(int, ByteBuffer, int, int)}, Java 16+): a memcpy, no views created.
 */
public final class Payload {
    /**
     * Loads every class of typed NIO buffer a program or the agent's warm-up can hand over: heap
     * and direct, both byte orders, read-only or not, views of a {@code ByteBuffer} and wrapped
     * arrays. Called before the engine's warm-up. Why: C2 compiles a virtual call on a typed buffer
     * (the copies' {@code IntBuffer.get(int, int[], int, int)}, ...) against the classes loaded so far,
     * and the first new one makes that code not entrant. The agent's warm-up loaded
     * {@code DirectIntBufferS} (a big-endian view) and {@code HeapDoubleBuffer} after the engine's
     * heating, which threw away the compiled {@code ExchangeAlgorithm.run}, {@code Payload.copyIn} and
     * {@code copyOutFrom}; C2 compiled them and the exchange's {@code fold} and {@code deliver} again
     * only during the program's calls (-Xlog:class+load against PrintCompilation, OsuDirect on int
     * arrays through the agent).
     */
    static void loadBufferClasses() {
        java.nio.ByteOrder[] orders = {java.nio.ByteOrder.BIG_ENDIAN, java.nio.ByteOrder.LITTLE_ENDIAN};
        for (ByteBuffer b : new ByteBuffer[] {ByteBuffer.allocate(8), ByteBuffer.allocateDirect(8)}) {
            for (java.nio.ByteOrder o : orders) {
                for (ByteBuffer v : new ByteBuffer[] {b.duplicate().order(o), b.asReadOnlyBuffer().order(o)}) {
                    v.asIntBuffer().limit();
                    v.asLongBuffer().limit();
                    v.asFloatBuffer().limit();
                    v.asDoubleBuffer().limit();
                    v.asShortBuffer().limit(); // types sharp4j does not reduce, but whose buffers a program may make
                    v.asCharBuffer().limit();
                }
            }
        }
        java.nio.IntBuffer.wrap(new int[1]).asReadOnlyBuffer().limit();
        java.nio.LongBuffer.wrap(new long[1]).asReadOnlyBuffer().limit();
        java.nio.FloatBuffer.wrap(new float[1]).asReadOnlyBuffer().limit();
        java.nio.DoubleBuffer.wrap(new double[1]).asReadOnlyBuffer().limit();
        java.nio.ShortBuffer.wrap(new short[1]).asReadOnlyBuffer().limit();
        java.nio.CharBuffer.wrap(new char[1]).asReadOnlyBuffer().limit();
    }

    static final int NONE = 0;
    static final int ARRAY = 1;
    static final int BUFFER = 2;
    static final int SHARED = 3;

    int kind;
    Object array;
    ByteBuffer buffer;
    /** Element offset into the array or buffer, or into the shared buffer. */
    int off;
    /** For SHARED: the level holding the rank's shared buffer and its byte offset there. */
    ShmLevel sharedLevel;
    int sharedOff;

    /*
     * The setters store a reference only when it changes, and none() keeps the last ones (kind
     * says which is valid): a reference store into this long-lived object costs a GC write
     * barrier, under G1 a StoreLoad fence per store, and a program that alternates Allreduce and
     * Barrier on the same arrays would otherwise pay two or three per call. The last buffers stay
     * reachable from here until the next call or clear() (the communicator's close).
     */

    public void none() {
        kind = NONE;
    }

    public void array(Object a, int elementOffset) {
        kind = ARRAY;
        if (array != a) {
            array = a;
        }
        off = elementOffset;
    }

    public void buffer(ByteBuffer b, int elementOffset) {
        kind = BUFFER;
        if (buffer != b) {
            buffer = b;
        }
        off = elementOffset;
    }

    /** Drops the references to the user's last buffers (at close). */
    void clear() {
        kind = NONE;
        array = null;
        buffer = null;
        sharedLevel = null;
    }

    void shared(ShmLevel level, int byteOff) {
        kind = SHARED;
        array = null;
        buffer = null;
        off = 0;
        sharedLevel = level;
        sharedOff = byteOff;
    }

    boolean isShared() {
        return kind == SHARED;
    }

    /**
     * The memory a {@link #BUFFER} or {@link #SHARED} payload lies in, for the algorithms that read
     * or write it in place (with {@link #byteOffset}); not for arrays.
     */
    ByteBuffer memory() {
        return kind == BUFFER ? buffer : sharedLevel.buf;
    }

    /** Byte offset in {@link #memory()} of element {@code first} (a {@link #BUFFER} or {@link #SHARED} payload). */
    int byteOffset(DataType t, int first) {
        return kind == BUFFER ? (off + first) * t.size : sharedOff + first * t.size;
    }

    /** Up to this many bytes, arrays are copied element by element: a bulk copy's setup costs more than a line's elements. */
    static final int SMALL_BYTES = 64;

    /** user[first, first+count) -> segment at {@code segOff}. */
    void copyIn(ShmLevel lvl, int segOff, DataType t, int first, int count) {
        copyIn(lvl.buf, lvl.ints, lvl.longs, lvl.floats, lvl.doubles, segOff, t, first, count);
    }

    /** Whether {@code src} and {@code dst} share memory (an in-place call) over {@code count} elements. */
    static boolean overlaps(Payload src, Payload dst, DataType t, int count) {
        if (src.kind == Payload.SHARED) {
            return dst.kind == Payload.SHARED;
        }
        if (src.kind != Payload.BUFFER || dst.kind != Payload.BUFFER) {
            return false;
        }
        if (src.buffer == dst.buffer) {
            long a = (long) src.off * t.size;
            long b = (long) dst.off * t.size;
            long len = (long) count * t.size;
            return a < b + len && b < a + len;
        }
        // Two views of one memory (a duplicate, a slice) cannot be told apart cheaply: as MPI
        // forbids aliased send and receive buffers, only the same object means in place.
        return false;
    }

    /**
     * From this message size, the long-message algorithms write what another rank reads next
     * (a member's copy into its slot, a folded tile into the result area) with non-temporal
     * stores, where the data is in a direct buffer and the native kernels are loaded. On this
     * machine a store to a line that another core read last (a slot or result tile the peers
     * read in the previous call) cost about 28 ns per line, 2.2 GB/s (1 MiB written by one thread
     * right after another thread on the other core read it), while that reader's loads ran at
     * 25 GB/s; streaming stores do not wait for those lines. See {@link DirectReduceAlgorithm},
     * {@link PipelinedAlgorithm} and {@link TileFold} for what each measured.
     *
     * <p>Why 16 KiB (was 64): the reader's side. A line another core modified last reaches the
     * reader cache to cache, which this VM does at two speeds that flip every few minutes (its
     * "fast and slow phases"); in the slow one a 2-rank Reduce of 16 KiB took 8 us, its root
     * pulling the leaf's 256 freshly written lines one by one, against 2 in the fast one, while
     * Open MPI Java's took 4 in both. With the leaf's (tree) or non-root's (direct) copy streamed
     * to memory, the root reads memory in both phases. OSU port, 2 ranks, default and streaming
     * runs alternating (8 pairs; pairs whose 8 B rows showed the same phase): 16 KiB 0.66-0.89x
     * the P50 in the fast phase, 0.24 in the slow one; 32 KiB 0.55-0.77 and 0.20. Below 16 KiB the
     * fast phase lost (4 KiB 1.5-1.8x, 8 KiB 1.0-1.5x) what the slow one won (0.41-0.50x), and an
     * Allreduce exchange of 4-16 KiB (every rank reads) lost 1.2-3x in the fast phase: those keep
     * ordinary stores.
     */
    static final long STREAM_MIN_BYTES = 16 * 1024;

    /**
     * As {@link #copyIn(ShmLevel, int, DataType, int, int)}; if {@code streaming}, with non-temporal
     * stores where the input is a direct buffer and the native kernels are loaded
     * ({@link NativeKernels#copyStreaming}): for a copy that another rank reads next and that is too
     * large to stay in this core's cache for it. Everything else copies as copyIn does.
     */
    void copyIn(ShmLevel lvl, int segOff, DataType t, int first, int count, boolean streaming) {
        if (!streaming || kind != BUFFER || !NativeKernels.AVAILABLE || !buffer.isDirect() || count == 0) {
            copyIn(lvl, segOff, t, first, count);
            return;
        }
        long bytes = (long) count * t.size;
        long from = (long) (off + first) * t.size;
        Staging.check(lvl.buf, segOff, bytes, true);
        Staging.check(buffer, (int) from, bytes, false);
        NativeKernels.copyStreaming(lvl.buf, segOff, buffer, from, bytes);
    }

    /** user[first, first+count) -> a private buffer at byte {@code at}. */
    void copyIn(Views v, int at, DataType t, int first, int count) {
        copyIn(v.buf, v.ints, v.longs, v.floats, v.doubles, at, t, first, count);
    }

    /** user[first, first+count) -> {@code buf} at {@code segOff} (the typed views are views of buf). */
    private void copyIn(ByteBuffer buf, java.nio.IntBuffer ints, java.nio.LongBuffer longs, java.nio.FloatBuffer floats,
            java.nio.DoubleBuffer doubles, int segOff, DataType t, int first, int count) {
        if (count == 0) {
            return;
        }
        int at = off + first;
        if (kind == ARRAY && count * t.size <= SMALL_BYTES) {
            smallIn(buf, segOff, t, at, count);
            return;
        }
        switch (kind) {
            case ARRAY:
                switch (t) {
                    case DOUBLE: doubles.put(segOff >> 3, (double[]) array, at, count); break;
                    case LONG: longs.put(segOff >> 3, (long[]) array, at, count); break;
                    case FLOAT: floats.put(segOff >> 2, (float[]) array, at, count); break;
                    case INT: ints.put(segOff >> 2, (int[]) array, at, count); break;
                    default: throw new AssertionError(t);
                }
                break;
            case BUFFER:
                ShmLevel.copy(buf, segOff, buffer, at * t.size, count * t.size);
                break;
            case SHARED:
                ShmLevel.copy(buf, segOff, sharedLevel.buf, sharedOff + first * t.size, count * t.size);
                break;
            default:
                throw new IllegalStateException("no input buffer");
        }
    }

    /** Typed views of a private direct buffer (native order), made once so copies allocate nothing. */
    static final class Views {
        final ByteBuffer buf;
        final java.nio.IntBuffer ints;
        final java.nio.LongBuffer longs;
        final java.nio.FloatBuffer floats;
        final java.nio.DoubleBuffer doubles;

        Views(int bytes) {
            buf = ByteBuffer.allocateDirect(bytes).order(java.nio.ByteOrder.nativeOrder());
            ints = buf.asIntBuffer();
            longs = buf.asLongBuffer();
            floats = buf.asFloatBuffer();
            doubles = buf.asDoubleBuffer();
        }
    }

    /** {@code v[0, count elements)} -> user[0, count). */
    void copyOutFrom(Views v, DataType t, int count) {
        if (count == 0) {
            return;
        }
        if (kind == ARRAY && count * t.size <= SMALL_BYTES) {
            smallOut(v.buf, 0, t, count);
            return;
        }
        switch (kind) {
            case ARRAY:
                switch (t) {
                    case DOUBLE: v.doubles.get(0, (double[]) array, off, count); break;
                    case LONG: v.longs.get(0, (long[]) array, off, count); break;
                    case FLOAT: v.floats.get(0, (float[]) array, off, count); break;
                    case INT: v.ints.get(0, (int[]) array, off, count); break;
                    default: throw new AssertionError(t);
                }
                break;
            case BUFFER:
                ShmLevel.copy(buffer, off * t.size, v.buf, 0, count * t.size);
                break;
            case SHARED:
                ShmLevel.copy(sharedLevel.buf, sharedOff, v.buf, 0, count * t.size);
                break;
            default:
                break; // no output on this rank
        }
    }

    /** segment at {@code segOff} -> user[first, first+count). */
    void copyOut(ShmLevel lvl, int segOff, DataType t, int first, int count) {
        copyOut(lvl.buf, lvl.ints, lvl.longs, lvl.floats, lvl.doubles, segOff, t, first, count);
    }

    /** A private buffer at byte {@code at} -> user[first, first+count). */
    void copyOut(Views v, int at, DataType t, int first, int count) {
        copyOut(v.buf, v.ints, v.longs, v.floats, v.doubles, at, t, first, count);
    }

    /** {@code buf} at {@code segOff} -> user[first, first+count) (the typed views are views of buf). */
    private void copyOut(ByteBuffer buf, java.nio.IntBuffer ints, java.nio.LongBuffer longs, java.nio.FloatBuffer floats,
            java.nio.DoubleBuffer doubles, int segOff, DataType t, int first, int count) {
        if (count == 0) {
            return;
        }
        int at = off + first;
        if (kind == ARRAY && first == 0 && count * t.size <= SMALL_BYTES) {
            smallOut(buf, segOff, t, count);
            return;
        }
        switch (kind) {
            case ARRAY:
                switch (t) {
                    case DOUBLE: doubles.get(segOff >> 3, (double[]) array, at, count); break;
                    case LONG: longs.get(segOff >> 3, (long[]) array, at, count); break;
                    case FLOAT: floats.get(segOff >> 2, (float[]) array, at, count); break;
                    case INT: ints.get(segOff >> 2, (int[]) array, at, count); break;
                    default: throw new AssertionError(t);
                }
                break;
            case BUFFER:
                ShmLevel.copy(buffer, at * t.size, buf, segOff, count * t.size);
                break;
            case SHARED:
                ShmLevel.copy(sharedLevel.buf, sharedOff + first * t.size, buf, segOff, count * t.size);
                break;
            default:
                break; // no output on this rank
        }
    }

    /** Element by element (absolute, native order: plain stores), for a line's worth of an array. */
    private void smallIn(ByteBuffer b, int segOff, DataType t, int at, int count) {
        switch (t) {
            case DOUBLE: {
                double[] a = (double[]) array;
                for (int i = 0; i < count; i++) {
                    b.putDouble(segOff + 8 * i, a[at + i]);
                }
                break;
            }
            case LONG: {
                long[] a = (long[]) array;
                for (int i = 0; i < count; i++) {
                    b.putLong(segOff + 8 * i, a[at + i]);
                }
                break;
            }
            case FLOAT: {
                float[] a = (float[]) array;
                for (int i = 0; i < count; i++) {
                    b.putFloat(segOff + 4 * i, a[at + i]);
                }
                break;
            }
            case INT: {
                int[] a = (int[]) array;
                for (int i = 0; i < count; i++) {
                    b.putInt(segOff + 4 * i, a[at + i]);
                }
                break;
            }
            default:
                throw new AssertionError(t);
        }
    }

    /** The reverse of {@link #smallIn}, into the array from its offset. */
    private void smallOut(ByteBuffer b, int from, DataType t, int count) {
        switch (t) {
            case DOUBLE: {
                double[] a = (double[]) array;
                for (int i = 0; i < count; i++) {
                    a[off + i] = b.getDouble(from + 8 * i);
                }
                break;
            }
            case LONG: {
                long[] a = (long[]) array;
                for (int i = 0; i < count; i++) {
                    a[off + i] = b.getLong(from + 8 * i);
                }
                break;
            }
            case FLOAT: {
                float[] a = (float[]) array;
                for (int i = 0; i < count; i++) {
                    a[off + i] = b.getFloat(from + 4 * i);
                }
                break;
            }
            case INT: {
                int[] a = (int[]) array;
                for (int i = 0; i < count; i++) {
                    a[off + i] = b.getInt(from + 4 * i);
                }
                break;
            }
            default:
                throw new AssertionError(t);
        }
    }
}
