package org.sharp4j.coll;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.ReadOnlyBufferException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import org.junit.jupiter.api.Test;
import org.sharp4j.DataType;
import org.sharp4j.Op;

/**
 * The native kernels' build, loading and checks. Their bits against the reference, every type x op,
 * are ReductionsTest's ({@code nativeFormMatchesTheReference...}, the two-destination and k-input folds).
 */
class NativeKernelsTest {
    /**
     * Where this machine can build them (Linux x86_64, gcc, make and the JDK's jni.h), the build must
     * have put them into the module's classes and this JVM must have loaded them: else every test of
     * the native form would be skipped and CI would not notice that the jar lost its kernels.
     */
    @Test
    void theBuildMadeThemAndThisJvmLoadedThemWhereGccIs() {
        assumeTrue(System.getProperty("sharp4j.kernels") == null, "sharp4j.kernels is set");
        assumeTrue(NativeKernels.refusal("auto", System.getProperty("os.name"), System.getProperty("os.arch"), 17, true) == null,
                "not Linux amd64");
        assumeTrue(onPath("gcc") && onPath("make"), "no gcc or make: the build skips the native kernels");
        assumeTrue(Files.exists(Paths.get(System.getProperty("java.home"), "include", "jni.h")), "this JDK has no jni.h");
        assertNotNull(NativeKernels.class.getResource(NativeKernels.RESOURCE), "the build did not put " + NativeKernels.RESOURCE + " into the classes");
        assertTrue(NativeKernels.AVAILABLE, () -> "not loaded: " + NativeKernels.whyNot);
        assertNull(NativeKernels.whyNot);
    }

    /**
     * Where the kernels are loaded on a Linux with membarrier's private expedited command (4.14+), the
     * process-wide barrier must be available and work: else every communicator would silently keep its
     * locked instruction per call (Engine, "The lease") and the lease tests would be skipped.
     */
    @Test
    void theProcessFenceWorksWhereTheKernelsAreLoaded() {
        assumeTrue(NativeKernels.AVAILABLE, "native kernels not loaded");
        assumeTrue(System.getProperty("sharp4j.processFence.off") == null, "turned off");
        String[] v = System.getProperty("os.version").split("[.-]");
        int major = Integer.parseInt(v[0]);
        int minor = Integer.parseInt(v[1]);
        assumeTrue(major > 4 || major == 4 && minor >= 14, "Linux before 4.14: no private expedited membarrier");
        assertTrue(ProcessFence.AVAILABLE, () -> "not available: " + ProcessFence.UNAVAILABLE_REASON);
        for (int i = 0; i < 3; i++) {
            ProcessFence.run(); // throws if the system call fails
        }
        long mask = NativeKernels.membarrier(0); // MEMBARRIER_CMD_QUERY
        assertTrue(mask > 0 && (mask & 8) != 0, "query: " + mask);
        assertTrue(NativeKernels.membarrier(1 << 30) < 0, "an unknown command must come back as -errno");
    }

    @Test
    void onlyAutoOnLinuxAmd64LoadsThemAndJdk24NeedsNativeAccess() {
        assertNull(NativeKernels.refusal("auto", "Linux", "amd64", 17, false));
        assertNull(NativeKernels.refusal(" Auto ", "Linux", "amd64", 21, false));
        assertNull(NativeKernels.refusal("auto", "Linux", "amd64", 25, true));
        assertTrue(NativeKernels.refusal("auto", "Linux", "amd64", 25, false).contains("--enable-native-access"));
        assertTrue(NativeKernels.refusal("auto", "Linux", "aarch64", 17, true).contains("aarch64"));
        assertTrue(NativeKernels.refusal("auto", "Mac OS X", "amd64", 17, true).contains("Mac OS X"));
        for (String mode : new String[] {"java", "scalar", "raw", "varhandle"}) {
            assertTrue(NativeKernels.refusal(mode, "Linux", "amd64", 17, true).contains("sharp4j.kernels=" + mode), mode);
        }
    }

