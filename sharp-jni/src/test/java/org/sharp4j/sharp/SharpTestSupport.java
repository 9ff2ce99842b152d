package org.sharp4j.sharp;

import static org.junit.jupiter.api.Assertions.assertEquals;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.sun.jna.Library;
import com.sun.jna.Native;
import java.io.File;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.sharp4j.Config;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.Reference;
import org.slf4j.LoggerFactory;

/**
 * What the SHARP tests share: the emulator's path, system properties and environment variables
 * set for one test, a log capture, and the integer-valued inputs with their sequential reduction.
 *
 * <p>Environment: the emulator reads its {@code SHARP_EMU_*} variables in {@code sharp_coll_init},
 * so the tests set them in this JVM with libc's {@code setenv} (through JNA) before creating the
 * communicators and unset them afterwards; no JVM is forked.
 */
final class SharpTestSupport {
    private SharpTestSupport() {
    }

    interface LibC extends Library {
        LibC INSTANCE = Native.load("c", LibC.class);

        int setenv(String name, String value, int overwrite);

        int unsetenv(String name);
    }

    static File nativeDir() {
        return new File(System.getProperty("sharp4j.test.native", "target/native")).getAbsoluteFile();
    }

    static File emulator() {
        return new File(nativeDir(), "libsharp_coll.so");
    }

    /**
     * Small simulated-topology configs: no warm-up, so the emulator's operation numbers are the
     * test's; UCX (over TCP loopback) between the simulated nodes, the host path SHARP recovers on.
     */
    static Config config(int nodes, int socketsPerNode) {
        return Config.defaults().withSimulatedTopology(nodes, socketsPerNode).withWarmupRounds(0).withTimeoutNanos(60_000_000_000L)
                .withInterNode("ucx");
    }

