package org.sharp4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.sharp4j.CollectiveCorrectnessTest.Api;
import org.sharp4j.tuning.Collective;
import org.sharp4j.tuning.IntraNodeAlgorithm;

/**
 * The split cma Allreduce ({@code org.sharp4j.coll.CmaSplitAlgorithm}, table name {@code cma_split}):
 * every rank folds its slice of all inputs, read from the other ranks' memory, and writes it into
 * every other rank's output. Bit-exact against the documented order (left to right over ranks) for
 * every type x op at counts around the slices' line boundaries and with slices of two read steps,
 * 1-8 ranks, every buffer form: direct buffers split (in place too, where a rank from 2 on copies its
 * own operand first), the others run the pipelined algorithm, decided alike on every rank, also when
 * the ranks mix their forms; the count of calls that split is exact. A mismatch with a Reduce ends
 * every rank's call.
 */
class CmaSplitAllreduceTest {
    /** 4 KiB slots (the pipelined fallback then runs many chunks), the split Allreduce from 0 bytes. */
    static final Config SPLIT = CollectiveCorrectnessTest.SMALL.withTuneOverride("allreduce:0-inf:cma_split");

    /** The algorithm the table's cma_split gives Allreduce: split where the ranks read each other, else pipelined. */
    static IntraNodeAlgorithm expected(Communicator comm) {
        return DirectReduceTest.oneSocket(comm, "cma_split") == IntraNodeAlgorithm.CMA_SPLIT ? IntraNodeAlgorithm.CMA_SPLIT
                : IntraNodeAlgorithm.PIPELINED;
    }

    @ParameterizedTest(name = "{0} ranks")
    @CsvSource({"1", "2", "3", "4", "5", "8"})
    void everyTypeOpCountAndForm(int ranks) {
        ThreadRanks.run(ranks, SPLIT, comm -> {
            IntraNodeAlgorithm alg = expected(comm);
            assertEquals(alg, comm.engine().algorithm(Collective.ALLREDUCE, 1 << 20));
            boolean splits = alg == IntraNodeAlgorithm.CMA_SPLIT;
            int n = comm.size();
            long expectSplits = comm.engine().cmaSplitCalls(); // the heating's
            long seed = 5100;
            for (DataType t : DataType.values()) {
                int line = 64 / t.size;
                int twoSteps = n * (300_000 / t.size) + 5; // slices of 300 KB: two read steps of at most 256 KiB
                for (int count : new int[] {0, 1, line - 1, n * line - 1, n * line + 1, 1000 * n + 7, 3 * 4096 / t.size + 5, twoSteps}) {
                    for (Op op : Op.values()) {
                        if (!op.validFor(t) || (count == twoSteps && op != Op.SUM && op != Op.MAX)) {
                            continue;
                        }
                        Api api = Api.values()[(int) (seed % Api.values().length)];
                        CollectiveCorrectnessTest.check(comm, Collective.ALLREDUCE, t, op, count, 0, seed++, api);
                        expectSplits += splits && (api == Api.BUFFERS || api == Api.IN_PLACE_BUFFER) ? 1 : 0;
                    }
                }
                for (Api api : Api.values()) { // every form on one count
                    CollectiveCorrectnessTest.check(comm, Collective.ALLREDUCE, t, Op.SUM, 5 * n * line + 3, 0, seed++, api);
                    expectSplits += splits && (api == Api.BUFFERS || api == Api.IN_PLACE_BUFFER) ? 1 : 0;
                }
            }
            assertEquals(expectSplits, comm.engine().cmaSplitCalls(), "calls that split");
        });
    }

    /**
     * Ranks passing different forms in one call: where every one is a direct buffer (in place or
     * not) the call splits, otherwise every rank runs the pipelined algorithm; all bit-exact.
     */
    @ParameterizedTest(name = "{0} ranks")
    @CsvSource({"2", "3", "4"})
    void ranksMixingTheirForms(int ranks) {
        ThreadRanks.run(ranks, SPLIT, comm -> {
            boolean splits = expected(comm) == IntraNodeAlgorithm.CMA_SPLIT;
            long before = comm.engine().cmaSplitCalls();
            long expectSplits = 0;
            long seed = 777;
            Api[] forms = {Api.BUFFERS, Api.IN_PLACE_BUFFER, Api.ARRAYS, Api.BUFFERS, Api.IN_PLACE_BUFFER, Api.SHARED, Api.IN_PLACE};
            for (int k = 0; k < 40; k++) {
                boolean allDirect = true;
                for (int r = 0; r < comm.size(); r++) {
                    Api f = forms[(r * 3 + k) % forms.length];
                    allDirect &= f == Api.BUFFERS || f == Api.IN_PLACE_BUFFER;
                }
                DataType t = DataType.values()[k % 4];
                int count = (k % 5 + 1) * 1201; // at most 48 KB: every form fits the 64 KiB shared buffer
                CollectiveCorrectnessTest.check(comm, Collective.ALLREDUCE, t, Op.SUM, count, 0, seed++, forms[(comm.rank() * 3 + k) % forms.length]);
                expectSplits += splits && allDirect ? 1 : 0;
            }
            assertEquals(expectSplits, comm.engine().cmaSplitCalls() - before, "calls that split");
            assertTrue(!splits || expectSplits > 0, "some calls had every form direct");
        });
    }

    /** A split Allreduce against a Reduce, and against a different count: every rank throws the mismatch, then all go on. */
    @ParameterizedTest(name = "{0}, odd rank {1}")
    @CsvSource({"reduce,1", "reduce,0", "count,2"})
    void aMismatchEndsEveryRanksCall(String what, int odd) {
        ThreadRanks.run(3, SPLIT.withTuneOverride("allreduce:0-inf:cma_split#reduce:0-inf:cma_split"), comm -> {
            boolean o = comm.rank() == odd;
            java.nio.ByteBuffer in = java.nio.ByteBuffer.allocateDirect(80_000).order(java.nio.ByteOrder.nativeOrder());
            java.nio.ByteBuffer out = java.nio.ByteBuffer.allocateDirect(80_000).order(java.nio.ByteOrder.nativeOrder());
            MismatchAndFailureTest.expectMismatch(comm, false, () -> {
                if (o && what.equals("reduce")) {
                    comm.reduce(in, 0, out, 0, 10_000, DataType.DOUBLE, Op.SUM, 0);
                } else {
                    comm.allreduce(in, 0, out, 0, o ? 9_999 : 10_000, DataType.DOUBLE, Op.SUM);
                }
            });
            CollectiveCorrectnessTest.check(comm, Collective.ALLREDUCE, DataType.LONG, Op.SUM, 20_000, 0, 5, Api.BUFFERS);
        });
    }
}
