package org.sharp4j.launch;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.sharp4j.Config;
import org.sharp4j.bootstrap.Bootstrap;
import org.sharp4j.bootstrap.RendezvousBootstrap;
import org.sharp4j.bootstrap.SingletonBootstrap;
import org.sharp4j.tuning.Collective;
import org.sharp4j.tuning.Sizes;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** The rank program of {@code sharp4j tune} (started by the embedded launcher): sweeps, then rank 0 writes the table and CSV. */
@Command(name = "sharp4j-tune-rank", mixinStandardHelpOptions = true)
public final class TuneMain implements Callable<Integer> {
    @Option(names = {"-o", "--output"}, required = true, description = "table file to write")
    Path output;

    @Option(names = "--csv", description = "measurements (CSV) to write; default: the table file + .csv")
    Path csv;

    @Option(names = "--quick", description = "tiny sweep: 3 sizes, radix 2 and 4, few iterations")
    boolean quick;

    @Option(names = "--sizes", split = ",", description = "message sizes, e.g. 8,1k,64k")
    List<String> sizes;

    @Option(names = "--collectives", split = ",", description = "allreduce, reduce, barrier")
    List<String> collectives;

    @Option(names = "--radices", split = ",", description = "tree radices to try")
    int[] radices;

    @Option(names = "--iterations", description = "timed calls per round")
    Integer iterations;

    @Option(names = "--max-rounds", description = "round budget per candidate and size")
    Integer maxRounds;

    @Option(names = "--no-progress", description = "no progress bar")
    boolean noProgress;

    public static void main(String[] args) {
        System.exit(new CommandLine(new TuneMain()).execute(args));
    }

    /** Builds the options from the command line (shared with the front end). */
    Tuner.Options options() {
        Tuner.Options o = quick ? Tuner.Options.quick() : new Tuner.Options();
        if (sizes != null) {
            o.sizes = sizes.stream().mapToLong(Sizes::parseBytes).toArray();
        }
        if (collectives != null) {
            EnumSet<Collective> cs = EnumSet.noneOf(Collective.class);
            for (String c : collectives) {
                cs.add(Collective.valueOf(c.trim().toUpperCase(Locale.ROOT)));
            }
            o.collectives = cs;
        }
        if (radices != null) {
            o.radices = radices;
        }
        if (iterations != null) {
            o.iterations = iterations;
        }
        if (maxRounds != null) {
            o.maxRounds = Math.max(1, maxRounds);
            o.minRounds = Math.min(o.minRounds, o.maxRounds);
        }
        return o;
    }

    @Override
    public Integer call() throws Exception {
        Bootstrap b = RendezvousBootstrap.fromEnvironment();
        if (b == null) {
            b = new SingletonBootstrap();
        }
        try {
            Tuner.Result r = Tuner.run(b, Config.fromSystemProperties(), options(), noProgress ? null : System.err);
            if (b.rank() == 0) {
                write(r, output, csv != null ? csv : Path.of(output + ".csv"));
                System.err.println("sharp4j tune: wrote " + output);
            }
        } finally {
            b.close();
        }
        return 0;
    }

    /** Writes the table and the measurements. */
    public static void write(Tuner.Result r, Path table, Path csv) throws java.io.IOException {
        Path parent = table.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        Files.write(table, r.table, StandardCharsets.UTF_8);
        Files.write(csv, r.csv(), StandardCharsets.UTF_8);
    }
}
