package org.sharp4j.coll;

import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;

/**
 * Waits, by sleeping, for this JVM's JIT compiler to go idle: the one wait of its kind, used after
 * the engine's warm-up, the agent's, the OSU harness's and the tuner's untimed pass.
 *
 * <p>Why sleep: a rank that spins while C2 compiles takes the core the compiler threads need (a
 * launcher or mpirun binds the whole JVM to the rank's core), so the compilation queued by a
 * warm-up would then run against the program's first calls, which stay interpreted or in C1 code
 * meanwhile.
 */
public final class JitIdle {
    private JitIdle() {
    }

    /**
     * This JVM's total JIT compilation time so far in milliseconds, or -1 where the JVM does not
     * monitor it: a warm-up compares it before and after a block of calls to learn whether the
     * block still made the JIT compile (then the paths it ran are not all in C2 code yet).
     */
    public static long compiledMillis() {
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        return jit == null || !jit.isCompilationTimeMonitoringSupported() ? -1 : jit.getTotalCompilationTime();
    }

    /**
     * Sleeps until the JIT's total compilation time has not grown for {@code quietMs} (no
     * compilation ended in that spell), or {@code maxMs} passed; returns the milliseconds slept.
     * Returns at once where the JVM does not monitor compilation time. An interrupt ends the wait
     * and stays set for the caller.
     */
    public static long await(long maxMs, long quietMs) {
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        if (jit == null || !jit.isCompilationTimeMonitoringSupported()) {
            return 0;
        }
        long t0 = System.nanoTime();
        long step = Math.max(1, quietMs / 4);
        long last = jit.getTotalCompilationTime();
        long quietSince = t0;
        while (true) {
            long now = System.nanoTime();
            if (now - t0 >= maxMs * 1_000_000 || now - quietSince >= quietMs * 1_000_000) {
                return (now - t0) / 1_000_000;
            }
            try {
                Thread.sleep(step);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return (System.nanoTime() - t0) / 1_000_000;
            }
            long total = jit.getTotalCompilationTime();
            if (total != last) {
                last = total;
                quietSince = System.nanoTime();
            }
        }
    }
}