    /** The library is copied out of the jar and deleted once loaded: nothing of it stays in the temporary directory. */
    @Test
    void loadingLeavesNoFileBehind() throws IOException {
        assumeTrue(NativeKernels.AVAILABLE, () -> "not loaded: " + NativeKernels.whyNot);
        try (DirectoryStream<Path> d = Files.newDirectoryStream(Paths.get(System.getProperty("java.io.tmpdir")), "sharp4j-kernels-*")) {
            for (Path p : d) {
                throw new AssertionError("left behind: " + p);
            }
        }
    }

    /** A copy left by a killed process (its pid gone) is removed by the next load; a live process's copy and other files are not. */
    @Test
    void aDeadProcesssLeftoverCopyIsRemovedAndNothingElse(@org.junit.jupiter.api.io.TempDir Path dir) throws IOException {
        long dead = deadPid();
        Path stale = Files.createFile(dir.resolve(NativeKernels.PREFIX + dead + "-123.so"));
        Path live = Files.createFile(dir.resolve(NativeKernels.PREFIX + ProcessHandle.current().pid() + "-456.so"));
        Path other = Files.createFile(dir.resolve(NativeKernels.PREFIX + "x-789.so"));
        Path unrelated = Files.createFile(dir.resolve("sharp4j-other-" + dead + ".so"));
        PidFiles.removeStale(dir, NativeKernels.PREFIX, ".so");
        assertTrue(Files.notExists(stale), "a dead process's copy stayed");
        assertTrue(Files.exists(live) && Files.exists(other) && Files.exists(unrelated), "removed a file that is not a dead process's copy");
        PidFiles.removeStale(dir.resolve("missing"), NativeKernels.PREFIX, ".so"); // no directory: no exception
    }

