package org.sharp4j.osu;

/** The three benchmarks: their OMB program names and the title OMB prints for them. */
public enum Kind {
    ALLREDUCE("osu_allreduce", "Allreduce"),
    REDUCE("osu_reduce", "Reduce"),
    BARRIER("osu_barrier", "Barrier");

    /** OMB's program name, also the {@code bin/sharp4j-run} alias. */
    public final String program;
    /** The word in OMB's title line, {@code # OSU MPI <word> Latency Test v7.4}. */
    public final String word;

    Kind(String program, String word) {
        this.program = program;
        this.word = word;
    }

    /** Whether the benchmark moves data (has message sizes, types, validation); barrier does not. */
    public boolean hasData() {
        return this != BARRIER;
    }
}
