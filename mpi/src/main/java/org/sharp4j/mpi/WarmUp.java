package org.sharp4j.mpi;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import mpi.Datatype;
import mpi.Intracomm;
import mpi.MPI;
import mpi.MPIException;

/**
 * Runs the routed paths, every buffer form, right after a communicator's sharp4j set-up, so that
 * the JIT has compiled them before the program's first calls: without it the first thousand or so
 * routed calls run interpreted or in C1 code, and every branch a call takes for the first time (a
 * reduce, a receive buffer with limit 0, a typed view) throws compiled code away. Sharp4j's engine
 * warms its own collectives at creation; this warms the router above it the same way.
 *
 * <p>Collective: every rank runs the same calls in the same order (it is entered from the first
 * routed call on the communicator, which MPI requires to be the same call everywhere), once per JVM
 * (see {@link MpiRouter}: the ranks of a later communicator agree to skip it when all have run it). The calls
 * go through the instrumented {@code mpi.Comm} methods when the agent is installed (so the advice
 * inlined there is compiled too), else through {@link MpiRouter}; on buffers of its own, and
 * without trace: the communicator's routed counters and first-call log marks are restored
 * afterwards and its buffer duplicates forgotten. {@code sharp4j.warmup=0} turns it off with the
 * engine's; otherwise it makes {@value #CALLS_PER_ROUND} iterations of its loop per engine round, then sleeps
 * while the JIT compiles what they queued (at most {@value #JIT_WAIT_MAX_MS} ms: until no compilation ended for
 * {@value #JIT_QUIET_MS} ms), so that the program's first calls do not compete with the compiler for the cores;
 * and again, up to {@value #BLOCKS} blocks, while a block still made the JIT compile.
 */
final class WarmUp {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(MpiRouter.class);
    /** Iterations of the loop below per {@code sharp4j.warmup} round in a block (16 rounds by default: 1,024 iterations, about 8,500 calls). */
    static final int CALLS_PER_ROUND = 64;
    /**
     * Blocks at most. A block follows the last only if that one still made the JIT compile (on any rank): the
     * routed entry points ({@code mpi.Comm.allReduce} with its advice, {@code MpiRouter}, {@code CommState},
     * {@code Forms}) must pass C2's thresholds (about 5,000 invocations after C1's profiling version, more while
     * C2's queue is long). After one block they stayed in C1 code and C2 compiled them during the program's first
     * calls, on the core the rank runs on (CommState.allReduce: 45 ms), its peer waiting 4 ms per call meanwhile.
     */
    static final int BLOCKS = 4;
    /** After the calls, how long at most to leave the cores to the JIT compiler, and the quiet spell that ends it sooner. */
    static final long JIT_WAIT_MAX_MS = 1000;
    static final long JIT_QUIET_MS = 40;
    /** Largest message warmed, in elements of 8 bytes (4 KiB): above it the bulk copies are the only path. */
    private static final int BIG = 512;

    private WarmUp() {
    }

    /**
     * Warms {@code s} (set up, with a sharp4j communicator) for {@code rounds} engine warm-up rounds;
     * returns the milliseconds it then slept waiting for the JIT compiler.
     */
    static long run(CommState s, int rounds) throws MPIException {
        if (rounds <= 0 || s.communicator == null) {
            return 0;
        }
        Object quiet = s.quiet();
        try {
            long slept = 0;
            long before = org.sharp4j.coll.JitIdle.compiledMillis();
            for (int block = 1; ; block++) {
                loop(s, rounds * CALLS_PER_ROUND);
                // The calls above queued compilations; on a saturated machine the compiler threads would then compete
                // with the program's first calls (a rank compiling while its peer waits for it). Sleep while they work.
                slept += awaitCompilerQuiet(JIT_WAIT_MAX_MS, JIT_QUIET_MS);
                // Another block while this one still made the JIT compile: C2 raises its thresholds while its queue
                // is long, so the routed entry points pass them only in a later block. Every rank runs as many.
                long after = org.sharp4j.coll.JitIdle.compiledMillis();
                LOG.debug("sharp4j-mpi: warm-up block {} on {}: the JIT compiled for {} ms", block, s.name, after - before);
                int[] more = {block < BLOCKS && after != before ? 1 : 0};
                s.communicator.allreduce(more, 0, 1, org.sharp4j.Op.MAX);
                before = after;
                if (more[0] == 0) {
                    break;
                }
            }
            s.communicator.barrier();
            return slept;
        } finally {
            s.loud(quiet);
        }
    }

