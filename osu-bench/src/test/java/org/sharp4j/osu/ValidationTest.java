package org.sharp4j.osu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** -c must catch a wrong result: a backend that corrupts one element makes the row Fail and every rank exit 1. */
class ValidationTest {
    @ParameterizedTest
    @CsvSource({"CHAR,false", "CHAR,true", "INT,false", "INT,true", "LONG,false", "FLOAT,false", "FLOAT,true", "DOUBLE,true"})
    void buffersCheckOmbsPattern(ElemType type, boolean arrays) {
        Buffers b = Buffers.allocate(type, arrays, 300);
        for (int iter : new int[] {0, 7, 1099}) {
            b.fillValidation(iter, 300, true); // in place: the receive buffer holds one rank's contribution
            assertEquals(0, b.checkReduction(iter, 300, 1), "a job of one rank reduces to its own data");
            assertEquals(1, b.checkReduction(iter, 300, 2), "but not to twice it");
            b.corrupt(299);
            assertEquals(1, b.checkReduction(iter, 300, 1));
            assertEquals(0, b.checkReduction(iter, 299, 1), "only the counted elements are checked");
        }
        b.fillValidation(3, 10, false);
        assertEquals(0.0, b.recvValue(0), "out of place: the receive buffer is cleared");
    }

    /** Corrupts the result of rank {@code victim} once the message has at least {@code fromCount} elements. */
    static Backend corrupting(Backend real, int victim, int fromCount) {
        return new ThreadJob.Delegating(real) {
            @Override
            public void allreduce(Buffers b, int count, boolean inPlace) {
                super.allreduce(b, count, inPlace);
                if (rank() == victim && count >= fromCount) {
                    b.corrupt(count - 1);
                }
            }

            @Override
            public void reduce(Buffers b, int count, int root, boolean inPlace) {
                super.reduce(b, count, root, inPlace);
                if (rank() == root && rank() == victim && count >= fromCount) {
                    b.corrupt(0);
                }
            }
        };
    }

    @Test
    void allreduceFailureOnOneRankFailsTheRowForAll() {
        List<ThreadJob.RankResult> rs = ThreadJob.run(2, Kind.ALLREDUCE, b -> corrupting(b, 1, 8),
                "-m", "8:64", "-i", "20", "-x", "2", "--jit-warmup", "10", "-c");
        assertEquals(1, rs.get(0).exit(), rs.get(0).out());
        assertEquals(1, rs.get(1).exit());
        String out = rs.get(0).out();
        List<String[]> rows = EndToEndThreadsTest.rows(out);
        // 8 and 16 bytes (2, 4 floats) pass; 32 bytes (8 floats) is corrupted on rank 1; OMB stops after the failing size
        assertEquals(3, rows.size(), out);
        assertEquals("Pass", rows.get(0)[2]);
        assertEquals("Pass", rows.get(1)[2]);
        assertEquals("32", rows.get(2)[0]);
        assertEquals("Fail", rows.get(2)[2], out);
        assertTrue(out.endsWith("DATA VALIDATION ERROR: osu_allreduce exited with status 1 on message size 32." + System.lineSeparator()), out);
    }

    @Test
    void reduceFailureAtTheRootIsReported() {
        List<ThreadJob.RankResult> rs = ThreadJob.run(2, Kind.REDUCE, b -> corrupting(b, 0, 1),
                "-m", "4:8", "-i", "5", "-x", "0", "--jit-warmup", "0", "-c", "-f");
        assertEquals(1, rs.get(0).exit());
        assertEquals(1, rs.get(1).exit());
        List<String[]> rows = EndToEndThreadsTest.rows(rs.get(0).out());
        assertEquals("Fail", rows.get(0)[5], rs.get(0).out());
    }

    @Test
    void withoutValidationACorruptResultGoesUnnoticed() {
        List<ThreadJob.RankResult> rs = ThreadJob.run(2, Kind.ALLREDUCE, b -> corrupting(b, 1, 1), "-m", "8:8", "-i", "5");
        assertEquals(0, rs.get(0).exit());
        assertFalse(rs.get(0).out().contains("Fail"));
    }
}
