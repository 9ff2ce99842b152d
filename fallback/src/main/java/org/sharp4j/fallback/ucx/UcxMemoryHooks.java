package org.sharp4j.fallback.ucx;

import com.sun.jna.Function;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps UCX from rewriting libc's code while the JVM's threads run it.
 *
 * <p><b>The hazard.</b> UCX 1.13 installs its memory hooks when libucs loads (its constructor calls
 * {@code ucm_mmap_init}): in the default "bistro" mode it overwrites the first bytes of {@code mmap},
 * {@code munmap}, {@code mremap}, {@code madvise}, {@code shmat}, {@code shmdt}, {@code brk} and {@code sbrk}
 * with a jump to libucm, and its source says why it does so then: "before other threads could execute the
 * modified functions and fail on invalid instructions". In a C program that is process start. In a JVM libucs
 * loads with jucx, long after start, while the GC and JIT threads map and unmap memory. Where libucm lies more
 * than 2 GiB from libc the jump is a 12-byte {@code movabs rax, hook; jmp rax} over glibc's
 * {@code mov eax,11; syscall; cmp rax,-4095}: a thread inside the munmap system call at that moment returns to
 * offset 7, into the middle of the new bytes, and the JVM dies (SIGSEGV, hs_err pc {@code __munmap+0xc}, the
 * middle of the old {@code cmp}). It killed a rank at start on the netns rig twice (a C2 compiler thread in
 * munmap, 2026-11; CI of 2026-12-06), and 3 of 3 ranks of such a run were found patched (1 of them with the
 * 12-byte form). A rare per-process event is a per-job certainty at thousands of node leaders.
 *
 * <p><b>What this does.</b> Before sharp4j's first call into jucx, unless the user chose
 * ({@code UCX_MEM_MMAP_HOOK_MODE} or {@code UCX_MEM_EVENTS} in the environment) or libucs is already in the
 * process (loaded at start, or by MPI's own UCX components; then nothing set now would be read), it sets
 * {@code UCX_MEM_MMAP_HOOK_MODE=none} in the C environment, which libucs's constructor reads. UCX then patches
 * nothing.
 *
 * <p><b>What it costs.</b> UCX's registration caches need the unmap events. Without them UCX 1.13 creates no
 * cache and says so only at debug level: over TCP and shared memory nothing registers memory anyway; on
 * InfiniBand {@code uct_ib_md} falls through its registration methods ({@code rcache,odp,direct}) to implicit
 * on-demand paging where the adapter has it, else it registers per transfer. Correct in every case; large
 * rendezvous transfers over RDMA may be slower. A cluster that wants the cache sets
 * {@code UCX_MEM_MMAP_HOOK_MODE=bistro} itself (and accepts the race above); this class then leaves it alone.
 *
 * <p>Who may touch what: {@link #beforeUcxLoads()} runs once, from {@code UcxTransport}'s loader (a class
 * initialiser, so once per JVM and before libucs loads). {@code setenv} is not safe against a concurrent
 * {@code setenv} in another thread; the JVM itself never calls it, and glibc's first {@code setenv} of a new name
 * copies the environment into a new array, so a concurrent {@code getenv} still reads the old one.
 */
final class UcxMemoryHooks {
    private static final Logger LOG = LoggerFactory.getLogger(UcxMemoryHooks.class);

    static final String MODE = "UCX_MEM_MMAP_HOOK_MODE";
    static final String EVENTS = "UCX_MEM_EVENTS";

    private UcxMemoryHooks() {
    }

    /**
     * Sets {@value #MODE}{@code =none} unless the user or an earlier load of UCX decided; returns what was done,
     * for the debug log and the tests.
     */
    static String beforeUcxLoads() {
        String done = decide();
        LOG.debug("sharp4j: UCX memory hooks: {}", done);
        return done;
    }

    private static String decide() {
        try {
            String loaded = loadedUcs();
            if (loaded != null) {
                return "left alone: libucs is already loaded (" + loaded + ")";
            }
            NativeLibrary c = NativeLibrary.getInstance("c");
            Function getenv = c.getFunction("getenv");
            for (String name : new String[] {MODE, EVENTS}) {
                Pointer v = (Pointer) getenv.invoke(Pointer.class, new Object[] {name});
                if (v != null) {
                    return "left alone: " + name + "=" + v.getString(0) + " is set";
                }
            }
            int rc = c.getFunction("setenv").invokeInt(new Object[] {MODE, "none", 0});
            return rc == 0 ? MODE + "=none set" : "setenv failed (" + rc + "): UCX keeps its default";
        } catch (UnsatisfiedLinkError | RuntimeException e) {
            // no JNA or no libc binding: UCX keeps its default; loading goes on as before
            return "not set: " + e;
        }
    }

    /** The path of a libucs mapped into this process, or null. */
    static String loadedUcs() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
                int i = line.indexOf('/');
                if (i >= 0 && line.indexOf("/libucs.so", i) >= 0) {
                    return line.substring(i).trim();
                }
            }
        } catch (IOException e) {
            return null; // no /proc: not Linux, where UCX does not run either
        }
        return null;
    }
}
