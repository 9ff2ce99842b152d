package org.sharp4j.osu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Golden lines: OMB 7.4's print_only_header / print_stats / print_stats_validate formats, character for character. */
class TableFormatTest {
    private static final int[] NONE = {};

    private static Stats stats(double avg, double min, double max, int iters, int errors, double... tails) {
        return new Stats(avg, min, max, iters, errors, tails);
    }

    // Default, -f, -z and -f -z are checked against OMB 7.4's own output in GoldenOutputTest; these are the other columns.

    @Test
    void validation() {
        Table t = new Table(Kind.ALLREDUCE, false, true, NONE, false);
        assertEquals("# Size       Avg Latency(us)        Validation", t.header());
        assertEquals("4                       0.30              Pass", t.row(4, stats(0.3, 0, 0, 1000, 0), null));
        assertEquals("4                       0.30              Fail", t.row(4, stats(0.3, 0, 0, 1000, 2), null));
    }

    @Test
    void tailLatencyHeaderWidthFollowsOmb() {
        // OMB pads "P%d Tail Lat(us)" by FIELD_WIDTH - strlen("Px Tail Lat(us)") - (p > 9): P5 fills 18, P100 19.
        Table t = new Table(Kind.ALLREDUCE, false, false, new int[] {5, 95, 100}, false);
        assertEquals("# Size       Avg Latency(us)   P5 Tail Lat(us)  P95 Tail Lat(us)  P100 Tail Lat(us)", t.header());
    }

    @Test
    void barrierIgnoresValidation() {
        assertEquals("# Avg Latency(us)", new Table(Kind.BARRIER, false, true, NONE, false).header());
    }

    @Test
    void compareColumnsAreWiderThanTheirNames() {
        Table t = new Table(Kind.ALLREDUCE, true, true, new int[] {50}, true);
        assertEquals("# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations        Validation  P50 Tail Lat(us)"
                + "  MPI Avg Latency(us)  MPI Min Latency(us)  MPI Max Latency(us)    MPI Validation  MPI P50 Tail Lat(us)  Ratio(sharp4j/MPI)",
                t.header());
        assertEquals("8                       0.25              0.20              0.30        1000              Pass              0.24"
                + "                 0.50                 0.40                 0.60              Fail                  0.45                0.50",
                t.row(8, stats(0.25, 0.2, 0.3, 1000, 0, 0.24), stats(0.5, 0.4, 0.6, 1000, 1, 0.45)));
        Table b = new Table(Kind.BARRIER, false, false, NONE, true);
        assertEquals("# Avg Latency(us)  MPI Avg Latency(us)  Ratio(sharp4j/MPI)", b.header());
        assertEquals("             1.00                 2.00                0.50", b.row(0, stats(1, 1, 1, 10, 0), stats(2, 2, 2, 10, 0)));
    }

    /** Every header of every option combination: names separated by two spaces or more, each row as many fields. */
    @Test
    void everyHeaderSeparatesNamesByTwoSpaces() {
        for (Kind kind : Kind.values()) {
            for (int mask = 0; mask < 16; mask++) {
                boolean full = (mask & 1) != 0;
                boolean validate = (mask & 2) != 0;
                int[] pct = (mask & 4) != 0 ? new int[] {1, 50, 99, 100} : NONE;
                boolean compare = (mask & 8) != 0;
                Table t = new Table(kind, full, validate, pct, compare);
                String h = t.header();
                String[] names = h.substring(2).trim().split(" {2,}");
                int expected = (kind.hasData() ? 2 : 1) + (full ? 3 : 0) + (validate && kind.hasData() ? 1 : 0) + pct.length;
                if (compare) {
                    expected += 1 + (full ? 2 : 0) + (validate && kind.hasData() ? 1 : 0) + pct.length + 1;
                }
                String what = kind + " mask " + mask + ": '" + h + "'";
                assertEquals(expected, names.length, what);
                for (String n : names) {
                    assertTrue(!n.contains("  ") && n.length() > 3, what);
                }
                double[] tails = new double[pct.length];
                String row = t.row(1048576, stats(99999.999, 1, 2, 100, 0, tails), stats(1, 1, 1, 100, 0, tails));
                assertEquals(expected, row.trim().split(" +").length, what + " / " + row);
                // columns line up: OMB's P100 header is one character wider than its field, nothing else is
                assertEquals(h.length() - (pct.length > 0 ? 1 : 0), row.length(), what + " / " + row);
            }
        }
    }

    @Test
    void csv() {
        Table t = new Table(Kind.ALLREDUCE, false, true, new int[] {50}, true);
        assertEquals("collective,ranks,nodes,backend,datatype,size_bytes,avg_us,min_us,max_us,iterations,validation,p50_us,"
                + "mpi_avg_us,mpi_min_us,mpi_max_us,mpi_iterations,mpi_validation,mpi_p50_us,ratio", t.csvHeader());
        assertEquals("allreduce,,,sharp4j,MPI_FLOAT,8,0.250,0.200,0.300,1000,Pass,0.240,0.500,0.400,0.600,1000,Fail,0.450,0.5000",
                t.csvRow("MPI_FLOAT", 8, stats(0.25, 0.2, 0.3, 1000, 0, 0.24), stats(0.5, 0.4, 0.6, 1000, 1, 0.45)));
        Table b = new Table(Kind.BARRIER, false, false, NONE, false, new Table.RunInfo(Table.OPEN_MPI_JAVA, 6, 3));
        assertEquals("barrier,6,3,Open MPI Java,,0,1.000,1.000,1.000,10", b.csvRow("", 0, stats(1, 1, 1, 10, 0), null));
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
