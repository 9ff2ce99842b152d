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
    /** Bytes per staged block (measured: 1, 2, 4 and 8 KiB within noise of each other; 16 KiB slower). */
    static final int BLOCK_BYTES = 2048;

    /** Whether {@link Reductions#combine} stages large folds (decided once per JVM). */
    static final boolean ENABLED = decide(System.getProperty("sharp4j.kernels", "auto"));

    /**
     * From this many bytes combine stages 4-byte elements: measured (CPU time per element, fresh
     * JVM per type and op, JDK 17 and 25) staging wins 1.1-2.5x at 2 KiB and up but loses up to
     * 0.7x for some ops at 1 KiB, where three copy calls and a ThreadLocal lookup per call weigh.
     */
    static final int MIN_BYTES = 2048;

    /** No fold of fewer elements is staged: one compare against a constant keeps small messages' dispatch as it was. */
    static final int MIN_COUNT = MIN_BYTES / Long.BYTES;

    /** From this many bytes combine stages double MIN/MAX (1.1-1.2x from 16 KiB; 0.9-1.1x at 2-4 KiB). */
    static final int MIN_BYTES_8 = 16384;

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

    /** Operand addresses (or segment offsets) of a fold over several inputs, grown to the largest count asked. */
    private long[] addresses = new long[0];
    /** Operand segments of a fold over several inputs (cleared after each fold). */
    private Object[] segments = new Object[0];

    /** This thread's array of at least {@code k} operand addresses (allocated only when k grows). */
    long[] addresses(int k) {
        if (addresses.length < k) {
            addresses = new long[k];
        }
        return addresses;
    }

    /** This thread's array of at least {@code k} operand segments (allocated only when k grows). */
    Object[] segments(int k) {
        if (segments.length < k) {
            segments = new Object[k];
        }
        return segments;
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
            case "java": // the native kernels off (NativeKernels), staging as auto
                return true;
            case "scalar":
            case "raw":
            case "varhandle":
                return false;
            default:
                throw new IllegalArgumentException("sharp4j.kernels: expected auto, java, scalar, raw or varhandle, got '" + mode + "'");
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
     * Whether combine stages {@code count} elements of {@code t} under {@code op}: where staging
     * beats the scalar loop. A staged fold costs about 0.05 ns per byte whatever the type (three
     * L1 copies and the vector loop; CPU time, 2 KiB to 1 MiB, JDK 17 and 25), the scalar loops
     * 0.3-0.5 ns per element, so staging pays for 4-byte elements (1.1-3x, up to 10x for the
     * logical ops at 1 MiB) but for 8-byte ones only for double MIN/MAX, by 1.1-1.2x from 16 KiB.
     * Long ops and double SUM/PROD stay scalar: there staging measured 0.7-1.1x.
     */
    static boolean pays(DataType t, Op op, int count) {
        long bytes = (long) count * t.size;
        if (t.size == 4) {
            return bytes >= MIN_BYTES;
        }
        return t == DataType.DOUBLE && (op == Op.MIN || op == Op.MAX) && bytes >= MIN_BYTES_8;
    }
}
