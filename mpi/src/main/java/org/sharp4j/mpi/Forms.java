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
 *   <li>{@link #DIRECT}: a direct {@code ByteBuffer}: sharp4j's buffer calls (absolute, native order, as MPI);</li>
 *   <li>{@link #STAGED}: a direct {@code IntBuffer}, {@code DoubleBuffer}, ... (or a call mixing arrays and
 *       direct buffers): copied raw through the communicator's scratch buffer;</li>
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
     * A direct ByteBuffer whose limit covers {@code bytes}: MPI reads the raw memory up to the
     * capacity, whatever the limit says, so a lower limit is lifted on a duplicate (only then does
     * this allocate). Shorter than {@code bytes} even in capacity: returned as is, sharp4j names it.
     */
    static ByteBuffer direct(Object b, long bytes) {
        ByteBuffer bb = (ByteBuffer) b;
        boolean lift = bb.limit() < bytes && bb.capacity() >= bytes;
        if (!lift && bb.order() == ByteOrder.nativeOrder()) {
            return bb;
        }
        // Open MPI reduces the raw memory whatever the buffer's order says; sharp4j's API insists on
        // native order, so hand it a native-order view of the same memory.
        ByteBuffer d = bb.duplicate().order(ByteOrder.nativeOrder());
        return lift ? d.limit(bb.capacity()) : d;
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

    /** Copies the first {@code bytes} of {@code b}'s data, as MPI would read them, to the start of {@code scratch}. */
    static void copyIn(Object b, int form, ByteBuffer scratch, int bytes, DataType type) {
        if (form == ARRAY) {
            Object a = array(b);
            int off = offset(b);
            int n = bytes / type.size;
            ByteBuffer s = scratch.duplicate().order(ByteOrder.nativeOrder());
            switch (type) {
                case INT:
                    s.asIntBuffer().put(0, (int[]) a, off, n);
                    break;
                case LONG:
                    s.asLongBuffer().put(0, (long[]) a, off, n);
                    break;
                case FLOAT:
                    s.asFloatBuffer().put(0, (float[]) a, off, n);
                    break;
                default:
                    s.asDoubleBuffer().put(0, (double[]) a, off, n);
                    break;
            }
            return;
        }
        Buffer src = whole((Buffer) b, bytes);
        int n = bytes / elementBytes(src);
        // A view of the scratch buffer in the source's own order: element copies then move raw bytes.
        if (src instanceof ByteBuffer) {
            scratch.put(0, (ByteBuffer) src, 0, n);
        } else if (src instanceof DoubleBuffer) {
            DoubleBuffer v = (DoubleBuffer) src;
            scratch.duplicate().order(v.order()).asDoubleBuffer().put(0, v, 0, n);
        } else if (src instanceof LongBuffer) {
            LongBuffer v = (LongBuffer) src;
            scratch.duplicate().order(v.order()).asLongBuffer().put(0, v, 0, n);
        } else if (src instanceof IntBuffer) {
            IntBuffer v = (IntBuffer) src;
            scratch.duplicate().order(v.order()).asIntBuffer().put(0, v, 0, n);
        } else if (src instanceof FloatBuffer) {
            FloatBuffer v = (FloatBuffer) src;
            scratch.duplicate().order(v.order()).asFloatBuffer().put(0, v, 0, n);
        } else if (src instanceof ShortBuffer) {
            ShortBuffer v = (ShortBuffer) src;
            scratch.duplicate().order(v.order()).asShortBuffer().put(0, v, 0, n);
        } else {
            CharBuffer v = (CharBuffer) src;
            scratch.duplicate().order(v.order()).asCharBuffer().put(0, v, 0, n);
        }
    }

    /** Copies the start of {@code scratch} into {@code b}'s data, as MPI would write it. */
    static void copyOut(ByteBuffer scratch, Object b, int form, int bytes, DataType type) {
        if (form == ARRAY) {
            Object a = array(b);
            int off = offset(b);
            int n = bytes / type.size;
            ByteBuffer s = scratch.duplicate().order(ByteOrder.nativeOrder());
            switch (type) {
                case INT:
                    s.asIntBuffer().get(0, (int[]) a, off, n);
                    break;
                case LONG:
                    s.asLongBuffer().get(0, (long[]) a, off, n);
                    break;
                case FLOAT:
                    s.asFloatBuffer().get(0, (float[]) a, off, n);
                    break;
                default:
                    s.asDoubleBuffer().get(0, (double[]) a, off, n);
                    break;
            }
            return;
        }
        Buffer dst = whole((Buffer) b, bytes);
        int n = bytes / elementBytes(dst);
        if (dst instanceof ByteBuffer) {
            ((ByteBuffer) dst).put(0, scratch, 0, n);
        } else if (dst instanceof DoubleBuffer) {
            DoubleBuffer v = (DoubleBuffer) dst;
            v.put(0, scratch.duplicate().order(v.order()).asDoubleBuffer(), 0, n);
        } else if (dst instanceof LongBuffer) {
            LongBuffer v = (LongBuffer) dst;
            v.put(0, scratch.duplicate().order(v.order()).asLongBuffer(), 0, n);
        } else if (dst instanceof IntBuffer) {
            IntBuffer v = (IntBuffer) dst;
            v.put(0, scratch.duplicate().order(v.order()).asIntBuffer(), 0, n);
        } else if (dst instanceof FloatBuffer) {
            FloatBuffer v = (FloatBuffer) dst;
            v.put(0, scratch.duplicate().order(v.order()).asFloatBuffer(), 0, n);
        } else if (dst instanceof ShortBuffer) {
            ShortBuffer v = (ShortBuffer) dst;
            v.put(0, scratch.duplicate().order(v.order()).asShortBuffer(), 0, n);
        } else {
            CharBuffer v = (CharBuffer) dst;
            v.put(0, scratch.duplicate().order(v.order()).asCharBuffer(), 0, n);
        }
    }

    /** {@code b}, or a duplicate of it whose limit is its capacity when the limit hides part of the data MPI would use. */
    private static Buffer whole(Buffer b, int bytes) {
        if ((long) b.limit() * elementBytes(b) >= bytes) {
            return b;
        }
        Buffer d;
        if (b instanceof ByteBuffer) {
            d = ((ByteBuffer) b).duplicate();
        } else if (b instanceof DoubleBuffer) {
            d = ((DoubleBuffer) b).duplicate();
        } else if (b instanceof LongBuffer) {
            d = ((LongBuffer) b).duplicate();
        } else if (b instanceof IntBuffer) {
            d = ((IntBuffer) b).duplicate();
        } else if (b instanceof FloatBuffer) {
            d = ((FloatBuffer) b).duplicate();
        } else if (b instanceof ShortBuffer) {
            d = ((ShortBuffer) b).duplicate();
        } else {
            d = ((CharBuffer) b).duplicate();
        }
        return d.limit(d.capacity());
    }
}
