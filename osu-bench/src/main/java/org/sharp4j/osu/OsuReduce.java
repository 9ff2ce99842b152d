package org.sharp4j.osu;

/** {@code bin/sharp4j-run -np N osu_reduce [options]}: OMB's osu_reduce on sharp4j (or Open MPI Java); see {@link Osu}. */
public final class OsuReduce {
    private OsuReduce() {
    }

    public static void main(String[] args) {
        System.exit(Osu.main(Kind.REDUCE, args));
    }
}