    /**
     * Sleeps until the JIT's total compilation time has not grown for {@code quietMs} (no
     * compilation ended in that spell), or {@code maxMs} passed; returns the milliseconds slept.
     * Without compilation-time monitoring: returns at once.
     */
    static long awaitCompilerQuiet(long maxMs, long quietMs) {
        return org.sharp4j.coll.JitIdle.await(maxMs, quietMs);
    }

    private static void loop(CommState st, int iterations) throws MPIException {
        Intracomm comm = st.mpiComm;
        boolean viaComm = AgentStatus.installed;
        int size = st.size;
        // OSU-style direct ByteBuffers: explicit LITTLE_ENDIAN (= native here) order, a send buffer flipped after
        // relative puts, a receive buffer flipped while empty (limit 0); and the same memory as typed views.
        ByteBuffer send = MPI.newByteBuffer(BIG * 8).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer recv = MPI.newByteBuffer(BIG * 8).order(ByteOrder.LITTLE_ENDIAN);
        send.position(send.capacity()).flip();
        recv.flip();
        ByteBuffer nat = MPI.newByteBuffer(BIG * 8);
        ByteBuffer natOut = MPI.newByteBuffer(BIG * 8);
        ByteBuffer big = ByteBuffer.allocateDirect(BIG * 8); // BIG_ENDIAN: Open MPI reduces its raw memory
        ByteBuffer bigOut = ByteBuffer.allocateDirect(BIG * 8);
        FloatBuffer fv = nat.asFloatBuffer();
        FloatBuffer fvOut = natOut.asFloatBuffer();
        DoubleBuffer dv = nat.asDoubleBuffer();
        DoubleBuffer dvOut = natOut.asDoubleBuffer();
        IntBuffer iv = nat.asIntBuffer();
        IntBuffer ivOut = natOut.asIntBuffer();
        LongBuffer lv = nat.asLongBuffer();
        LongBuffer lvOut = natOut.asLongBuffer();
        IntBuffer ivBig = big.asIntBuffer();
        IntBuffer ivBigOut = bigOut.asIntBuffer();
        ivOut.limit(0); // a typed receive view whose limit hides the data
        int[] ia = new int[2 * BIG];
        int[] iaOut = new int[2 * BIG];
        long[] la = new long[BIG];
        long[] laOut = new long[BIG];
        float[] fa = new float[2 * BIG];
        float[] faOut = new float[2 * BIG];
        double[] da = new double[BIG];
        double[] daOut = new double[BIG];
        DoubleBuffer heap = DoubleBuffer.wrap(new double[BIG + 2], 1, BIG).slice();
        DoubleBuffer heapOut = DoubleBuffer.wrap(new double[BIG + 2], 2, BIG).slice();
        Datatype[] types = {MPI.INT, MPI.LONG, MPI.FLOAT, MPI.DOUBLE};
        Object[] arrays = {ia, la, fa, da};
        Object[] arraysOut = {iaOut, laOut, faOut, daOut};
        Object[] views = {iv, lv, fv, dv};
        Object[] viewsOut = {ivOut, lvOut, fvOut, dvOut};
        mpi.Op[] ops = {MPI.SUM, MPI.PROD, MPI.MIN, MPI.MAX, MPI.BAND, MPI.BOR, MPI.BXOR, MPI.LAND, MPI.LOR};
        for (int i = 0; i < iterations; i++) {
            st.forgetFirstCalls(); // this round's calls take the "first call" branch too (CommState.quiet says why)
            if ((i & 7) == 0) {
                // The program's buffers are new to the duplicate cache, which the warm-up leaves empty: its miss
                // branch must be in the profile too, or C2 compiles it as a trap and the program's first call with a
                // limit-0 receive buffer throws the compiled routed path away (LogCompilation: unstable_if in
                // Forms$Whole.of, inlined into CommState.allReduce, at OsuDirect's first timed call; recompiled
                // 5,000 calls later, 45 ms on the rank's core while its peer waited 4 ms per call).
                st.whole.clear();
            }
            int root = i % size;
            int t = i & 3;
            // every call an OSU-style run makes, at one element: its hottest path
            allReduce(viaComm, comm, send, recv, 1, MPI.FLOAT, MPI.SUM);
            reduce(viaComm, comm, send, recv, 1, MPI.FLOAT, MPI.SUM, root);
            allReduce(viaComm, comm, arrays[t], arraysOut[t], 1, types[t], MPI.SUM);
            reduce(viaComm, comm, arrays[t], arraysOut[t], 1, types[t], MPI.SUM, root);
            allReduce(viaComm, comm, views[t], viewsOut[t], 1, types[t], MPI.SUM);
            if ((i & 1) == 0) {
                // past the small-copy threshold, past the engine's inline area, and 4 KiB: the bulk paths, every
                // type in turn (u, not t: when this ran at every fourth iteration t was always 0 here, only int views
                // took the bulk copies, and a program's first float view past 64 B threw the compiled copy away:
                // unstable_if in Forms.copyIn, OsuDirect typed). Every second iteration, not every fourth: with a
                // quarter of the iterations Forms.copyIn and copyOut passed C2's threshold only at the warm-up's
                // end, and copyOut was compiled during a program's calls (Deopts' C2 report, OsuDirect on float
                // views: 5 runs of 6; none in 3 after).
                int u = (i >> 4) & 3;
                int eu = u == 0 || u == 2 ? 4 : 8;
                int count = (i & 4) == 0 ? 64 / eu + 2 : (i & 8) == 0 ? 1024 / eu : BIG * 8 / eu;
                allReduce(viaComm, comm, send, recv, count, types[u], MPI.SUM);
                reduce(viaComm, comm, send, recv, count, types[u], MPI.MAX, root);
                allReduce(viaComm, comm, arrays[u], arraysOut[u], count, types[u], MPI.SUM);
                reduce(viaComm, comm, arrays[u], arraysOut[u], count, types[u], MPI.MAX, root);
                allReduce(viaComm, comm, views[u], viewsOut[u], count, types[u], MPI.SUM);
                reduce(viaComm, comm, views[u], viewsOut[u], count, types[u], MPI.MAX, root);
            }
            if ((i & 31) == 0) {
                t = (i >> 5) & 3; // every type in turn here too (i & 3 is 0)
                int count = 1 + (i >> 5) % 16;
                // in place (null send: MPI_IN_PLACE; send == recv), heap buffers, big-endian direct buffers and
                // views, an array with a direct buffer, every op on ints and longs, the floating ops on the rest
                allReduce(viaComm, comm, null, arraysOut[t], count, types[t], MPI.SUM);
                allReduce(viaComm, comm, natOut, natOut, count, types[t], MPI.SUM);
                reduce(viaComm, comm, null, arraysOut[t], count, types[t], MPI.SUM, root);
                reduce(viaComm, comm, recv, recv, count, types[t], MPI.SUM, root);
                allReduce(viaComm, comm, heap, heapOut, count, MPI.DOUBLE, MPI.SUM);
                allReduce(viaComm, comm, big, bigOut, count, types[t], MPI.SUM);
                allReduce(viaComm, comm, ivBig, ivBigOut, count, MPI.INT, MPI.SUM);
                allReduce(viaComm, comm, arrays[t], natOut, count, types[t], MPI.SUM);
                mpi.Op op = ops[(i >> 5) % (t < 2 ? ops.length : 4)];
                allReduce(viaComm, comm, arrays[t], arraysOut[t], count, types[t], op);
                reduce(viaComm, comm, send, recv, count, types[t], op, root);
                if (viaComm) {
                    comm.barrier();
                } else {
                    MpiRouter.barrier(comm);
                }
            }
        }
    }

