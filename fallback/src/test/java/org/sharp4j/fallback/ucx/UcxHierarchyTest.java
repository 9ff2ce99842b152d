package org.sharp4j.fallback.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.sharp4j.Config;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.ThreadRanks;
import org.sharp4j.tuning.Algorithm;
import org.sharp4j.tuning.Collective;
import org.sharp4j.tuning.CompiledTable;

/**
 * The full hierarchy with phase 3 forced onto UCX ({@code sharp4j.internode=ucx}) between 1..8
 * simulated nodes of 2 ranks each, all thread ranks of this JVM (UCX over TCP loopback). Results
 * are checked by {@link CollectiveChecks} (exact for every type and op, bit-identical everywhere
 * for random doubles): with the built-in table (every type, op and root, up to 3 MiB, 8 MiB on 3
 * and 8 nodes), and for each algorithm (recursive k-ing, scatter-reduce-allgather) x radix 2, 3,
 * 4, 8 x 2..8 nodes (sizes 0 B..1 MiB, reduce to every root with the same radix).
 */
class UcxHierarchyTest {
    static final Config BASE = Config.defaults().withInterNode("ucx").withWarmupRounds(0)
            .withTimeoutNanos(120_000_000_000L);

    static Config nodes(int n) {
        return BASE.withSimulatedTopology(n, 1);
    }

    @ParameterizedTest(name = "{0} node(s) x 2 ranks")
    @ValueSource(ints = {1, 2, 3, 4, 5, 6, 7, 8})
    void everyTypeOpAndRootUpToSeveralMebibytes(int n) {
        AtomicInteger arrived = new AtomicInteger();
        ThreadRanks.run(2 * n, nodes(n), comm -> {
            assertEquals(n == 1 ? "none (one node)" : "UCX k-nomial", comm.interNode());
            CollectiveChecks c = new CollectiveChecks(comm, n == 3 || n == 8 ? 8 << 20 : 3 << 20);
            c.everything(new int[] {0, 1, 2, 7, 64, 1000, 9000}, 10 * n);
            c.exact(DataType.DOUBLE, Op.SUM, (3 << 20) / 8, -1, 1);
            if (n == 3 || n == 8) {
                c.exact(DataType.DOUBLE, Op.SUM, (8 << 20) / 8, -1, 6); // 8 MiB
            }
            c.exact(DataType.FLOAT, Op.MIN, (3 << 20) / 4 - 5, 2 * n - 1, 2);
            c.exact(DataType.LONG, Op.BXOR, (1 << 20) / 8 + 1, 0, 3);
            c.bitIdentical((1 << 20) / 8, 4);
            c.bitIdentical(1000, 5);
            // Barrier: nobody leaves round r before everyone entered it.
            for (int r = 1; r <= 20; r++) {
                arrived.incrementAndGet();
                comm.barrier();
                int seen = arrived.get();
                assertTrue(seen >= 2 * n * r, "barrier " + r + ": left after only " + seen + " of " + 2 * n * r + " arrivals");
                comm.barrier(); // so that no one runs ahead into round r+1 before all checked round r
            }
        });
    }

    static Stream<Arguments> algorithms() {
        List<Arguments> out = new ArrayList<>();
        for (String alg : new String[] {"knomial", "sra"}) {
            for (int n = 2; n <= 8; n++) {
                for (int radix : new int[] {2, 3, 4, 8}) {
                    out.add(Arguments.of(n, alg, radix));
                }
            }
        }
        return out.stream();
    }

    @ParameterizedTest(name = "{0} nodes, {1} radix {2}")
    @MethodSource("algorithms")
    void bothAlgorithmsAtSeveralRadices(int n, String alg, int radix) {
        String tune = "allreduce:0-inf:" + alg + ":radix=" + radix + "#reduce,barrier:0-inf:knomial:radix=" + radix;
        CompiledTable table = BASE.withTuneOverride(tune).tuningTable().compile(n, 2);
        for (long bytes : new long[] {0, 8, 1 << 20}) {
            assertEquals(Algorithm.parse(alg), table.interAlgorithm(Collective.ALLREDUCE, bytes));
            assertEquals(radix, table.interRadix(Collective.ALLREDUCE, bytes));
            assertEquals(radix, table.interRadix(Collective.REDUCE, bytes));
        }
        ThreadRanks.run(2 * n, nodes(n).withTuneOverride(tune), comm -> {
            CollectiveChecks c = new CollectiveChecks(comm, (1 << 20) + 64);
            long seed = 1000 * n + radix;
            for (int count : new int[] {0, 1, 5, 63, 1000, 4097, 70_000, (1 << 20) / 8 + 1}) {
                c.exact(DataType.DOUBLE, Op.SUM, count, -1, seed++);
                c.exact(DataType.INT, Op.PROD, Math.min(count, (2 << 20) / 4), -1, seed++);
                c.bitIdentical(count, seed++);
            }
            for (int root = 0; root < comm.size(); root++) {
                c.exact(DataType.LONG, Op.MAX, 9000, root, seed++);
                comm.barrier();
            }
        });
    }
}
