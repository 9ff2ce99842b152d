package org.sharp4j.coll;

import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.util.Locale;
import org.sharp4j.DataType;
import org.sharp4j.Op;

/**
 * The staged reduction kernels' scratch and rules: a fold of {@code count} elements runs as
 * blocks of {@link #BLOCK_BYTES}, each operand's block bulk-copied into a heap array of this
 * thread's {@code Staging}, folded there by a plain array loop, and the result copied back.
 *
 * <h2>Why</h2>
 * C2 (JDK 17 and 25) vectorises (SuperWord) loops over Java arrays, not loops over raw addresses
 * or byte-buffer VarHandles: {@code dst[i] = a[i] op b[i]} on direct memory runs scalar at 0.3-1 ns
 * per element, where three L1-resident copies (about 0.05 ns per element each, the JDK's copy
 * stub) and an AVX loop over the arrays cost less. The blocks are small enough that both arrays
 * stay in L1 (2 x 2 KiB) and large enough that the three copy calls per block cost little
 * (measured: 1, 2, 4 and 8 KiB blocks within the noise of this shared machine, FLOAT SUM 0.24-0.45
 * ns per element on JDK 17 against 0.39-0.44 for the scalar loop); {@code SlotReduce} (JMH)
 * compares the forms and a plain copy for every type and op.
 *
 * <h2>Thread safety</h2>
 * One {@code Staging} per thread ({@link #mine}), never shared: ranks may be threads of one JVM.
 * 8 arrays of {@link #BLOCK_BYTES} per thread that ever folded a large message, kept for the
 * thread's life (a ThreadLocal: no hook in the engine needed).
 *
 * <h2>Choice</h2>
 * {@code -Dsharp4j.kernels=scalar} turns staging off (today's scalar loops only: raw addresses on
 * JDK 17-21, VarHandles on 22+), as do {@code raw} and {@code varhandle}; see {@link RawMemory}.
 */
final class Staging {
    /** Bytes per staged block (a power of two; measured: 1-4 KiB are within noise, see SlotReduce). */
    static final int BLOCK_BYTES = 2048;

    /** Whether {@link Reductions#combine} stages large folds (decided once per JVM). */
    static final boolean ENABLED = decide(System.getProperty("sharp4j.kernels", "auto"));

    /**
     * Below this many bytes the scalar loop wins (fewer calls, no ThreadLocal lookup): measured
     * with SlotReduce, the staged form pays from about this size on.
     */
    static final int MIN_BYTES = 1024;

    /** Whether combine stages through {@link Segments} (JDK 22+, where the raw form is off). */
    static final boolean SEGMENTS = ENABLED && !RawMemory.ENABLED && Segments.AVAILABLE;

    private static final ThreadLocal<Staging> MINE = ThreadLocal.withInitial(Staging::new);

    final int[] ints1 = new int[BLOCK_BYTES / Integer.BYTES];
    final int[] ints2 = new int[BLOCK_BYTES / Integer.BYTES];
    final long[] longs1 = new long[BLOCK_BYTES / Long.BYTES];
    final long[] longs2 = new long[BLOCK_BYTES / Long.BYTES];
    final float[] floats1 = new float[BLOCK_BYTES / Float.BYTES];
    final float[] floats2 = new float[BLOCK_BYTES / Float.BYTES];
    final double[] doubles1 = new double[BLOCK_BYTES / Double.BYTES];
    final double[] doubles2 = new double[BLOCK_BYTES / Double.BYTES];

    /**
     * The segments of the last few buffers this thread staged through ({@link Segments}, JDK 22+),
     * so that a call allocates none: {@code MemorySegment.ofBuffer} allocates a segment and a
     * session per call (about 70 bytes each, measured: escape analysis does not remove them once
     * the kernel is too large to inline). Both the buffer and its segment are held weakly, so the
     * cache keeps no buffer (a mapped /dev/shm segment, a user's direct buffer) alive; a segment
     * covers its buffer from position to limit, so the entry remembers both.
     */
    private static final int SEGMENT_CACHE = 4;
    private final WeakReference<?>[] segBuffers = new WeakReference<?>[SEGMENT_CACHE];
    private final WeakReference<?>[] segs = new WeakReference<?>[SEGMENT_CACHE];
    private final int[] segPosition = new int[SEGMENT_CACHE];
    private final int[] segLimit = new int[SEGMENT_CACHE];
    private int segNext;

    Staging() {
    }

    /** {@code b}'s segment ({@link Segments#of}), from this thread's cache when it has it. */
    Object segment(ByteBuffer b) {
        int p = b.position();
        int l = b.limit();
        for (int i = 0; i < SEGMENT_CACHE; i++) {
            WeakReference<?> k = segBuffers[i];
            if (k != null && k.get() == b && segPosition[i] == p && segLimit[i] == l) {
                Object s = segs[i].get();
                if (s != null) {
                    return s;
                }
            }
        }
        Object s = Segments.of(b);
        int i = segNext;
        segNext = (i + 1) % SEGMENT_CACHE;
        segBuffers[i] = new WeakReference<>(b);
        segs[i] = new WeakReference<>(s);
        segPosition[i] = p;
        segLimit[i] = l;
        return s;
    }

    static boolean decide(String mode) {
        switch (mode.trim().toLowerCase(Locale.ROOT)) {
            case "auto":
                return true;
            case "scalar":
            case "raw":
            case "varhandle":
                return false;
            default:
                throw new IllegalArgumentException("sharp4j.kernels: expected auto, scalar, raw or varhandle, got '" + mode + "'");
        }
    }

    /**
     * Checks that {@code [off, off + bytes)} lies within {@code b}'s limit and, if {@code write},
     * that {@code b} is writable: the checks the VarHandle form makes per element, once per call,
     * before anything is written.
     */
    static void check(ByteBuffer b, int off, long bytes, boolean write) {
        if (off < 0 || bytes < 0 || off + bytes > b.limit()) {
            throw new IndexOutOfBoundsException("bytes [" + off + ", " + (off + bytes) + ") of a buffer with limit " + b.limit());
        }
        if (write && b.isReadOnly()) {
            throw new ReadOnlyBufferException();
        }
    }

    /** This thread's scratch. */
    static Staging mine() {
        return MINE.get();
    }

    /**
     * Whether staging beats the scalar loop for {@code t} and {@code op}. A staged fold costs about
     * 0.05 ns per byte whatever the type (three L1 copies and the vector loop, CPU time, 16-64 KiB,
     * JDK 17 and 25), the scalar loops about 0.3-0.5 ns per element, so staging pays for 4-byte
     * elements (1.6-5x) but for 8-byte ones only where the scalar loop is slow: MIN/MAX (branches;
     * long MIN/MAX take ~2 ns per element on JDK 17) and the logical ops. Long and double SUM,
     * PROD and the bitwise ops stay scalar (there staging measured 0.8-1.1x).
     */
    static boolean pays(DataType t, Op op) {
        if (t.size == 4) {
            return true;
        }
        return op == Op.MIN || op == Op.MAX || op == Op.LAND || op == Op.LOR;
    }

    /** The smallest count that {@link Reductions#combine} stages. */
    static int minCount(DataType t) {
        return MIN_BYTES / t.size;
    }
}
