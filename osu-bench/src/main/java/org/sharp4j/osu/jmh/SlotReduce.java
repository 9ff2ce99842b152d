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
 * native-order buffers, as the shared-memory levels run it on slots. {@code bytes} is the size of
 * one operand: a few elements (the scalar path), the size where staging starts, 1 KiB (one
 * staged block or less), 16 KiB, a 64 KiB slot, 1 MiB (past L2). ns/op is for one combine of
 * {@code bytes / size} elements; ns per element = ns/op / count; GB/s = 3 x bytes / (ns/op)
 * (two reads and one write), next to {@link #copy} (one read and one write: 2 x bytes / ns).
 *
 * <p>{@code kernels} picks the form, through {@code -Dsharp4j.kernels} set in {@link #setup}
 * before the kernels' classes initialise (JMH forks a JVM per parameter set, so keep
 * {@code -f} at 1 or more): {@code auto} is the default (the native kernels from 2 KiB where the
 * jar has them, {@code org.sharp4j.coll.NativeKernels}), {@code java} the Java kernels that serve
 * without them (staged where {@code org.sharp4j.coll.Staging.pays}: 4-byte types from 2 KiB, double
 * MIN/MAX from 16 KiB; the scalar loops elsewhere), {@code scalar} the scalar loops alone (raw
 * addresses on JDK 17-21, VarHandles from JDK 22), so one run gives all three and their ratios.
 * On a shared machine wall-clock ns/op swing by several times between forks; compare ratios of
 * neighbouring forks, or measure CPU time.
 *
 * <p>The destination keeps accumulating across calls (DOUBLE SUM of small integers stays exact and
 * finite for far longer than any run; INT BXOR toggles), and it is off-heap memory, so the JIT
 * cannot drop the stores. Every op of every type: {@code -p typeOp=FLOAT:MIN,...} selects.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(1)
public class SlotReduce {
    @Param({"1024", "16384", "65536", "1048576"})
    public int bytes;

    /** TYPE:OP pairs (not a cross product: MPI defines the bitwise and logical ops only on integers). */
    @Param({"INT:SUM", "INT:PROD", "INT:MIN", "INT:MAX", "INT:BAND", "INT:BOR", "INT:BXOR", "INT:LAND", "INT:LOR",
        "LONG:SUM", "LONG:PROD", "LONG:MIN", "LONG:MAX", "LONG:BAND", "LONG:BOR", "LONG:BXOR", "LONG:LAND", "LONG:LOR",
        "FLOAT:SUM", "FLOAT:PROD", "FLOAT:MIN", "FLOAT:MAX", "DOUBLE:SUM", "DOUBLE:PROD", "DOUBLE:MIN", "DOUBLE:MAX"})
    public String typeOp;

    /** {@code auto} (native where loaded), {@code java} (staged where it pays) or {@code scalar}; see the class comment. */
    @Param({"auto", "java", "scalar"})
    public String kernels;

    private DataType type;
    private Op op;
    private ByteBuffer dst;
    private ByteBuffer src;
    /** The second destination of {@link #combineTwo} (a user's output buffer). */
    private ByteBuffer out;
    /** Byte offsets of the operands: slot-like, one 128-byte line in, so that offset arithmetic is exercised. */
    private static final int OFF = 128;

    private int count;

    @Setup
    public void setup() {
        System.setProperty("sharp4j.kernels", kernels);
        String[] p = typeOp.split(":");
        type = DataType.valueOf(p[0]);
        op = Op.valueOf(p[1]);
        if (!op.validFor(type)) {
            throw new IllegalArgumentException(op + " is not defined for " + type);
        }
        if (bytes % type.size != 0) {
            throw new IllegalArgumentException(bytes + " bytes is not a whole number of " + type);
        }
        count = bytes / type.size;
        dst = ByteBuffer.allocateDirect(OFF + bytes).order(ByteOrder.nativeOrder());
        src = ByteBuffer.allocateDirect(OFF + bytes).order(ByteOrder.nativeOrder());
        out = ByteBuffer.allocateDirect(OFF + bytes).order(ByteOrder.nativeOrder());
        for (int i = 0; i < count; i++) {
            int at = OFF + i * type.size;
            if (type == DataType.DOUBLE) {
                dst.putDouble(at, i % 7);
                src.putDouble(at, 1 + i % 3);
            } else if (type == DataType.FLOAT) {
                dst.putFloat(at, i % 7);
                src.putFloat(at, 1 + i % 3);
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
     * The pipelined algorithm's tile owner: {@code dst = dst op src} written to {@code dst} and to a
     * second buffer (its own output) from the same staged blocks; moves 4 x bytes (two reads, two
     * writes): GB/s = 4 x bytes / (ns/op).
     */
    @Benchmark
    public void combineTwo() {
        Reductions.combine(type, op, dst, OFF, out, OFF, dst, OFF, src, OFF, count);
    }

    /**
     * The bar: a plain copy of the same bytes ({@code ByteBuffer.put(int, ByteBuffer, int, int)},
     * i.e. memcpy). A combine moves 3 x bytes (two reads, one write), a copy 2 x. It depends on
     * {@code bytes} only: run it with one {@code typeOp} and {@code kernels}.
     */
    @Benchmark
    public void copy() {
        dst.put(OFF, src, OFF, bytes);
    }
}
