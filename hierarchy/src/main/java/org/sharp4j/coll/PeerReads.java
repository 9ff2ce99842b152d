package org.sharp4j.coll;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Reading another local rank's memory where it lies: cross-memory attach ({@code process_vm_readv},
 * through {@link NativeKernels#readPeer}), for the cma Reduce ({@link DirectReduceAlgorithm} with
 * {@code cma}); and writing into it ({@code process_vm_writev}, {@link NativeKernels#writePeer}) for
 * the split cma Reduce, whose members write their part of the result into the root's output (the
 * kernel checks the same access for both). Open MPI's shared-memory transport (vader), MPICH and
 * UCX's {@code cma} transport use the same calls for their single copy.
 *
 * <h2>Who may read whom</h2>
 * The kernel lets a process read another one's memory when it may ptrace it: the same user, the
 * peer dumpable, and under the Yama module's {@code ptrace_scope}: 0 anyone of the user, 1 only
 * ancestors or a reader the peer named ({@code prctl(PR_SET_PTRACER)}; mpirun's ranks are
 * siblings), 2 only holders of {@code CAP_SYS_PTRACE}, 3 nobody. A container's seccomp filter may
 * forbid the call altogether. So a communicator decides at creation, collectively: each rank that
 * can take part ({@link #prepare}: native kernels loaded, {@code sharp4j.cma=auto}; under scope 1 it
 * names every process of the user as a reader, as Open MPI does) offers a word of its memory
 * ({@link #cookieAddress}, {@link #COOKIE_VALUE}) in the creation's allgather, reads the word of
 * every other member of its socket ({@link #probe}) and says whether all reads returned the right
 * value; the socket's members take the cma Reduce only if every member said yes
 * ({@code Engine.peerReads}), and run the direct Reduce otherwise. The decision is the same on
 * every member, as the algorithm's protocol needs (a member that copies nothing relies on its root
 * reading it).
 *
 * <h2>Failure</h2>
 * A read fails with {@code ESRCH} when the peer's process is gone (the engine reports the rank as
 * dead), and otherwise ({@code EPERM}, {@code EFAULT}: a permission withdrawn after creation, a
 * range not mapped) with an error naming the peer and the errno: never part of a range taken for
 * the whole ({@link NativeKernels#readPeer} continues a partial read and fails where it stops).
 * The member whose input is read waits inside the call until its root has read it (in the split
 * cma Reduce every rank waits until every other one has read its input and, for the root, written
 * its output), so the process read or written is that member's own: a process id is only reused after its process is gone, and Linux hands
 * ids out in turn up to {@code pid_max} (4,194,304 on 64-bit kernels), not within the microseconds
 * between a member's arrival and its root's read.
 */
final class PeerReads {
    private PeerReads() {
    }

    /** The word this process offers to be read at a communicator's creation; its value is {@link #COOKIE_VALUE}. */
    private static final ByteBuffer COOKIE = ByteBuffer.allocateDirect(8).order(ByteOrder.nativeOrder());
    /** A random non-zero value, per process: a read of another process's word proves it read the right memory. */
    static final long COOKIE_VALUE = ThreadLocalRandom.current().nextLong(1, Long.MAX_VALUE);
    private static boolean readersNamed;

    static {
        COOKIE.putLong(0, COOKIE_VALUE);
    }

    /**
     * Why this process cannot take part in peer reads, or null if it can; under Yama's
     * {@code ptrace_scope} 1 it first names every process of its user as a reader (once per process).
     */
    static synchronized String prepare(boolean enabled) {
        if (!enabled) {
            return "sharp4j.cma=off";
        }
        if (!NativeKernels.AVAILABLE) {
            return "the native kernels are not loaded (" + NativeKernels.whyNot + ")";
        }
        String scope = yamaScope();
        if ("1".equals(scope) && !readersNamed) {
            int err = NativeKernels.allowPeerReads();
            if (err != 0) {
                return "Yama's ptrace_scope is 1 and prctl(PR_SET_PTRACER) failed: " + errnoName(-err);
            }
            readersNamed = true;
        }
        return null;
    }

    /** The address of {@link #COOKIE} in this process. Only where {@link #prepare} said yes. */
    static long cookieAddress() {
        return NativeKernels.address(COOKIE);
    }

    /**
     * Reads the cookie another process offered ({@code pid}, {@code address}) and checks its value:
     * null if that worked, otherwise what went wrong. {@code scratch}: a direct buffer of 8 bytes or more.
     */
    static String probe(long pid, long address, long value, ByteBuffer scratch) {
        scratch.putLong(0, 0);
        long n = NativeKernels.readPeer(pid, address, scratch, 0, 8);
        if (n != 8) {
            return "process_vm_readv of process " + pid + " failed: " + errnoName(-n);
        }
        long got = scratch.order(ByteOrder.nativeOrder()).getLong(0);
        return got == value ? null : "process_vm_readv of process " + pid + " read " + Long.toHexString(got) + " where it offered "
                + Long.toHexString(value);
    }

    /** The address of a direct buffer's first byte. */
    static long address(ByteBuffer direct) {
        return NativeKernels.address(direct);
    }

    /**
     * Copies {@code bytes} at {@code remote} in process {@code pid} into {@code dst} at {@code dOff}:
     * 0 when all were read, otherwise the errno (the engine reports it, see {@code Engine.peerReadFailed}).
     */
    static long read(long pid, long remote, ByteBuffer dst, int dOff, int bytes) {
        long n = NativeKernels.readPeer(pid, remote, dst, dOff, bytes);
        return n == bytes ? 0 : n < 0 ? -n : 5; // a count other than asked for (cannot happen): EIO
    }

    /**
     * Copies {@code bytes} of {@code src} from {@code sOff} to {@code remote} in process {@code pid}
     * (the split cma Reduce's members write into their root's output): 0 or the errno, as {@link #read}.
     */
    static long write(long pid, long remote, ByteBuffer src, int sOff, int bytes) {
        long n = NativeKernels.writePeer(pid, remote, src, sOff, bytes);
        return n == bytes ? 0 : n < 0 ? -n : 5;
    }

    /** {@code ESRCH}: the process is gone. */
    static final long ESRCH = 3;

    static String errnoName(long errno) {
        switch ((int) errno) {
            case 1: return "EPERM (no ptrace access to that process: another user, Yama's ptrace_scope, or a seccomp filter)";
            case 3: return "ESRCH (no such process)";
            case 5: return "EIO";
            case 14: return "EFAULT (the range is not mapped in that process)";
            case 22: return "EINVAL";
            case 38: return "ENOSYS (process_vm_readv is not available)";
            default: return "errno " + errno;
        }
    }

    /** {@code /proc/sys/kernel/yama/ptrace_scope}, or null without Yama. */
    private static String yamaScope() {
        try {
            return Files.readString(Path.of("/proc/sys/kernel/yama/ptrace_scope")).trim();
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }
}
