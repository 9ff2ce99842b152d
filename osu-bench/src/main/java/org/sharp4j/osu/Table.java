package org.sharp4j.osu;

import java.util.Locale;

/**
 * Prints OMB 7.4's output byte for byte as its C benchmarks do (util/osu_util_mpi.c: print_preamble,
 * print_only_header, print_stats, print_stats_validate), with the widths OMB's configure.ac defines:
 * {@code # Size} left-aligned in 10 columns, every other column right-aligned in {@link #FIELD_WIDTH}
 * 18 with {@link #FLOAT_PRECISION} 2 decimals ({@code Iterations} in 12), in OMB's order Avg,
 * [Min, Max, Iterations], [Validation], [Pxx Tail Lat]. Barrier has no size column and prints its
 * average in 17. The port's own line ({@link #portLine}) is a separate {@code #} line after OMB's title.
 *
 * <p>With {@code --compare} (this port only) the same statistics follow for the compared side, prefixed
 * {@code MPI} (or {@code Built-in}, {@code Table}, {@code Tune}: {@link Comparison#prefix()}), then the ratio
 * sharp4j / other (with one block that of the averages, with several that of the blocks' medians: {@link Osu#measure}); each of these columns is at
 * least two characters wider than its name, so that every pair of names is separated by two spaces or more.
 *
 * <p>Also writes the rows as CSV, with the run's metadata (collective, ranks, nodes, backend) in the
 * first columns of every row.
 */
public final class Table {
    /** OMB 7.4's configure.ac: {@code AC_DEFINE([FIELD_WIDTH], [18])} (osu_util.h's 20 is only a fallback). */
    public static final int FIELD_WIDTH = 18;
    /** OMB 7.4's configure.ac: {@code AC_DEFINE([FLOAT_PRECISION], [2])}. */
    public static final int FLOAT_PRECISION = 2;
    public static final int SIZE_WIDTH = 10;
    public static final int ITER_WIDTH = 12;
    /** OMB's width of barrier's average, which has no size column before it. */
    public static final int BARRIER_AVG_WIDTH = 17;
    static final String RATIO = "Ratio(sharp4j/MPI)";

    /** The library names of the CSV's backend column and of the port line. */
    public static final String SHARP4J = "sharp4j";
    public static final String OPEN_MPI_JAVA = "Open MPI Java";

    /**
     * What a run measured on: the library of the unprefixed columns ({@link #SHARP4J} or
     * {@link #OPEN_MPI_JAVA}), the ranks, and the nodes (-1: unknown).
     */
    public record RunInfo(String library, int ranks, int nodes) {
        public static final RunInfo UNKNOWN = new RunInfo(SHARP4J, -1, -1);
    }

    private final Kind kind;
    private final boolean showSize;
    private final boolean full;
    private final boolean validate;
    private final int[] percentiles;
    private final boolean compare;
    /** What the compared columns measured (null: no comparison). */
    private final Comparison other;
    private final RunInfo info;

    public Table(Kind kind, boolean full, boolean validate, int[] percentiles, boolean compare) {
        this(kind, full, validate, percentiles, compare, RunInfo.UNKNOWN);
    }

    /** {@code compare}: sharp4j against Open MPI Java ({@code --compare mpi}). */
    public Table(Kind kind, boolean full, boolean validate, int[] percentiles, boolean compare, RunInfo info) {
        this(kind, full, validate, percentiles, compare ? Comparison.MPI : null, info);
    }

    /** {@code other}: what the compared columns measured ({@code --compare}), or null. */
    public Table(Kind kind, boolean full, boolean validate, int[] percentiles, Comparison other, RunInfo info) {
        this.kind = kind;
        this.showSize = kind.hasData();
        this.full = full;
        this.validate = validate && kind.hasData();
        this.percentiles = percentiles.clone();
        this.compare = other != null;
        this.other = other;
        this.info = info;
    }

    /** OMB's title line, {@code # OSU MPI Allreduce Latency Test v7.4} (OMB's HEADER for a host build). */
    public static String title(Kind kind) {
        return "# OSU MPI " + kind.word + " Latency Test v" + OsuOptions.OMB_VERSION;
    }

    /**
     * The port's line after OMB's title, e.g. {@code # sharp4j port: library sharp4j, 4 ranks, 2 nodes}
     * (ranks and nodes left out when not known, as for {@code -v}).
     */
    public static String portLine(String library, int ranks, int nodes) {
        StringBuilder sb = new StringBuilder("# sharp4j port: library ").append(library);
        if (ranks > 0) {
            sb.append(", ").append(ranks).append(ranks == 1 ? " rank" : " ranks");
        }
        if (nodes > 0) {
            sb.append(", ").append(nodes).append(nodes == 1 ? " node" : " nodes");
        }
        return sb.toString();
    }

    /** OMB's {@code # Datatype: MPI_FLOAT.} line before each table of allreduce and reduce. */
    public static String datatypeLine(ElemType type) {
        return "# Datatype: " + type.mpiName + ".";
    }

    /** The library text of the port line: sharp4j, Open MPI Java, or both when comparing. */
    private String libraryText() {
        return compare ? info.library() + " vs " + other.library() : info.library();
    }

    /**
     * What OMB's print_preamble prints, then the port's line: an empty line, the title, the port line,
     * each ending with a newline.
     */
    public String preamble() {
        return "\n" + title(kind) + "\n" + portLine(libraryText(), info.ranks(), info.nodes()) + "\n";
    }

    private static String right(int width, String s) {
        return String.format(Locale.ROOT, "%" + width + "s", s);
    }

    private static String num(int width, double v) {
        return right(width, cFixed(v, FLOAT_PRECISION));
    }

