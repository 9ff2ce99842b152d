package org.sharp4j.fallback.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.jna.Function;
import com.sun.jna.NativeLibrary;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Loading UCX through sharp4j leaves libc's code as it is on disk ({@link UcxMemoryHooks}), and a user's
 * own {@code UCX_MEM_MMAP_HOOK_MODE} still wins. Each case is a fresh JVM (libucs loads once per process):
 * it loads UCX the way the transport does, then compares the first 16 bytes of each function UCX 1.13 hooks
 * with the same bytes of the libc file it was mapped from.
 */
class UcxMemoryHooksTest {
    static final String[] HOOKED = {"mmap", "munmap", "mremap", "madvise", "shmat", "shmdt", "brk", "sbrk"};

    /** Child: loads UCX as the transport does, then prints one line per hooked function and the decision. */
    public static void main(String[] args) throws Exception {
        String err = UcxTransport.loadError();
        System.out.println("LOAD-ERROR: " + err);
        System.out.println("UCS: " + UcxMemoryHooks.loadedUcs());
        NativeLibrary c = NativeLibrary.getInstance("c");
        for (String name : HOOKED) {
            Function f = c.getFunction(name);
            long addr = com.sun.jna.Pointer.nativeValue(f);
            byte[] mem = f.getByteArray(0, 16);
            byte[] disk = fileBytes(addr, 16);
            System.out.println("FN " + name + " " + (java.util.Arrays.equals(mem, disk) ? "original" : "patched")
                    + " mem=" + hex(mem) + " disk=" + hex(disk));
        }
    }

    /** The bytes of the mapped file behind {@code addr}: its mapping's file offset plus the distance into it. */
    static byte[] fileBytes(long addr, int n) throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
            String[] f = line.trim().split("\\s+");
            String[] range = f[0].split("-");
            long start = Long.parseUnsignedLong(range[0], 16);
            long end = Long.parseUnsignedLong(range[1], 16);
            if (addr >= start && addr + n <= end && f.length >= 6) {
                try (RandomAccessFile file = new RandomAccessFile(f[5], "r")) {
                    file.seek(addr - start + Long.parseUnsignedLong(f[2], 16));
                    byte[] b = new byte[n];
                    file.readFully(b);
                    return b;
                }
            }
        }
        throw new IllegalStateException("no file mapping holds " + Long.toHexString(addr));
    }

    static String hex(byte[] b) {
        StringBuilder s = new StringBuilder();
        for (byte x : b) {
            s.append(String.format("%02x", x));
        }
        return s.toString();
    }

    static String child(Map<String, String> env) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        ProcessBuilder pb = new ProcessBuilder(List.of(java, "-cp", cp, UcxMemoryHooksTest.class.getName())).redirectErrorStream(true);
        pb.environment().remove(UcxMemoryHooks.MODE);
        pb.environment().remove(UcxMemoryHooks.EVENTS);
        pb.environment().putAll(env);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), out);
        assertEquals(0, p.exitValue(), out);
        String load = UcxMissingLibraryTest.line(out, "LOAD-ERROR: ");
        Assumptions.assumeTrue("null".equals(load), "UCX does not load here: " + load);
        assertTrue(!"null".equals(UcxMissingLibraryTest.line(out, "UCS: ")), "libucs not mapped after loading:\n" + out);
        return out;
    }

    static List<String> patched(String out) {
        List<String> p = new ArrayList<>();
        for (String name : HOOKED) {
            if (UcxMissingLibraryTest.line(out, "FN " + name + " ").startsWith("patched")) {
                p.add(name);
            }
        }
        return p;
    }

    @Test
    void loadingUcxThroughTheTransportPatchesNothingInLibc() throws Exception {
        String out = child(Map.of());
        assertEquals(List.of(), patched(out), out);
    }

    @Test
    void theUsersOwnHookModeWinsAndThisTestSeesItsPatches() throws Exception {
        // bistro is UCX 1.13's default: what every load did before UcxMemoryHooks. munmap is the function the
        // race killed; the comparison must see its patch, or the test above proves nothing.
        String out = child(Map.of(UcxMemoryHooks.MODE, "bistro"));
        assertTrue(patched(out).contains("munmap"), out);
        // UCX_MEM_EVENTS=yes chosen explicitly also counts as the user's choice
        out = child(Map.of(UcxMemoryHooks.EVENTS, "yes"));
        assertTrue(patched(out).contains("munmap"), out);
    }
}
