package org.sharp4j.coll;

/**
 * Whether this rank writes what other ranks read next (the long algorithms' slot copies and folded
 * tiles) with streaming (non-temporal) stores or ordinary ones: chosen per rank, per call, from how
 * long this rank's own calls took each way.
 *
 * <h2>Why it cannot be fixed in advance</h2>
 * Which is faster depends on where the ranks' cores share a cache. Ranks on different cores (the
 * usual case on a cluster, and on this project's 2-vCPU VM most of the time) read each other's
 * freshly written lines cache to cache, one slow transfer per line; streaming stores send the
 * lines to memory instead, which every reader then streams at memory bandwidth: that is why the
 * pipelined and direct algorithms stream from {@link Payload#STREAM_MIN_BYTES}. Ranks on the two
 * hardware threads of one core share its L1 and L2: an ordinary store leaves the line where the
 * other reads it at cache speed, and streaming it out to memory only to read it back costs 2x.
 * This VM's hypervisor moves its two vCPUs between those two placements every few minutes (a C
 * ping-pong of one line between two threads pinned to the two vCPUs: 24-43 ns per exchange in one,
 * 230-250 ns in the other; the "fast and slow phases" of earlier notes). OSU port, 2 ranks,
 * Allreduce 64 KiB-16 MiB, P50 against Open MPI Java in the same processes, one run each, the
 * placement read from that ping-pong before and after: shared core, streaming 0.69-0.99, ordinary
 * 0.30-0.46; separate cores, streaming 0.40-0.51, ordinary 0.81-1.32. A guest cannot see the
 * placement (its topology shows two cores either way), so it is measured where it matters.
 *
 * <h2>How</h2>
 * Per size class (powers of two from {@link Payload#STREAM_MIN_BYTES}) this rank keeps the time
 * per byte of its last three calls with each kind of store, and takes their median as the kind's
 * cost (so one descheduled call, however long, cannot flip the choice); a class's first two calls
 * stream and the next two take ordinary stores, which gives both kinds a cost ({@link #cost}). A call takes the kind
 * with the lower cost, and every {@link #EXPLORE}th call of a class the other one, so that a
 * change of placement shows after two explorations: about {@code 2 x EXPLORE} calls. The cost in
 * a steady placement is that one call in {@code EXPLORE} takes the slower kind (the P50 does not
 * move; the mean by a few percent).
 *
 * <h2>Why each rank alone</h2>
 * The kind of store changes no value a reader sees (the same bytes, published by the same release
 * store of the same flag after a fence: {@link NativeKernels#copyStreaming}), so the ranks of a
 * call need not agree, and no message or shared word carries the choice. Each rank's call time
 * includes its peers' reads of its lines through the flags it waits for, so the rank that writes
 * is the one that feels the cost of how it wrote.
 *
 * <h2>Who touches it</h2>
 * Only the thread that runs this engine's collectives (the engine's calls are sequential per
 * rank); no synchronisation. Property {@code sharp4j.stores} = {@code auto} (default),
 * {@code streaming} (the behaviour before this class: streaming from the threshold) or
 * {@code ordinary}.
 */
final class StoreChoice {
    /** {@code sharp4j.stores}: choose per call. */
    static final String AUTO = "auto";
    /** {@code sharp4j.stores}: streaming stores from {@link Payload#STREAM_MIN_BYTES}, always. */
    static final String STREAMING = "streaming";
    /** {@code sharp4j.stores}: ordinary stores, always. */
    static final String ORDINARY = "ordinary";

    /** One call in this many of a size class tries the kind of store that is not the faster one. */
    static final int EXPLORE = 32;

    private static final int LOG_MIN = Long.numberOfTrailingZeros(Payload.STREAM_MIN_BYTES);
    private static final int CLASSES = 63 - LOG_MIN + 1;

    private final boolean auto;
    /** For a fixed mode: streaming ({@code streaming}) or not ({@code ordinary}). */
    private final boolean always;
    /** Nanoseconds per byte of the last three calls with streaming stores, per class: [class * 3 + i], ring by {@link #nStreaming}. */
    private final double[] lastStreaming = new double[CLASSES * 3];
    private final double[] lastOrdinary = new double[CLASSES * 3];
    /** Calls recorded per class with each kind (the ring's next index is this mod 3). */
    private final long[] nStreaming = new long[CLASSES];
    private final long[] nOrdinary = new long[CLASSES];
    private final int[] calls = new int[CLASSES];

    /** @param mode {@code auto}, {@code streaming} or {@code ordinary} (as {@code Config} checked it) */
    StoreChoice(String mode) {
        if (!(AUTO.equals(mode) || STREAMING.equals(mode) || ORDINARY.equals(mode))) {
            throw new IllegalArgumentException("sharp4j.stores: " + mode);
        }
        this.auto = AUTO.equals(mode);
        this.always = STREAMING.equals(mode);
    }

    /** Calls recorded so far, of every class and kind (tests). */
    long recorded() {
        long n = 0;
        for (int c = 0; c < CLASSES; c++) {
            n += nStreaming[c] + nOrdinary[c];
        }
        return n;
    }

    /** Whether a call of {@code bytes} writes what others read next with streaming stores. */
    boolean streaming(long bytes) {
        if (bytes < Payload.STREAM_MIN_BYTES) {
            return false;
        }
        if (!auto) {
            return always;
        }
        final int c = sizeClass(bytes);
        final boolean better = cost(lastStreaming, c) <= cost(lastOrdinary, c);
        return ++calls[c] % EXPLORE == 0 ? !better : better;
    }

    /** A call of {@code bytes} that {@link #streaming} decided took {@code nanos} from its start to its end. */
    void record(long bytes, boolean streamed, long nanos) {
        if (!auto || bytes < Payload.STREAM_MIN_BYTES || nanos <= 0) {
            return;
        }
        final int c = sizeClass(bytes);
        final double x = (double) nanos / bytes;
        if (streamed) {
            lastStreaming[c * 3 + (int) (nStreaming[c]++ % 3)] = x;
        } else {
            lastOrdinary[c * 3 + (int) (nOrdinary[c]++ % 3)] = x;
        }
    }

    /**
     * The median of a class's last three samples, the ones not yet taken counting as 0: so a class's
     * first two calls stream (streaming's cost stays 0 until it has two samples), the next two take
     * ordinary stores, and from then the kinds compete, with no branch on how many samples there
     * are. Why no such branch: C2 compiles a branch the profile never saw taken as a trap, and the
     * first calls of a class are rare; the heating runs up to about 1 MiB, so a program's first
     * call of a larger class (a 16 MiB Reduce, say) threw away the compiled algorithm this is
     * inlined into (LogCompilation: unstable_if in {@code streaming}, inlined into {@code
     * PipelinedAlgorithm.run}), and while the 4 ranks' JVMs recompiled it on 2 CPUs their calls
     * took 30-80 ms against a median of 8.
     */
    private static double cost(double[] last, int c) {
        final double a = last[c * 3];
        final double b = last[c * 3 + 1];
        final double d = last[c * 3 + 2];
        return Math.max(Math.min(a, b), Math.min(Math.max(a, b), d));
    }

    private static int sizeClass(long bytes) {
        return Math.min(CLASSES - 1, 63 - Long.numberOfLeadingZeros(bytes) - LOG_MIN);
    }
}
