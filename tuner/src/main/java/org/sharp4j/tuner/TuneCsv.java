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
 * The measurements of {@code sharp4j tune} as CSV, one row per point, appended as each point is
 * measured: the sweep's state file (a rerun with the same output skips the points it holds) and the
 * data of the plot and of {@code sharp4j model --from-tune}. Columns: {@value #HEADER}.
 */
public final class TuneCsv {
    public static final String HEADER = "nodes,ppn,collective,layer,candidate,bytes,mean_us,stderr_us,rounds,stable";

    private TuneCsv() {
    }

    /** The CSV next to a table file: {@code TABLE.csv}. */
    public static Path of(Path table) {
        return Path.of(table + ".csv");
    }

    public static String row(Measurement m) {
        return String.format(Locale.ROOT, "%d,%d,%s,%s,%s,%d,%.4f,%.4f,%d,%b", m.nodes(), m.ppn(), Measurement.name(m.collective()),
                m.layer(), m.candidate(), m.bytes(), m.meanUs(), m.stderrUs(), m.rounds(), m.stable());
    }

    /**
     * The rows of {@code csv} (empty if it does not exist); a later row for the same point replaces an
     * earlier one. A file that is not such a CSV, or a malformed row, is an error naming the line.
     */
    public static List<Measurement> read(Path csv) {
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
        if (!rows.get(0).trim().equals(HEADER)) {
            throw new IllegalArgumentException(csv + " is not a sharp4j tune CSV (first line must be " + HEADER
                    + "); choose another output or remove it");
        }
        Map<String, Measurement> out = new LinkedHashMap<>();
        for (int i = 1; i < rows.size(); i++) {
            String r = rows.get(i).trim();
            if (r.isEmpty()) {
                continue;
            }
            String[] f = r.split(",", -1);
            try {
                if (f.length != 10) {
                    throw new IllegalArgumentException(f.length + " columns, expected 10");
                }
                Measurement m = new Measurement(Integer.parseInt(f[0]), Integer.parseInt(f[1]), collective(f[2]), f[3], f[4],
                        Long.parseLong(f[5]), Double.parseDouble(f[6]), Double.parseDouble(f[7]), Integer.parseInt(f[8]),
                        Boolean.parseBoolean(f[9]));
                out.remove(m.key());
                out.put(m.key(), m);
            } catch (RuntimeException e) {
                throw new IllegalArgumentException(csv + ":" + (i + 1) + ": malformed row '" + r + "': " + e.getMessage(), e);
            }
        }
        return new ArrayList<>(out.values());
    }

    static Collective collective(String s) {
        for (Collective c : Collective.values()) {
            if (Measurement.name(c).equals(s.trim())) {
                return c;
            }
        }
        throw new IllegalArgumentException("unknown collective '" + s + "'");
    }

    /** Appends one row (writing the header first into a new file) and forces it out, so a killed sweep keeps it. */
    public static void append(Path csv, Measurement m) {
        try {
            Path parent = csv.toAbsolutePath().getParent();
            if (parent != null) {
                Files.createDirectories(parent);
            }
            List<String> lines = new ArrayList<>();
            if (!Files.exists(csv) || Files.size(csv) == 0) {
                lines.add(HEADER);
            }
            lines.add(row(m));
            Files.write(csv, lines, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND,
                    StandardOpenOption.WRITE, StandardOpenOption.SYNC);
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot write the tuner's measurements to " + csv + ": " + e.getMessage(), e);
        }
    }
}
