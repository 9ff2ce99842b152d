package org.sharp4j.osu;

import java.util.Locale;

/**
 * Prints OMB 7.x's table: {@code # Size} left-aligned in 10 columns, every other column right-aligned
 * in 20 with two decimals ({@code Iterations} in 12), in OMB's order Avg, [Min, Max, Iterations],
 * [Validation], [Pxx Tail Lat]. Barrier has no size column and prints its average in 17. With
 * {@code --compare mpi} the same columns follow for MPI (prefixed {@code MPI}), then the ratio of the
 * averages sharp4j / MPI. Also writes the same rows as CSV.
 */
public final class Table {
    public static final int FIELD_WIDTH = 20;
    public static final int SIZE_WIDTH = 10;
    public static final int ITER_WIDTH = 12;
    private static final String RATIO = "Ratio(sharp4j/MPI)";

    private final boolean showSize;
    private final boolean full;
    private final boolean validate;
    private final int[] percentiles;
    private final boolean compare;

    public Table(Kind kind, boolean full, boolean validate, int[] percentiles, boolean compare) {
        this.showSize = kind.hasData();
        this.full = full;
        this.validate = validate && kind.hasData();
        this.percentiles = percentiles.clone();
        this.compare = compare;
    }

    private static String right(int width, String s) {
        return String.format(Locale.ROOT, "%" + width + "s", s);
    }

    private static String num(int width, double v) {
        return String.format(Locale.ROOT, "%" + width + ".2f", v);
    }

    /** The header line, without a line terminator. */
    public String header() {
        StringBuilder sb = new StringBuilder();
        if (showSize) {
            sb.append(String.format(Locale.ROOT, "%-" + SIZE_WIDTH + "s", "# Size"));
            sb.append(right(FIELD_WIDTH, "Avg Latency(us)"));
        } else {
            sb.append("# Avg Latency(us)");
        }
        if (full) {
            sb.append(right(FIELD_WIDTH, "Min Latency(us)")).append(right(FIELD_WIDTH, "Max Latency(us)"));
            sb.append(right(ITER_WIDTH, "Iterations"));
        }
        if (validate) {
            sb.append(right(FIELD_WIDTH, "Validation"));
        }
        for (int p : percentiles) {
            // OMB: "%*sP%d Tail Lat(us)" padded by FIELD_WIDTH - strlen("Px Tail Lat(us)") - (p > 9)
            sb.append(" ".repeat(Math.max(0, FIELD_WIDTH - 15 - (p > 9 ? 1 : 0)))).append('P').append(p).append(" Tail Lat(us)");
        }
        if (compare) {
            sb.append(right(FIELD_WIDTH, "MPI Avg Latency(us)"));
            if (full) {
                sb.append(right(FIELD_WIDTH, "MPI Min Latency(us)")).append(right(FIELD_WIDTH, "MPI Max Latency(us)"));
            }
            if (validate) {
                sb.append(right(FIELD_WIDTH, "MPI Validation"));
            }
            for (int p : percentiles) {
                sb.append(right(FIELD_WIDTH, "MPI P" + p + " Lat(us)"));
            }
            sb.append(right(FIELD_WIDTH, RATIO));
        }
        return sb.toString();
    }

    /** One row; {@code mpi} is null unless comparing. Without a line terminator. */
    public String row(long sizeBytes, Stats s, Stats mpi) {
        StringBuilder sb = new StringBuilder();
        if (showSize) {
            sb.append(String.format(Locale.ROOT, "%-" + SIZE_WIDTH + "d", sizeBytes));
            sb.append(num(FIELD_WIDTH, s.avg()));
        } else {
            sb.append(num(17, s.avg()));
        }
        if (full) {
            sb.append(num(FIELD_WIDTH, s.min())).append(num(FIELD_WIDTH, s.max()));
            sb.append(String.format(Locale.ROOT, "%" + ITER_WIDTH + "d", s.iterations()));
        }
        if (validate) {
            sb.append(right(FIELD_WIDTH, s.passed() ? "Pass" : "Fail"));
        }
        for (int i = 0; i < percentiles.length; i++) {
            sb.append(num(FIELD_WIDTH, s.tails()[i]));
        }
        if (compare) {
            sb.append(num(FIELD_WIDTH, mpi.avg()));
            if (full) {
                sb.append(num(FIELD_WIDTH, mpi.min())).append(num(FIELD_WIDTH, mpi.max()));
            }
            if (validate) {
                sb.append(right(FIELD_WIDTH, mpi.passed() ? "Pass" : "Fail"));
            }
            for (int i = 0; i < percentiles.length; i++) {
                sb.append(num(FIELD_WIDTH, mpi.tails()[i]));
            }
            sb.append(num(FIELD_WIDTH, ratio(s, mpi)));
        }
        return sb.toString();
    }

    static double ratio(Stats s, Stats mpi) {
        return mpi.avg() > 0 ? s.avg() / mpi.avg() : Double.NaN;
    }

    /** CSV header (all statistics, whatever -f says). */
    public String csvHeader() {
        StringBuilder sb = new StringBuilder("datatype,size_bytes");
        csvBlockHeader(sb, "");
        if (compare) {
            csvBlockHeader(sb, "mpi_");
            sb.append(",ratio");
        }
        return sb.toString();
    }

    private void csvBlockHeader(StringBuilder sb, String prefix) {
        sb.append(',').append(prefix).append("avg_us,").append(prefix).append("min_us,").append(prefix).append("max_us,")
                .append(prefix).append("iterations");
        if (validate) {
            sb.append(',').append(prefix).append("validation");
        }
        for (int p : percentiles) {
            sb.append(',').append(prefix).append('p').append(p).append("_us");
        }
    }

    /** CSV row; {@code datatype} is e.g. MPI_FLOAT (empty for barrier), size 0 for barrier. */
    public String csvRow(String datatype, long sizeBytes, Stats s, Stats mpi) {
        StringBuilder sb = new StringBuilder();
        sb.append(datatype).append(',').append(sizeBytes);
        csvBlock(sb, s);
        if (compare) {
            csvBlock(sb, mpi);
            sb.append(',').append(String.format(Locale.ROOT, "%.4f", ratio(s, mpi)));
        }
        return sb.toString();
    }

    private void csvBlock(StringBuilder sb, Stats s) {
        sb.append(String.format(Locale.ROOT, ",%.3f,%.3f,%.3f,%d", s.avg(), s.min(), s.max(), s.iterations()));
        if (validate) {
            sb.append(',').append(s.passed() ? "Pass" : "Fail");
        }
        for (double t : s.tails()) {
            sb.append(String.format(Locale.ROOT, ",%.3f", t));
        }
    }
}
