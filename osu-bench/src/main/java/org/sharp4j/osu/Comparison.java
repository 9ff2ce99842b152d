package org.sharp4j.osu;

import java.nio.file.Path;
import java.util.Locale;
import org.sharp4j.Config;
import org.sharp4j.tuning.RuleParser;
import org.sharp4j.tuning.TuningTable;

/**
 * What {@code --compare} measures next to the run's own sharp4j, in the same processes, alternating
 * ({@link Osu#measure}: per message size, blocks of calls on one then the other): Open MPI's Java
 * bindings ({@code mpi}), or sharp4j itself with other tuning, a second communicator over the same
 * bootstrap built from the run's settings with one tuning source replaced:
 * <ul>
 *   <li>{@code builtin}: the built-in rules only (no table file, legacy properties or override string);</li>
 *   <li>{@code table=FILE}: FILE as the table file (what {@code -Dsharp4j.tune.file=FILE} would give);</li>
 *   <li>{@code tune=RULES}: RULES as the override string (what {@code -Dsharp4j.tune=RULES} would give;
 *       the tuner forces its candidates the same way, {@link Config#withTuneOverride}).</li>
 * </ul>
 * A file or rules the engine would refuse are refused here, at the command line, on every rank.
 *
 * @param source what is compared
 * @param arg    the file or the rules ({@code null} for mpi and builtin)
 */
public record Comparison(Source source, String arg) {
    /** The kinds of {@code --compare}. */
    public enum Source {
        MPI, BUILTIN, TABLE, TUNE
    }

    public static final Comparison MPI = new Comparison(Source.MPI, null);

    /**
     * {@code --compare}'s value: {@code mpi}, {@code builtin}, {@code table=FILE} or {@code tune=RULES}.
     *
     * @throws IllegalArgumentException naming what is wrong (an unknown kind, a missing or unparsable file, bad rules)
     */
    public static Comparison parse(String s) {
        String t = s.trim();
        String low = t.toLowerCase(Locale.ROOT);
        if (low.equals("mpi")) {
            return MPI;
        }
        if (low.equals("builtin") || low.equals("built-in")) {
            return new Comparison(Source.BUILTIN, null);
        }
        if (low.startsWith("table=")) {
            String f = t.substring("table=".length()).trim();
            if (f.isEmpty()) {
                throw new IllegalArgumentException("--compare table=FILE needs a file");
            }
            RuleParser.parseFile(Path.of(f)); // names the file and the line it cannot read
            return new Comparison(Source.TABLE, f);
        }
        if (low.startsWith("tune=")) {
            String r = t.substring("tune=".length()).trim();
            if (r.isEmpty()) {
                throw new IllegalArgumentException("--compare tune=RULES needs rules, e.g. tune=allreduce:0-inf:knomial:radix=2");
            }
            RuleParser.parseOverride(r, "--compare tune");
            return new Comparison(Source.TUNE, r);
        }
        throw new IllegalArgumentException("--compare takes mpi, builtin, table=FILE or tune=RULES, got '" + s + "'");
    }

    public boolean mpi() {
        return source == Source.MPI;
    }

    /** The compared library as the port line names it: {@code Open MPI Java}, {@code sharp4j built-in}, {@code sharp4j table F}, ... */
    public String library() {
        switch (source) {
            case MPI: return Table.OPEN_MPI_JAVA;
            case BUILTIN: return Table.SHARP4J + " built-in";
            case TABLE: return Table.SHARP4J + " table " + arg;
            default: return Table.SHARP4J + " tune " + arg;
        }
    }

    /** The prefix of the compared columns' names: {@code MPI}, {@code Built-in}, {@code Table}, {@code Tune}. */
    public String prefix() {
        switch (source) {
            case MPI: return "MPI";
            case BUILTIN: return "Built-in";
            case TABLE: return "Table";
            default: return "Tune";
        }
    }

    /** The prefix of the compared columns in the CSV: {@code mpi_} (what the plots read as Open MPI Java), else {@code cmp_}. */
    public String csvPrefix() {
        return mpi() ? "mpi_" : "cmp_";
    }

    /**
     * Blocks per message size when {@code --blocks} is not given: 1 against MPI (all of sharp4j's calls,
     * then all of MPI's: OMB's loop twice, the ratio of the averages), 10 between sharp4j configurations,
     * whose differences are often smaller than the machine's drift over one size's calls.
     */
    public int defaultBlocks() {
        return mpi() ? 1 : 10;
    }

    /** The compared communicator's settings: {@code base} (the run's) with the tuning source replaced. Not for mpi. */
    public Config apply(Config base) {
        switch (source) {
            case BUILTIN: return base.withTuningTable(TuningTable.builtIn());
            case TABLE: return base.withTuningTable(base.tuningTable().withFile(Path.of(arg), "--compare table"));
            case TUNE: return base.withTuneOverride(arg);
            default: throw new IllegalStateException("--compare mpi has no sharp4j settings");
        }
    }
}
