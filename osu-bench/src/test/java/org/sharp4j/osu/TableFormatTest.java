package org.sharp4j.osu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** Golden lines: OMB 7.4's print_only_header / print_stats / print_stats_validate formats, character for character. */
class TableFormatTest {
    private static final int[] NONE = {};
    private static final int[] TAILS = {50, 90, 99};

    private static Stats stats(double avg, double min, double max, int iters, int errors, double... tails) {
        return new Stats(avg, min, max, iters, errors, tails);
    }

    @Test
    void plain() {
        Table t = new Table(Kind.ALLREDUCE, false, false, NONE, false);
        assertEquals("# Size         Avg Latency(us)", t.header());
        assertEquals("8                         1.23", t.row(8, stats(1.234, 1, 2, 1000, 0), null));
        assertEquals("1048576               12345.68", t.row(1048576, stats(12345.678, 1, 2, 100, 0), null));
    }

    @Test
    void full() {
        Table t = new Table(Kind.REDUCE, true, false, NONE, false);
        assertEquals("# Size         Avg Latency(us)     Min Latency(us)     Max Latency(us)  Iterations", t.header());
        assertEquals("16                        0.50                0.25                0.75        1000",
                t.row(16, stats(0.5, 0.25, 0.75, 1000, 0), null));
    }

    @Test
    void validation() {
        Table t = new Table(Kind.ALLREDUCE, false, true, NONE, false);
        assertEquals("# Size         Avg Latency(us)          Validation", t.header());
        assertEquals("4                         0.30                Pass", t.row(4, stats(0.3, 0, 0, 1000, 0), null));
        assertEquals("4                         0.30                Fail", t.row(4, stats(0.3, 0, 0, 1000, 2), null));
    }

    @Test
    void fullValidationAndTails() {
        Table t = new Table(Kind.ALLREDUCE, true, true, TAILS, false);
        assertEquals("# Size         Avg Latency(us)     Min Latency(us)     Max Latency(us)  Iterations          Validation"
                + "    P50 Tail Lat(us)    P90 Tail Lat(us)    P99 Tail Lat(us)", t.header());
        assertEquals("64                        1.00                0.90                1.10          50                Pass"
                + "                0.95                1.20                3.45", t.row(64, stats(1, 0.9, 1.1, 50, 0, 0.95, 1.2, 3.449), null));
    }

    @Test
    void tailLatencyHeaderWidthFollowsOmb() {
        // OMB pads "P%d Tail Lat(us)" by FIELD_WIDTH - strlen("Px Tail Lat(us)") - (p > 9): one-digit percentiles are one shorter.
        Table t = new Table(Kind.ALLREDUCE, false, false, new int[] {5, 95}, false);
        assertEquals("# Size         Avg Latency(us)     P5 Tail Lat(us)    P95 Tail Lat(us)", t.header());
    }

    @Test
    void barrier() {
        Table t = new Table(Kind.BARRIER, false, false, NONE, false);
        assertEquals("# Avg Latency(us)", t.header());
        assertEquals("             2.35", t.row(0, stats(2.345001, 1, 3, 1000, 0), null));
        Table f = new Table(Kind.BARRIER, true, false, NONE, false);
        assertEquals("# Avg Latency(us)     Min Latency(us)     Max Latency(us)  Iterations", f.header());
        assertEquals("             2.00                1.00                3.00        1000", f.row(0, stats(2, 1, 3, 1000, 0), null));
    }

    @Test
    void barrierIgnoresValidation() {
        assertEquals("# Avg Latency(us)", new Table(Kind.BARRIER, false, true, NONE, false).header());
    }

    @Test
    void compare() {
        Table t = new Table(Kind.ALLREDUCE, true, true, NONE, true);
        assertEquals("# Size         Avg Latency(us)     Min Latency(us)     Max Latency(us)  Iterations          Validation"
                + " MPI Avg Latency(us) MPI Min Latency(us) MPI Max Latency(us)      MPI Validation  Ratio(sharp4j/MPI)", t.header());
        assertEquals("8                         0.25                0.20                0.30        1000                Pass"
                + "                0.50                0.40                0.60                Pass                0.50",
                t.row(8, stats(0.25, 0.2, 0.3, 1000, 0), stats(0.5, 0.4, 0.6, 1000, 0)));
        Table b = new Table(Kind.BARRIER, false, false, NONE, true);
        assertEquals("# Avg Latency(us) MPI Avg Latency(us)  Ratio(sharp4j/MPI)", b.header());
        assertEquals("             1.00                2.00                0.50", b.row(0, stats(1, 1, 1, 10, 0), stats(2, 2, 2, 10, 0)));
    }

    @Test
    void csv() {
        Table t = new Table(Kind.ALLREDUCE, false, true, new int[] {50}, true);
        assertEquals("datatype,size_bytes,avg_us,min_us,max_us,iterations,validation,p50_us,"
                + "mpi_avg_us,mpi_min_us,mpi_max_us,mpi_iterations,mpi_validation,mpi_p50_us,ratio", t.csvHeader());
        assertEquals("MPI_FLOAT,8,0.250,0.200,0.300,1000,Pass,0.240,0.500,0.400,0.600,1000,Fail,0.450,0.5000",
                t.csvRow("MPI_FLOAT", 8, stats(0.25, 0.2, 0.3, 1000, 0, 0.24), stats(0.5, 0.4, 0.6, 1000, 1, 0.45)));
    }

    @Test
    void tailLatenciesPickOmbsIndex() {
        double[] summed = new double[100];
        for (int i = 0; i < 100; i++) {
            summed[i] = 2.0 * (100 - i); // rank sums over 2 ranks, unsorted: 200, 198, ..., 2
        }
        double[] t = Osu.tailLatencies(summed, new int[] {50, 90, 99, 100}, 2);
        // sorted ascending 2..200; OMB takes element iterations*p/100 - 1, divided by the ranks
        assertEquals(50.0, t[0]);
        assertEquals(90.0, t[1]);
        assertEquals(99.0, t[2]);
        assertEquals(100.0, t[3]);
        assertEquals(1.0, Osu.tailLatencies(new double[] {4, 2}, new int[] {1}, 2)[0]); // index -1 clamps to 0
    }
}