    /**
     * {@code mpi.Comm}'s routed methods, called through handles in non-final fields: C2 does not see such a handle as
     * a constant, so it cannot inline the call into the compiled warm-up loop, and every warm-up call enters the
     * method and counts toward its own compilation. Called directly, they were inlined once the loop was compiled,
     * stopped counting, and C2 compiled them standalone only at the program's first calls (PrintCompilation:
     * {@code mpi.Comm::allReduce} 50 ms after OsuDirect's timed start, on the rank's core).
     *
     * <p>And each handle serves {@link #HANDLE_USES} calls, then a new one is looked up: a handle invoked 127 times
     * is customized (its lambda form rewritten with the handle as a constant), C2 compiles that form with the target
     * inlined, and the warm-up's calls stopped counting again after about 5,400 (PrintTieredEvents: mpi.Comm.reduce's
     * profile stuck at 5,120 invocations from the first block on, where C2's threshold was 5,000 times 1.33 while one
     * compilation was queued; 2-3 runs of 8 of OsuDirect's Reduce then compiled mpi.Comm.reduce and MpiRouter.reduce
     * among the program's first 1,000 calls, with 1-3 stalls of 2-4 ms each on both ranks; with fresh handles none of
     * 16 runs did). A handle that is never customized runs the shared form, which reads the target from the handle: a
     * call C2 does not inline. The look-ups
     * cost about 10 us each, a few hundred per warm-up. Plain fields: one warm-up at a time runs per JVM (MpiRouter),
     * and a race between two would only look a handle up twice or use one a few more times.
     */
    private static MethodHandle commAllReduce;
    private static MethodHandle commAllReduceInPlace;
    private static MethodHandle commReduce;
    private static MethodHandle commReduceInPlace;

