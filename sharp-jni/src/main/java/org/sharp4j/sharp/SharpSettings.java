package org.sharp4j.sharp;

import java.util.Locale;
import java.util.Properties;
import org.sharp4j.tuning.Sizes;

/**
 * The SHARP offload's system properties, read when a communicator is created.
 *
 * <table>
 *   <caption>Properties</caption>
 *   <tr><td>sharp4j.sharp</td><td>auto (default): use SHARP when the library loads and initialises, else the
 *       host path (one WARN line); on: fail loudly when it cannot; off: never</td></tr>
 *   <tr><td>sharp4j.sharp.lib</td><td>path of libsharp_coll.so (a file, or a directory holding it); looked at
 *       first, then jna.library.path, LD_LIBRARY_PATH, $HPCX_SHARP_DIR/lib</td></tr>
 *   <tr><td>sharp4j.sharp.max.bytes</td><td>largest phase-3 message sent to SHARP (default: the tuning
 *       table's SHARP range; with {@code sharp4j.sharp=on} at least the library's max_osts x user_data_per_ost);
 *       larger calls take the host path. Messages above the payload go as several operations.</td></tr>
 *   <tr><td>sharp4j.sharp.chunk.bytes</td><td>bytes per SHARP operation of a long message (default: the
 *       payload, max_osts x user_data_per_ost; at most that and 1 MiB; rounded down to 8 bytes). The
 *       smallest value over the node leaders applies, so every leader cuts a call alike.</td></tr>
 *   <tr><td>sharp4j.sharp.pipeline</td><td>SHARP operations of one call in flight at once (1..8; overrides the
 *       tuning table's {@code sharp:pipeline=D}, which defaults to 4). The smallest value over the node leaders that
 *       set it applies.</td></tr>
 *   <tr><td>sharp4j.sharp.min.nodes</td><td>use SHARP only with at least this many nodes (default 2)</td></tr>
 *   <tr><td>sharp4j.sharp.max.failures</td><td>failed SHARP operations after which SHARP is switched off for the
 *       job (default 3; 0: never)</td></tr>
 * </table>
 *
 * The library's own {@code SHARP_COLL_*} environment variables are passed through untouched.
 */
public final class SharpSettings {
    public enum Mode { AUTO, ON, OFF }

    public static final String MODE = "sharp4j.sharp";
    public static final String LIB = "sharp4j.sharp.lib";
    public static final String MAX_BYTES = "sharp4j.sharp.max.bytes";
    public static final String MIN_NODES = "sharp4j.sharp.min.nodes";
    public static final String MAX_FAILURES = "sharp4j.sharp.max.failures";
    public static final String CHUNK_BYTES = "sharp4j.sharp.chunk.bytes";
    public static final String PIPELINE = "sharp4j.sharp.pipeline";
    /** Most operations of one call in flight (the tuning table's bound for {@code pipeline=}). */
    public static final int MAX_PIPELINE = org.sharp4j.tuning.Rule.MAX_PIPELINE;

    public final Mode mode;
    /** Null when unset. */
    public final String lib;
    /** -1: from the capabilities. */
    public final long maxBytes;
    /** Explicit minimum node count, or -1 when the tuning table decides. */
    public final int minNodes;
    public final int maxFailures;
    /** -1: the payload. */
    public final long chunkBytes;
    /** -1: the tuning table's (its default 4). */
    public final int pipeline;

    private SharpSettings(Mode mode, String lib, long maxBytes, int minNodes, int maxFailures, long chunkBytes, int pipeline) {
        this.mode = mode;
        this.lib = lib;
        this.maxBytes = maxBytes;
        this.minNodes = minNodes;
        this.maxFailures = maxFailures;
        this.chunkBytes = chunkBytes;
        this.pipeline = pipeline;
    }

    public static SharpSettings fromSystemProperties() {
        return fromProperties(System.getProperties());
    }

    public static SharpSettings fromProperties(Properties p) {
        Mode mode;
        String m = p.getProperty(MODE, "auto").trim().toLowerCase(Locale.ROOT);
        switch (m) {
            case "auto": mode = Mode.AUTO; break;
            case "on": case "true": case "1": mode = Mode.ON; break;
            case "off": case "false": case "0": mode = Mode.OFF; break;
            default: throw new IllegalArgumentException(MODE + " must be auto, on or off, got '" + m + "'");
        }
        String lib = p.getProperty(LIB);
        if (lib != null && lib.isBlank()) {
            lib = null;
        }
        long maxBytes = -1;
        String mb = p.getProperty(MAX_BYTES);
        if (mb != null && !mb.isBlank()) {
            maxBytes = Sizes.parseBytes(mb.trim());
            if (maxBytes < 0) {
                throw new IllegalArgumentException(MAX_BYTES + " must be >= 0, got '" + mb + "'");
            }
        }
        int minNodes = intProp(p, MIN_NODES, -1); // unset: the tuning table decides
        int maxFailures = intProp(p, MAX_FAILURES, 3);
        if (minNodes == 0 || minNodes < -1 || maxFailures < 0) {
            throw new IllegalArgumentException(MIN_NODES + " must be >= 1 and " + MAX_FAILURES + " >= 0");
        }
        long chunk = -1;
        String cb = p.getProperty(CHUNK_BYTES);
        if (cb != null && !cb.isBlank()) {
            chunk = Sizes.parseBytes(cb.trim());
            if (chunk < 8) {
                throw new IllegalArgumentException(CHUNK_BYTES + " must be at least 8 bytes, got '" + cb + "'");
            }
        }
        int pipeline = intProp(p, PIPELINE, -1); // unset: the tuning table's
        if (pipeline != -1 && (pipeline < 1 || pipeline > MAX_PIPELINE)) {
            throw new IllegalArgumentException(PIPELINE + " must be in 1.." + MAX_PIPELINE + ", got " + pipeline);
        }
        return new SharpSettings(mode, lib, maxBytes, minNodes, maxFailures, chunk, pipeline);
    }

    private static int intProp(Properties p, String name, int def) {
        String v = p.getProperty(name);
        if (v == null || v.isBlank()) {
            return def;
        }
        try {
            return Integer.parseInt(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("bad " + name + ": '" + v + "'", e);
        }
    }

    @Override
    public String toString() {
        return MODE + "=" + mode.name().toLowerCase(Locale.ROOT) + (lib != null ? ", " + LIB + "=" + lib : "")
                + (maxBytes >= 0 ? ", " + MAX_BYTES + "=" + maxBytes : "") + ", " + MIN_NODES + "=" + minNodes + ", "
                + MAX_FAILURES + "=" + maxFailures + (chunkBytes >= 0 ? ", " + CHUNK_BYTES + "=" + chunkBytes : "")
                + (pipeline > 0 ? ", " + PIPELINE + "=" + pipeline : "");
    }
}
