package org.sharp4j.tuning;

import java.util.Locale;

/** Parses and prints byte sizes the way HPC users write them: 8, 4k, 64K, 1M, 2g, inf. */
public final class Sizes {
    private Sizes() {
    }

    /** Parses a size with an optional k/m/g suffix (powers of 1024) and optional trailing b/B. */
    public static long parseBytes(String s) {
        if (s == null) {
            throw new IllegalArgumentException("size is null");
        }
        String t = s.trim().toLowerCase(Locale.ROOT);
        if (t.equals("inf")) {
            return Long.MAX_VALUE;
        }
        if (t.endsWith("ib")) {
            t = t.substring(0, t.length() - 2);
        } else if (t.endsWith("b")) {
            t = t.substring(0, t.length() - 1);
        }
        long mul = 1;
        if (!t.isEmpty()) {
            char c = t.charAt(t.length() - 1);
            if (c == 'k') {
                mul = 1L << 10;
            } else if (c == 'm') {
                mul = 1L << 20;
            } else if (c == 'g') {
                mul = 1L << 30;
            }
            if (mul != 1) {
                t = t.substring(0, t.length() - 1);
            }
        }
        try {
            long v = Long.parseLong(t.trim());
            if (v < 0) {
                throw new IllegalArgumentException("size must not be negative: '" + s + "'");
            }
            return Math.multiplyExact(v, mul);
        } catch (NumberFormatException | ArithmeticException e) {
            throw new IllegalArgumentException("not a size: '" + s + "' (expected e.g. 64, 4k, 1M)", e);
        }
    }

    /** The shortest exact form: 0, 100, 4k, 16385, 1M, inf. */
    public static String format(long bytes) {
        if (bytes == Long.MAX_VALUE) {
            return "inf";
        }
        if (bytes != 0 && bytes % (1L << 30) == 0) {
            return (bytes >> 30) + "G";
        }
        if (bytes != 0 && bytes % (1L << 20) == 0) {
            return (bytes >> 20) + "M";
        }
        if (bytes != 0 && bytes % 1024 == 0) {
            return (bytes >> 10) + "k";
        }
        return Long.toString(bytes);
    }
}