    static {
        freshAllReduceHandles();
        freshReduceHandles();
    }
    /** Calls per handle before a fresh one: under MethodHandle's customization threshold (127 invocations). */
    static final int HANDLE_USES = 100;
    private static int allReduceUses;
    private static int reduceUses;

    private static void freshAllReduceHandles() {
        commAllReduce = handle("allReduce", Object.class, Object.class, int.class, Datatype.class, mpi.Op.class);
        commAllReduceInPlace = handle("allReduce", Object.class, int.class, Datatype.class, mpi.Op.class);
    }

    private static void freshReduceHandles() {
        commReduce = handle("reduce", Object.class, Object.class, int.class, Datatype.class, mpi.Op.class, int.class);
        commReduceInPlace = handle("reduce", Object.class, int.class, Datatype.class, mpi.Op.class, int.class);
    }

    private static MethodHandle handle(String name, Class<?>... params) {
        try {
            return MethodHandles.publicLookup().findVirtual(mpi.Comm.class, name, MethodType.methodType(void.class, params));
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("mpi.Comm." + name + " not found: not Open MPI's Java bindings?", e);
        }
    }

    private static void allReduce(boolean viaComm, Intracomm comm, Object send, Object recv, int count, Datatype type, mpi.Op op)
            throws MPIException {
        if (viaComm) {
            if (++allReduceUses >= HANDLE_USES) {
                allReduceUses = 0;
                freshAllReduceHandles();
            }
            try {
                if (send == null) {
                    commAllReduceInPlace.invokeExact((mpi.Comm) comm, recv, count, type, op);
                } else {
                    commAllReduce.invokeExact((mpi.Comm) comm, send, recv, count, type, op);
                }
            } catch (MPIException | RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        } else if (send == null) {
            MpiRouter.allReduce(comm, recv, count, type, op);
        } else {
            MpiRouter.allReduce(comm, send, recv, count, type, op);
        }
    }

    private static void reduce(boolean viaComm, Intracomm comm, Object send, Object recv, int count, Datatype type, mpi.Op op,
            int root) throws MPIException {
        if (viaComm) {
            if (++reduceUses >= HANDLE_USES) {
                reduceUses = 0;
                freshReduceHandles();
            }
            try {
                if (send == null) {
                    commReduceInPlace.invokeExact((mpi.Comm) comm, recv, count, type, op, root);
                } else {
                    commReduce.invokeExact((mpi.Comm) comm, send, recv, count, type, op, root);
                }
            } catch (MPIException | RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        } else if (send == null) {
            MpiRouter.reduce(comm, recv, count, type, op, root);
        } else {
            MpiRouter.reduce(comm, send, recv, count, type, op, root);
        }
    }
}