    /** A pid no process has: one started and waited for. */
    private static long deadPid() throws IOException {
        Process p = new ProcessBuilder("true").start();
        try {
            p.waitFor();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
        return p.pid();
    }

    /** Bounds, writability, op and buffer kind are checked in Java before the native call writes anything. */
    @Test
    void badArgumentsFailBeforeAnythingIsWritten() {
        assumeTrue(NativeKernels.AVAILABLE, () -> "not loaded: " + NativeKernels.whyNot);
        ByteBuffer d = direct(4096);
        ByteBuffer a = direct(4096);
        ByteBuffer b = direct(4096);
        for (int i = 0; i < 4096; i++) {
            a.put(i, (byte) i);
            b.put(i, (byte) (3 * i));
        }
        byte[] before = bytes(d);
        int n = 1024; // FLOATs: exactly the buffers
        assertThrows(IndexOutOfBoundsException.class, () -> Reductions.combineNative(DataType.FLOAT, Op.SUM, d, 4, null, 0, a, 0, b, 0, n));
        assertThrows(IndexOutOfBoundsException.class, () -> Reductions.combineNative(DataType.FLOAT, Op.SUM, d, 0, null, 0, a, 4, b, 0, n));
        assertThrows(IndexOutOfBoundsException.class, () -> Reductions.combineNative(DataType.FLOAT, Op.SUM, d, 0, null, 0, a, 0, b, -4, n));
        assertThrows(IndexOutOfBoundsException.class,
                () -> Reductions.combineNative(DataType.FLOAT, Op.SUM, d, 0, direct(4092), 0, a, 0, b, 0, n));
        assertThrows(ReadOnlyBufferException.class,
                () -> Reductions.combineNative(DataType.FLOAT, Op.SUM, d.asReadOnlyBuffer(), 0, null, 0, a, 0, b, 0, n));
        assertThrows(IllegalArgumentException.class, () -> Reductions.combineNative(DataType.DOUBLE, Op.BXOR, d, 0, null, 0, a, 0, b, 0, 512));
        assertThrows(IllegalArgumentException.class,
                () -> Reductions.combineNative(DataType.FLOAT, Op.SUM, d, 0, null, 0, ByteBuffer.allocate(4096), 0, b, 0, n));
        assertArrayEquals(before, bytes(d), "a rejected call wrote into dst");
        // the library's own guard, should a caller skip the Java checks
        assertThrows(IllegalArgumentException.class,
                () -> NativeKernels.fold(DataType.DOUBLE.ordinal(), Op.BXOR.ordinal(), d, 0, null, 0, a, 0, b, 0, 1));
        assertThrows(IllegalArgumentException.class, () -> NativeKernels.foldAll(DataType.INT.ordinal(), Op.SUM.ordinal(), d, 0, null, 0,
                new ByteBuffer[] {a}, new int[] {0}, 1, 1));
        assertArrayEquals(before, bytes(d), "a rejected native call wrote into dst");
        // and a good call does write: the sum of the first two floats' bytes as floats
        Reductions.combineNative(DataType.FLOAT, Op.SUM, d, 0, null, 0, a, 0, b, 0, n);
        assertEquals(a.getFloat(8) + b.getFloat(8), d.getFloat(8));
    }

    /**
     * The streaming copy: every byte of the range, whatever the destination's alignment (the head
     * up to 16 bytes, whole 64-byte lines, the tail), and not one byte outside it.
     */
    @Test
    void theStreamingCopyCopiesExactlyItsRangeAtAnyAlignment() {
        assumeTrue(NativeKernels.AVAILABLE, () -> "not loaded: " + NativeKernels.whyNot);
        int[] lengths = {0, 1, 15, 16, 17, 63, 64, 65, 127, 4096 + 13, 70_001};
        ByteBuffer src = direct(70_001 + 64);
        for (int i = 0; i < src.capacity(); i++) {
            src.put(i, (byte) (i * 31 + 7));
        }
        for (int len : lengths) {
            for (int dOff = 0; dOff < 18; dOff += 1) {
                int sOff = (dOff * 5) % 23;
                ByteBuffer d = direct(len + 64);
                for (int i = 0; i < d.capacity(); i++) {
                    d.put(i, (byte) 0x5A);
                }
                NativeKernels.copyStreaming(d, dOff, src, sOff, len);
                for (int i = 0; i < d.capacity(); i++) {
                    byte want = i >= dOff && i < dOff + len ? src.get(sOff + i - dOff) : (byte) 0x5A;
                    if (d.get(i) != want) {
                        throw new AssertionError("len " + len + " dOff " + dOff + " sOff " + sOff + ": byte " + i + " is " + d.get(i)
                                + ", want " + want);
                    }
                }
            }
        }
    }

    /** More inputs than the native fold takes: combineAll falls back to the Java forms with the same bits. */
    @Test
    void aFoldOverMoreInputsThanTheLibraryTakesStillGivesThePairwiseBits() {
        int k = NativeKernels.MAX_INPUTS + 1;
        int n = 1024; // INTs, 4 KiB
        ByteBuffer[] x = new ByteBuffer[k];
        int[] off = new int[k];
        for (int j = 0; j < k; j++) {
            x[j] = direct(4 * n);
            for (int i = 0; i < n; i++) {
                x[j].putInt(4 * i, i * (j + 1) + j);
            }
        }
        ByteBuffer d = direct(4 * n);
        Reductions.combineAll(DataType.INT, Op.SUM, d, 0, null, 0, x, off, k, n);
        for (int i = 0; i < n; i++) {
            int want = 0;
            for (int j = 0; j < k; j++) {
                want += i * (j + 1) + j;
            }
            assertEquals(want, d.getInt(4 * i), "element " + i);
        }
    }

    private static boolean onPath(String exe) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            if (!dir.isEmpty() && Files.isExecutable(Paths.get(dir, exe))) {
                return true;
            }
        }
        return false;
    }

    private static ByteBuffer direct(int bytes) {
        return ByteBuffer.allocateDirect(bytes).order(ByteOrder.nativeOrder());
    }

    private static byte[] bytes(ByteBuffer b) {
        byte[] r = new byte[b.capacity()];
        for (int i = 0; i < r.length; i++) {
            r[i] = b.get(i);
        }
        return r;
    }
}
