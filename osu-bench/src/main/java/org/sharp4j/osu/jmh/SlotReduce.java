package org.sharp4j.osu.jmh;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
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
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.coll.Reductions;

/**
 * The reduction kernel alone: {@code dst = dst op src} ({@link Reductions#combine}) over two direct
 * native-order buffers, as the shared-memory levels run it on slots. {@code count} spans one element,
 * an odd count, a cache line's worth, a few KiB and past a 64 KiB slot; DOUBLE SUM is the floating
 * point path, INT BXOR the integer/bitwise one. ns/op is for one combine of {@code count} elements.
 *
 * <p>Which kernel form runs is decided once per JVM ({@code org.sharp4j.coll.RawMemory}): raw
 * addresses on JDK 17-21, VarHandles from JDK 22; compare them on one JDK with
 * {@code -jvmArgsAppend -Dsharp4j.kernels=varhandle}. GB/s = 3 x count x size / (ns/op).
 *
 * <p>The destination keeps accumulating across calls (DOUBLE SUM of small integers stays exact and
 * finite for far longer than any run; INT BXOR toggles), and it is off-heap memory, so the JIT
 * cannot drop the stores.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class SlotReduce {
    @Param({"1", "5", "64", "512", "4096", "131072"})
    public int count;

    /** TYPE:OP pairs (not a cross product: MPI defines BXOR only on integers). */
    @Param({"DOUBLE:SUM", "DOUBLE:MAX", "FLOAT:SUM", "INT:SUM", "INT:BXOR", "LONG:SUM", "LONG:LAND"})
    public String typeOp;

    private DataType type;
    private Op op;
    private ByteBuffer dst;
    private ByteBuffer src;
    /** Byte offsets of the operands: slot-like, one 128-byte line in, so that offset arithmetic is exercised. */
    private static final int OFF = 128;

    @Setup
    public void setup() {
        String[] p = typeOp.split(":");
        type = DataType.valueOf(p[0]);
        op = Op.valueOf(p[1]);
        if (!op.validFor(type)) {
            throw new IllegalArgumentException(op + " is not defined for " + type);
        }
        int bytes = OFF + count * type.size;
        dst = ByteBuffer.allocateDirect(bytes).order(ByteOrder.nativeOrder());
        src = ByteBuffer.allocateDirect(bytes).order(ByteOrder.nativeOrder());
        for (int i = 0; i < count; i++) {
            int at = OFF + i * type.size;
            if (type == DataType.DOUBLE) {
                dst.putDouble(at, i % 7);
                src.putDouble(at, 1 + i % 3);
            } else {
                dst.putInt(at, i * 0x9E3779B9);
                src.putInt(at, i ^ 0x5bd1e995);
            }
        }
    }

    @Benchmark
    public void combine() {
        Reductions.combine(type, op, dst, OFF, src, OFF, count);
    }

    /**
     * The bar: a plain copy of the same bytes ({@code ByteBuffer.put(int, ByteBuffer, int, int)},
     * i.e. memcpy). A combine moves 3 x count x size bytes (two reads, one write), a copy 2 x.
     */
    @Benchmark
    public void copy() {
        dst.put(OFF, src, OFF, count * type.size);
    }
}
