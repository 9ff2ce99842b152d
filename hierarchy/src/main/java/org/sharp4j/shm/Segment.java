package org.sharp4j.shm;

import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;
import org.sharp4j.Sharp4jException;

/**
 * One shared-memory file mapped into this process.
 *
 * <p>Life cycle (see {@code Engine}'s setup): the owner {@link #create}s the file with
 * {@code O_EXCL} and mode 0600 and allocates every page (so they land on the owner's NUMA node and
 * a full /dev/shm fails at once with a clear message),
 * every local rank {@link #open}s and maps it, and once all have mapped it the owner
 * {@link #unlink}s it: from then on a {@code kill -9} of any rank leaks nothing, the kernel frees
 * the pages with the last mapping. The mapping itself is released by {@link #close()}.
 */
public final class Segment implements AutoCloseable {
    private final Path path;
    private final MappedByteBuffer map;
    private final long size;
    private boolean closed;

    private Segment(Path path, MappedByteBuffer map, long size) {
        this.path = path;
        this.map = map;
        this.size = size;
        map.order(ByteOrder.nativeOrder());
    }

    /**
     * Creates a new file of {@code size} bytes (fails if it exists) and maps it. Every page is
     * allocated now, by writing zeros through the file (on tmpfs this places the pages on the
     * creator's NUMA node, as a first touch would): a directory too small for the segment fails
     * here with a message naming it and the size needed, rather than with a SIGBUS
     * ({@code InternalError: a fault occurred in a recent unsafe memory access}) at the first
     * store into a page that was never backed (files are sparse; a container's /dev/shm is often
     * 64 MiB). Register the path for cleanup before calling this: a failure here unlinks it.
     */
    public static Segment create(Path path, long size) {
        checkSize(path, size);
        try (FileChannel ch = FileChannel.open(path, Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                StandardOpenOption.WRITE), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")))) {
            reserve(ch, path, size);
            return new Segment(path, ch.map(FileChannel.MapMode.READ_WRITE, 0, size), size);
        } catch (FileAlreadyExistsException e) {
            throw new Sharp4jException("shared-memory file " + path + " already exists: another job with the same id, "
                    + "or a leftover of a crashed one (remove it)", e);
        } catch (IOException e) {
            unlinkQuietly(path);
            throw new Sharp4jException("cannot create shared-memory file " + path + ": " + e, e);
        } catch (RuntimeException e) {
            unlinkQuietly(path);
            throw e;
        }
    }

    /** Writes zeros over {@code [0, size)}: the file system allocates every page or says it cannot. */
    private static void reserve(FileChannel ch, Path path, long size) throws IOException {
        ByteBuffer zeros = ByteBuffer.allocateDirect((int) Math.min(size, 1 << 20));
        long pos = 0;
        try {
            while (pos < size) {
                zeros.clear().limit((int) Math.min(zeros.capacity(), size - pos));
                pos += ch.write(zeros, pos);
            }
        } catch (IOException e) {
            Path dir = path.getParent();
            long free = -1;
            try {
                free = Files.getFileStore(dir).getUsableSpace();
            } catch (IOException | RuntimeException ignored) {
                // the message says what it can
            }
            throw new Sharp4jException("not enough space in " + dir + " for sharp4j's shared memory: " + path.getFileName()
                    + " needs " + mib(size) + (free >= 0 ? " and " + mib(free) + " are free" : "") + " (" + e.getMessage()
                    + "). Enlarge it (containers: docker run --shm-size=1g, Kubernetes: an emptyDir with medium Memory), point"
                    + " sharp4j.shm.dir at a larger tmpfs, or lower sharp4j.shared.bytes / sharp4j.slot.bytes", e);
        }
    }

    private static String mib(long bytes) {
        return String.format(java.util.Locale.ROOT, "%.1f MiB", bytes / 1048576.0);
    }

    /** Removes the file name if it exists, ignoring errors (cleanup paths). */
    public static void unlinkQuietly(Path path) {
        try {
            Files.deleteIfExists(path);
        } catch (IOException | RuntimeException ignored) {
            // the error being reported matters more
        }
    }

    /** Maps an existing file created by another rank. */
    public static Segment open(Path path, long size) {
        checkSize(path, size);
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            long actual = ch.size();
            if (actual != size) {
                throw new Sharp4jException("shared-memory file " + path + " has " + actual + " bytes, expected " + size
                        + ": ranks disagree on the segment layout (different sharp4j settings?)");
            }
            return new Segment(path, ch.map(FileChannel.MapMode.READ_WRITE, 0, size), size);
        } catch (IOException e) {
            throw new Sharp4jException("cannot map shared-memory file " + path + ": " + e, e);
        }
    }

    private static void checkSize(Path path, long size) {
        if (size <= 0 || size > Integer.MAX_VALUE) {
            throw new Sharp4jException("segment " + path + " would need " + size
                    + " bytes; a segment must be 1 B..2 GiB (lower sharp4j.slot.bytes / sharp4j.shared.bytes)");
        }
    }

    /** The whole mapping, native byte order. Do not change its position/limit: use absolute access. */
    public ByteBuffer buffer() {
        return map;
    }

    public long size() {
        return size;
    }

    public Path path() {
        return path;
    }

    /** Removes the file name; mappings stay valid. Idempotent. */
    public void unlink() {
        unlink(path);
    }

    public static void unlink(Path path) {
        try {
            Files.deleteIfExists(path);
        } catch (IOException e) {
            throw new Sharp4jException("cannot unlink shared-memory file " + path + ": " + e, e);
        }
    }

    /** Unmaps now (rather than at some later GC). The buffer must not be used afterwards. */
    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            Unmapper.unmap(map);
        }
    }

    /**
     * Java 17 has no public unmap; {@code sun.misc.Unsafe.invokeCleaner} (module jdk.unsupported,
     * present in every JDK 9+) is the supported way that Netty and Agrona use too. Without it the
     * mapping is released by the GC, which is correct but slower to return memory.
     *
     * <p>From JDK 22 (as for the kernels, see {@code RawMemory}) the mapping is left to the GC or the
     * process exit instead: Unsafe's memory methods are deprecated for removal from JDK 23 (JEP
     * 471), and from JDK 24 this call prints a four-line warning at every close (JEP 498). JDK 22's public way, a mapping owned by a shared
     * {@code Arena} and unmapped by its {@code close()}, was tried and measured: its buffers' access
     * checks made 512 B-64 KiB Allreduce 2-3.5x slower on JDK 25 (64 KiB: 20.3 against 10.4-10.7 us).
     */
    private static final class Unmapper {
        private static final Object UNSAFE;
        private static final Method INVOKE_CLEANER;

        static {
            Object u = null;
            Method m = null;
            if (Runtime.version().feature() < 22) {
                try {
                    Class<?> c = Class.forName("sun.misc.Unsafe");
                    Field f = c.getDeclaredField("theUnsafe");
                    f.setAccessible(true);
                    u = f.get(null);
                    m = c.getMethod("invokeCleaner", ByteBuffer.class);
                } catch (ReflectiveOperationException | RuntimeException e) {
                    u = null;
                    m = null;
                }
            }
            UNSAFE = u;
            INVOKE_CLEANER = m;
        }

        static void unmap(ByteBuffer b) {
            if (INVOKE_CLEANER != null) {
                try {
                    INVOKE_CLEANER.invoke(UNSAFE, b);
                } catch (ReflectiveOperationException | RuntimeException ignored) {
                    // left to the GC
                }
            }
        }
    }
}
