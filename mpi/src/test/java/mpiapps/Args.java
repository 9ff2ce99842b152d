package mpiapps;

/** Positional arguments of the command-line programs here ({@link OsuDirect}, {@link BackToBack}). */
final class Args {
    private Args() {
    }

    /** Argument {@code i}, or {@code dflt} when there are fewer. */
    static String at(String[] args, int i, String dflt) {
        return args.length > i ? args[i] : dflt;
    }

    /** Argument {@code i} as an int, or {@code dflt} when there are fewer. */
    static int intAt(String[] args, int i, int dflt) {
        return args.length > i ? Integer.parseInt(args[i]) : dflt;
    }

    /** Whether the collective named is a Reduce; an Allreduce if not; any other name is refused. */
    static boolean isReduce(String coll) {
        if (!coll.equals("reduce") && !coll.equals("allreduce")) {
            throw new IllegalArgumentException("collective must be allreduce or reduce, got " + coll);
        }
        return coll.equals("reduce");
    }
}
