package org.sharp4j.osu;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.sharp4j.tuning.Sizes;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;

/**
 * The command line of osu_allreduce, osu_reduce and osu_barrier: OMB 7.x's options (each
 * benchmark accepts the ones OMB gives it: {@code -k} only for reduce; barrier takes no
 * {@code -c -T -l -a}), OMB-J's {@code -a buffer|arrays}, and {@code --backend}, {@code --compare},
 * {@code --csv} of this port. OMB 7.4's options that the port does not implement ({@code -M -u -G -P -I -d},
 * OMB's numeric {@code -a SIZE}, {@code -clog:DIR}) are accepted and ignored with one warning line on
 * stderr ({@link #ignoredOptions()}), so that an OMB command line runs unchanged.
 */
@Command(sortOptions = false,
        description = "OSU Micro-Benchmarks 7.4 methodology on sharp4j (and Open MPI's Java bindings with --backend/--compare mpi).")
public final class OsuOptions {
    public static final String OMB_VERSION = "7.4";
    /** OMB: COLL_LOOP_SMALL / COLL_SKIP_SMALL up to LARGE_MESSAGE_SIZE, then COLL_LOOP_LARGE / COLL_SKIP_LARGE. */
    public static final int ITERATIONS_SMALL = 1000;
    public static final int WARMUP_SMALL = 100;
    public static final int ITERATIONS_LARGE = 100;
    public static final int WARMUP_LARGE = 10;
    public static final long LARGE_MESSAGE_SIZE = 8192;
    public static final long DEFAULT_MIN_SIZE = 1;
    public static final long DEFAULT_MAX_SIZE = 1L << 20;
    /** Largest message this port accepts (one call moves at most 2 GiB in sharp4j; two buffers per rank). */
    public static final long MAX_SIZE_LIMIT = 1L << 30;
    /** Default -T: sharp4j cannot reduce OMB's default MPI_CHAR; float is what OMB 5.x and OMB-J reduce. */
    public static final ElemType DEFAULT_TYPE = ElemType.FLOAT;

    @Option(names = {"-h", "--help"}, usageHelp = true, description = "print this help")
    boolean help;

    @Option(names = {"-v", "--version"}, versionHelp = true, description = "print version info")
    boolean version;

    @Option(names = {"-f", "--full"}, description = "print full format listing (MIN/MAX latency and ITERATIONS "
            + "displayed in addition to AVERAGE latency)")
    boolean full;

    @Option(names = {"-m", "--message-size"}, paramLabel = "[MIN:]MAX", description = "set the minimum and/or the maximum message size "
            + "to MIN and/or MAX bytes (default 1:1048576; k/M suffixes allowed). Sizes double from MIN; a size smaller than one "
            + "element of the type is rounded up to one element. Examples:%n"
            + "-m 128      // min = default, max = 128%n"
            + "-m 2:128    // min = 2, max = 128%n"
            + "-m 2:       // min = 2, max = default")
    String messageSize;

    @Option(names = {"-i", "--iterations"}, paramLabel = "ITER", description = "number of iterations for timing (default 1000 up to "
            + "8 KiB, 100 above)")
    Integer iterations;

    @Option(names = {"-x", "--warmup"}, paramLabel = "ITER", description = "number of warmup iterations to skip before timing "
            + "(default 100 up to 8 KiB, 10 above)")
    Integer warmup;

    @Option(names = {"-c", "--validation"}, arity = "0..1", fallbackValue = "", paramLabel = "log:DIR",
            description = "check every result (adds a Pass/Fail column; exits 1 on a failure). OMB's -clog:DIR "
                    + "(log the failures to DIR) is accepted; the log part is ignored with a warning")
    String validate;

    @Option(names = {"-T", "--type"}, paramLabel = "TYPE", split = ",", description = "[all,char,int,long,float,double] "
            + "(mpi_ prefix optional; repeat or comma-separate for several tables). Default: float. char (1 byte) runs on "
            + "--backend mpi only")
    List<String> types;

    @Option(names = {"-l", "--in-place"}, description = "run with in-place buffers (MPI_IN_PLACE)")
    boolean inPlace;

    @Option(names = {"-k", "--root-rank"}, paramLabel = "fixed:RANK|rotate", description = "root rank. Default: fixed:0%n"
            + "-k fixed:[RANK] //Fixed root rank.%n"
            + "-k rotate       //Rotate root rank for each iteration.")
    String rootRank;

