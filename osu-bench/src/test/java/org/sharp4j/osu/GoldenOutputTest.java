package org.sharp4j.osu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The port's stdout against golden files, byte for byte, for allreduce, reduce and barrier with the
 * default options, -f, -z and -f -z. The golden files are what OMB 7.4's own C print functions
 * (print_preamble, print_only_header, print_stats of util/osu_util_mpi.c, compiled with OMB's
 * configure defines FIELD_WIDTH 18 and FLOAT_PRECISION 2) printed for the same fixed latencies, with
 * the port's one line inserted after OMB's title. The latencies include exact ties (1.125, 0.375) and
 * values just below a tie in binary (3.005), where C's printf and Java's %.2f round differently.
 */
class GoldenOutputTest {
    /** The fixed latency the reference program printed for {@code size} and statistic {@code k}. */
    static double lat(long size, int k) {
        return 0.375 + size / 1000.0 * (1 + k * 0.5) + k * 0.125 + (size % 3) * 0.005;
    }

    static String golden(String name) throws IOException {
        try (InputStream in = GoldenOutputTest.class.getResourceAsStream("golden/" + name)) {
            assertNotNull(in, "no golden file " + name);
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    /** What Osu.execute prints on rank 0 for these options, with injected statistics instead of timings. */
    static String render(Kind kind, String... args) {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        OsuOptions.Parsed p = OsuOptions.parse(kind, args, new PrintStream(new ByteArrayOutputStream()),
                new PrintStream(err, true, StandardCharsets.UTF_8), true);
        assertTrue(p.run(), () -> "options rejected: " + err.toString(StandardCharsets.UTF_8));
        OsuOptions o = p.options;
        Table t = new Table(kind, o.full(), o.validation(), o.percentiles(), false, new Table.RunInfo(Table.SHARP4J, 4, 2));
        StringBuilder sb = new StringBuilder(t.preamble());
        if (kind == Kind.BARRIER) {
            sb.append(t.header()).append('\n');
            double[] tails = new double[o.percentiles().length];
            for (int i = 0; i < tails.length; i++) {
                tails[i] = 2.125 + i;
            }
            sb.append(t.row(0, new Stats(1.125, 0.875, 3.005, o.iterationsFor(0), 0, tails), null)).append('\n');
            return sb.toString();
        }
        for (ElemType type : o.types()) {
            sb.append(Table.datatypeLine(type)).append('\n');
            sb.append(t.header()).append('\n');
            for (long size : o.sizes(type)) {
                double[] tails = new double[o.percentiles().length];
                for (int i = 0; i < tails.length; i++) {
                    tails[i] = lat(size, 2 + i);
                }
                Stats s = new Stats(lat(size, 0), lat(size, -1), lat(size, 1), o.iterationsFor(size), 0, tails);
                sb.append(t.row(size, s, null)).append('\n');
            }
        }
        return sb.toString();
    }

    @ParameterizedTest(name = "{0} {1}")
    @CsvSource(delimiter = '|', value = {
        "ALLREDUCE|''|osu_allreduce.txt",
        "ALLREDUCE|-f|osu_allreduce_f.txt",
        "ALLREDUCE|-z|osu_allreduce_z.txt",
        "ALLREDUCE|-f -z|osu_allreduce_f_z.txt",
        "REDUCE|''|osu_reduce.txt",
        "REDUCE|-f|osu_reduce_f.txt",
        "REDUCE|-z|osu_reduce_z.txt",
        "REDUCE|-f -z|osu_reduce_f_z.txt",
        "BARRIER|''|osu_barrier.txt",
        "BARRIER|-f|osu_barrier_f.txt",
        "BARRIER|-z|osu_barrier_z.txt",
        "BARRIER|-f -z|osu_barrier_f_z.txt",
    })
    void matchesOmb74ByteForByte(Kind kind, String args, String file) throws IOException {
        List<String> a = new ArrayList<>();
        // OMB's default message sizes for a 4-byte type: 4 B to 1 MiB
        if (kind != Kind.BARRIER) {
            a.addAll(List.of("-m", "4:1048576"));
        }
        for (String s : args.split(" ")) {
            if (!s.isEmpty()) {
                a.add(s);
            }
        }
        assertEquals(golden(file), render(kind, a.toArray(new String[0])));
    }

    @ParameterizedTest
    @CsvSource({"1.125,1.12", "1.135,1.14", "3.005,3.00", "0.375,0.38", "2.5,2.50", "12345.678,12345.68", "0,0.00"})
    void numbersRoundAsCsPrintf(double v, String expected) {
        assertEquals(expected, Table.cFixed(v, 2));
    }
}