    /** Sets system properties and environment variables for the duration of {@code body}, then restores them. */
    static void with(Map<String, String> props, Map<String, String> env, Runnable body) {
        Map<String, String> oldProps = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : props.entrySet()) {
            oldProps.put(e.getKey(), System.getProperty(e.getKey()));
            if (e.getValue() == null) {
                System.clearProperty(e.getKey());
            } else {
                System.setProperty(e.getKey(), e.getValue());
            }
        }
        for (Map.Entry<String, String> e : env.entrySet()) {
            if (e.getValue() == null) {
                LibC.INSTANCE.unsetenv(e.getKey());
            } else {
                LibC.INSTANCE.setenv(e.getKey(), e.getValue(), 1);
            }
        }
        try {
            body.run();
        } finally {
            for (String k : env.keySet()) {
                LibC.INSTANCE.unsetenv(k);
            }
            for (Map.Entry<String, String> e : oldProps.entrySet()) {
                if (e.getValue() == null) {
                    System.clearProperty(e.getKey());
                } else {
                    System.setProperty(e.getKey(), e.getValue());
                }
            }
        }
    }

    /** Properties of "SHARP on, the emulator". */
    static Map<String, String> sharpOn() {
        Map<String, String> p = new LinkedHashMap<>();
        p.put(SharpSettings.MODE, "on");
        p.put(SharpSettings.LIB, emulator().getPath());
        p.put(SharpSettings.MAX_BYTES, null);
        p.put(SharpSettings.MIN_NODES, null);
        p.put(SharpSettings.MAX_FAILURES, null);
        p.put(SharpSettings.CHUNK_BYTES, null);
        p.put(SharpSettings.PIPELINE, null);
        return p;
    }

    static Map<String, String> map(String... kv) {
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put(kv[i], kv[i + 1]);
        }
        return m;
    }

    static Map<String, String> plus(Map<String, String> a, String... kv) {
        Map<String, String> m = new LinkedHashMap<>(a);
        m.putAll(map(kv));
        return m;
    }

    // ---------------------------------------------------------------- logs

    /** Captures what the org.sharp4j loggers emit at WARN and above. */
    static final class LogCapture implements AutoCloseable {
        private final ch.qos.logback.classic.Logger logger =
                (ch.qos.logback.classic.Logger) LoggerFactory.getLogger("org.sharp4j");
        private final ListAppender<ILoggingEvent> app = new ListAppender<>();

        LogCapture() {
            app.start();
            logger.addAppender(app);
        }

        /** WARN and ERROR lines of the SHARP offload (org.sharp4j.sharp.*). */
        List<String> sharpWarnings() {
            List<String> out = new ArrayList<>();
            synchronized (app.list) {
                for (ILoggingEvent e : app.list) {
                    if (e.getLevel().isGreaterOrEqual(Level.WARN) && e.getLoggerName().startsWith("org.sharp4j.sharp")) {
                        out.add(e.getFormattedMessage());
                    }
                }
            }
            return out;
        }

        void assertSharpWarnings(int n, String... fragments) {
            List<String> w = sharpWarnings();
            assertEquals(n, w.size(), "SHARP warnings: " + w.stream().collect(Collectors.joining("\n  ", "\n  ", "")));
            for (String f : fragments) {
                if (w.stream().noneMatch(l -> l.contains(f))) {
                    throw new AssertionError("no SHARP warning contains '" + f + "': " + w);
                }
            }
        }

        @Override
        public void close() {
            logger.detachAppender(app);
            app.stop();
        }
    }

    // ---------------------------------------------------------------- data

    /** Integer-valued input element i of rank r (exact in every type, sums and products stay exact). */
    static long input(DataType t, Op op, int rank, int i, long seed) {
        long h = mix(seed * 1_000_003L + rank * 7_919L + i);
        switch (op) {
            case LAND:
            case LOR:
                return (h & 3) == 0 ? 0 : 1 + (h >>> 8 & 1);
            case PROD:
                return new long[] {1, 2, -1, 1, -2, 3}[(int) Math.floorMod(h, 6L)];
            case BAND:
            case BOR:
            case BXOR:
                return t == DataType.INT ? (int) h : h;
            default:
                return Math.floorMod(h, 2001L) - 1000;
        }
    }

    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    /** One integer op as the documented reference computes it ({@link Reference#opL}). */
    static long combine(DataType t, Op op, long a, long b) {
        return Reference.opL(op, a, b, t == DataType.INT);
    }

    /** The sequential reduction x[0] op x[1] op ... op x[n-1] of element i. */
    static long expected(DataType t, Op op, int n, int i, long seed) {
        long acc = input(t, op, 0, i, seed);
        for (int r = 1; r < n; r++) {
            acc = combine(t, op, acc, input(t, op, r, i, seed));
        }
        return acc;
    }

    static ByteBuffer buffer(DataType t, int count) {
        return ByteBuffer.allocateDirect(Math.max(1, count) * t.size).order(ByteOrder.nativeOrder());
    }

    static void fill(ByteBuffer b, DataType t, Op op, int rank, int count, long seed) {
        for (int i = 0; i < count; i++) {
            put(b, t, i, input(t, op, rank, i, seed));
        }
    }

    static void put(ByteBuffer b, DataType t, int i, long v) {
        switch (t) {
            case INT: b.putInt(i * 4, (int) v); break;
            case LONG: b.putLong(i * 8, v); break;
            case FLOAT: b.putFloat(i * 4, (float) v); break;
            default: b.putDouble(i * 8, (double) v); break;
        }
    }

    /** Element i as a long (floating values are integer-valued in these tests). */
    static long get(ByteBuffer b, DataType t, int i) {
        switch (t) {
            case INT: return b.getInt(i * 4);
            case LONG: return b.getLong(i * 8);
            case FLOAT: {
                float f = b.getFloat(i * 4);
                if (f != Math.rint(f)) {
                    throw new AssertionError("not integer-valued: " + f);
                }
                return (long) f;
            }
            default: {
                double d = b.getDouble(i * 8);
                if (d != Math.rint(d)) {
                    throw new AssertionError("not integer-valued: " + d);
                }
                return (long) d;
            }
        }
    }

    static void check(ByteBuffer b, DataType t, Op op, int n, int count, long seed, String what) {
        for (int i = 0; i < count; i++) {
            long want = expected(t, op, n, i, seed);
            long got = get(b, t, i);
            if (want != got) {
                throw new AssertionError(what + " " + t + " " + op + " count " + count + ": element " + i + " is " + got
                        + ", expected " + want);
            }
        }
    }

    /** Ops MPI (and sharp4j) define for {@code t}. */
    static List<Op> ops(DataType t) {
        List<Op> l = new ArrayList<>();
        for (Op op : Op.values()) {
            if (op.validFor(t)) {
                l.add(op);
            }
        }
        return l;
    }
}
