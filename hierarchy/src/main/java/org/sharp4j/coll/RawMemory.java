package org.sharp4j.coll;

import java.lang.reflect.Field;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.util.Locale;

/**
 * Plain loads and stores on the memory of direct ByteBuffers, for the reduction kernels on JDK 17-21.
 *
 * <h2>Why</h2>
 * JDK 17's C2 keeps a byte-buffer view VarHandle's checks inside the loop (read-only, bounds,
 * the buffer's scope): {@code dst[i] = dst[i] + src[i]} over doubles costs 1.0-1.2 ns per element
 * there, against 0.32-0.6 ns for the same loop over raw addresses ({@code sun.misc.Unsafe}, module
 * {@code jdk.unsupported}); JDK 25 runs the VarHandle loop at 0.29-0.6 ns by itself. Measured
 * on this machine, one form per JVM, 512 to 2 Mi doubles; {@code SlotReduce} (JMH) gives the
 * per-type figures. So the kernels use raw addresses where they pay and the JDK's own
 * VarHandles elsewhere:
 * <ul>
 *   <li>{@link #ENABLED} only on JDK 17-21: from JDK 23 Unsafe's memory-access methods are
 *       deprecated for removal (JEP 471) and from JDK 24 their first use prints a warning (JEP
 *       498), while the VarHandle loop is already as fast there. Nothing of Unsafe is touched
 *       (not even its lookup) when disabled.</li>
 *   <li>{@code -Dsharp4j.kernels=varhandle} turns it off on any JDK (to rule it out, or where a
 *       security manager forbids the lookup); {@code raw} forces it on (on JDK 24+ the JDK then prints its
 *       warning about Unsafe once).</li>
 *   <li>Large folds are staged through heap arrays ({@link Staging}, copies by
 *       {@code Unsafe.copyMemory} here); {@code -Dsharp4j.kernels=scalar} keeps the scalar loops
 *       above for every size.</li>
 * </ul>
 *
 * <h2>Safety</h2>
 * Raw access drops the per-element checks, so {@link #address} does them once per call: the
 * buffer is direct, {@code [off, off + bytes)} lies inside its limit, and a written buffer is not
 * read-only; a violation throws what the VarHandle would have thrown. Callers keep the buffers
 * reachable across the loop ({@code Reference.reachabilityFence}) so that a buffer's cleaner
 * cannot free its memory mid-loop. Unaligned addresses are fine: the kernels run where the JDK
 * itself does unaligned access (x86-64, AArch64, ppc64le, s390x).
 */
final class RawMemory {
    private RawMemory() {
    }

    /** Whether the kernels use raw addresses (decided once; a constant to the JIT). */
    static final boolean ENABLED = decide(System.getProperty("sharp4j.kernels", "auto"), Runtime.version().feature());

    static boolean decide(String mode, int jdk) {
        switch (mode.trim().toLowerCase(Locale.ROOT)) {
            case "varhandle":
                return false;
            case "raw":
                return Holder.U != null;
            case "auto":
            case "java":
            case "scalar": // staging off (Staging), the scalar loops as auto picks them
                return jdk < 22 && Holder.U != null;
            default:
                throw new IllegalArgumentException("sharp4j.kernels: expected auto, java, scalar, raw or varhandle, got '" + mode + "'");
        }
    }

    /** Loaded only when {@link #decide} asks for it, so that JDK 24+ never looks Unsafe up. */
    static final class Holder {
        static final sun.misc.Unsafe U;
        static final long ADDRESS;

        static {
            sun.misc.Unsafe u = null;
            long a = -1;
            try {
                Field f = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
                f.setAccessible(true);
                u = (sun.misc.Unsafe) f.get(null);
                a = u.objectFieldOffset(Buffer.class.getDeclaredField("address"));
            } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
                u = null; // the VarHandle kernels then
            }
            U = u;
            ADDRESS = a;
        }

        private Holder() {
        }
    }

    /**
     * The address of byte {@code off} of {@code b}, after checking that {@code [off, off + bytes)}
     * lies within its limit (and, if {@code write}, that it is writable).
     */
    static long address(ByteBuffer b, int off, long bytes, boolean write) {
        if (!b.isDirect()) {
            throw new IllegalArgumentException("not a direct buffer");
        }
        if (off < 0 || bytes < 0 || off + bytes > b.limit()) {
            throw new IndexOutOfBoundsException("bytes [" + off + ", " + (off + bytes) + ") of a buffer with limit " + b.limit());
        }
        if (write && b.isReadOnly()) {
            throw new ReadOnlyBufferException();
        }
        return Holder.U.getLong(b, Holder.ADDRESS) + off;
    }
}
