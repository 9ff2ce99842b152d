package org.sharp4j.osu;

/**
 * One table cell group: OMB's statistics of one message size on one backend, in microseconds.
 *
 * @param avg mean over ranks of each rank's mean latency
 * @param min smallest per-rank mean latency
 * @param max largest per-rank mean latency
 * @param iterations timed iterations
 * @param errors validation failures summed over ranks and iterations (0: Pass; ignored without -c)
 * @param tails the requested percentiles of the per-iteration latency averaged over ranks (empty without -z)
 */
public record Stats(double avg, double min, double max, int iterations, int errors, double[] tails) {
    public boolean passed() {
        return errors == 0;
    }
}
