package mpiapps;

import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import mpi.Datatype;
import mpi.Intracomm;
import mpi.MPI;
import mpi.MPIException;

/**
 * An OSU-style latency benchmark written as a user of Open MPI's Java bindings would (it knows
 * nothing of sharp4j): MPI_Allreduce or MPI_Reduce of MPI.FLOAT (or MPI.INT, ...) with MPI.SUM on
 * direct buffers made the way the OSU Java benchmarks make them ({@code MPI.newByteBuffer}, byte
 * order set explicitly to little endian, the send buffer filled with relative puts and flipped, the
 * receive buffer flipped while empty: limit 0), sizes doubling from {@code min} to {@code max}
 * bytes; per size {@code skip} untimed then {@code iters} timed calls, each timed alone, a barrier
 * between sizes, the average over ranks of each rank's mean (OSU's "Avg Latency(us)"), and P50 and
 * P99 as OMB's {@code -z} computes them: of each call's time averaged over the ranks (OMB 7.4's
 * {@code omb_get_stats} sums the ranks' per-iteration arrays with MPI_Reduce and divides by the
 * number of ranks). For a Reduce that mean is what a call costs the job: the root's wait and the
 * other ranks' sends together; a root alone can look fast because the others already paid (Open
 * MPI's root receives what a non-root sent eagerly in an earlier iteration). The P50 of rank 0's
 * own calls is printed too ({@code P50r0}: with root 0, the root's).
 *
 * <p>Two passes over the sizes in one process: pass 1 is what a user's run shows (its first row is
 * the first routed calls after the communicator's set-up), pass 2 the steady state. Before pass 1
 * the very first {@code first} calls at the smallest size are timed on their own (no skip): the
 * transient right after set-up. Every result is checked (the sum of the ranks' contributions is
 * exact in float for these values), so a fast wrong answer cannot pass as a result.
 *
 * <pre>
 * mpirun -np 2 java -cp test-classes:mpi.jar mpiapps.OsuDirect [allreduce|reduce] [float|int|double|long]
 *        [bytebuffer|typed|array] [min] [max] [iters] [skip] [first]
 * </pre>
 * {@code array}: the same values in arrays (for comparison). {@code typed}: the typed view ({@code asFloatBuffer()}, ...) of the same little-endian buffers.
 */
public final class OsuDirect {
    private OsuDirect() {
    }

    public static void main(String[] args) throws MPIException {
        String coll = Args.at(args, 0, "allreduce");
        String typeName = Args.at(args, 1, "float");
        String form = Args.at(args, 2, "bytebuffer");
        boolean typed = form.equals("typed");
        boolean arrays = form.equals("array");
        if (!typed && !arrays && !form.equals("bytebuffer")) {
            throw new IllegalArgumentException("form must be bytebuffer, typed or array, got " + form);
        }
        int min = Args.intAt(args, 3, 4);
        int max = Args.intAt(args, 4, 4096);
        int iters = Args.intAt(args, 5, 1000);
        int skip = Args.intAt(args, 6, 100);
        int first = Args.intAt(args, 7, 1000);
        boolean reduce = Args.isReduce(coll);

        MPI.Init(args);
        Intracomm w = MPI.COMM_WORLD;
        int rank = w.getRank();
        int size = w.getSize();
        Datatype type;
        int es;
        switch (typeName) {
            case "int": type = MPI.INT; es = 4; break;
            case "long": type = MPI.LONG; es = 8; break;
            case "double": type = MPI.DOUBLE; es = 8; break;
            case "float": type = MPI.FLOAT; es = 4; break;
            default: throw new IllegalArgumentException("type must be int, long, float or double, got " + typeName);
        }
        if (min < es) {
            min = es;
        }
        ByteBuffer send = MPI.newByteBuffer(max).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer recv = MPI.newByteBuffer(max).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < max / es; i++) {
            put(send, typeName, i, rank);
        }
        send.flip();
        recv.flip(); // limit 0, as a receive buffer that was never written
        Object sb = typed ? view(send, typeName) : arrays ? array(send, typeName) : send;
        Object rb = typed ? view(recv, typeName) : arrays ? array(recv, typeName) : recv;
        double[] t = new double[Math.max(iters, first)];
        long[] starts = new long[t.length]; // each call's start, for -Dosudirect.stalls

