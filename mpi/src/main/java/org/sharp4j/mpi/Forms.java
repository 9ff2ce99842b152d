package org.sharp4j.mpi;

import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.CharBuffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.nio.ShortBuffer;
import org.sharp4j.DataType;

/**
 * The buffer forms Open MPI Java accepts, and how each reaches sharp4j. Open MPI's {@code Comm}
 * takes, for a basic datatype, a Java array of the matching primitive type, a heap NIO buffer over
 * such an array (the data starts at {@code arrayOffset()}; position and limit are ignored), or any
 * direct NIO buffer (the data is the raw memory from the buffer's start, in the machine's byte
 * order, whatever the buffer's own order, position and limit say).
 *
 * <ul>
 *   <li>{@link #ARRAY}: a matching array, or a heap buffer over one: sharp4j's array calls, with the offset;</li>
 *   <li>{@link #DIRECT}: a direct {@code ByteBuffer}: sharp4j's buffer calls (absolute, native order, as MPI;
 *       a buffer whose limit or order does not fit goes as a duplicate made once per buffer object, {@link Whole});</li>
 *   <li>{@link #STAGED}: a direct {@code IntBuffer}, {@code DoubleBuffer}, ... (or a call mixing arrays and
 *       direct buffers): copied raw through the communicator's scratch buffer ({@link Scratch}); Java has no
 *       public way, short of reflection, to hand a typed view's memory to sharp4j;</li>
 *   <li>{@link #INVALID}: what MPI itself cannot take (null where data is needed, an array of another
 *       type, a read-only heap buffer): an {@code IllegalArgumentException} before any shared state is touched.</li>
 * </ul>
 *
 * The form is rank-local and never decides whether a call is routed: every form is served.
 */
final class Forms {
    static final int INVALID = 0;
    static final int ARRAY = 1;
    static final int DIRECT = 2;
    static final int STAGED = 3;
    /** The receive buffer of a reduce on a rank other than the root: not used. */
    static final int UNUSED = 4;

    private Forms() {
    }

    static int classify(Object b, DataType type) {
        if (DataType.ofArray(b) == type) { // false for null and for buffers
            return ARRAY;
        }
        if (b instanceof Buffer) {
            Buffer buf = (Buffer) b;
            if (buf.isDirect()) {
                return b instanceof ByteBuffer ? DIRECT : STAGED;
            }
            if (buf.hasArray() && DataType.ofArray(buf.array()) == type) {
                return ARRAY;
            }
        }
        return INVALID;
    }

    /** The array of an {@link #ARRAY} form. */
    static Object array(Object b) {
        return b instanceof Buffer ? ((Buffer) b).array() : b;
    }

    /** The element offset of an {@link #ARRAY} form: Open MPI's, arrayOffset() (position is ignored). */
    static int offset(Object b) {
        return b instanceof Buffer ? ((Buffer) b).arrayOffset() : 0;
    }

    /**
     * A direct ByteBuffer sharp4j can take for {@code bytes}: native order and a limit that covers
     * them. Open MPI reads the raw memory from the buffer's start up to its capacity, whatever the
     * buffer's order, position and limit say; sharp4j's API insists on native order and on the
     * limit, so a buffer that differs (an OSU-style receive buffer flipped while empty: limit 0;
     * a BIG_ENDIAN one) is replaced by a native-order, full-limit duplicate of the same memory,
     * made once per buffer object and kept in {@code whole}: the calls after the first allocate
     * nothing. Shorter than {@code bytes} even in capacity: returned as is, sharp4j names it.
     */
    static ByteBuffer direct(Object b, long bytes, Whole whole) {
        ByteBuffer bb = (ByteBuffer) b;
        if ((bb.limit() >= bytes || bb.capacity() < bytes) && bb.order() == ByteOrder.nativeOrder()) {
            return bb;
        }
        return (ByteBuffer) whole.of(bb, bytes);
    }

    /**
     * Per communicator: for a few recently used buffer objects whose limit or byte order does not
     * fit sharp4j's calls, a duplicate over the same memory with limit = capacity (and, for a
     * ByteBuffer, native order). A buffer object's memory, capacity and, for a typed view, order
     * never change, so the duplicate stays right for as long as the object lives; the slots hold
     * the objects (not copies), at most {@link #SLOTS}, until replaced or {@link #clear()}ed.
     * One thread at a time, as the communicator.
     */
    static final class Whole {
        static final int SLOTS = 4;
        private final Buffer[] keys = new Buffer[SLOTS];
        private final Buffer[] values = new Buffer[SLOTS];
        private int next;

