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
import java.util.Map;
import java.util.regex.Pattern;

/**
 * One CSV file written by {@code osu_allreduce|osu_reduce|osu_barrier --csv FILE}
 * ({@link org.sharp4j.osu.Table#csvHeader()} / {@link org.sharp4j.osu.Table#csvRow}):
 * <pre>
 * datatype,size_bytes,avg_us,min_us,max_us,iterations[,validation][,pNN_us...][,mpi_avg_us,...,ratio]
 * </pre>
 * The unprefixed statistics are the measured backend's (sharp4j, or MPI for {@code --backend mpi}); with
 * {@code --compare mpi} the {@code mpi_}-prefixed ones follow. A barrier file has an empty datatype and
 * size 0 on its one row.
 */
public final class OsuCsv {
    /** The statistics a series can plot: avg, min, max, or a percentile pNN written by {@code -z}. */
    static final Pattern STATISTIC = Pattern.compile("avg|min|max|p\\d{1,3}");
    static final String MPI_PREFIX = "mpi_";

    /** One series: a backend's latencies by message size for one datatype of the file. */
    public record Series(String backend, String datatype, double[] sizes, double[] latencies) {
    }

    /** One data row: its 1-based line number and its fields. */
    record Row(int line, String[] fields) {
    }

    private final Path file;
    private final List<String> columns;
    private final Map<String, Integer> index = new LinkedHashMap<>();
    private final List<Row> rows;
    private final boolean barrier;

    private OsuCsv(Path file, List<String> columns, List<Row> rows, boolean barrier) {
        this.file = file;
        this.columns = List.copyOf(columns);
        for (int i = 0; i < columns.size(); i++) {
            index.put(columns.get(i), i);
        }
        this.rows = List.copyOf(rows);
        this.barrier = barrier;
    }

    /** Reads and checks {@code file}: header, field counts, datatype/size fields. */
    public static OsuCsv read(Path file) throws CsvFormatException {
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
            throw new CsvFormatException(file, 0, "empty file (expected an OSU CSV header 'datatype,size_bytes,avg_us,...')");
        }
        String head = lines.get(0);
        if (head.startsWith("\uFEFF")) {
            head = head.substring(1);
        }
        List<String> columns = List.of(head.trim().split(",", -1));
        if (columns.size() < 3 || !columns.get(0).equals("datatype") || !columns.get(1).equals("size_bytes")
                || !columns.contains("avg_us")) {
            throw new CsvFormatException(file, 1, "not an OSU CSV header: expected 'datatype,size_bytes,avg_us,...' "
                    + "(as written by osu_allreduce/osu_reduce/osu_barrier --csv), got '" + abbreviate(head) + "'");
        }
        List<Row> rows = new ArrayList<>();
        boolean anySized = false;
        boolean anyBarrier = false;
        for (int i = 1; i < lines.size(); i++) {
            String text = lines.get(i).trim();
            int line = i + 1;
            if (text.isEmpty()) {
                continue;
            }
            String[] f = text.split(",", -1);
            if (f.length != columns.size()) {
                throw new CsvFormatException(file, line, "expected " + columns.size() + " fields as in the header, found "
                        + f.length + ": '" + abbreviate(text) + "'");
            }
            long size;
            try {
                size = Long.parseLong(f[1].trim());
            } catch (NumberFormatException e) {
                throw new CsvFormatException(file, line, "size_bytes is not an integer: '" + abbreviate(f[1]) + "'");
            }
            if (size < 0) {
                throw new CsvFormatException(file, line, "size_bytes is negative: " + size);
            }
            if (f[0].isBlank()) {
                if (size != 0) {
                    throw new CsvFormatException(file, line, "a row without a datatype (barrier) must have size_bytes 0, found " + size);
                }
                anyBarrier = true;
            } else {
                anySized = true;
            }
            rows.add(new Row(line, f));
        }
        if (rows.isEmpty()) {
            throw new CsvFormatException(file, 0, "no data rows after the header (did the benchmark fail before its first message size?)");
        }
        if (anySized && anyBarrier) {
            int line = rows.stream().filter(r -> r.fields()[0].isBlank()).findFirst().orElseThrow().line();
            throw new CsvFormatException(file, line, "row without a datatype (a barrier row) in a file of message sizes");
        }
        return new OsuCsv(file, columns, rows, anyBarrier);
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

    /** Whether the file compares sharp4j with MPI ({@code --compare mpi}: mpi_ columns). */
    public boolean hasMpiColumns() {
        return index.containsKey(MPI_PREFIX + "avg_us");
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

    /**
     * The series of {@code statistic} (avg, min, max, pNN): per backend (the unprefixed columns named
     * {@code primaryBackend}, then "MPI" when comparing), per datatype in file order. Rows keep file order.
     */
    public List<Series> series(String statistic, String primaryBackend) throws CsvFormatException {
        if (!STATISTIC.matcher(statistic).matches()) {
            throw new IllegalArgumentException("not a statistic: " + statistic);
        }
        String column = statistic + "_us";
        if (!index.containsKey(column)) {
            throw new CsvFormatException(file, 1, "no column '" + column + "' (this file has: " + String.join(", ", statistics())
                    + (statistic.startsWith("p") ? "; percentiles are written by osu_* -z" : "") + ")");
        }
        List<Series> out = new ArrayList<>();
        out.addAll(seriesOf(column, primaryBackend));
        if (hasMpiColumns()) {
            if (!index.containsKey(MPI_PREFIX + column)) {
                throw new CsvFormatException(file, 1, "has mpi_avg_us but no column '" + MPI_PREFIX + column + "'");
            }
            out.addAll(seriesOf(MPI_PREFIX + column, "MPI"));
        }
        return out;
    }

    private List<Series> seriesOf(String column, String backend) throws CsvFormatException {
        int col = index.get(column);
        Map<String, List<double[]>> byType = new LinkedHashMap<>();
        for (Row r : rows) {
            String raw = r.fields()[col].trim();
            double v;
            try {
                v = Double.parseDouble(raw);
            } catch (NumberFormatException e) {
                throw new CsvFormatException(file, r.line(), column + " is not a number: '" + abbreviate(raw) + "'");
            }
            if (!Double.isFinite(v) || v < 0) {
                throw new CsvFormatException(file, r.line(), column + " is not a finite non-negative latency: " + raw);
            }
            double size = Long.parseLong(r.fields()[1].trim()); // checked by read()
            byType.computeIfAbsent(r.fields()[0].trim(), k -> new ArrayList<>()).add(new double[] {size, v});
        }
        List<Series> out = new ArrayList<>();
        for (Map.Entry<String, List<double[]>> e : byType.entrySet()) {
            List<double[]> pts = e.getValue();
            double[] x = new double[pts.size()];
            double[] y = new double[pts.size()];
            for (int i = 0; i < x.length; i++) {
                x[i] = pts.get(i)[0];
                y[i] = pts.get(i)[1];
            }
            out.add(new Series(backend, e.getKey(), x, y));
        }
        return out;
    }
}
