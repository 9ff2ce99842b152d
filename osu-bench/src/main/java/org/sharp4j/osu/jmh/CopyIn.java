package org.sharp4j.osu.jmh;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The copy into a slot, as {@code org.sharp4j.coll.Payload.copyIn} does it: a user's {@code double[]}
 * into a direct native-order segment through a cached {@link DoubleBuffer} view's absolute bulk put
 * ({@code put(int, double[], int, int)}), and a user's direct ByteBuffer through
 * {@code ByteBuffer.put(int, ByteBuffer, int, int)}. Both are Java 16+ absolute bulk operations: no
 * position changes, no views created per call. The destination offset is one 128-byte line into the
 * segment, like a slot's. {@code bytes}: one double, a page, a 64 KiB slot.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class CopyIn {
    private static final int OFF_BYTES = 128;

    @Param({"8", "4096", "65536"})
    public int bytes;

    private double[] array;
    private ByteBuffer userBuffer;
    private ByteBuffer segment;
    private DoubleBuffer segmentDoubles;
    private int doubles;

    @Setup
    public void setup() {
        doubles = bytes / Double.BYTES;
        array = new double[doubles];
        for (int i = 0; i < doubles; i++) {
            array[i] = i * 0.5;
        }
        userBuffer = ByteBuffer.allocateDirect(bytes).order(ByteOrder.nativeOrder());
        userBuffer.asDoubleBuffer().put(array);
        segment = ByteBuffer.allocateDirect(OFF_BYTES + bytes).order(ByteOrder.nativeOrder());
        segmentDoubles = segment.asDoubleBuffer();
    }

    /** double[] -> segment: DoubleBuffer absolute bulk put on a view made once (the array path of copyIn). */
    @Benchmark
    public DoubleBuffer arrayToDoubleView() {
        return segmentDoubles.put(OFF_BYTES / Double.BYTES, array, 0, doubles);
    }

    /** direct ByteBuffer -> segment: ByteBuffer absolute bulk put (the ByteBuffer path of copyIn). */
    @Benchmark
    public ByteBuffer bufferToBuffer() {
        return segment.put(OFF_BYTES, userBuffer, 0, bytes);
    }
}
