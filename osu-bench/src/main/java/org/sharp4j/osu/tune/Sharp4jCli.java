package org.sharp4j.osu.tune;

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

    @Command(name = "tune", mixinStandardHelpOptions = true,
            description = "Sweep algorithm x parameter x size x collective on this allocation and write a tuning table (and a plot).")
    static final class Tune implements Callable<Integer> {
        @CommandLine.Mixin
        Shape shape = new Shape();

        @Option(names = {"-o", "--output"}, defaultValue = "sharp4j-tune.txt", description = "table file (default ${DEFAULT-VALUE})")
        Path output;

        @Option(names = "--plot", description = "PNG of latency vs size per candidate with the chosen crossovers")
        Path plot;

        @Option(names = "--quick", description = "tiny sweep (seconds)")
        boolean quick;

        @Option(names = "--sizes", description = "message sizes, e.g. 8,1k,64k")
        String sizes;

        @Option(names = "--collectives", description = "allreduce,reduce,barrier")
        String collectives;

        @Option(names = "--radices", description = "tree radices, e.g. 2,4,8")
        String radices;

        @Option(names = "--iterations", description = "timed calls per round")
        Integer iterations;

        @Option(names = "--max-rounds", description = "round budget per candidate and size")
        Integer maxRounds;

        @Override
        public Integer call() throws Exception {
            Path csv = Path.of(output + ".csv");
            List<String> a = shape.launcherArgs("org.sharp4j.launch.TuneMain");
            a.addAll(List.of("-o", output.toString(), "--csv", csv.toString()));
            if (quick) {
                a.add("--quick");
            }
            if (sizes != null) {
                a.addAll(List.of("--sizes", sizes));
            }
            if (collectives != null) {
                a.addAll(List.of("--collectives", collectives));
            }
            if (radices != null) {
                a.addAll(List.of("--radices", radices));
            }
            if (iterations != null) {
                a.addAll(List.of("--iterations", iterations.toString()));
            }
            if (maxRounds != null) {
                a.addAll(List.of("--max-rounds", maxRounds.toString()));
            }
            int rc = launch(a);
            if (rc != 0) {
                return rc;
            }
            if (plot != null && Files.exists(csv)) {
                TunePlot.plot(csv, output, plot);
                System.err.println("sharp4j tune: wrote " + plot);
            }
            System.err.println("sharp4j tune: use it with -Dsharp4j.tune.file=" + output + " (or SHARP4J_TUNE_FILE)");
            return 0;
        }
    }
}