    @Option(names = {"-z", "--tail-lat"}, arity = "0..1", fallbackValue = "50,90,99", paramLabel = "P,P,..",
            description = "print tail latencies (default P50, P90, P99; -z1-99,.. for others, up to 5)")
    String tailLat;

    @Option(names = {"-a", "--api", "--array-size"}, paramLabel = "buffer|arrays", description = "direct ByteBuffers (default) or "
            + "Java arrays (OMB-J's -a). A number is OMB's -a/--array-size SIZE (GPU dummy compute): accepted and ignored")
    String api;

    // OMB 7.4's options that this port does not implement (util/osu_util_options.h, OMBOP__COLLECTIVE__ALL_REDUCE,
    // __REDUCE and __BARRIER, plus -d of accelerator builds): accepted and ignored with one warning line, so that an
    // OMB command line runs unchanged instead of ending at the usage.
    @Option(names = {"-M", "--mem-limit"}, paramLabel = "SIZE", description = "OMB: per-process memory limit. Accepted and ignored")
    String ignoredMemLimit;

    @Option(names = {"-u", "--validation-warmup"}, paramLabel = "ITR", description = "OMB: warmup iterations of validation. "
            + "Accepted and ignored")
    String ignoredValidationWarmup;

    @Option(names = {"-G", "--graph"}, paramLabel = "tty,png,pdf", description = "OMB: graph of per-iteration values. "
            + "Accepted and ignored (see sharp4j-plot)")
    String ignoredGraph;

    @Option(names = {"-P", "--papi"}, paramLabel = "EVENTS:PATH", description = "OMB: PAPI counters. Accepted and ignored")
    String ignoredPapi;

    @Option(names = {"-I", "--session"}, description = "OMB: MPI-4 session initialisation. Accepted and ignored")
    boolean ignoredSession;

    @Option(names = {"-d", "--accelerator"}, paramLabel = "TYPE", description = "OMB: device buffers (cuda, managed, openacc, rocm). "
            + "Accepted and ignored: this port uses host memory")
    String ignoredAccelerator;

    @Option(names = "--backend", paramLabel = "sharp4j|mpi", description = "library to measure (default sharp4j; mpi runs "
            + "the same loop on Open MPI's Java bindings under mpirun)")
    String backend;

    @Option(names = "--compare", paramLabel = "mpi|builtin|table=FILE|tune=RULES", description = "measure a second library or "
            + "configuration in the same processes, alternating with sharp4j for each size (--blocks), and add the ratio "
            + "sharp4j/other: mpi is Open MPI Java (run under mpirun); builtin, table=FILE, tune=RULES are sharp4j on a second "
            + "communicator with only the built-in rules, with FILE as its table file, or with RULES as its override string")
    String compare;

    @Option(names = "--blocks", paramLabel = "N", description = "with --compare: each size's iterations in N blocks, alternating "
            + "between the two (A B, then B A, ...); the ratio is then the median over blocks of the ratio of the blocks' median calls "
            + "(default 1 with mpi: the ratio of the averages, as OMB's loop run twice; 10 otherwise)")
    Integer blocks;

    @Option(names = "--csv", paramLabel = "FILE", description = "also write the rows to FILE (rank 0): collective, ranks, nodes, backend, datatype, size and every "
            + "statistic (all of -f; the -z percentiles), one row per message size")
    Path csv;

    @Option(names = "--jit-warmup", paramLabel = "N", description = "untimed calls before each table so that the JIT has "
            + "compiled the loop (OMB-J has 10000; HotSpot's C2 needs ~15000 calls of a method: default ${DEFAULT-VALUE}; 0: none)", defaultValue = "30000")
    int jitWarmup;

    // Validated values.
    private Kind kind;
    private long minSize = DEFAULT_MIN_SIZE;
    private long maxSize = DEFAULT_MAX_SIZE;
    private int[] percentiles = new int[0];
    private List<ElemType> typeList = List.of(DEFAULT_TYPE);
    private int root;
    private boolean rotate;
    private boolean arrays;
    private boolean mpiBackend;
    private Comparison comparison;
    private final List<String> ignored = new ArrayList<>();

    /** Outcome of parsing: options to run with, or an exit code when help, version or an error was printed. */
    public static final class Parsed {
        public final OsuOptions options;
        public final int exitCode;

        Parsed(OsuOptions options, int exitCode) {
            this.options = options;
            this.exitCode = exitCode;
        }

