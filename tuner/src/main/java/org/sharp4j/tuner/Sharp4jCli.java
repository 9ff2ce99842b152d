package org.sharp4j.tuner;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import org.sharp4j.launch.LocalLauncher;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code bin/sharp4j info | tune}: the ranks run through the embedded launcher on this machine. */
@Command(name = "sharp4j", mixinStandardHelpOptions = true, subcommands = {Sharp4jCli.Info.class, Sharp4jCli.Tune.class, ModelCommand.class},
        description = "sharp4j tools: info (what a communicator of this job looks like), tune (measure and write a tuning table), model (predicted latency per algorithm, plot, seeded table).")
public final class Sharp4jCli implements Callable<Integer> {
    public static void main(String[] args) {
        System.exit(new CommandLine(new Sharp4jCli()).execute(args));
    }

    @Override
    public Integer call() {
        new CommandLine(this).usage(System.err);
        return 2;
    }

    /** Options shared by the subcommands: the job shape. */
    static class Shape {
        @Option(names = {"-np", "-n"}, defaultValue = "2", description = "ranks (default ${DEFAULT-VALUE})")
        int np;

        @Option(names = "--nodes", description = "simulate K nodes")
        int nodes;

        @Option(names = "--sockets", description = "simulate S sockets per node")
        int sockets;

        List<String> launcherArgs(String main) {
            List<String> a = new ArrayList<>(List.of("-np", Integer.toString(np)));
            if (nodes > 0) {
                a.addAll(List.of("--nodes", Integer.toString(nodes)));
            }
            if (sockets > 0) {
                a.addAll(List.of("--sockets", Integer.toString(sockets)));
            }
            a.add(main);
            return a;
        }
    }

    static int launch(List<String> args) {
        CommandLine cl = new CommandLine(new LocalLauncher());
        cl.setStopAtPositional(true);
        return cl.execute(args.toArray(new String[0]));
    }

    @Command(name = "info", mixinStandardHelpOptions = true,
            description = "Nodes, sockets, leaders; SHARP and UCX found or not and why; the active tuning table and where each rule came from; effective settings.")
    static final class Info implements Callable<Integer> {
        @CommandLine.Mixin
        Shape shape = new Shape();

        @Override
        public Integer call() {
            return launch(shape.launcherArgs("org.sharp4j.launch.Info"));
        }
    }

    /** Whether this process is one rank of a job started by mpirun/srun (PMIx) or the embedded launcher. */
    static boolean insideJob(java.util.Map<String, String> env) {
        return env.get("SHARP4J_RENDEZVOUS") != null || (env.get("PMIX_RANK") != null && env.get("PMIX_NAMESPACE") != null);
    }

    @Command(name = "tune", mixinStandardHelpOptions = true,
            description = {"Sweep the intra-node and inter-node candidates x size x collective for this job's shape and merge"
                    + " its section into a tuning table (and a plot).",
                    "Alone it starts -np ranks through the embedded launcher; started by mpirun or srun --mpi=pmix"
                    + " (every rank runs it) it measures that job. Resumable: the table's .csv holds what was measured."})
    static final class Tune implements Callable<Integer> {
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @CommandLine.Mixin
        Shape shape = new Shape();

        @Option(names = {"-o", "--output"}, defaultValue = "sharp4j-tune.txt", description = "table file (default ${DEFAULT-VALUE})")
        Path output;

        @Option(names = "--plot", description = "PNG of latency vs size per candidate with the chosen ones ringed")
        Path plot;

        @Option(names = "--quick", description = "tiny sweep (seconds)")
        boolean quick;

        @Option(names = "--sizes", description = "message sizes, e.g. 8,1k,64k")
        String sizes;

        @Option(names = "--collectives", description = "allreduce,reduce,barrier")
        String collectives;

        @Option(names = "--radices", description = "intra-node tree radices, e.g. 2,4,8")
        String radices;

        @Option(names = "--inter-radices", description = "host k-nomial and SRA radices (default 2..8)")
        String interRadices;

