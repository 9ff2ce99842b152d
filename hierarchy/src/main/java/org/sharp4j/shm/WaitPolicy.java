package org.sharp4j.shm;

import java.util.Locale;

/**
 * How a rank waits for a flag: spin for {@code spinNanos}, then {@code Thread.yield()} until
 * {@code yieldNanos}, then park with a growing sleep up to {@code parkMaxNanos}; fail after
 * {@code timeoutNanos}.
 *
 * <p>Spinning is the fastest way to see a flag that flips within a few microseconds; with more
 * ranks than cores the peer we wait for may need our core, so there is no spin: the first failed
 * poll yields, which hands the core over. Parking bounds the CPU burnt by a rank that waits long (a slow
 * peer computing), which keeps oversubscribed runs from spinning the machine to death.
 *
 * <p>Property {@code sharp4j.wait} = {@code spin:20us,yield:1ms,park:50us} (any subset, units ns,
 * us, ms, s); {@code sharp4j.timeout} = seconds (or with a unit).
 */
public final class WaitPolicy {
    public final long spinNanos;
    public final long yieldNanos;
    public final long parkMaxNanos;
    public final long timeoutNanos;

    public WaitPolicy(long spinNanos, long yieldNanos, long parkMaxNanos, long timeoutNanos) {
        if (spinNanos < 0 || yieldNanos < spinNanos || parkMaxNanos < 1000 || timeoutNanos <= 0) {
            throw new IllegalArgumentException("bad wait policy: spin " + spinNanos + " ns, yield until " + yieldNanos
                    + " ns, park up to " + parkMaxNanos + " ns, timeout " + timeoutNanos + " ns");
        }
        this.spinNanos = spinNanos;
        this.yieldNanos = yieldNanos;
        this.parkMaxNanos = parkMaxNanos;
        this.timeoutNanos = timeoutNanos;
    }

    /**
     * Defaults: spin 20 us (none when oversubscribed: yield at the first failed poll), yield until
     * 1 ms, then park up to 50 us at a time. Oversubscribed (4 ranks on 2 cores, OSU Reduce 4-256 B,
     * 3 runs each, same machine): P50 2.4 us without the spin against 3.5 us with a 1 us spin, and
     * Allreduce and Barrier no worse; parking at once instead of yielding (yield:0) costs 30+ us. Parking longer saves little CPU (a wake-up costs a few microseconds) but delays the
     * wait's end by up to the park time after a peer's stall: 1 ms parks gave the multi-ms outliers
     * of issue 13.
     */
    public static WaitPolicy defaults(boolean oversubscribed, long timeoutNanos) {
        return new WaitPolicy(oversubscribed ? 0 : 20_000, 1_000_000, 50_000, timeoutNanos);
    }

    /** The same policy with a longer timeout. */
    public WaitPolicy withTimeout(long nanos) {
        return new WaitPolicy(spinNanos, yieldNanos, parkMaxNanos, nanos);
    }

    /** Parses {@code spin:20us,yield:1ms,park:50us} over {@code base}. */
    public static WaitPolicy parse(String spec, WaitPolicy base) {
        long spin = base.spinNanos;
        long yield = base.yieldNanos;
        long park = base.parkMaxNanos;
        if (spec != null && !spec.isBlank()) {
            for (String part : spec.split(",")) {
                String[] kv = part.trim().split(":", 2);
                if (kv.length != 2) {
                    throw new IllegalArgumentException("sharp4j.wait: expected key:duration, got '" + part + "'");
                }
                long v = parseNanos(kv[1]);
                switch (kv[0].trim().toLowerCase(Locale.ROOT)) {
                    case "spin": spin = v; break;
                    case "yield": yield = v; break;
                    case "park": park = v; break;
                    default: throw new IllegalArgumentException("sharp4j.wait: unknown key '" + kv[0] + "' (spin, yield, park)");
                }
            }
        }
        return new WaitPolicy(spin, Math.max(yield, spin), park, base.timeoutNanos);
    }

    /** "250us", "2ms", "1.5s", "100ns"; a bare number is seconds. */
    public static long parseNanos(String s) {
        String t = s.trim().toLowerCase(Locale.ROOT);
        double mul = 1e9;
        String num = t;
        if (t.endsWith("ns")) {
            mul = 1;
            num = t.substring(0, t.length() - 2);
        } else if (t.endsWith("us")) {
            mul = 1e3;
            num = t.substring(0, t.length() - 2);
        } else if (t.endsWith("ms")) {
            mul = 1e6;
            num = t.substring(0, t.length() - 2);
        } else if (t.endsWith("s")) {
            num = t.substring(0, t.length() - 1);
        }
        try {
            double v = Double.parseDouble(num.trim());
            if (v < 0) {
                throw new IllegalArgumentException("negative duration '" + s + "'");
            }
            return (long) (v * mul);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not a duration: '" + s + "' (e.g. 20us, 1ms, 30s)", e);
        }
    }

    @Override
    public String toString() {
        return String.format(Locale.ROOT, "spin %d us, yield until %d us, park up to %d us, timeout %.1f s",
                spinNanos / 1000, yieldNanos / 1000, parkMaxNanos / 1000, timeoutNanos / 1e9);
    }
}