        public boolean run() {
            return options != null;
        }
    }

    /** A command line for {@code kind} with only the options OMB gives that benchmark. */
    static CommandLine commandLine(Kind kind, OsuOptions o) {
        CommandLine cl = new CommandLine(o);
        CommandSpec spec = cl.getCommandSpec();
        spec.name(kind.program);
        List<String> drop = new ArrayList<>();
        if (kind != Kind.REDUCE) {
            drop.add("-k");
        }
        if (kind == Kind.BARRIER) {
            drop.addAll(List.of("-c", "-T", "-l", "-a"));
        }
        // OMB gives barrier -a (--array-size, GPU dummy compute) but not -c -T -l; the port's -a (buffer|arrays) has
        // no meaning without data, so barrier gets OMB's -a alone, accepted and ignored.
        for (String d : drop) {
            spec.remove(spec.findOption(d));
        }
        if (kind == Kind.BARRIER) {
            spec.addOption(CommandLine.Model.OptionSpec.builder("-a", "--array-size").paramLabel("SIZE").type(String.class)
                    .description("OMB: array size of the GPU dummy compute. Accepted and ignored").build());
        }
        return cl;
    }

    /**
     * Parses {@code args}. Help ({@code -h}) and version ({@code -v}) print on {@code out} and give
     * exit code 0; a bad option prints the error on {@code err} and the usage on {@code out} (OMB's
     * print_bad_usage_message) and gives 1. Nothing is printed when {@code print} is false (ranks
     * other than 0).
     */
    public static Parsed parse(Kind kind, String[] args, PrintStream out, PrintStream err, boolean print) {
        OsuOptions o = new OsuOptions();
        o.kind = kind;
        CommandLine cl = commandLine(kind, o);
        try {
            cl.parseArgs(args);
            if (o.help) {
                if (print) {
                    cl.usage(out);
                }
                return new Parsed(null, 0);
            }
            o.validate(cl);
            if (o.version) {
                if (print) {
                    out.println(o.title());
                    out.println(Table.portLine(o.library(), -1, -1));
                }
                return new Parsed(null, 0);
            }
            if (print && !o.ignored.isEmpty()) {
                err.println(kind.program + ": warning: ignoring OMB option" + (o.ignored.size() > 1 ? "s" : "")
                        + " this port does not implement: " + String.join(" ", o.ignored));
                err.flush();
            }
            return new Parsed(o, 0);
        } catch (CommandLine.ParameterException e) {
            if (print) {
                err.println(e.getMessage());
                err.println();
                err.flush();
                cl.usage(out);
            }
            return new Parsed(null, 1);
        }
    }

    private static CommandLine.ParameterException bad(CommandLine cl, String message, String opt, String arg) {
        return new CommandLine.ParameterException(cl, message + " [" + opt + (arg == null ? "" : " " + arg) + "]");
    }

