package org.sharp4j.coll;

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
 * <p>The system call goes through the native kernels' library ({@link NativeKernels#membarrier}),
 * which is loaded anyway where it exists. Not through JNA (which the PMIx bootstrap has): JNA's first
 * load costs about 100 ms and megabytes of garbage, and the first entry of a communicator would pay
 * it in a program's set-up (the agent's set-up must not fill a small young generation). So the
 * barrier exists where that library is loaded ({@link NativeKernels#AVAILABLE}: Linux x86_64, not
 * turned off with {@code sharp4j.kernels}, native access enabled on JDK 24+), the kernel supports the
 * command (Linux 4.14+) and its registration, once per process here, succeeds (a seccomp filter may
 * refuse it); elsewhere {@link #AVAILABLE} is false and callers keep their locked instruction.
 * {@code -Dsharp4j.processFence.off=true} turns it off alone.
 */
final class ProcessFence {
    private ProcessFence() {
    }

    private static final int CMD_QUERY = 0;
    private static final int CMD_PRIVATE_EXPEDITED = 8;
    private static final int CMD_REGISTER_PRIVATE_EXPEDITED = 16;

    /** Whether {@link #run} works here (decided once, at class initialisation). */
    static final boolean AVAILABLE;
    /** Why not, when not (diagnostics). */
    static final String UNAVAILABLE_REASON;

    static {
        String why = null;
        if (Boolean.getBoolean("sharp4j.processFence.off")) {
            why = "turned off (-Dsharp4j.processFence.off=true)";
        } else if (!NativeKernels.AVAILABLE) {
            why = "the native kernels' library is not loaded: " + NativeKernels.whyNot;
        } else {
            long mask = NativeKernels.membarrier(CMD_QUERY);
            if (mask < 0 || (mask & CMD_PRIVATE_EXPEDITED) == 0) {
                why = "membarrier private expedited not supported (query: " + mask + ")";
            } else {
                long r = NativeKernels.membarrier(CMD_REGISTER_PRIVATE_EXPEDITED);
                if (r != 0) {
                    why = "membarrier registration refused (errno " + -r + ")";
                }
            }
        }
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
        long r = NativeKernels.membarrier(CMD_PRIVATE_EXPEDITED);
        if (r != 0) {
            throw new IllegalStateException("membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) failed: errno " + -r);
        }
    }
}
