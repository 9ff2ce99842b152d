package org.sharp4j.osu;

/** {@code bin/sharp4j-run -np N osu_barrier [options]}: OMB's osu_barrier on sharp4j (or Open MPI Java); see {@link Osu}. */
public final class OsuBarrier {
    private OsuBarrier() {
    }

    public static void main(String[] args) {
        System.exit(Osu.main(Kind.BARRIER, args));
    }
}
