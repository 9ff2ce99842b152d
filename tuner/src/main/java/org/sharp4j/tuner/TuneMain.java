package org.sharp4j.tuner;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.Callable;
import org.sharp4j.Config;
import org.sharp4j.Sharp4j;
import org.sharp4j.bootstrap.Bootstrap;
import org.sharp4j.tuning.Collective;
import org.sharp4j.tuning.Sizes;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The rank program of {@code sharp4j tune}: every rank of the job runs it (under the embedded
 * launcher, {@code mpirun} or {@code srun --mpi=pmix}: the bootstrap is chosen as
 * {@link Sharp4j#init()} does). It sweeps ({@link Tuner}); rank 0 appends each point to the state
 * file ({@code OUTPUT.csv}) as it is measured and at the end rewrites the table's section for this
 * job shape ({@link TuneTable}), keeping the file's other sections.
 */
@Command(name = "sharp4j-tune-rank", mixinStandardHelpOptions = true)
public final class TuneMain implements Callable<Integer> {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Option(names = {"-o", "--output"}, required = true, description = "table file to write (merged: other job shapes' sections are kept)")
    Path output;

    @Option(names = "--csv", description = "measurements, also the state of a resumable sweep; default: the table file + .csv")
    Path csv;

    @Option(names = "--quick", description = "tiny sweep: 3 sizes, radix 2 and 4, few iterations")
    boolean quick;

    @Option(names = "--sizes", split = ",", description = "message sizes, e.g. 8,1k,64k")
    List<String> sizes;

    @Option(names = "--collectives", split = ",", description = "allreduce, reduce, barrier")
    List<String> collectives;

    @Option(names = "--radices", split = ",", description = "intra-node tree radices to try")
    int[] radices;

    @Option(names = "--inter-radices", split = ",", description = "host k-nomial and SRA radices to try (default 2..8)")
    int[] interRadices;

    @Option(names = "--pipelines", split = ",", description = "SHARP pipeline depths to try where SHARP is phase 3 (default 1,2,4,8)")
    int[] pipelines;

    @Option(names = "--chunks", split = ",", description = "tiled chunk sizes to try besides the slot, e.g. 16k,32k")
    List<String> chunks;

    @Option(names = "--iterations", description = "timed calls per round")
    Integer iterations;

    @Option(names = "--max-rounds", description = "round budget per candidate, size and pass")
    Integer maxRounds;

    @Option(names = "--passes", description = "passes: each candidate measured on this many communicators, interleaved; a point's figure is the median (default 3)")
    Integer passes;

    @Option(names = "--budget", description = "time budget of the sweep, e.g. 10m, 90s, 1h; then it stops and writes what it measured")
    String budget;

    @Option(names = "--fresh", description = "measure again the points the state file holds for this shape (the new rows replace them)")
    boolean fresh;

    @Option(names = "--no-progress", description = "no progress bar")
    boolean noProgress;

    /** Called on rank 0 with the measurements file once the table is written (the command line's plot). */
    public java.util.function.Consumer<Path> onWritten;

    public static void main(String[] args) {
        System.exit(commandLine(new TuneMain()).execute(args));
    }

    /** The command line of a rank: a refused input ({@link IllegalArgumentException}) prints its message, no stack trace, exit 1. */
    public static CommandLine commandLine(TuneMain main) {
        CommandLine cl = new CommandLine(main);
        cl.setExecutionExceptionHandler((ex, c, parsed) -> {
            if (ex instanceof IllegalArgumentException) {
                c.getErr().println(ex.getMessage());
                return 1;
            }
            throw ex;
        });
        return cl;
    }

    /** A duration: a number with s, m or h (seconds without a unit). */
    static long parseBudget(String s) {
        String t = s.trim().toLowerCase(Locale.ROOT);
        long unit = 1_000_000_000L;
        if (t.endsWith("ms")) {
            unit = 1_000_000L;
            t = t.substring(0, t.length() - 2);
        } else if (t.endsWith("s")) {
            t = t.substring(0, t.length() - 1);
        } else if (t.endsWith("m")) {
            unit *= 60;
            t = t.substring(0, t.length() - 1);
        } else if (t.endsWith("h")) {
            unit *= 3600;
            t = t.substring(0, t.length() - 1);
        }
        double v;
        try {
            v = Double.parseDouble(t);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--budget must be a duration like 10m, 90s or 1h, got '" + s + "'");
        }
        if (!(v > 0) || Double.isInfinite(v)) {
            throw new IllegalArgumentException("--budget must be positive, got '" + s + "'");
        }
        return (long) (v * unit);
    }

    /** Builds the options from the command line (the front end calls it to reject bad options before starting ranks). */
    public Tuner.Options options() {
        Tuner.Options o = quick ? Tuner.Options.quick() : new Tuner.Options();
        if (sizes != null) {
            o.sizes = sizes.stream().mapToLong(x -> {
                long v;
                try {
                    v = Sizes.parseBytes(x);
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException("--sizes: " + e.getMessage(), e);
                }
                if (v == Long.MAX_VALUE || v > (1L << 30)) {
                    throw new IllegalArgumentException("--sizes: " + x + " is not a message size up to 1G");
                }
                return v;
            }).sorted().distinct().toArray();
        }
        if (collectives != null) {
            EnumSet<Collective> cs = EnumSet.noneOf(Collective.class);
            for (String c : collectives) {
                try {
                    cs.add(Collective.valueOf(c.trim().toUpperCase(Locale.ROOT)));
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException("--collectives: unknown collective '" + c + "' (allreduce, reduce, barrier)");
                }
            }
            o.collectives = cs;
        }
        if (radices != null) {
            for (int r : radices) {
                if (r < 2 || r > org.sharp4j.tuning.Rule.MAX_RADIX) {
                    throw new IllegalArgumentException("--radices: tree radices are 2.." + org.sharp4j.tuning.Rule.MAX_RADIX + ", got " + r);
                }
            }
            o.radices = radices;
        }
        if (interRadices != null) {
            for (int r : interRadices) {
                if (r < 2 || r > 8) {
                    throw new IllegalArgumentException("--inter-radices: the host path takes radices 2..8, got " + r);
                }
            }
            o.interRadices = interRadices;
        }
        if (pipelines != null) {
            for (int d : pipelines) {
                if (d < 1 || d > org.sharp4j.tuning.Rule.MAX_PIPELINE) {
                    throw new IllegalArgumentException("--pipelines: SHARP pipeline depths are 1.." + org.sharp4j.tuning.Rule.MAX_PIPELINE
                            + ", got " + d);
                }
            }
            o.pipelines = pipelines;
        }
        if (chunks != null) {
            o.chunks = chunks.stream().mapToLong(x -> {
                long v;
                try {
                    v = Sizes.parseBytes(x);
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException("--chunks: " + e.getMessage(), e);
                }
                if (v < 64 || v % 64 != 0 || v > (1L << 30)) {
                    throw new IllegalArgumentException("--chunks: a chunk is a multiple of 64 bytes from 64 to 1G, got " + x);
                }
                return v;
            }).distinct().toArray();
        }
        if (iterations != null) {
            o.iterations = iterations;
        }
        if (maxRounds != null) {
            o.maxRounds = Math.max(1, maxRounds);
            o.minRounds = Math.min(o.minRounds, o.maxRounds);
        }
        if (passes != null) {
            if (passes < 1 || passes > 99) {
                throw new IllegalArgumentException("--passes must be 1..99, got " + passes);
            }
            o.passes = passes;
        }
        if (budget != null) {
            o.budgetNanos = parseBudget(budget);
        }
        return o;
    }

    @Override
    public Integer call() throws Exception {
        Tuner.Options o;
        try {
            o = options(); // bad options fail here, before any rank meets the others
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), "sharp4j tune: " + e.getMessage());
        }
        Path state = csv != null ? csv : TuneCsv.of(output);
        Bootstrap b = Sharp4j.bootstrap();
        try {
            Set<String> done = new HashSet<>();
            String problem = null;
            if (b.rank() == 0) {
                try {
                    List<Measurement.Pass> had = TuneCsv.readPasses(state); // a foreign file is refused before anything is measured
                    if (!fresh) { // --fresh: measure everything again; the new rows replace the old ones (other shapes' stay)
                        for (Measurement.Pass m : had) {
                            done.add(m.key());
                        }
                    }
                } catch (IllegalArgumentException e) {
                    problem = e.getMessage();
                }
            }
            agree(b, problem);
            Tuner.Result r = Tuner.run(b, Config.fromSystemProperties(), o, done, m -> TuneCsv.append(state, m),
                    noProgress ? null : System.err);
            problem = null;
            if (b.rank() == 0) {
                try {
                    List<Measurement> all = TuneCsv.read(state);
                    if (all.isEmpty()) {
                        System.err.println("sharp4j tune: nothing measured (budget too short?); " + output + " not written");
                    } else {
                        TuneTable.write(output, all, o.guard);
                        System.err.println("sharp4j tune: wrote " + output + " (section [nodes=" + r.nodes + ":ppn=" + r.ppn
                                + ":measured]" + (r.budgetSpent ? ", incomplete: budget spent" : "") + "), measurements in " + state);
                        if (onWritten != null) {
                            onWritten.accept(state);
                        }
                    }
                } catch (RuntimeException e) {
                    problem = e.getMessage();
                }
            }
            agree(b, problem); // no rank leaves before the table is written, and every rank fails if it was not
        } finally {
            b.close();
        }
        return 0;
    }

    /** Every rank learns rank 0's problem (null: none) and throws it, so that no rank waits for one that gave up. */
    static void agree(Bootstrap b, String problem) {
        byte[][] all = b.allgather(problem == null ? new byte[0] : problem.getBytes(StandardCharsets.UTF_8));
        if (all[0].length > 0) {
            throw new IllegalArgumentException("sharp4j tune: " + (b.rank() == 0 ? "" : "rank 0: ")
                    + new String(all[0], StandardCharsets.UTF_8));
        }
    }
}