        /** {@code b}, or its full-limit (native-order for bytes) duplicate when {@code b}'s limit hides part of {@code bytes}. */
        Buffer of(Buffer b, long bytes) {
            if (b instanceof ByteBuffer) {
                if (((ByteBuffer) b).order() == ByteOrder.nativeOrder() && (b.limit() >= bytes || b.capacity() < bytes)) {
                    return b;
                }
            } else if ((long) b.limit() * elementBytes(b) >= bytes) {
                return b;
            }
            for (int i = 0; i < SLOTS; i++) {
                if (keys[i] == b) {
                    return values[i];
                }
            }
            Buffer d = b.duplicate();
            if (d instanceof ByteBuffer) {
                ((ByteBuffer) d).order(ByteOrder.nativeOrder()); // a ByteBuffer's duplicate starts BIG_ENDIAN
            }
            d.clear(); // position 0, limit = capacity
            int i = next;
            next = (i + 1) % SLOTS;
            keys[i] = b;
            values[i] = d;
            return d;
        }

        /** Forgets every buffer (their objects may then be collected). */
        void clear() {
            java.util.Arrays.fill(keys, null);
            java.util.Arrays.fill(values, null);
            next = 0;
        }

        /** Buffers remembered now (for tests). */
        int size() {
            int n = 0;
            for (Buffer k : keys) {
                n += k == null ? 0 : 1;
            }
            return n;
        }
    }

    static String describe(Object b) {
        if (b == null) {
            return "null";
        }
        if (b instanceof Buffer) {
            Buffer buf = (Buffer) b;
            return (buf.isDirect() ? "direct " : buf.isReadOnly() ? "read-only heap " : "heap ") + b.getClass().getSimpleName();
        }
        return b.getClass().getSimpleName();
    }

    static IllegalArgumentException invalid(String what, Object b, DataType type) {
        if (b == null) {
            return new IllegalArgumentException(what + " is null");
        }
        return new IllegalArgumentException(what + " (" + describe(b) + ") cannot hold MPI." + type
                + ": Open MPI Java takes a " + type.name().toLowerCase(java.util.Locale.ROOT)
                + "[] array, a heap buffer over one, or a direct buffer");
    }

    /** Checks, before the collective, that a staged buffer holds {@code bytes}; throws naming it otherwise. */
    static void checkStaged(String what, Object b, int form, int bytes, DataType type, boolean written) {
        switch (form) {
            case ARRAY: {
                int len = java.lang.reflect.Array.getLength(array(b));
                long need = (long) offset(b) + bytes / type.size;
                if (need > len) {
                    throw new IllegalArgumentException(what + " too short: offset " + offset(b) + " + count " + bytes / type.size
                            + " > length " + len);
                }
                if (written && b instanceof Buffer && ((Buffer) b).isReadOnly()) {
                    throw new IllegalArgumentException(what + " is read-only");
                }
                break;
            }
            case DIRECT:
            case STAGED: {
                Buffer buf = (Buffer) b;
                int es = elementBytes(buf);
                if (bytes % es != 0) {
                    throw new IllegalArgumentException(what + " (" + describe(b) + ") cannot hold " + bytes / type.size + " MPI." + type
                            + ": " + bytes + " bytes is not a whole number of its " + es + "-byte elements");
                }
                if ((long) buf.capacity() * es < bytes) {
                    throw new IllegalArgumentException(what + " too short: " + bytes / type.size + " MPI." + type + " need " + bytes
                            + " bytes, its capacity is " + (long) buf.capacity() * es);
                }
                if (written && buf.isReadOnly()) {
                    throw new IllegalArgumentException(what + " is read-only");
                }
                break;
            }
            case UNUSED:
                break;
            default:
                throw invalid(what, b, type);
        }
    }

    static int elementBytes(Buffer b) {
        if (b instanceof ByteBuffer) {
            return 1;
        } else if (b instanceof DoubleBuffer || b instanceof LongBuffer) {
            return 8;
        } else if (b instanceof IntBuffer || b instanceof FloatBuffer) {
            return 4;
        }
        return 2; // CharBuffer, ShortBuffer
    }

