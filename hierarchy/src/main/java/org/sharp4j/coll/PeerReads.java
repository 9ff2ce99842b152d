package org.sharp4j.coll;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ThreadLocalRandom;
import org.sharp4j.DataType;
import org.sharp4j.Op;

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

    /**
     * The size {@link #readCost} reads: the smallest call the built-in table gives the cma Reduce
     * (16 KiB), where the read's fixed costs weigh most.
     */
    static final int READ_COST_BYTES = 16384;

    /**
     * The largest {@link #readCost} at which the built-in table's cma and cma_split Reduces run
     * ({@code Engine.builtInCmaWhyNot}); above it they run as the direct Reduce, and the table's cma_split
     * Allreduces of more than two members as the pipelined one (4 ranks there: the pipelined one 1.11-1.56x
     * as fast at 256 KiB-16 MiB, OSU port, blocks alternating in the same processes). Measured 2026-12-02 on
     * an AMD EPYC VM whose kernel isolates page tables (PTI: every system call switches them): 3.6-3.9
     * in the ranks of mpirun and of the launcher (6 runs, 2 ranks), 5.1-5.2 in a JVM of its own (a 16 KiB
     * {@code process_vm_readv} 3.3 us, 2.6 of them for 8 bytes, against 0.63 us for the fold), 3.0-3.9
     * with ranks as threads of one JVM; and there the direct Reduce took 0.45-0.95x the built-in cma and cma_split
     * Reduces' time at 16 KiB-16 MiB (OSU port, 2 ranks, same processes, both orders). The Intel VMs on
     * which those Reduces beat the direct one (1.1-1.9x at 32-256 KiB) were not measured so; a kernel
     * without PTI pays a fraction of a microsecond for the call and the pinning of four pages, which
     * puts the ratio near 2 (an estimate): 3 lies between.
     */
    static final double READ_COST_MAX = 3.0;

    /**
     * The largest {@link #readCost} at which the built-in table's cma_split Allreduce of two members
     * runs; above it, the pipelined one. Each of two members reads and writes half the message in the
     * other's process, a page pinned per 4 KiB each way (on the VM below about 0.2 us a page on top of
     * the copy, a C loop of {@code process_vm_readv} against {@code memcpy}, 256 KiB-1 MiB), where the
     * pipelined one copies through shared memory and makes no system call. OSU port, 2 ranks, the same
     * AMD EPYC VM with PTI on two days: at a cost of 3.6-3.9 the pipelined one's time over the split
     * one's was 1.12-1.70 at every size from 64 KiB but 256 KiB (0.30) in one run and 0.38-1.32 in the
     * other, the split one 0.44-0.87x Open MPI Java's time at every size, so the split one stays there;
     * at 4.4-5.0 (2026-12-02, evening, 10 ranks of 5 runs) the pipelined one was 0.32-0.74x Open MPI
     * Java's time where the split one was 0.54-1.10x, at every size from 64 KiB to 16 MiB (3 runs of
     * each, alternating). The bound lies between the two.
     */
    static final double READ_COST_MAX_PAIR = 4.0;

    /**
     * What reading another process's memory costs here: the time of a {@link #READ_COST_BYTES}
     * {@code process_vm_readv} of this process's own memory over that of a native fold (INT SUM, two
     * inputs, one output) of the same bytes, the least of nine timed pairs after two untimed ones
     * (about 50 us, at creation; both calls interpreted alike). The read's fixed costs (the system call, pinning each page)
     * depend on the kernel and the hypervisor, not on the data: where they are high the root that
     * reads a member's input itself loses to the member that copies it into shared memory and goes
     * on. {@code -Dsharp4j.debug.cmaReadCost=X} replaces the measurement (tests). NaN where it cannot
     * be measured (only called where {@link #prepare} said yes).
     */
    static double readCost() {
        String forced = System.getProperty("sharp4j.debug.cmaReadCost");
        if (forced != null) {
            return Double.parseDouble(forced);
        }
        synchronized (PeerReads.class) { // once per process: every communicator of it offers the same figure
            if (readCost == 0) {
                readCost = measureReadCost();
            }
            return readCost;
        }
    }

    /** {@link #readCost}'s measurement, kept; 0 until the first (guarded by the class's lock). */
    private static double readCost;

    private static double measureReadCost() {
        final int n = READ_COST_BYTES;
        ByteBuffer src = ByteBuffer.allocateDirect(n).order(ByteOrder.nativeOrder());
        ByteBuffer dst = ByteBuffer.allocateDirect(n).order(ByteOrder.nativeOrder());
        for (int i = 0; i < n; i += 8) { // every page touched before the first timing
            src.putLong(i, i);
            dst.putLong(i, 0);
        }
        long pid = ProcessHandle.current().pid();
        long from = NativeKernels.address(src);
        long read = Long.MAX_VALUE;
        long fold = Long.MAX_VALUE;
        for (int r = 0; r < 11; r++) {
            long t0 = System.nanoTime();
            long got = NativeKernels.readPeer(pid, from, dst, 0, n);
            long t1 = System.nanoTime();
            NativeKernels.fold(DataType.INT.ordinal(), Op.SUM.ordinal(), dst, 0, null, 0, dst, 0, src, 0, n / Integer.BYTES);
            long t2 = System.nanoTime();
            if (got != n) {
                return Double.NaN;
            }
            if (r >= 2) {
                read = Math.min(read, t1 - t0);
                fold = Math.min(fold, t2 - t1);
            }
        }
        java.lang.ref.Reference.reachabilityFence(src);
        return (double) read / Math.max(1, fold);
    }

    /**
     * This rank's offer in the creation's allgather: {@code address:value:cost}, the cost being
     * {@link #readCost} with two decimals, or {@code -} where {@code sharp4j.cma=on} skips the
     * measurement ({@code costGate} then never blames this rank). Only where {@link #prepare} said yes.
     */
    static String offer(boolean measureCost) {
        double cost = measureCost ? readCost() : Double.NaN;
        return cookieAddress() + ":" + COOKIE_VALUE + ":" + (Double.isNaN(cost) ? "-" : String.format(java.util.Locale.ROOT, "%.2f", cost));
    }

    /**
     * Whether the built-in table's cma and cma_split Reduces run on this socket: null if every
     * member's offered {@link #readCost} is at most {@link #READ_COST_MAX} (or not measured), else
     * why not, naming the first member above it. A function of the offers alone, which every member
     * of the socket received alike from the allgather: the same answer on every member, as the
     * protocols need (the direct Reduce's member copies its input, the cma one's leaves it to be read).
     */
    static String costGate(int[] sockRanks, String[] offers) {
        return costGate(sockRanks, offers, READ_COST_MAX, "the built-in cma and cma_split Reduces run as direct"
                + " and its cma_split Allreduces of more than two ranks as pipelined");
    }

    /**
     * Whether the built-in table's cma_split Allreduce of two members runs on this socket: as
     * {@link #costGate(int[], String[])} with the bound {@link #READ_COST_MAX_PAIR}.
     */
    static String pairSplitGate(int[] sockRanks, String[] offers) {
        return costGate(sockRanks, offers, READ_COST_MAX_PAIR, "the built-in cma_split Allreduce of two ranks runs as pipelined");
    }

    /** null if no member of the socket offered a cost above {@code bound}, else why not: the first one, and {@code consequence}. */
    private static String costGate(int[] sockRanks, String[] offers, double bound, String consequence) {
        for (int r : sockRanks) {
            String o = offers[r];
            int last = o.lastIndexOf(':');
            if (last < 0 || o.indexOf(':') == last) {
                continue; // no offer (no peer reads at all) or no cost field
            }
            String c = o.substring(last + 1);
            if (c.equals("-")) {
                continue;
            }
            double cost = Double.parseDouble(c);
            if (cost > bound) {
                return String.format(java.util.Locale.ROOT, "a %d KiB process_vm_readv took %.2fx a native fold of it on rank %d"
                        + " (above %.1f: system calls are costly here), so %s",
                        READ_COST_BYTES / 1024, cost, r, bound, consequence);
            }
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
