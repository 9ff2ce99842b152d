package org.sharp4j.coll;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import org.sharp4j.Config;
import org.sharp4j.ThreadRanks;
import org.sharp4j.tuning.Collective;

/**
 * The sizes the heating runs on the long paths ({@link Engine#longPathBytes}): one per path of the
 * built-in table, the smallest, so that no long path is left for C2 to compile during a program
 * (a path the list misses is compiled against the program's first long calls: 4-12 ms calls on
 * a bound rank), and none twice (a size that repeats a path costs heating time for nothing).
 */
class LongPathBytesTest {
    private static final Config CFG = Config.defaults().withTimeoutNanos(60_000_000_000L).withWarmupRounds(0);

    private static Map<String, long[]> paths(int ranks, Config cfg) {
        Map<String, long[]> got = new ConcurrentHashMap<>();
        ThreadRanks.run(ranks, cfg, comm -> {
            if (comm.rank() == 0) {
                got.put("allreduce", comm.engine().longPathBytes(Collective.ALLREDUCE, 4096));
                got.put("reduce", comm.engine().longPathBytes(Collective.REDUCE, 4096));
            }
        });
        return got;
    }

    @Test
    void oneNodeTakesTheTreeTiledPipelinedDirectAndSeveralChunks() {
        Map<String, long[]> got = paths(2, CFG);
        // Allreduce: the exchange to 16 KiB (two ranks), tiled to 64 KiB, pipelined in one chunk (the auto slot of one
        // socket: 512 KiB), then in several
        assertArrayEquals(new long[] {8192, 32768, 65536, 1048576}, got.get("allreduce"));
        // Reduce: the exchange below 16 KiB (two ranks), the tree at 16 KiB, direct in one chunk, direct in several
        assertArrayEquals(new long[] {8192, 16384, 32768, 1048576}, got.get("reduce"));
        // the same with the slot fixed at the default: several chunks from 128 KiB
        Map<String, long[]> fixed = paths(2, CFG.withSlotBytes(Config.DEFAULT_SLOT_BYTES));
        assertArrayEquals(new long[] {8192, 32768, 65536, 131072}, fixed.get("allreduce"));
        assertArrayEquals(new long[] {8192, 16384, 32768, 131072}, fixed.get("reduce"));
    }

    @Test
    void severalNodesAddTheInterNodeAlgorithmsOfTheTable() {
        Map<String, long[]> got = paths(3, CFG.withSimulatedTopology(3, 1));
        // between 3 nodes the built-in Allreduce runs k-nomial radix 2 at every size; 128 KiB is the
        // several-chunk path (two slots); tiled (not pipelined: one node only) from 16 KiB + 1
        assertArrayEquals(new long[] {8192, 32768, 131072}, got.get("allreduce"));
        // with SRA from 16 KiB (the table below 2026-11-27), 16 KiB is the tree inside the node but SRA between
        Map<String, long[]> sra = paths(3, CFG.withSimulatedTopology(3, 1).withTuneOverride("allreduce:16k-inf:sra:radix=4"));
        assertArrayEquals(new long[] {8192, 16384, 32768, 131072}, sra.get("allreduce"));
        // Reduce is k-nomial between nodes at every size, tiled (not direct: one node only) from 16 KiB + 1
        assertArrayEquals(new long[] {8192, 32768, 131072}, got.get("reduce"));
        // between 2 nodes Allreduce is k-nomial (recursive doubling) at every size: no SRA path to heat
        Map<String, long[]> two = paths(2, CFG.withSimulatedTopology(2, 1));
        assertArrayEquals(new long[] {8192, 32768, 131072}, two.get("allreduce"));
        assertArrayEquals(new long[] {8192, 32768, 131072}, two.get("reduce"));
    }

    @Test
    void theSlotSizeMovesTheSeveralChunkSize() {
        Map<String, long[]> got = paths(2, CFG.withSlotBytes(16384));
        // 16 KiB slots: 16 KiB is still one chunk of the exchange (the tree for Reduce); 32 KiB is two chunks of
        // tiled (direct for Reduce); the candidates end at two slots and two slots + a line, before the pipelined 64 KiB
        assertArrayEquals(new long[] {8192, 32768}, got.get("allreduce"));
        assertArrayEquals(new long[] {8192, 16384, 32768}, got.get("reduce"));
    }
}
