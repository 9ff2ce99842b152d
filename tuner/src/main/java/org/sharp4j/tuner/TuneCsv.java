package org.sharp4j.tuner;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.sharp4j.tuning.Collective;

/**
 * The measurements of {@code sharp4j tune} as CSV, one row per point and pass, appended as each is
 * measured: the sweep's state file (a rerun with the same output skips the passes it holds) and the
 * data of the table, the plot and {@code sharp4j model --from-tune}, which read each point over its
 * passes ({@link Measurement#overPasses}). Columns: {@value #HEADER}. A CSV of the tuner before
 * passes ({@value #HEADER_V1}) is read as pass 1 of each point, and rewritten in this format when a
 * sweep appends to it.
 */
public final class TuneCsv {
    public static final String HEADER = "nodes,ppn,collective,layer,candidate,bytes,mean_us,stderr_us,rounds,stable,pass";
    /** The header of the tuner's CSV before passes (one figure per point). */
    static final String HEADER_V1 = "nodes,ppn,collective,layer,candidate,bytes,mean_us,stderr_us,rounds,stable";

    private TuneCsv() {
    }

    /** The CSV next to a table file: {@code TABLE.csv}. */
    public static Path of(Path table) {
        return Path.of(table + ".csv");
    }

    public static String row(Measurement.Pass p) {
        Measurement m = p.point();
        return String.format(Locale.ROOT, "%d,%d,%s,%s,%s,%d,%.4f,%.4f,%d,%b,%d", m.nodes(), m.ppn(), Measurement.name(m.collective()),
                m.layer(), m.candidate(), m.bytes(), m.meanUs(), m.stderrUs(), m.rounds(), m.stable(), p.pass());
    }

    /** The points of {@code csv} (empty if it does not exist), each over its passes ({@link #readPasses}). */
    public static List<Measurement> read(Path csv) {
        return Measurement.overPassesByPoint(readPasses(csv));
    }

    /**
     * The passes of {@code csv} (empty if it does not exist). A later row for the same pass of a point
     * replaces an earlier one, and a row of pass 1 starts the point afresh (a sweep measures passes in
     * order, so pass 1 again is a new measurement: {@code --fresh}, the re-measured barrier). A file
     * that is not such a CSV, or a malformed row, is an error naming the line.
     */
    public static List<Measurement.Pass> readPasses(Path csv) {
        if (!Files.exists(csv)) {
            return new ArrayList<>();
        }
        List<String> rows;
        try {
            rows = Files.readAllLines(csv, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read the tuner's measurements " + csv + ": " + e.getMessage(), e);
        }
        if (rows.isEmpty()) {
            return new ArrayList<>();
        }
        String head = rows.get(0).trim();
        boolean v1 = head.equals(HEADER_V1);
        if (!v1 && !head.equals(HEADER)) {
            throw new IllegalArgumentException(csv + " is not a sharp4j tune CSV (first line must be " + HEADER
                    + "); choose another output or remove it");
        }
        int cols = v1 ? 10 : 11;
        Map<String, Map<Integer, Measurement.Pass>> out = new LinkedHashMap<>();
        for (int i = 1; i < rows.size(); i++) {
            String r = rows.get(i).trim();
            if (r.isEmpty()) {
                continue;
            }
            String[] f = r.split(",", -1);
            try {
                if (f.length != cols) {
                    throw new IllegalArgumentException(f.length + " columns, expected " + cols);
                }
                Measurement m = new Measurement(Integer.parseInt(f[0]), Integer.parseInt(f[1]), collective(f[2]), f[3], f[4],
                        Long.parseLong(f[5]), Double.parseDouble(f[6]), Double.parseDouble(f[7]), Integer.parseInt(f[8]),
                        Boolean.parseBoolean(f[9]));
                Measurement.Pass p = new Measurement.Pass(m, v1 ? 1 : Integer.parseInt(f[10]));
                if (p.pass() == 1) {
                    out.remove(m.key()); // a new measurement of the point: its earlier passes go, and it moves to the end
                }
                out.computeIfAbsent(m.key(), k -> new java.util.TreeMap<>()).put(p.pass(), p);
            } catch (RuntimeException e) {
                throw new IllegalArgumentException(csv + ":" + (i + 1) + ": malformed row '" + r + "': " + e.getMessage(), e);
            }
        }
        List<Measurement.Pass> all = new ArrayList<>();
        for (Map<Integer, Measurement.Pass> ps : out.values()) {
            all.addAll(ps.values());
        }
        return all;
    }

    static Collective collective(String s) {
        for (Collective c : Collective.values()) {
            if (Measurement.name(c).equals(s.trim())) {
                return c;
            }
        }
        throw new IllegalArgumentException("unknown collective '" + s + "'");
    }

    /**
     * Appends one row (writing the header first into a new file; a CSV before passes is first rewritten
     * in this format, its rows as pass 1) and forces it out, so a killed sweep keeps it.
     */
    public static void append(Path csv, Measurement.Pass p) {
        try {
            Path parent = csv.toAbsolutePath().getParent();
            if (parent != null) {
                Files.createDirectories(parent);
            }
            List<String> lines = new ArrayList<>();
            if (!Files.exists(csv) || Files.size(csv) == 0) {
                lines.add(HEADER);
            } else if (firstLine(csv).trim().equals(HEADER_V1)) {
                List<String> old = new ArrayList<>(List.of(HEADER));
                for (Measurement.Pass q : readPasses(csv)) {
                    old.add(row(q));
                }
                Path tmp = csv.resolveSibling(csv.getFileName() + ".tmp");
                Files.write(tmp, old, StandardCharsets.UTF_8);
                Files.move(tmp, csv, java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
            }
            lines.add(row(p));
            Files.write(csv, lines, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND,
                    StandardOpenOption.WRITE, StandardOpenOption.SYNC);
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot write the tuner's measurements to " + csv + ": " + e.getMessage(), e);
        }
    }

    /** Appends a point measured in one pass as its pass 1 (a new measurement of it). */
    public static void append(Path csv, Measurement m) {
        append(csv, new Measurement.Pass(m, 1));
    }

    private static String firstLine(Path csv) throws IOException {
        try (java.io.BufferedReader r = Files.newBufferedReader(csv, StandardCharsets.UTF_8)) {
            String l = r.readLine();
            return l == null ? "" : l;
        }
    }
}
