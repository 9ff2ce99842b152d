package org.sharp4j.osu.plot;

import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One file of OSU measurements, in either of two forms.
 *
 * <p>The CSV of {@code osu_allreduce|osu_reduce|osu_barrier --csv FILE}
 * ({@link org.sharp4j.osu.Table#csvHeader()} / {@link org.sharp4j.osu.Table#csvRow}):
 * <pre>
 * collective,ranks,nodes,backend,datatype,size_bytes,avg_us,min_us,max_us,iterations[,validation][,pNN_us...][,mpi_avg_us,...,ratio]
 * </pre>
 * Columns are found by name; CSVs of earlier versions, which start at {@code datatype,size_bytes} and
 * have no metadata columns, are read too (their backend is then the caller's {@code primaryBackend}).
 * The unprefixed statistics are the {@code backend} column's library (sharp4j, or Open MPI Java for
 * {@code --backend mpi}); with {@code --compare mpi} the {@code mpi_}-prefixed ones, Open MPI Java's,
 * follow. A barrier file has an empty datatype and size 0 on its one row.
 *
 * <p>Or the text that OMB 7.x's C benchmarks or this port print on stdout: the title line gives the
 * collective, the port's {@code # sharp4j port: library ...} line the library, ranks and nodes (without
 * it the file is OMB's C output, labelled {@link #OMB_C}), {@code # Datatype:} lines the datatype, the
 * header line the columns (names separated by two spaces or more, as OMB prints them).
 */
public final class OsuCsv {
    /** The statistics a series can plot: avg, min, max, or a percentile pNN written by {@code -z}. */
    static final Pattern STATISTIC = Pattern.compile("avg|min|max|p\\d{1,3}");
    static final String MPI_PREFIX = "mpi_";
    /** The library of the mpi_ columns of a {@code --compare mpi} run. */
    public static final String OPEN_MPI_JAVA = "Open MPI Java";
    /** Default label of output of OMB's own C benchmarks (no port line). */
    public static final String OMB_C = "Open MPI C";

    private static final Pattern TITLE = Pattern.compile("#\\s*OSU MPI(?:-\\S+)? (\\w+) Latency Test.*");
    private static final Pattern PORT = Pattern.compile("# sharp4j port: library (.+?)(?:, (\\d+) ranks?)?(?:, (\\d+) nodes?)?\\s*");
    private static final Pattern DATATYPE = Pattern.compile("# Datatype: (\\S+?)\\.?\\s*");
    private static final Pattern TAIL = Pattern.compile("(MPI )?P(\\d{1,3}) (?:Tail )?Lat\\(us\\)");

    /**
     * One series: a backend's latencies by message size for one datatype of the file; {@code lo} and
     * {@code hi} bound a band around it (null when the file has no such columns).
     */
    public record Series(String backend, String datatype, double[] sizes, double[] latencies, double[] lo, double[] hi) {
        public Series(String backend, String datatype, double[] sizes, double[] latencies) {
            this(backend, datatype, sizes, latencies, null, null);
        }
    }

    /** One data row: its 1-based line number and its fields. */
    record Row(int line, String[] fields) {
    }

    private final Path file;
    private final List<String> columns;
    private final Map<String, Integer> index = new LinkedHashMap<>();
    private final List<Row> rows;
    private final boolean barrier;
    private final String collective;
    private final int ranks;
    private final int nodes;
    private final String backend;
    private final String mpiBackend;

    private OsuCsv(Path file, List<String> columns, List<Row> rows, boolean barrier, String collective, int ranks, int nodes,
            String backend, String mpiBackend) {
        this.file = file;
        this.columns = List.copyOf(columns);
        for (int i = 0; i < columns.size(); i++) {
            index.putIfAbsent(columns.get(i), i);
        }
        this.rows = List.copyOf(rows);
        this.barrier = barrier;
        this.collective = collective;
        this.ranks = ranks;
        this.nodes = nodes;
        this.backend = backend;
        this.mpiBackend = mpiBackend;
    }

    /** Reads and checks {@code file} (CSV or OSU text output): header, field counts, datatype/size fields. */
    public static OsuCsv read(Path file) throws CsvFormatException {
        return read(file, OMB_C);
    }

    /** As {@link #read(Path)}; {@code cLabel} names the library of OMB C text output (which does not say). */
    public static OsuCsv read(Path file, String cLabel) throws CsvFormatException {
        List<String> lines;
        try {
            lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            throw new CsvFormatException(file, 0, "no such file");
        } catch (CharacterCodingException e) {
            throw new CsvFormatException(file, 0, "not a text (UTF-8) file");
        } catch (IOException e) {
            throw new CsvFormatException(file, 0, "cannot read: " + e);
        }
        if (lines.isEmpty() || lines.stream().allMatch(String::isBlank)) {
            throw new CsvFormatException(file, 0, "empty file (expected an OSU CSV header 'collective,...,datatype,size_bytes,avg_us,...' "
                    + "or OSU output)");
        }
        if (!lines.get(0).isEmpty() && lines.get(0).charAt(0) == '\uFEFF') {
            lines.set(0, lines.get(0).substring(1));
        }
        String first = lines.stream().filter(l -> !l.isBlank()).findFirst().orElseThrow().trim();
        if (first.startsWith("#")) {
            return readText(file, lines, cLabel);
        }
        return readCsv(file, lines);
    }

    private static OsuCsv readCsv(Path file, List<String> lines) throws CsvFormatException {
        String head = lines.get(0);
        List<String> columns = List.of(head.trim().split(",", -1));
        if (columns.size() < 3 || !columns.contains("datatype") || !columns.contains("size_bytes") || !columns.contains("avg_us")) {
            throw new CsvFormatException(file, 1, "not an OSU CSV header: expected 'collective,ranks,nodes,backend,datatype,size_bytes,avg_us,...' "
                    + "(as written by osu_allreduce/osu_reduce/osu_barrier --csv), got '" + abbreviate(head) + "'");
        }
        int dt = columns.indexOf("datatype");
        int sz = columns.indexOf("size_bytes");
        List<Row> rows = new ArrayList<>();
        for (int i = 1; i < lines.size(); i++) {
            String text = lines.get(i).trim();
            if (text.isEmpty()) {
                continue;
            }
            String[] f = text.split(",", -1);
            if (f.length != columns.size()) {
                throw new CsvFormatException(file, i + 1, "expected " + columns.size() + " fields as in the header, found "
                        + f.length + ": '" + abbreviate(text) + "'");
            }
            rows.add(new Row(i + 1, f));
        }
        boolean barrier = checkRows(file, rows, dt, sz);
        Row r0 = rows.get(0);
        String collective = field(columns, r0, "collective");
        int ranks = intField(file, columns, r0, "ranks");
        int nodes = intField(file, columns, r0, "nodes");
        String backend = field(columns, r0, "backend");
        return new OsuCsv(file, columns, rows, barrier, collective, ranks, nodes, backend, OPEN_MPI_JAVA);
    }

    private static String field(List<String> columns, Row r, String name) {
        int i = columns.indexOf(name);
        if (i < 0) {
            return null;
        }
        String v = r.fields()[i].trim();
        return v.isEmpty() ? null : v;
    }

    private static int intField(Path file, List<String> columns, Row r, String name) throws CsvFormatException {
        String v = field(columns, r, name);
        if (v == null) {
            return -1;
        }
        try {
            int n = Integer.parseInt(v);
            if (n < 1) {
                throw new NumberFormatException();
            }
            return n;
        } catch (NumberFormatException e) {
            throw new CsvFormatException(file, r.line(), name + " is not a positive integer: '" + abbreviate(v) + "'");
        }
    }

    /** Checks the datatype and size fields of every row; returns whether the file is a barrier file. */
    private static boolean checkRows(Path file, List<Row> rows, int dt, int sz) throws CsvFormatException {
        if (rows.isEmpty()) {
            throw new CsvFormatException(file, 0, "no data rows after the header (did the benchmark fail before its first message size?)");
        }
        boolean anySized = false;
        boolean anyBarrier = false;
        for (Row r : rows) {
            String[] f = r.fields();
            long size;
            try {
                size = Long.parseLong(f[sz].trim());
            } catch (NumberFormatException e) {
                throw new CsvFormatException(file, r.line(), "size_bytes is not an integer: '" + abbreviate(f[sz]) + "'");
            }
            if (size < 0) {
                throw new CsvFormatException(file, r.line(), "size_bytes is negative: " + size);
            }
            if (f[dt].isBlank()) {
                if (size != 0) {
                    throw new CsvFormatException(file, r.line(), "a row without a datatype (barrier) must have size_bytes 0, found " + size);
                }
                anyBarrier = true;
            } else {
                anySized = true;
            }
        }
        if (anySized && anyBarrier) {
            int line = rows.stream().filter(r -> r.fields()[dt].isBlank()).findFirst().orElseThrow().line();
            throw new CsvFormatException(file, line, "row without a datatype (a barrier row) in a file of message sizes");
        }
        return anyBarrier;
    }

    /** OMB's (or the port's) stdout: title, [port line], [# Datatype: X.], header, rows. */
    private static OsuCsv readText(Path file, List<String> lines, String cLabel) throws CsvFormatException {
        String collective = null;
        String backend = cLabel;
        String mpiBackend = OPEN_MPI_JAVA;
        int ranks = -1;
        int nodes = -1;
        String datatype = "";
        List<String> columns = null;
        boolean sized = false;
        List<Row> rows = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            String l = lines.get(i).strip();
            int line = i + 1;
            if (l.isEmpty()) {
                continue;
            }
            Matcher m;
            if ((m = TITLE.matcher(l)).matches()) {
                collective = m.group(1).toLowerCase(Locale.ROOT);
            } else if ((m = PORT.matcher(l)).matches()) {
                String lib = m.group(1);
                int vs = lib.indexOf(" vs ");
                backend = vs < 0 ? lib : lib.substring(0, vs);
                if (vs >= 0) {
                    mpiBackend = lib.substring(vs + 4);
                }
                ranks = m.group(2) != null ? Integer.parseInt(m.group(2)) : -1;
                nodes = m.group(3) != null ? Integer.parseInt(m.group(3)) : -1;
            } else if ((m = DATATYPE.matcher(l)).matches()) {
                datatype = m.group(1);
            } else if (l.startsWith("# Size") || l.startsWith("# Avg Latency")) {
                List<String> cols = new ArrayList<>(List.of("datatype", "size_bytes"));
                sized = l.startsWith("# Size");
                String[] names = l.substring(1).trim().split("\\s{2,}");
                for (int k = sized ? 1 : 0; k < names.length; k++) {
                    cols.add(columnName(names[k]));
                }
                if (columns != null && !columns.equals(cols)) {
                    throw new CsvFormatException(file, line, "a second table with other columns than the first");
                }
                columns = cols;
            } else if (l.startsWith("#")) {
                continue; // other comments
            } else if (Character.isDigit(l.charAt(0)) && columns != null) {
                String[] v = l.split("\\s+");
                List<String> f = new ArrayList<>();
                f.add(sized ? datatype : "");
                if (!sized) {
                    f.add("0");
                }
                f.addAll(List.of(v));
                if (f.size() != columns.size()) {
                    throw new CsvFormatException(file, line, "expected " + (columns.size() - (sized ? 1 : 2)) + " values as in the header, found "
                            + v.length + ": '" + abbreviate(l) + "'");
                }
                if (sized && datatype.isEmpty()) {
                    f.set(0, "?");
                }
                rows.add(new Row(line, f.toArray(new String[0])));
            }
            // anything else (warnings, DATA VALIDATION ERROR, ...) is not a row
        }
        if (collective == null) {
            throw new CsvFormatException(file, 1, "not OSU output: no '# OSU MPI ... Latency Test' title line (and not a CSV: it starts with #)");
        }
        if (columns == null) {
            throw new CsvFormatException(file, 0, "OSU output without a header line ('# Size ...' or '# Avg Latency(us)')");
        }
        boolean barrier = checkRows(file, rows, 0, 1);
        return new OsuCsv(file, columns, rows, barrier, collective, ranks, nodes, backend, mpiBackend);
    }

    /** The CSV column of an OSU header name: Avg Latency(us) is avg_us, MPI P50 Tail Lat(us) is mpi_p50_us. */
    static String columnName(String header) {
        String h = header.trim();
        String prefix = "";
        if (h.startsWith("MPI ")) {
            prefix = MPI_PREFIX;
            h = h.substring(4);
        }
        Matcher m = TAIL.matcher(h);
        if (m.matches()) {
            return prefix + "p" + m.group(2) + "_us";
        }
        switch (h) {
            case "Avg Latency(us)":
                return prefix + "avg_us";
            case "Min Latency(us)":
                return prefix + "min_us";
            case "Max Latency(us)":
                return prefix + "max_us";
            case "Iterations":
                return prefix + "iterations";
            case "Validation":
                return prefix + "validation";
            default:
                if (h.startsWith("Ratio")) {
                    return "ratio";
                }
                return prefix + h.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9]+", "_");
        }
    }

    private static String abbreviate(String s) {
        return s.length() <= 120 ? s : s.substring(0, 117) + "...";
    }

    public Path file() {
        return file;
    }

    public List<String> columns() {
        return columns;
    }

    /** Whether this is an osu_barrier file: no message sizes, one latency per backend. */
    public boolean isBarrier() {
        return barrier;
    }

    /** allreduce, reduce or barrier; null when the file does not say (CSV of an earlier version). */
    public String collective() {
        return collective;
    }

    /** Ranks of the run, or -1 when the file does not say. */
    public int ranks() {
        return ranks;
    }

    /** Nodes of the run, or -1 when the file does not say. */
    public int nodes() {
        return nodes;
    }

    /** The library of the unprefixed columns, or null when the file does not say. */
    public String backend() {
        return backend;
    }

    /** The datatypes of the rows, in file order (empty for barrier). */
    public List<String> datatypes() {
        List<String> out = new ArrayList<>();
        int dt = index.get("datatype");
        for (Row r : rows) {
            String t = r.fields()[dt].trim();
            if (!t.isEmpty() && !out.contains(t)) {
                out.add(t);
            }
        }
        return out;
    }

    /** Whether the file compares sharp4j with MPI ({@code --compare mpi}: mpi_ columns). */
    public boolean hasMpiColumns() {
        return index.containsKey(MPI_PREFIX + "avg_us");
    }

    /** Whether the file has the column of {@code statistic} (avg, min, max, pNN) for its first backend. */
    public boolean has(String statistic) {
        return index.containsKey(statistic + "_us");
    }

    /** The statistics this file has for its first backend (avg, min, max, pNN...), in column order. */
    public List<String> statistics() {
        List<String> out = new ArrayList<>();
        for (String c : columns) {
            if (c.endsWith("_us") && !c.startsWith(MPI_PREFIX)) {
                String s = c.substring(0, c.length() - 3);
                if (STATISTIC.matcher(s).matches()) {
                    out.add(s);
                }
            }
        }
        return Collections.unmodifiableList(out);
    }

    /** As {@link #series(String, String, String, String)} without a band. */
    public List<Series> series(String statistic, String primaryBackend) throws CsvFormatException {
        return series(statistic, primaryBackend, null, null);
    }

    /**
     * The series of {@code statistic} (avg, min, max, pNN): per backend (the unprefixed columns, named by
     * the file's backend column or else {@code primaryBackend}, then Open MPI Java when comparing), per
     * datatype in file order. Rows keep file order. With {@code bandLo} and {@code bandHi} (statistics
     * such as p10 and p90) each series carries that band when the file has both columns.
     */
    public List<Series> series(String statistic, String primaryBackend, String bandLo, String bandHi) throws CsvFormatException {
        if (!STATISTIC.matcher(statistic).matches()) {
            throw new IllegalArgumentException("not a statistic: " + statistic);
        }
        String column = statistic + "_us";
        if (!index.containsKey(column)) {
            throw new CsvFormatException(file, 1, "no column '" + column + "' (this file has: " + String.join(", ", statistics())
                    + (statistic.startsWith("p") ? "; percentiles are written by osu_* -z" : "") + ")");
        }
        boolean band = bandLo != null && bandHi != null && index.containsKey(bandLo + "_us") && index.containsKey(bandHi + "_us");
        List<Series> out = new ArrayList<>();
        out.addAll(seriesOf(column, backend != null ? backend : primaryBackend, band ? bandLo + "_us" : null, band ? bandHi + "_us" : null));
        if (hasMpiColumns()) {
            if (!index.containsKey(MPI_PREFIX + column)) {
                throw new CsvFormatException(file, 1, "has mpi_avg_us but no column '" + MPI_PREFIX + column + "'");
            }
            boolean mpiBand = band && index.containsKey(MPI_PREFIX + bandLo + "_us") && index.containsKey(MPI_PREFIX + bandHi + "_us");
            out.addAll(seriesOf(MPI_PREFIX + column, mpiBackend, mpiBand ? MPI_PREFIX + bandLo + "_us" : null,
                    mpiBand ? MPI_PREFIX + bandHi + "_us" : null));
        }
        return out;
    }

    private double value(Row r, String column) throws CsvFormatException {
        String raw = r.fields()[index.get(column)].trim();
        double v;
        try {
            v = Double.parseDouble(raw);
        } catch (NumberFormatException e) {
            throw new CsvFormatException(file, r.line(), column + " is not a number: '" + abbreviate(raw) + "'");
        }
        if (!Double.isFinite(v) || v < 0) {
            throw new CsvFormatException(file, r.line(), column + " is not a finite non-negative latency: " + raw);
        }
        return v;
    }

    private List<Series> seriesOf(String column, String backendName, String loCol, String hiCol) throws CsvFormatException {
        int dt = index.get("datatype");
        int sz = index.get("size_bytes");
        Map<String, List<double[]>> byType = new LinkedHashMap<>();
        for (Row r : rows) {
            double v = value(r, column);
            double lo = loCol != null ? value(r, loCol) : Double.NaN;
            double hi = hiCol != null ? value(r, hiCol) : Double.NaN;
            double size = Long.parseLong(r.fields()[sz].trim()); // checked by read()
            byType.computeIfAbsent(r.fields()[dt].trim(), k -> new ArrayList<>()).add(new double[] {size, v, lo, hi});
        }
        List<Series> out = new ArrayList<>();
        for (Map.Entry<String, List<double[]>> e : byType.entrySet()) {
            List<double[]> pts = e.getValue();
            double[] x = new double[pts.size()];
            double[] y = new double[pts.size()];
            double[] lo = loCol != null ? new double[pts.size()] : null;
            double[] hi = hiCol != null ? new double[pts.size()] : null;
            for (int i = 0; i < x.length; i++) {
                x[i] = pts.get(i)[0];
                y[i] = pts.get(i)[1];
                if (lo != null) {
                    lo[i] = pts.get(i)[2];
                    hi[i] = pts.get(i)[3];
                }
            }
            out.add(new Series(backendName, e.getKey(), x, y, lo, hi));
        }
        return out;
    }
}