    /**
     * {@code v} as C's {@code printf("%.*f", digits, v)} writes it with glibc: the exact binary value
     * rounded half to even ({@code 1.125} gives {@code 1.12}, {@code 3.005}, stored as 3.00499..., gives
     * {@code 3.00}), where Java's {@code %.2f} rounds the shortest decimal half up (1.13, 3.01).
     */
    static String cFixed(double v, int digits) {
        if (Double.isNaN(v)) {
            return "nan";
        }
        if (Double.isInfinite(v)) {
            return v > 0 ? "inf" : "-inf";
        }
        String s = new java.math.BigDecimal(v).setScale(digits, java.math.RoundingMode.HALF_EVEN).toPlainString();
        boolean negative = v < 0 || (v == 0 && 1 / v < 0);
        return negative && !s.startsWith("-") ? "-" + s : s;
    }

    /** Width of a --compare column: OMB's field, or the name plus two spaces when that is wider. */
    private static int cmpWidth(String name) {
        return Math.max(FIELD_WIDTH, name.length() + 2);
    }

    private String otherTail(int p) {
        return other.prefix() + " P" + p + " Tail Lat(us)";
    }

    /** The ratio column's name: {@code Ratio(sharp4j/MPI)}, {@code Ratio(sharp4j/Built-in)}, ... */
    private String ratioName() {
        return other.mpi() ? RATIO : "Ratio(sharp4j/" + other.prefix() + ")";
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
            // OMB: "%*sP%d Tail Lat(us)" with the padding FIELD_WIDTH - strlen("Px Tail Lat(us)") - (p > 9)
            sb.append(" ".repeat(Math.max(0, FIELD_WIDTH - 15 - (p > 9 ? 1 : 0)))).append('P').append(p).append(" Tail Lat(us)");
        }
        if (compare) {
            for (String name : compareNames()) {
                sb.append(right(cmpWidth(name), name));
            }
        }
        return sb.toString();
    }

    private java.util.List<String> compareNames() {
        java.util.List<String> names = new java.util.ArrayList<>();
        String p0 = other.prefix() + " ";
        names.add(p0 + "Avg Latency(us)");
        if (full) {
            names.add(p0 + "Min Latency(us)");
            names.add(p0 + "Max Latency(us)");
        }
        if (validate) {
            names.add(p0 + "Validation");
        }
        for (int p : percentiles) {
            names.add(otherTail(p));
        }
        names.add(ratioName());
        return names;
    }

    /** One row; {@code mpi} is null unless comparing, the ratio then that of the averages. Without a line terminator. */
    public String row(long sizeBytes, Stats s, Stats mpi) {
        return row(sizeBytes, s, mpi, mpi == null ? Double.NaN : ratio(s, mpi));
    }

    /** One row; {@code mpi} (the compared side) is null unless comparing, {@code ratio} its ratio column. Without a line terminator. */
    public String row(long sizeBytes, Stats s, Stats mpi, double ratio) {
        StringBuilder sb = new StringBuilder();
        if (showSize) {
            sb.append(String.format(Locale.ROOT, "%-" + SIZE_WIDTH + "d", sizeBytes));
            sb.append(num(FIELD_WIDTH, s.avg()));
        } else {
            sb.append(num(BARRIER_AVG_WIDTH, s.avg()));
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
            java.util.Iterator<String> names = compareNames().iterator();
            sb.append(num(cmpWidth(names.next()), mpi.avg()));
            if (full) {
                sb.append(num(cmpWidth(names.next()), mpi.min())).append(num(cmpWidth(names.next()), mpi.max()));
            }
            if (validate) {
                sb.append(right(cmpWidth(names.next()), mpi.passed() ? "Pass" : "Fail"));
            }
            for (int i = 0; i < percentiles.length; i++) {
                sb.append(num(cmpWidth(names.next()), mpi.tails()[i]));
            }
            sb.append(num(cmpWidth(names.next()), ratio));
        }
        return sb.toString();
    }

    static double ratio(Stats s, Stats mpi) {
        return mpi.avg() > 0 ? s.avg() / mpi.avg() : Double.NaN;
    }

    /**
     * CSV header (all statistics, whatever -f says): the run's metadata columns
     * {@code collective,ranks,nodes,backend}, then {@code datatype,size_bytes} and the statistics.
     */
    public String csvHeader() {
        StringBuilder sb = new StringBuilder("collective,ranks,nodes,backend,datatype,size_bytes");
        csvBlockHeader(sb, "");
        if (compare) {
            csvBlockHeader(sb, other.csvPrefix());
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

    /** CSV row; {@code datatype} is e.g. MPI_FLOAT (empty for barrier), size 0 for barrier. Unknown ranks/nodes are empty. */
    public String csvRow(String datatype, long sizeBytes, Stats s, Stats mpi) {
        return csvRow(datatype, sizeBytes, s, mpi, mpi == null ? Double.NaN : ratio(s, mpi));
    }

    /** CSV row with the compared side's ratio given (see {@link #row(long, Stats, Stats, double)}). */
    public String csvRow(String datatype, long sizeBytes, Stats s, Stats mpi, double ratio) {
        StringBuilder sb = new StringBuilder();
        sb.append(kind.word.toLowerCase(Locale.ROOT)).append(',')
                .append(info.ranks() > 0 ? Integer.toString(info.ranks()) : "").append(',')
                .append(info.nodes() > 0 ? Integer.toString(info.nodes()) : "").append(',')
                .append(info.library()).append(',');
        sb.append(datatype).append(',').append(sizeBytes);
        csvBlock(sb, s);
        if (compare) {
            csvBlock(sb, mpi);
            sb.append(',').append(String.format(Locale.ROOT, "%.4f", ratio));
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