    /** Up to this many bytes, staged copies go element by element: a bulk copy's set-up costs more than a line's elements. */
    static final int SMALL_BYTES = 64;

    /**
     * A communicator's scratch buffer (direct, native order) for the staged forms, with its typed
     * views in native and in swapped byte order made once, so that a staged call allocates nothing.
     */
    static final class Scratch {
        final ByteBuffer bytes;
        private final Buffer[] views = new Buffer[12];

        Scratch(int capacity) {
            bytes = ByteBuffer.allocateDirect(capacity).order(ByteOrder.nativeOrder());
            ByteOrder swapped = ByteOrder.nativeOrder() == ByteOrder.BIG_ENDIAN ? ByteOrder.LITTLE_ENDIAN : ByteOrder.BIG_ENDIAN;
            for (int o = 0; o < 2; o++) {
                ByteBuffer b = bytes.duplicate().order(o == 0 ? ByteOrder.nativeOrder() : swapped);
                views[6 * o] = b.asIntBuffer();
                views[6 * o + 1] = b.asLongBuffer();
                views[6 * o + 2] = b.asFloatBuffer();
                views[6 * o + 3] = b.asDoubleBuffer();
                views[6 * o + 4] = b.asShortBuffer();
                views[6 * o + 5] = b.asCharBuffer();
            }
        }

        int capacity() {
            return bytes.capacity();
        }

        /** The scratch memory seen as a buffer of {@code like}'s kind and byte order. */
        Buffer viewLike(Buffer like) {
            int o = order(like) == ByteOrder.nativeOrder() ? 0 : 6;
            if (like instanceof IntBuffer) {
                return views[o];
            } else if (like instanceof LongBuffer) {
                return views[o + 1];
            } else if (like instanceof FloatBuffer) {
                return views[o + 2];
            } else if (like instanceof DoubleBuffer) {
                return views[o + 3];
            } else if (like instanceof ShortBuffer) {
                return views[o + 4];
            }
            return views[o + 5];
        }

        IntBuffer ints() {
            return (IntBuffer) views[0];
        }

        LongBuffer longs() {
            return (LongBuffer) views[1];
        }

        FloatBuffer floats() {
            return (FloatBuffer) views[2];
        }

        DoubleBuffer doubles() {
            return (DoubleBuffer) views[3];
        }
    }

    private static ByteOrder order(Buffer b) {
        if (b instanceof IntBuffer) {
            return ((IntBuffer) b).order();
        } else if (b instanceof LongBuffer) {
            return ((LongBuffer) b).order();
        } else if (b instanceof FloatBuffer) {
            return ((FloatBuffer) b).order();
        } else if (b instanceof DoubleBuffer) {
            return ((DoubleBuffer) b).order();
        } else if (b instanceof ShortBuffer) {
            return ((ShortBuffer) b).order();
        } else if (b instanceof CharBuffer) {
            return ((CharBuffer) b).order();
        }
        return ((ByteBuffer) b).order();
    }

