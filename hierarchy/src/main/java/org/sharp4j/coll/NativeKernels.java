package org.sharp4j.coll;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The native reduction kernels ({@code src/main/c/sharp4j_kernels.c}): {@code dst = a op b} and
 * the k-input fold in one vectorised pass over direct buffers, where the Java kernels either run
 * scalar or stage blocks through arrays ({@link Staging}); and a copy with non-temporal stores
 * ({@link #copyStreaming}), which Java cannot express, for the direct Reduce's large copies; and
 * reads of another process's memory ({@link #readPeer}) for the cma Reduce ({@link PeerReads}); and
 * Linux's process-wide barrier ({@link #membarrier}) for {@link ProcessFence}. Measured on this project's 2-core VM
 * (FLOAT SUM, 1 MiB, three direct buffers): 0.17-0.18 ns per element against 0.30 staged on JDK 17
 * and 0.36 on Temurin 25, and 1.5x a plain copy of the operand (a fold moves three streams, a copy
 * two); {@code SlotReduce} (JMH) compares the forms per type and op.
 *
 * <h2>Why JNI, not JNA or the FFM API</h2>
 * A JNA call with buffer arguments measured 350 ns (its argument conversion); a JNI call with
 * {@code GetDirectBufferAddress} costs tens of nanoseconds, nothing next to a fold of 2 KiB or
 * more. The FFM API would do as well, but only from JDK 22, and the build is JDK 17.
 *
 * <h2>Loading</h2>
 * The library is built into the jar by the module's build where gcc and the JDK's {@code jni.h}
 * exist (Linux x86_64), and is optional: a jar built without it, another platform, a temporary
 * directory mounted {@code noexec}, or {@code -Dsharp4j.kernels=java|scalar|raw|varhandle} leave
 * {@link #AVAILABLE} false and the Java kernels serve, with the same bits. It is copied out of the
 * jar into {@code java.io.tmpdir}, loaded, and the file deleted at once (the mapping stays), so
 * nothing is left in {@code /tmp} if the process is killed later; a copy left by a process killed
 * in those milliseconds carries its pid in its name and the next load deletes it ({@link
 * PidFiles}). On JDK 24+, whose JNI loads warn unless native access is enabled, it is loaded
 * only where it is (the launcher and {@code .ci/mpi-env.sh} pass {@code
 * --enable-native-access=ALL-UNNAMED}), so that no program gets a warning it did not ask for. The
 * library checks that its type and op order is the enums' order.
 *
 * <h2>Contract</h2>
 * Callers ({@link Reductions}) pass direct buffers only, check bounds, writability and the op
 * first, and use absolute offsets (from the buffer's start, not its position), as the other forms
 * do. The JNI arguments keep the buffers reachable during the call. Thread-safe: no state.
 */
final class NativeKernels {
    private NativeKernels() {
    }

    private static final Logger LOG = LoggerFactory.getLogger(NativeKernels.class);

    /** The library inside the jar (the Makefile's output path under target/classes). */
    static final String RESOURCE = "native/libsharp4j_kernels-linux-amd64.so";

    /** Whether the native kernels are loaded and chosen (decided once per JVM; a constant to the JIT). */
    static final boolean AVAILABLE = load(System.getProperty("sharp4j.kernels", "auto"));

    /** Why they are not, for the log and the tests (null when they are). */
    static volatile String whyNot;

    /** {@code type,...;op,...}: the library's order of the enums. */
    static native String enums();

    /** {@code dst = a op b} over {@code n} elements, and the same into {@code dst2} unless null. */
    static native void fold(int type, int op, ByteBuffer dst, long dOff, ByteBuffer dst2, long d2Off, ByteBuffer a, long aOff,
            ByteBuffer b, long bOff, int n);

    /** {@code dst = ((x[0] op x[1]) op x[2]) ...} over {@code n} elements, and into {@code dst2} unless null; 2 to 256 inputs. */
    static native void foldAll(int type, int op, ByteBuffer dst, long dOff, ByteBuffer dst2, long d2Off, ByteBuffer[] x, int[] xOff,
            int k, int n);

    /**
     * {@code dst[dOff, dOff + bytes) = src[sOff, sOff + bytes)} with non-temporal stores (they bypass
     * this core's caches), fenced: for a large copy that another core reads next (see the C source).
     * Both buffers direct; the caller checks the ranges.
     */
    static native void copyStreaming(ByteBuffer dst, long dOff, ByteBuffer src, long sOff, long bytes);

    /** The address of a direct buffer's first byte ({@link PeerReads}); 0 for null, which callers never pass. */
    static native long address(ByteBuffer buf);

    /**
     * Copies {@code bytes} at address {@code remote} of process {@code pid} into {@code dst} from
     * {@code dOff} ({@code process_vm_readv}); returns {@code bytes}, or {@code -errno} ({@link PeerReads}).
     */
    static native long readPeer(long pid, long remote, ByteBuffer dst, long dOff, long bytes);

    /**
     * Copies {@code bytes} of {@code src} from {@code sOff} to address {@code remote} of process
     * {@code pid} ({@code process_vm_writev}); returns {@code bytes}, or {@code -errno} ({@link PeerReads}).
     */
    static native long writePeer(long pid, long remote, ByteBuffer src, long sOff, long bytes);

    /** {@code prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY)}: 0 or {@code -errno} ({@link PeerReads}). */
    static native int allowPeerReads();

    /** {@code membarrier(cmd, 0, 0)}: its result, or {@code -errno} ({@link ProcessFence}). */
    static native long membarrier(int cmd);

    /** Inputs a native fold over several takes at most (the C side's stack array). */
    static final int MAX_INPUTS = 256;

    /**
     * Why this JVM must not load the library (null if it may): the mode ({@code sharp4j.kernels}),
     * the platform, and on JDK 24+ whether native access is enabled.
     */
    static String refusal(String mode, String os, String arch, int jdk, boolean nativeAccess) {
        if (!mode.trim().toLowerCase(Locale.ROOT).equals("auto")) {
            return "sharp4j.kernels=" + mode;
        }
        if (!"Linux".equals(os) || !"amd64".equals(arch)) {
            return "built for Linux amd64 only, this is " + os + " " + arch;
        }
        if (jdk >= 24 && !nativeAccess) {
            return "native access is not enabled (--enable-native-access=ALL-UNNAMED), and JDK 24+ would warn";
        }
        return null;
    }

    private static boolean load(String mode) {
        int jdk = Runtime.version().feature();
        String refused = refusal(mode, System.getProperty("os.name"), System.getProperty("os.arch"), jdk, jdk >= 22 && nativeAccessEnabled());
        if (refused != null) {
            return no(refused);
        }
        Path tmp = null;
        try (InputStream in = NativeKernels.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                return no("the jar has no " + RESOURCE + " (built without gcc)");
            }
            tmp = PidFiles.create(Path.of(System.getProperty("java.io.tmpdir")), PREFIX, ".so");
            Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
            System.load(tmp.toAbsolutePath().toString());
            String want = names(DataType.values()) + ";" + names(Op.values());
            String got = enums();
            if (!want.equals(got)) {
                return no("the library's types and ops are " + got + ", the enums' " + want);
            }
            LOG.debug("native reduction kernels loaded");
            return true;
        } catch (IOException | UnsatisfiedLinkError | SecurityException e) {
            return no("loading failed: " + e);
        } finally {
            if (tmp != null) {
                try {
                    Files.deleteIfExists(tmp); // loaded or not: the mapping outlives the file
                } catch (IOException e) {
                    LOG.debug("could not delete {}", tmp, e);
                }
            }
        }
    }

    /** The copies' names: {@code sharp4j-kernels-PID-RANDOM.so}, so that a later load can tell a dead process's copy. */
    static final String PREFIX = "sharp4j-kernels-";

    private static boolean no(String why) {
        whyNot = why;
        LOG.debug("native reduction kernels not used: {}; the Java kernels serve", why);
        return false;
    }

    private static String names(Enum<?>[] values) {
        StringBuilder s = new StringBuilder();
        for (Enum<?> v : values) {
            s.append(s.length() == 0 ? "" : ",").append(v.name());
        }
        return s.toString();
    }

    /** {@code Module.isNativeAccessEnabled()} (JDK 22+), through reflection: the build is JDK 17. */
    private static boolean nativeAccessEnabled() {
        try {
            return (Boolean) Module.class.getMethod("isNativeAccessEnabled").invoke(NativeKernels.class.getModule());
        } catch (ReflectiveOperationException | RuntimeException e) {
            return false;
        }
    }
}
