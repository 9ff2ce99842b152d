package org.sharp4j.coll;

import com.sun.jna.Library;
import com.sun.jna.Native;
import java.util.Locale;

/**
 * A full memory barrier on every running thread of this process, issued from one of them: Linux's
 * {@code membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)} (an inter-processor interrupt to each CPU that
 * runs a thread of this process; a few microseconds). It lets a path that runs millions of times go
 * without a StoreLoad barrier of its own while a rare path that races with it pays for both sides
 * (the asymmetric Dekker pattern of user-space RCU and of .NET's FlushProcessWriteBuffers): the
 * frequent side stores its flag and then loads the other side's with plain instructions; the rare
 * side stores its own flag with a full barrier, calls {@link #run}, and then loads the frequent
 * side's flag. Either the frequent side's load saw the rare side's store, or the frequent side's
 * store (made before the barrier that {@link #run} forced on its CPU) is visible to the rare side's
 * load: at least one of them sees the other.
 *
 * <p>Why: a collective's entry took a {@code lock cmpxchg} (the communicator's one-thread-at-a-time
 * guard) on every call. A locked instruction waits until the thread's earlier stores are globally
 * visible, and the previous call's last stores are flags that a peer polls, each a cache-line
 * transfer away: in a loop of small Reduces the leaf spent a fifth of its time on that instruction
 * (perf); see {@code Engine}'s class comment, "The lease", for what it is used for and what it gained.
 *
 * <p>Available on Linux 4.14+ on x86_64 and aarch64, where the command is supported and its
 * registration (once per process, here) succeeds; elsewhere, or where a seccomp filter refuses the
 * system call, or on JDK 24+ without native access enabled (JNA would print a warning the program did
 * not ask for), {@link #AVAILABLE} is false and callers keep their locked instruction. JNA (already
 * required for the PMIx bootstrap) makes the call: a slow path only, so JNA's few microseconds do
 * not matter, and the optional kernel library ({@link NativeKernels}) need not be there.
 */
final class ProcessFence {
    private ProcessFence() {
    }

    private static final long CMD_QUERY = 0;
    private static final long CMD_PRIVATE_EXPEDITED = 8;
    private static final long CMD_REGISTER_PRIVATE_EXPEDITED = 16;

    /** glibc's {@code syscall(2)} (variadic in C; every argument here is a register-sized integer). */
    interface LibC extends Library {
        long syscall(long number, long cmd, long flags, long cpuId);
    }

    private static final LibC LIBC;
    private static final long NR;
    /** Whether {@link #run} works here (decided once, at class initialisation). */
    static final boolean AVAILABLE;
    /** Why not, when not (diagnostics). */
    static final String UNAVAILABLE_REASON;

    static {
        LibC lib = null;
        long nr = -1;
        String why = null;
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        int jdk = Runtime.version().feature();
        if (Boolean.getBoolean("sharp4j.processFence.off")) {
            why = "turned off (-Dsharp4j.processFence.off=true)";
        } else if (jdk >= 24 && !NativeKernels.nativeAccessEnabled()) {
            why = "native access is not enabled (--enable-native-access=ALL-UNNAMED), and JDK 24+ would warn"; // as NativeKernels
        } else if (!os.contains("linux")) {
            why = "not Linux";
        } else if (arch.equals("amd64") || arch.equals("x86_64")) {
            nr = 324;
        } else if (arch.equals("aarch64")) {
            nr = 283;
        } else {
            why = "no membarrier system call number known for " + arch;
        }
        if (why == null) {
            try {
                lib = Native.load("c", LibC.class);
                long mask = lib.syscall(nr, CMD_QUERY, 0, 0);
                if (mask < 0 || (mask & CMD_PRIVATE_EXPEDITED) == 0) {
                    why = "membarrier private expedited not supported (query: " + mask + ")";
                } else if (lib.syscall(nr, CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) != 0) {
                    why = "membarrier registration refused (errno " + Native.getLastError() + ")";
                }
            } catch (LinkageError | RuntimeException e) {
                why = "libc through JNA: " + e;
            }
        }
        LIBC = why == null ? lib : null;
        NR = nr;
        AVAILABLE = why == null;
        UNAVAILABLE_REASON = why;
    }

    /**
     * A full barrier on every CPU that runs a thread of this process, this one included, before it
     * returns. Only where {@link #AVAILABLE}.
     *
     * @throws IllegalStateException if the system call fails (it cannot once registered, short of a
     *     kernel that withdrew the command: then the caller must not rely on the barrier)
     */
    static void run() {
        if (!AVAILABLE) {
            throw new IllegalStateException("no process-wide barrier here: " + UNAVAILABLE_REASON);
        }
        long r = LIBC.syscall(NR, CMD_PRIVATE_EXPEDITED, 0, 0);
        if (r != 0) {
            throw new IllegalStateException("membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) failed: errno " + Native.getLastError());
        }
    }
}