        if (STALL_US > 0) {
            // the clocks' offset, taken before the set-up: the management classes this loads, and what the JIT compiles
            // for them, must not run among the first timed calls that the diagnostics are there to show
            uptimeMinusNanoMs = java.lang.management.ManagementFactory.getRuntimeMXBean().getUptime() - System.nanoTime() / 1_000_000;
        }
        // java.time's clock path, run once before the barrier: its first call (class initialisation, interpreted code)
        // took 150-300 us, and taken right after the barrier it delayed the first timed call of a rank that had not
        // called it yet (a JVM that logged nothing: with the agent, rank 1) and the root's first Reduce with it
        java.time.Instant.now();
        w.barrier(); // the communicator's first collective (with the agent: sharp4j's set-up)
        timedStart = java.time.Instant.now();
        long timedStartNanos = System.nanoTime();
        // the first calls after set-up, none skipped
        int c0 = min / es;
        for (int i = 0; i < first; i++) {
            long t0 = System.nanoTime();
            call(w, reduce, sb, rb, c0, type);
            t[i] = (System.nanoTime() - t0) / 1e3;
            starts[i] = t0;
        }
        check(result(rb, recv, typeName), typeName, c0, rank, reduce, size);
        stalls(rank, 0, min, t, starts, first);
        double firstMean = mean(t, first, w);
        double firstP50r0 = median(t, first);
        // Each row's per-call times are kept and OMB's tails computed after the last row: their
        // exchange (an allReduce of thousands of doubles, which the agent routes) between the rows
        // made the next row's first calls through the agent 3x slower (the first row's P50 3x its
        // steady state, against 1.0x without it).
        java.util.List<double[]> times = new java.util.ArrayList<>();
        java.util.List<String> rows = new java.util.ArrayList<>();
        times.add(Arrays.copyOf(t, first));
        for (int pass = 1; pass <= 2; pass++) {
            for (int bytes = min; bytes <= max; bytes *= 2) {
                int count = bytes / es;
                for (int i = 0; i < skip; i++) {
                    call(w, reduce, sb, rb, count, type);
                }
                w.barrier();
                long a0 = allocated();
                for (int i = 0; i < iters; i++) {
                    long t0 = System.nanoTime();
                    call(w, reduce, sb, rb, count, type);
                    t[i] = (System.nanoTime() - t0) / 1e3;
                    starts[i] = t0;
                }
                double perCall = (allocated() - a0) / (double) iters;
                stalls(rank, pass, bytes, t, starts, iters);
                check(result(rb, recv, typeName), typeName, count, rank, reduce, size);
                double avg = mean(t, iters, w);
                times.add(Arrays.copyOf(t, iters));
                rows.add(String.format("%-6d %10d %12.3f %%12.3f %%12.3f %12.3f %10.1f", pass, bytes, avg, median(t, iters), perCall));
                w.barrier();
            }
        }
        double firstP50 = tails(times.get(0), w)[0];
        if (rank == 0) {
            System.out.printf("# OsuDirect %s MPI.%s %s, %d ranks, iterations %d, skip %d%n", coll, typeName.toUpperCase(),
                    typed ? "typed direct view (" + sb.getClass().getSimpleName() + ")"
                            : arrays ? "arrays" : "direct ByteBuffer (LITTLE_ENDIAN, limit 0)",
                    size, iters, skip);
            System.out.printf("first %d calls at %d B: avg %.3f us p50 %.3f us%n", first, min, firstMean, firstP50);
            System.out.printf("# first %d calls, rank 0 alone: p50 %.3f us%n", first, firstP50r0);
            System.out.printf("%-6s %10s %12s %12s %12s %12s %10s%n", "pass", "Size", "Avg(us)", "P50(us)", "P99(us)", "P50r0(us)",
                    "B/call");
        }
        for (int r = 0; r < rows.size(); r++) {
            double[] tails = tails(times.get(r + 1), w);
            if (rank == 0) {
                System.out.println(String.format(rows.get(r), tails[0], tails[1]));
            }
        }
        printStalls(rank, timedStartNanos);
        MPI.Finalize();
    }

    /**
     * With -Dosudirect.stalls=US (diagnostics): the uptime at which the timed calls start, then per table row every
     * call of this rank slower than US microseconds (index, microseconds, JVM uptime at its start) on stderr, to set
     * against -XX:+PrintCompilation or LogCompilation timestamps. Kept as numbers and printed after the last row:
     * formatting between the rows loaded and compiled formatting code among the next row's calls.
     */
    private static final double STALL_US = Double.parseDouble(System.getProperty("osudirect.stalls", "0"));
    /** When the timed calls began (after the set-up), for {@link Deopts}: set by the main thread, read by JFR's. */
    static volatile java.time.Instant timedStart;
    /** JVM uptime minus System.nanoTime(), in ms (with -Dosudirect.stalls). */
    private static long uptimeMinusNanoMs;
    /** Per row with stalls: pass, size, count, total us, then up to 12 (index, us, uptime ms). */
    private static final java.util.List<double[]> STALLS = new java.util.ArrayList<>();

    private static void stalls(int rank, int pass, int bytes, double[] t, long[] starts, int n) {
        if (STALL_US <= 0) {
            return;
        }
        double[] row = new double[4 + 3 * 12];
        int k = 0;
        double sum = 0;
        for (int i = 0; i < n; i++) {
            if (t[i] > STALL_US) {
                if (k < 12) {
                    row[4 + 3 * k] = i;
                    row[5 + 3 * k] = t[i];
                    row[6 + 3 * k] = starts[i] / 1_000_000 + uptimeMinusNanoMs;
                }
                k++;
                sum += t[i];
            }
        }
        if (k > 0) {
            row[0] = pass;
            row[1] = bytes;
            row[2] = k;
            row[3] = sum;
            STALLS.add(row);
        }
    }

    private static void printStalls(int rank, long timedStart) {
        if (STALL_US <= 0) {
            return;
        }
        StringBuilder b = new StringBuilder(String.format("rank %d: timed calls start at uptime %d ms%n", rank, timedStart / 1_000_000 + uptimeMinusNanoMs));
        for (double[] row : STALLS) {
            b.append(String.format("stalls rank %d pass %.0f size %.0f: %.0f calls > %.0f us, %.0f us in all:", rank, row[0], row[1], row[2], STALL_US, row[3]));
            for (int j = 0; j < Math.min(12, (int) row[2]); j++) {
                b.append(String.format(" #%.0f:%.0f@%.0fms", row[4 + 3 * j], row[5 + 3 * j], row[6 + 3 * j]));
            }
            b.append(System.lineSeparator());
        }
        System.err.print(b);
    }

    private static void call(Intracomm w, boolean reduce, Object s, Object r, int count, Datatype type) throws MPIException {
        if (reduce) {
            w.reduce(s, r, count, type, MPI.SUM, 0);
        } else {
            w.allReduce(s, r, count, type, MPI.SUM);
        }
    }

    /** Bytes this thread allocated so far (HotSpot's counter; -1 where there is none). */
    private static long allocated() {
        java.lang.management.ThreadMXBean b = java.lang.management.ManagementFactory.getThreadMXBean();
        if (b instanceof com.sun.management.ThreadMXBean) {
            return ((com.sun.management.ThreadMXBean) b).getCurrentThreadAllocatedBytes();
        }
        return -1;
    }

    private static double median(double[] t, int n) {
        double[] s = Arrays.copyOf(t, n);
        Arrays.sort(s);
        return s[n / 2];
    }

    /**
     * OMB's {@code -z} P50 and P99 (rank 0's result; 7.4's {@code omb_get_stats} and
     * {@code omb_calculate_tail_lat}): each call's time summed over the ranks, sorted, the element at
     * {@code round(n p / 100) - 1}, divided by the number of ranks.
     */
    private static double[] tails(double[] t, Intracomm w) throws MPIException {
        int n = t.length;
        double[] sum = new double[n];
        w.allReduce(t, sum, n, MPI.DOUBLE, MPI.SUM);
        Arrays.sort(sum);
        int size = w.getSize();
        return new double[] {sum[(int) Math.round(n * 50 / 100.0) - 1] / size, sum[(int) Math.round(n * 99 / 100.0) - 1] / size};
    }

    /** OSU's Avg Latency: the mean over ranks of each rank's mean. */
    private static double mean(double[] t, int n, Intracomm w) throws MPIException {
        double s = 0;
        for (int i = 0; i < n; i++) {
            s += t[i];
        }
        double[] in = {s / n};
        double[] out = new double[1];
        w.allReduce(in, out, 1, MPI.DOUBLE, MPI.SUM);
        return out[0] / w.getSize();
    }

    /** An array of the type holding the buffer's values (the "array" form: the same data, as arrays). */
    private static Object array(ByteBuffer b, String type) {
        ByteBuffer whole = b.duplicate().clear().order(b.order());
        switch (type) {
            case "int": { int[] a = new int[whole.capacity() / 4]; whole.asIntBuffer().get(a); return a; }
            case "long": { long[] a = new long[whole.capacity() / 8]; whole.asLongBuffer().get(a); return a; }
            case "double": { double[] a = new double[whole.capacity() / 8]; whole.asDoubleBuffer().get(a); return a; }
            default: { float[] a = new float[whole.capacity() / 4]; whole.asFloatBuffer().get(a); return a; }
        }
    }

    /** The receive side as a little-endian ByteBuffer, for the check. */
    private static ByteBuffer result(Object r, ByteBuffer recv, String type) {
        if (r instanceof Buffer) {
            return recv;
        }
        ByteBuffer b = ByteBuffer.allocate(recv.capacity()).order(recv.order());
        switch (type) {
            case "int": b.asIntBuffer().put((int[]) r); break;
            case "long": b.asLongBuffer().put((long[]) r); break;
            case "double": b.asDoubleBuffer().put((double[]) r); break;
            default: b.asFloatBuffer().put((float[]) r); break;
        }
        return b;
    }

    private static Buffer view(ByteBuffer b, String type) {
        ByteBuffer whole = b.duplicate().clear().order(b.order()); // a view of the whole memory, in the buffer's order
        switch (type) {
            case "int": return whole.asIntBuffer();
            case "long": return whole.asLongBuffer();
            case "double": return whole.asDoubleBuffer();
            default: return whole.asFloatBuffer();
        }
    }

    private static void put(ByteBuffer b, String type, int i, int rank) {
        long v = i % 7 + rank + 1L;
        switch (type) {
            case "int": b.putInt((int) v); break;
            case "long": b.putLong(v); break;
            case "double": b.putDouble(v); break;
            default: b.putFloat(v); break;
        }
    }

    /** recv's first count elements (absolute, whatever its limit) must be the sum over ranks of send's. */
    private static void check(ByteBuffer recv, String type, int count, int rank, boolean reduce, int size) {
        if (reduce && rank != 0) {
            return;
        }
        ByteBuffer r = recv.duplicate().clear().order(recv.order());
        for (int i = 0; i < count; i++) {
            long want = 0;
            for (int q = 0; q < size; q++) {
                want += i % 7 + q + 1L;
            }
            double got;
            switch (type) {
                case "int": got = r.getInt(4 * i); break;
                case "long": got = r.getLong(8 * i); break;
                case "double": got = r.getDouble(8 * i); break;
                default: got = r.getFloat(4 * i); break;
            }
            if (got != want) {
                throw new IllegalStateException("rank " + rank + ": element " + i + " of " + count + " is " + got + ", want " + want);
            }
        }
    }
}