        @Option(names = "--pipelines", description = "SHARP pipeline depths where SHARP is phase 3 (default 1,2,4,8)")
        String pipelines;

        @Option(names = "--chunks", description = "tiled chunk sizes to try besides the slot, e.g. 16k,32k")
        String chunks;

        @Option(names = "--iterations", description = "timed calls per round")
        Integer iterations;

        @Option(names = "--max-rounds", description = "round budget per candidate, size and pass")
        Integer maxRounds;

        @Option(names = "--passes", description = "communicators (new connections) each candidate is measured on, interleaved;"
                + " a point's figure is the median over them (default 3)")
        Integer passes;

        @Option(names = "--budget", description = "time budget, e.g. 10m: then stop and write what was measured (rerun to continue)")
        String budget;

        @Option(names = "--fresh", description = "measure again the points the table's .csv already holds")
        boolean fresh;

        @Override
        public Integer call() throws Exception {
            Path csv = Path.of(output + ".csv");
            List<String> a = new ArrayList<>(List.of("-o", output.toString(), "--csv", csv.toString()));
            if (quick) {
                a.add("--quick");
            }
            if (fresh) {
                a.add("--fresh");
            }
            String[][] opt = {{"--sizes", sizes}, {"--collectives", collectives}, {"--radices", radices},
                {"--inter-radices", interRadices}, {"--pipelines", pipelines}, {"--chunks", chunks}, {"--iterations", iterations == null ? null : iterations.toString()},
                {"--max-rounds", maxRounds == null ? null : maxRounds.toString()}, {"--passes", passes == null ? null : passes.toString()},
                {"--budget", budget}};
            for (String[] o : opt) {
                if (o[1] != null) {
                    a.addAll(List.of(o[0], o[1]));
                }
            }
            // bad options are refused here, once, before any rank starts
            CommandLine check = new CommandLine(new org.sharp4j.tuner.TuneMain());
            try {
                check.parseArgs(a.toArray(new String[0]));
                ((org.sharp4j.tuner.TuneMain) check.getCommand()).options();
            } catch (IllegalArgumentException e) {
                throw new CommandLine.ParameterException(spec.commandLine(), "sharp4j tune: " + e.getMessage());
            }
            if (insideJob(System.getenv())) {
                // every rank of the job runs this: the ranks measure together, rank 0 writes (and plots)
                boolean shapeGiven = spec.commandLine().getParseResult().hasMatchedOption("-np")
                        || shape.nodes > 0 || shape.sockets > 0;
                String r = System.getenv().getOrDefault("PMIX_RANK", System.getenv("SHARP4J_RANK"));
                if (shapeGiven && "0".equals(r)) {
                    spec.commandLine().getErr().println("sharp4j tune: -np/--nodes/--sockets are ignored inside a job (its launcher"
                            + " made the ranks; simulate nodes with -Dsharp4j.topology.nodes=K)");
                }
                org.sharp4j.tuner.TuneMain main = new org.sharp4j.tuner.TuneMain();
                if (plot != null) {
                    main.onWritten = c -> {
                        try {
                            TunePlot.plot(c, plot);
                            System.err.println("sharp4j tune: wrote " + plot);
                        } catch (java.io.IOException e) {
                            throw new java.io.UncheckedIOException(e);
                        }
                    };
                }
                return org.sharp4j.tuner.TuneMain.commandLine(main).execute(a.toArray(new String[0]));
            }
            List<String> l = shape.launcherArgs("org.sharp4j.tuner.TuneMain");
            l.addAll(a);
            int rc = launch(l);
            if (rc != 0) {
                return rc;
            }
            if (plot != null && Files.exists(csv)) {
                TunePlot.plot(csv, plot);
                System.err.println("sharp4j tune: wrote " + plot);
            }
            System.err.println("sharp4j tune: use it with -Dsharp4j.tune.file=" + output + " (or SHARP4J_TUNE_FILE)");
            return 0;
        }
    }
}
