import java.io.RandomAccessFile;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * The flat exchange's Reduce with calls back to back (what {@code mpiapps.BackToBack reduce} and OSU's Java
 * OSUReduce make), in plain Java with nothing of sharp4j around it: what the JVM reaches with sharp4j's
 * protocol and layout, the floor for sharp4j's own time per call in the same minutes. The C model
 * ({@code shm-small-floor.c reduce}) is the same protocol without the JVM.
 *
 * <p>Two processes over one shared file laid out as a ShmLevel of two members: a 4 KiB header, then 32 sets
 * of a 128-byte control block per member (state at +0, signature at +8, status at +16, up to 40 bytes of data
 * at +24), then a 128-byte progress line per member. Call s uses set s mod 32. The leaf (rank 1): the reuse
 * gate (the root arrived at s - 31, read only when not already known), its floats into its line, signature,
 * status, the state (release), its progress word (the sequence number, as Engine.progressSeq), and go. The
 * root (rank 0): signature, status and state (no data: nobody reads it), its progress word, then the leaf's
 * state (acquire, PAUSE between polls), signature and status compared with its own (held, not read back),
 * the sum of the two inputs in member order, and its done word (as Engine's P_DONE). Prints the root's time
 * per call in each of 10 rounds of CALLS calls (untimed per call) and their median.
 *
 * <pre>
 *   javac -d /tmp/jrf osu-bench/bench/JavaReduceFloor.java
 *   f=/dev/shm/jrf-$$; taskset -c 1 java -cp /tmp/jrf JavaReduceFloor 1 $f 16 2000000 &amp;
 *   taskset -c 0 java -cp /tmp/jrf JavaReduceFloor 0 $f 16 2000000; wait
 * </pre>
 * (ranks 0 and 1, the shared file: a new name each run, since a file left by a killed run still holds its
 * states (rank 0 removes it at the end, also when it gives up: a wait for the peer
 * ends after 10 s with an exception naming it), BYTES 4..40 (a multiple of 4), CALLS per
 * round, and optionally STORES: that many extra plain stores per call into the process's own memory, on both
 * ranks). Measured 2026-12-07 (this VM in its slow phase, the C ping-pong of one line 0.44-0.60 us), 16 B,
 * alternating with {@code mpiapps.BackToBack reduce 16 20000 20}: this program 0.052-0.058 us per call, sharp4j
 * 0.099-0.197 us (Open MPI Java 0.255-0.270). With 16, 32, 64 and 96 extra stores per call 0.062, 0.116, 0.199
 * and 0.268 (0.059 without): every call has one store that waits for a line's ownership, stores leave the core
 * in order, and the more of them a call makes the fewer calls fit in the store queue meanwhile. README,
 * "Benchmarks" (the paragraph on mpiapps.BackToBack).
 */
public final class JavaReduceFloor {
    private static final VarHandle LONG = MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.nativeOrder());
    private static final VarHandle FLOAT = MethodHandles.byteBufferViewVarHandle(float[].class, ByteOrder.nativeOrder());
    private static final int HEADER = 4096;
    private static final int SETS = 32;
    private static final int CTL = 128;
    private static final int PROGRESS = HEADER + SETS * 2 * CTL;
    private static final int SIZE = PROGRESS + 2 * CTL;

    private final ByteBuffer b;
    private final int me;
    private final int peer;
    private final int n;
    private final long sig;
    private final float[] in;
    private final float[] out;
    /** Extra plain stores per call into this process's own memory (see the class comment), and where they go. */
    private final int stores;
    private final long[] scratch = new long[64];
    private long seq;
    private long known;

    private JavaReduceFloor(ByteBuffer b, int me, int bytes, int stores) {
        this.b = b;
        this.stores = stores;
        this.me = me;
        this.peer = 1 - me;
        this.n = bytes / 4;
        this.sig = 0x5157 + bytes;
        this.in = new float[n];
        this.out = new float[n];
        for (int i = 0; i < n; i++) {
            in[i] = me + i;
        }
    }

    private static int ctl(int set, int m) {
        return HEADER + (set * 2 + m) * CTL;
    }

    /** Waits for the peer's word; gives up after 10 s (the peer died or was never started) naming it. */
    private long await(int off, long target) {
        long v;
        long start = 0;
        for (int i = 1; (v = (long) LONG.getAcquire(b, off)) < target; i++) {
            Thread.onSpinWait();
            if ((i & 0xFFFF) == 0) {
                long now = System.nanoTime();
                if (start == 0) {
                    start = now;
                } else if (now - start > 10_000_000_000L) {
                    throw new IllegalStateException("rank " + me + ": rank " + peer + " did not reach call " + target
                            + " within 10 s (not started, or gone)");
                }
            }
        }
        return v;
    }

    private void call() {
        long s = ++seq;
        for (int i = 0; i < stores; i++) {
            scratch[(int) (s + 13 * i) & 63] = i; // scattered: C2 makes no vector stores of it
        }
        int set = (int) s & (SETS - 1);
        if (s >= SETS && known < s - SETS + 1) {
            known = await(ctl((int) (s - SETS + 1) & (SETS - 1), peer), s - SETS + 1);
        }
        int c = ctl(set, me);
        if (me == 1) {
            for (int i = 0; i < n; i++) {
                FLOAT.set(b, c + 24 + 4 * i, in[i]);
            }
        }
        LONG.set(b, c + 8, sig);
        LONG.set(b, c + 16, 0L);
        LONG.setRelease(b, c, s);
        LONG.setRelease(b, PROGRESS + me * CTL + 8, s);
        if (me == 1) {
            return;
        }
        int p = ctl(set, peer);
        await(p, s);
        if ((long) LONG.get(b, p + 8) != sig || (long) LONG.get(b, p + 16) != 0) {
            throw new IllegalStateException("call " + s + ": the leaf's signature or status differs");
        }
        for (int i = 0; i < n; i++) {
            out[i] = in[i] + (float) FLOAT.get(b, p + 24 + 4 * i);
        }
        LONG.setRelease(b, PROGRESS + 32, s);
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 4 && args.length != 5) {
            throw new IllegalArgumentException("usage: JavaReduceFloor RANK(0|1) FILE BYTES(4..40) CALLS [STORES]");
        }
        int me = Integer.parseInt(args[0]);
        Path file = Path.of(args[1]);
        int bytes = Integer.parseInt(args[2]);
        int calls = Integer.parseInt(args[3]);
        int stores = args.length > 4 ? Integer.parseInt(args[4]) : 0;
        if (me != 0 && me != 1 || bytes < 4 || bytes > 40 || bytes % 4 != 0 || calls < 1 || stores < 0) {
            throw new IllegalArgumentException("rank 0 or 1, BYTES 4..40 and a multiple of 4, CALLS positive, STORES >= 0");
        }
        ByteBuffer b;
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.setLength(SIZE);
            b = f.getChannel().map(FileChannel.MapMode.READ_WRITE, 0, SIZE).order(ByteOrder.nativeOrder());
        }
        JavaReduceFloor r = new JavaReduceFloor(b, me, bytes, stores);
        double[] perCall = new double[10];
        try {
            for (int round = 0; round < perCall.length; round++) {
                long t0 = System.nanoTime();
                for (int i = 0; i < calls; i++) {
                    r.call();
                }
                perCall[round] = (System.nanoTime() - t0) / 1e3 / calls;
            }
        } finally {
            if (me == 0) {
                Files.deleteIfExists(file); // also when the peer never came (the wait's exception)
            }
        }
        if (me == 0) {
            for (int i = 0; i < r.n; i++) {
                if (r.out[i] != 1 + 2 * i) {
                    throw new IllegalStateException("element " + i + ": " + r.out[i] + ", expected " + (1 + 2 * i));
                }
            }
            System.out.printf("JavaReduceFloor %d B, %d extra stores: the root's us per call by round %s; median %.3f%n", bytes, stores,
                    Arrays.toString(Arrays.stream(perCall).map(x -> Math.round(x * 1000) / 1000.0).toArray()), median(perCall));
        }
    }

    private static double median(double[] x) {
        double[] s = x.clone();
        Arrays.sort(s);
        return (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }
}
