package org.sharp4j.coll;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import org.sharp4j.DataType;

/**
 * Bulk copies between ByteBuffers and Java arrays through {@code java.lang.foreign} (JDK 22+),
 * for the staged kernels there ({@link Staging}), without compiling against that API: the
 * project builds with JDK 17, and Debian 12 has no JDK 22+ package to build a multi-release jar
 * with. The three calls ({@code MemorySegment.ofBuffer} and the two {@code MemorySegment.copy}
 * between a segment and an array) are looked up once as method handles; held in static finals
 * and called with {@code invokeExact}, C2 inlines them like direct calls, and escape analysis
 * removes the per-call segments (measured: no allocation per call once compiled).
 *
 * <p>Why not {@code sun.misc.Unsafe.copyMemory} as on JDK 17-21: its memory-access methods are
 * deprecated for removal from JDK 23 (JEP 471) and warn on first use from JDK 24 (JEP 498).
 * Nothing here is looked up before JDK 22 ({@link #AVAILABLE} is then false).
 */
final class Segments {
    private Segments() {
    }

    /** Whether the handles below exist (JDK 22+ and the lookups succeeded). */
    static final boolean AVAILABLE;
    /** {@code (ByteBuffer) -> MemorySegment}, as {@code (ByteBuffer)Object}. */
    private static final MethodHandle OF_BUFFER;
    /** {@code MemorySegment.copy(MemorySegment, ValueLayout, long, Object, int, int)}, erased to Object. */
    private static final MethodHandle COPY_IN;
    /** {@code MemorySegment.copy(Object, int, MemorySegment, ValueLayout, long, int)}, erased to Object. */
    private static final MethodHandle COPY_OUT;
    /** {@code ValueLayout.JAVA_INT_UNALIGNED} and friends: native order, any alignment. */
    static final Object INT;
    static final Object LONG;
    static final Object FLOAT;
    static final Object DOUBLE;

    static {
        MethodHandle of = null;
        MethodHandle in = null;
        MethodHandle out = null;
        Object[] layouts = new Object[4];
        boolean ok = false;
        if (Runtime.version().feature() >= 22) {
            try {
                MethodHandles.Lookup l = MethodHandles.publicLookup();
                Class<?> ms = Class.forName("java.lang.foreign.MemorySegment");
                Class<?> vl = Class.forName("java.lang.foreign.ValueLayout");
                String[] names = {"JAVA_INT_UNALIGNED", "JAVA_LONG_UNALIGNED", "JAVA_FLOAT_UNALIGNED", "JAVA_DOUBLE_UNALIGNED"};
                for (int i = 0; i < names.length; i++) {
                    layouts[i] = vl.getField(names[i]).get(null);
                }
                of = l.findStatic(ms, "ofBuffer", MethodType.methodType(ms, Buffer.class))
                        .asType(MethodType.methodType(Object.class, ByteBuffer.class));
                in = l.findStatic(ms, "copy", MethodType.methodType(void.class, ms, vl, long.class, Object.class, int.class, int.class))
                        .asType(MethodType.methodType(void.class, Object.class, Object.class, long.class, Object.class, int.class, int.class));
                out = l.findStatic(ms, "copy", MethodType.methodType(void.class, Object.class, int.class, ms, vl, long.class, int.class))
                        .asType(MethodType.methodType(void.class, Object.class, int.class, Object.class, Object.class, long.class, int.class));
                ok = true;
            } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
                ok = false; // the VarHandle kernels then
            }
        }
        AVAILABLE = ok;
        OF_BUFFER = ok ? of : null;
        COPY_IN = ok ? in : null;
        COPY_OUT = ok ? out : null;
        INT = layouts[0];
        LONG = layouts[1];
        FLOAT = layouts[2];
        DOUBLE = layouts[3];
    }

    /** The layout of {@code t}'s elements. */
    static Object layout(DataType t) {
        switch (t) {
            case INT: return INT;
            case LONG: return LONG;
            case FLOAT: return FLOAT;
            case DOUBLE: return DOUBLE;
            default: throw new AssertionError(t);
        }
    }

    /** {@code b}'s bytes from its position to its limit as a segment (offset 0 is byte {@code position()}). */
    static Object of(ByteBuffer b) {
        try {
            return (Object) OF_BUFFER.invokeExact(b);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code n} elements of {@code layout} from byte {@code off} of segment {@code seg} into {@code array[0, n)}. */
    static void copyIn(Object seg, Object layout, long off, Object array, int n) {
        try {
            COPY_IN.invokeExact(seg, layout, off, array, 0, n);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code array[0, n)} into {@code n} elements of {@code layout} from byte {@code off} of segment {@code seg}. */
    static void copyOut(Object array, int n, Object seg, Object layout, long off) {
        try {
            COPY_OUT.invokeExact(array, 0, seg, layout, off, n);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException) {
            throw (RuntimeException) t;
        }
        if (t instanceof Error) {
            throw (Error) t;
        }
        throw new IllegalStateException("MemorySegment copy failed", t);
    }
}
