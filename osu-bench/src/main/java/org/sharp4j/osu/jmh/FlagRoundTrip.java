package org.sharp4j.osu.jmh;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Group;
import org.openjdk.jmh.annotations.GroupThreads;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Control;
import org.sharp4j.shm.Flags;

/**
 * The cost everything else is built on: one 64-bit flag handed from one core to another and back.
 * Two threads ping-pong a sequence number through two flags on separate 128-byte-aligned lines of a
 * direct buffer, each flag with exactly one writer ({@link Flags#release}) and one reader
 * ({@link Flags#acquire}), waiting with {@link Thread#onSpinWait()}, as the shared-memory collectives do.
 *
 * <p>Each {@code ping} call publishes the next number and waits for its echo; each {@code pong} call
 * waits for a new number and echoes it. Both therefore take one round trip (two cache-line transfers),
 * and the group's score is ns per round trip. The spin loops give up when JMH stops the measurement
 * ({@link Control#stopMeasurement}), so a thread never waits for a partner that has left the
 * iteration; a number left unanswered is simply echoed late and skipped by the next ping.
 *
 * <p>Needs two free cores: on a loaded machine the round trip includes the scheduler's time slices.
 */
@State(Scope.Group)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class FlagRoundTrip {
    /** Line size the flags are spread over: two 64-byte lines, so the adjacent-line prefetcher cannot couple them. */
    static final int LINE = 128;
    static final int PING = 0;
    static final int PONG = LINE;

    private ByteBuffer flags;

    /** The pinger's last sent number (only the ping thread touches it; JMH pads thread states apart). */
    @State(Scope.Thread)
    public static class Pinger {
        long sent;
    }

    /** The ponger's last echoed number. */
    @State(Scope.Thread)
    public static class Ponger {
        long echoed;
    }

    @Setup
    public void setup() {
        ByteBuffer raw = ByteBuffer.allocateDirect(4 * LINE).order(ByteOrder.nativeOrder());
        flags = raw.alignedSlice(LINE).order(ByteOrder.nativeOrder());
        if (flags.capacity() < 2 * LINE) {
            throw new IllegalStateException("aligned slice too small: " + flags.capacity());
        }
    }

    @Benchmark
    @Group("roundTrip")
    public long ping(Pinger me, Control control) {
        long s = ++me.sent;
        Flags.release(flags, PING, s);
        while (Flags.acquire(flags, PONG) != s) {
            if (control.stopMeasurement) {
                break;
            }
            Thread.onSpinWait();
        }
        return s;
    }

    @Benchmark
    @Group("roundTrip")
    public long pong(Ponger me, Control control) {
        long v;
        while ((v = Flags.acquire(flags, PING)) == me.echoed) {
            if (control.stopMeasurement) {
                return v;
            }
            Thread.onSpinWait();
        }
        Flags.release(flags, PONG, v);
        me.echoed = v;
        return v;
    }
}