    private void validate(CommandLine cl) {
        collectIgnored(cl);
        if (messageSize != null) {
            parseMessageSize(cl, messageSize);
        }
        if (iterations != null && iterations < 1) {
            throw bad(cl, "Invalid Number of Iterations", "-i", iterations.toString());
        }
        if (jitWarmup < 0) {
            throw bad(cl, "Invalid Number of JIT Warmup Iterations", "--jit-warmup", Integer.toString(jitWarmup));
        }
        if (warmup != null && warmup < 0) {
            throw bad(cl, "Invalid Number of Warmup Iterations", "-x", warmup.toString());
        }
        if (tailLat != null) {
            String[] parts = tailLat.split(",");
            if (parts.length > 5) {
                throw bad(cl, "At most 5 percentiles", "-z", tailLat);
            }
            percentiles = new int[parts.length];
            for (int i = 0; i < parts.length; i++) {
                try {
                    percentiles[i] = Integer.parseInt(parts[i].trim());
                } catch (NumberFormatException e) {
                    throw bad(cl, "Percentile range must be in between 0 and 100", "-z", tailLat);
                }
                if (percentiles[i] < 1 || percentiles[i] > 100) {
                    throw bad(cl, "Percentile range must be in between 0 and 100", "-z", tailLat);
                }
            }
        }
        if (types != null && !types.isEmpty()) {
            Set<ElemType> seen = EnumSet.noneOf(ElemType.class);
            List<ElemType> list = new ArrayList<>();
            for (String t : types) {
                List<ElemType> add;
                if (t.trim().equalsIgnoreCase("all")) {
                    add = List.of(ElemType.values());
                } else {
                    try {
                        add = List.of(ElemType.parse(t));
                    } catch (IllegalArgumentException e) {
                        throw bad(cl, "Invalid type (char, int, long, float, double or all)", "-T", t);
                    }
                }
                for (ElemType e : add) {
                    if (seen.add(e)) {
                        list.add(e);
                    }
                }
            }
            typeList = List.copyOf(list);
        }
        if (rootRank != null) {
            String r = rootRank.trim().toLowerCase(Locale.ROOT);
            if (r.equals("rotate")) {
                rotate = true;
            } else if (r.startsWith("fixed:")) {
                try {
                    root = Integer.parseInt(r.substring(6));
                } catch (NumberFormatException e) {
                    throw bad(cl, "Invalid root rank (fixed:RANK or rotate)", "-k", rootRank);
                }
                if (root < 0) {
                    throw bad(cl, "Invalid root rank (fixed:RANK or rotate)", "-k", rootRank);
                }
            } else {
                throw bad(cl, "Invalid root rank (fixed:RANK or rotate)", "-k", rootRank);
            }
        }
        if (api != null && !isInteger(api)) {
            String a = api.trim().toLowerCase(Locale.ROOT);
            if (a.equals("arrays") || a.equals("array")) {
                arrays = true;
            } else if (!(a.equals("buffer") || a.equals("buffers"))) {
                throw bad(cl, "Invalid API (buffer or arrays)", "-a", api);
            }
        }
        if (backend != null) {
            String b = backend.trim().toLowerCase(Locale.ROOT);
            if (b.equals("mpi")) {
                mpiBackend = true;
            } else if (!b.equals("sharp4j")) {
                throw bad(cl, "Invalid backend (sharp4j or mpi)", "--backend", backend);
            }
        }
        if (compare != null) {
            try {
                comparison = Comparison.parse(compare);
            } catch (IllegalArgumentException e) {
                throw bad(cl, e.getMessage(), "--compare", compare);
            }
            if (mpiBackend) {
                throw bad(cl, "--compare measures sharp4j against another; drop --backend mpi", "--compare", compare);
            }
        }
        if (blocks != null) {
            if (comparison == null) {
                throw bad(cl, "--blocks alternates the two sides of --compare: give --compare too", "--blocks", blocks.toString());
            }
            if (blocks < 1) {
                throw bad(cl, "Invalid number of blocks (1 or more)", "--blocks", blocks.toString());
            }
        }
    }

    /** The OMB-only options given, as typed (short name and value), in command-line order. */
    private void collectIgnored(CommandLine cl) {
        for (CommandLine.Model.ArgSpec a : cl.getParseResult().matchedArgs()) {
            if (!(a instanceof CommandLine.Model.OptionSpec)) {
                continue;
            }
            CommandLine.Model.OptionSpec opt = (CommandLine.Model.OptionSpec) a;
            String name = opt.shortestName();
            Object v = opt.getValue();
            String shown;
            switch (name) {
                case "-M", "-u", "-G", "-P", "-d" -> shown = name + " " + v;
                case "-I" -> shown = name;
                case "-a" -> {
                    if (kind != Kind.BARRIER && !isInteger(String.valueOf(v))) {
                        continue; // the port's -a buffer|arrays
                    }
                    shown = "-a " + v;
                }
                case "-c" -> {
                    if (v == null || String.valueOf(v).isEmpty()) {
                        continue;
                    }
                    shown = "-c" + v; // OMB's -clog:DIR
                }
                default -> {
                    continue;
                }
            }
            ignored.add(shown);
        }
    }

    private static boolean isInteger(String s) {
        return s.trim().matches("[+-]?\\d+");
    }

    /** The OMB-only options of the command line that are accepted and ignored (e.g. {@code -M 1G}, {@code -I}). */
    public List<String> ignoredOptions() {
        return List.copyOf(ignored);
    }

