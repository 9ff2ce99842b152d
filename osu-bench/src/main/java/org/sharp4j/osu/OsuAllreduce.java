package org.sharp4j.osu;

/** {@code bin/sharp4j-run -np N osu_allreduce [options]}: OMB's osu_allreduce on sharp4j (or Open MPI Java); see {@link Osu}. */
public final class OsuAllreduce {
    private OsuAllreduce() {
    }

    public static void main(String[] args) {
        System.exit(Osu.main(Kind.ALLREDUCE, args));
    }
}