    /** Copies the first {@code bytes} of {@code b}'s data, as MPI would read them, to the start of {@code scratch}. */
    static void copyIn(Object b, int form, Scratch scratch, int bytes, DataType type, Whole whole) {
        if (form == ARRAY) {
            Object a = array(b);
            int off = offset(b);
            int n = bytes / type.size;
            switch (type) {
                case INT:
                    scratch.ints().put(0, (int[]) a, off, n);
                    break;
                case LONG:
                    scratch.longs().put(0, (long[]) a, off, n);
                    break;
                case FLOAT:
                    scratch.floats().put(0, (float[]) a, off, n);
                    break;
                default:
                    scratch.doubles().put(0, (double[]) a, off, n);
                    break;
            }
            return;
        }
        Buffer src = whole.of((Buffer) b, bytes);
        int n = bytes / elementBytes(src);
        if (src instanceof ByteBuffer) {
            scratch.bytes.put(0, (ByteBuffer) src, 0, n);
            return;
        }
        // A view of the scratch buffer in the source's own order: element copies then move raw bytes.
        Buffer dst = scratch.viewLike(src);
        // element by element only in native order: plain loads and stores, every bit kept (a swapped view
        // goes through the bulk copy, a raw memory copy between buffers of one order)
        boolean small = bytes <= SMALL_BYTES && order(src) == ByteOrder.nativeOrder();
        if (src instanceof IntBuffer) {
            IntBuffer v = (IntBuffer) src;
            IntBuffer d = (IntBuffer) dst;
            if (small) {
                for (int i = 0; i < n; i++) {
                    d.put(i, v.get(i));
                }
            } else {
                d.put(0, v, 0, n);
            }
        } else if (src instanceof FloatBuffer) {
            FloatBuffer v = (FloatBuffer) src;
            FloatBuffer d = (FloatBuffer) dst;
            if (small) {
                for (int i = 0; i < n; i++) {
                    d.put(i, v.get(i));
                }
            } else {
                d.put(0, v, 0, n);
            }
        } else if (src instanceof DoubleBuffer) {
            DoubleBuffer v = (DoubleBuffer) src;
            DoubleBuffer d = (DoubleBuffer) dst;
            if (small) {
                for (int i = 0; i < n; i++) {
                    d.put(i, v.get(i));
                }
            } else {
                d.put(0, v, 0, n);
            }
        } else if (src instanceof LongBuffer) {
            LongBuffer v = (LongBuffer) src;
            LongBuffer d = (LongBuffer) dst;
            if (small) {
                for (int i = 0; i < n; i++) {
                    d.put(i, v.get(i));
                }
            } else {
                d.put(0, v, 0, n);
            }
        } else if (src instanceof ShortBuffer) {
            ((ShortBuffer) dst).put(0, (ShortBuffer) src, 0, n);
        } else {
            ((CharBuffer) dst).put(0, (CharBuffer) src, 0, n);
        }
    }

    /** Copies the start of {@code scratch} into {@code b}'s data, as MPI would write it. */
    static void copyOut(Scratch scratch, Object b, int form, int bytes, DataType type, Whole whole) {
        if (form == ARRAY) {
            Object a = array(b);
            int off = offset(b);
            int n = bytes / type.size;
            switch (type) {
                case INT:
                    scratch.ints().get(0, (int[]) a, off, n);
                    break;
                case LONG:
                    scratch.longs().get(0, (long[]) a, off, n);
                    break;
                case FLOAT:
                    scratch.floats().get(0, (float[]) a, off, n);
                    break;
                default:
                    scratch.doubles().get(0, (double[]) a, off, n);
                    break;
            }
            return;
        }
        Buffer dst = whole.of((Buffer) b, bytes);
        int n = bytes / elementBytes(dst);
        if (dst instanceof ByteBuffer) {
            ((ByteBuffer) dst).put(0, scratch.bytes, 0, n);
            return;
        }
        Buffer src = scratch.viewLike(dst);
        boolean small = bytes <= SMALL_BYTES && order(dst) == ByteOrder.nativeOrder();
        if (dst instanceof IntBuffer) {
            IntBuffer v = (IntBuffer) dst;
            IntBuffer s = (IntBuffer) src;
            if (small) {
                for (int i = 0; i < n; i++) {
                    v.put(i, s.get(i));
                }
            } else {
                v.put(0, s, 0, n);
            }
        } else if (dst instanceof FloatBuffer) {
            FloatBuffer v = (FloatBuffer) dst;
            FloatBuffer s = (FloatBuffer) src;
            if (small) {
                for (int i = 0; i < n; i++) {
                    v.put(i, s.get(i));
                }
            } else {
                v.put(0, s, 0, n);
            }
        } else if (dst instanceof DoubleBuffer) {
            DoubleBuffer v = (DoubleBuffer) dst;
            DoubleBuffer s = (DoubleBuffer) src;
            if (small) {
                for (int i = 0; i < n; i++) {
                    v.put(i, s.get(i));
                }
            } else {
                v.put(0, s, 0, n);
            }
        } else if (dst instanceof LongBuffer) {
            LongBuffer v = (LongBuffer) dst;
            LongBuffer s = (LongBuffer) src;
            if (small) {
                for (int i = 0; i < n; i++) {
                    v.put(i, s.get(i));
                }
            } else {
                v.put(0, s, 0, n);
            }
        } else if (dst instanceof ShortBuffer) {
            ((ShortBuffer) dst).put(0, (ShortBuffer) src, 0, n);
        } else {
            ((CharBuffer) dst).put(0, (CharBuffer) src, 0, n);
        }
    }
}