    private void parseMessageSize(CommandLine cl, String v) {
        try {
            int colon = v.indexOf(':');
            if (colon < 0) {
                maxSize = Sizes.parseBytes(v);
            } else {
                if (v.indexOf(':', colon + 1) >= 0) {
                    throw new IllegalArgumentException("two colons");
                }
                String a = v.substring(0, colon).trim();
                String b = v.substring(colon + 1).trim();
                if (a.isEmpty() && b.isEmpty()) {
                    throw new IllegalArgumentException("empty");
                }
                if (!a.isEmpty()) {
                    minSize = Sizes.parseBytes(a);
                }
                if (!b.isEmpty()) {
                    maxSize = Sizes.parseBytes(b);
                }
            }
        } catch (IllegalArgumentException e) {
            throw bad(cl, "Invalid Message Size", "-m", v);
        }
        if (minSize < 1 || maxSize < minSize || maxSize > MAX_SIZE_LIMIT) {
            throw bad(cl, "Invalid Message Size (need 1 <= MIN <= MAX <= 1G)", "-m", v);
        }
    }

    public Kind kind() {
        return kind;
    }

    public long minSize() {
        return minSize;
    }

    public long maxSize() {
        return maxSize;
    }

    public boolean full() {
        return full;
    }

    public boolean validation() {
        return validate != null && kind.hasData();
    }

    public boolean inPlace() {
        return inPlace;
    }

    public boolean arrays() {
        return arrays;
    }

    /** Percentiles of -z in OMB's order of the command line; empty without -z. */
    public int[] percentiles() {
        return percentiles.clone();
    }

    public List<ElemType> types() {
        return typeList;
    }

    /** Reduce's root for iteration {@code i} of a job of {@code size} ranks (OMB's omb_get_root_rank). */
    public int rootFor(int i, int size) {
        return rotate ? i % size : root;
    }

    public boolean rotateRoot() {
        return rotate;
    }

    public int fixedRoot() {
        return root;
    }

    /** Only the Open MPI backend is measured. */
    public boolean mpiBackend() {
        return mpiBackend;
    }

    /** Both sharp4j and Open MPI are measured. */
    public boolean compareMpi() {
        return comparison != null && comparison.mpi();
    }

    /** What --compare measures next to sharp4j, or null. */
    public Comparison comparison() {
        return comparison;
    }

    /** Blocks per message size with --compare (each side's iterations split into them, alternating); 1 without. */
    public int blocks() {
        return blocks != null ? blocks : comparison != null ? comparison.defaultBlocks() : 1;
    }

    /** Whether the run needs Open MPI (--backend mpi or --compare mpi). */
    public boolean needsMpi() {
        return mpiBackend || compareMpi();
    }

    /** Untimed calls before each table (OMB-J's INITIAL_WARMUP), to get past the JIT. */
    public int jitWarmup() {
        return jitWarmup;
    }

    public Path csv() {
        return csv;
    }

    /** Timed iterations for a message of {@code sizeBytes} (barrier: 0). */
    public int iterationsFor(long sizeBytes) {
        if (iterations != null) {
            return iterations;
        }
        return sizeBytes > LARGE_MESSAGE_SIZE ? ITERATIONS_LARGE : ITERATIONS_SMALL;
    }

    /** Warmup iterations for a message of {@code sizeBytes} (barrier: 0). */
    public int warmupFor(long sizeBytes) {
        if (warmup != null) {
            return warmup;
        }
        return sizeBytes > LARGE_MESSAGE_SIZE ? WARMUP_LARGE : WARMUP_SMALL;
    }

    /**
     * Element counts to run for {@code type}: from MIN bytes rounded up to one element (as OMB 5.x
     * and OMB-J count whole elements; OMB 7.x skips the sizes that hold none, which prints the same
     * rows for power-of-two MIN), doubling while the message fits in MAX bytes.
     */
    public List<Integer> counts(ElemType type) {
        List<Integer> out = new ArrayList<>();
        long c = Math.max(1, minSize / type.bytes);
        while (c * type.bytes <= maxSize) {
            out.add((int) c);
            c *= 2;
        }
        return out;
    }

    /** Message sizes in bytes for {@code type}: {@code counts(type)} times the element size. */
    public List<Long> sizes(ElemType type) {
        List<Long> out = new ArrayList<>();
        for (int c : counts(type)) {
            out.add((long) c * type.bytes);
        }
        return out;
    }

    /** OMB's title line, unchanged: {@code # OSU MPI Allreduce Latency Test v7.4}. */
    public String title() {
        return Table.title(kind);
    }

    /** The measured library as the port line names it: sharp4j, Open MPI Java, or sharp4j vs Open MPI Java. */
    public String library() {
        return comparison != null ? Table.SHARP4J + " vs " + comparison.library() : mpiBackend ? Table.OPEN_MPI_JAVA : Table.SHARP4J;
    }
}
