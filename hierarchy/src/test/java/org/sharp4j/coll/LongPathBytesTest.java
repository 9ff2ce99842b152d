package org.sharp4j.coll;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
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

    /**
     * The built-in cma Reduces run where reading another process is cheap (PeerReads.costGate); elsewhere
     * they are the direct Reduce, and the heating takes one path less. Fixed cheap here, so that the paths
     * below do not depend on the machine (PeerReadsTest sets it both ways).
     */
    @BeforeAll
    static void cheapReads() {
        System.setProperty("sharp4j.debug.cmaReadCost", "1");
    }

    @AfterAll
    static void measuredReads() {
        System.clearProperty("sharp4j.debug.cmaReadCost");
    }

    private static Map<String, String> paths(int ranks, Config cfg) {
        Map<String, String> got = new ConcurrentHashMap<>();
        ThreadRanks.run(ranks, cfg, comm -> {
            if (comm.rank() == 0) {
                got.put("allreduce", describe(comm.engine(), Collective.ALLREDUCE, comm.engine().longPathBytes(Collective.ALLREDUCE, 4096)));
                got.put("reduce", describe(comm.engine(), Collective.REDUCE, comm.engine().longPathBytes(Collective.REDUCE, 4096)));
            }
        });
        return got;
    }

    /**
     * The paths as "bytes" or, where a path forces its segment or chunk, "bytes ALGORITHM from START [chunk C]":
     * the algorithm and start of the forced segment, and the forced chunk.
     */
    private static String describe(Engine e, Collective c, long[] paths) {
        StringBuilder sb = new StringBuilder();
        for (long p : paths) {
            if (sb.length() > 0) {
                sb.append(", ");
            }
            sb.append(Engine.heatPathBytes(p));
            int seg = Engine.heatPathSegment(p);
            if (seg >= 0) {
                sb.append(' ').append(e.table().intraAlgorithmAt(c, seg)).append(" from ").append(e.table().intraStarts(c)[seg]);
            }
            if (Engine.heatPathChunk(p) > 0) {
                sb.append(" chunk ").append(Engine.heatPathChunk(p));
            }
        }
        return sb.toString();
    }

    /** Five chunks of 64 KiB and a line: a several-chunk heating call on one node. */
    private static final long FIVE = 5 * 65536 + 64;

    @Test
    void oneNodeTakesTheTreeTiledPipelinedDirectAndSeveralChunks() {
        Map<String, String> got = paths(2, CFG);
        // Allreduce: the exchange to 64 KiB - 1 (two ranks), the split cma Allreduce (two ranks; pipelined
        // where a buffer is not direct) in one chunk (the auto slot of one socket: 512 KiB), then in several: five chunks
        // of 64 KiB, the segment of 1 MiB (so that the pipelined algorithm reuses a set within the call, as calls of five
        // slots do)
        assertEquals("8192, 65536, " + FIVE + " CMA_SPLIT from 65536 chunk 65536", got.get("allreduce"));
        // Reduce: the exchange below 16 KiB (two ranks), cma at 16-256 KiB (one chunk of the 512 KiB slot: no
        // several-chunk cma call exists), cma_split from 512 KiB in one chunk and, forced there, in several, and
        // direct between them, where no power of two falls, at its first size (one chunk)
        assertEquals("8192, 16384, 524288, " + FIVE + " CMA_SPLIT from 524288 chunk 65536, 262208", got.get("reduce"));
        // the same with the slot fixed at the default: several chunks from 128 KiB
        Map<String, String> fixed = paths(2, CFG.withSlotBytes(Config.DEFAULT_SLOT_BYTES));
        assertEquals("8192, 65536, " + FIVE + " CMA_SPLIT from 65536 chunk 65536", fixed.get("allreduce"));
        // (64 KiB slots: cma in one chunk at 16 KiB and in several from 128 KiB, heated as five chunks with its
        // segment forced; direct and cma_split only in several, likewise)
        assertEquals("8192, 16384, " + FIVE + " CMA from 16384 chunk 65536, " + FIVE + " DIRECT from 262145 chunk 65536, " + FIVE
                + " CMA_SPLIT from 524288 chunk 65536", fixed.get("reduce"));
    }

    @Test
    void severalNodesAddTheInterNodeAlgorithmsOfTheTable() {
        Map<String, String> got = paths(3, CFG.withSimulatedTopology(3, 1));
        // between 3 nodes the built-in Allreduce runs k-nomial radix 2 at every size; 128 KiB is the
        // several-chunk path (two slots); tiled (not pipelined: one node only) from 16 KiB + 1; across nodes the
        // calls keep their size and chunk, and 320 KiB is the first whose later part is a whole one (four slots)
        assertEquals("8192, 32768, 131072, 327680", got.get("allreduce"));
        // with SRA from 16 KiB (the table below 2026-11-27), 16 KiB is the tree inside the node but SRA between
        Map<String, String> sra = paths(3, CFG.withSimulatedTopology(3, 1).withTuneOverride("allreduce:16k-inf:sra:radix=4"));
        assertEquals("8192, 16384, 32768, 131072, 327680", sra.get("allreduce"));
        // Reduce is k-nomial radix 2 between 3 nodes at every size, tiled (not direct: one node only) from 16 KiB + 1
        assertEquals("8192, 32768, 131072, 327680", got.get("reduce"));
        // with radix 4 from 16 KiB + 1 to 256 KiB (the table before 2026-11-30; keyed by the call's size, as the host
        // path reads it), 256 KiB is a path of its own
        Map<String, String> r4 = paths(3, CFG.withSimulatedTopology(3, 1).withTuneOverride("reduce:16385-256k:nodes=3:knomial:radix=4"));
        assertEquals("8192, 32768, 131072, 262144, 327680", r4.get("reduce"));
        // between 2 nodes of one rank Allreduce is k-nomial (recursive doubling) below 512 KiB, whole later parts from
        // 320 KiB, then SRA radix 2
        Map<String, String> two = paths(2, CFG.withSimulatedTopology(2, 1));
        assertEquals("8192, 32768, 131072, 327680, 524288", two.get("allreduce"));
        // with SRA from 2 MiB (the table before 2026-11-30) that size is heated instead
        Map<String, String> twoLate = paths(2, CFG.withSimulatedTopology(2, 1).withTuneOverride("allreduce:512k-2m:nodes=2:ppn=1:knomial:radix=2"));
        assertEquals("8192, 32768, 131072, 327680, 2097152", twoLate.get("allreduce"));
        assertEquals("8192, 32768, 131072, 327680", two.get("reduce"));
    }

    @Test
    void theSlotSizeMovesTheSeveralChunkSize() {
        Map<String, String> got = paths(2, CFG.withSlotBytes(16384));
        // 16 KiB slots: 16 KiB is still one chunk of the exchange (the tree for Reduce); from 32 KiB several chunks of
        // tiled (direct for Reduce), five of 16 KiB: for Allreduce in the exchange's segment (which holds one slot: a
        // longer call there runs tiled, Engine.algorithmAt); the pipelined Allreduce from 64 KiB begins above the
        // candidates (two slots and a line) and is heated with its segment forced
        long five16 = 5 * 16384 + 64;
        assertEquals("8192, " + five16 + " EXCHANGE from 257 chunk 16384, " + five16 + " CMA_SPLIT from 65536 chunk 16384",
                got.get("allreduce"));
        assertEquals("8192, 16384, " + five16 + " CMA from 16384 chunk 16384, " + five16 + " DIRECT from 262145 chunk 16384, "
                + five16 + " CMA_SPLIT from 524288 chunk 16384", got.get("reduce"));
    }

    /**
     * Four ranks on one node: the built-in table runs the split cma Reduce from 4 MiB only (the pipelined one
     * from 8 MiB before), far above the candidates (two chunks and a line: about 1 MiB); it is heated with its
     * segment forced, else C2 compiled it during the program's first such Reduces (the pipelined one: 4 ranks on
     * 2 CPUs, calls of 30-80 ms).
     */
    @Test
    void anAlgorithmTheTableRoutesOnlyLongCallsToIsHeatedWithItsSegmentForced() {
        Map<String, String> got = paths(4, CFG);
        assertEquals("8192, 32768, " + FIVE + " DIRECT from 16385 chunk 65536, " + FIVE + " CMA_SPLIT from 4194304 chunk 65536",
                got.get("reduce"));
        // with the pipelined Reduce from 8 MiB on top, each segment above the candidates is heated
        Map<String, String> pipelined = paths(4, CFG.withTuneOverride("reduce:8m-inf:nodes=1:ppn=4:pipelined"));
        assertEquals("8192, 32768, " + FIVE + " DIRECT from 16385 chunk 65536, " + FIVE + " CMA_SPLIT from 4194304 chunk 65536, "
                + FIVE + " PIPELINED from 8388608 chunk 65536", pipelined.get("reduce"));
        // Allreduce: pipelined from 64 KiB, the split cma Allreduce from 256 KiB (4 ranks), between the candidates
        assertEquals("8192, 32768, 65536, 262144, " + FIVE + " CMA_SPLIT from 262144 chunk 65536", got.get("allreduce"));
    }

    /**
     * Across nodes most long heating calls take the cheap path ({@link Engine#cheapLongPath}): five chunks of 8 KiB
     * and a line in the segment of a real several-chunk call, so that the long path's methods run often enough
     * for C2 within the budget; on one node there is none (the heating there is not bound by the network).
     */
    @Test
    void severalNodesHaveACheapSeveralChunkPathAndOneNodeNone() {
        Map<String, String> got = new ConcurrentHashMap<>();
        ThreadRanks.run(2, CFG.withSimulatedTopology(2, 1), comm -> {
            if (comm.rank() == 0) {
                Engine e = comm.engine();
                got.put("allreduce", describe(e, Collective.ALLREDUCE, new long[] {e.cheapLongPath(Collective.ALLREDUCE)}));
                got.put("reduce", describe(e, Collective.REDUCE, new long[] {e.cheapLongPath(Collective.REDUCE)}));
                got.put("barrier", Long.toString(e.cheapLongPath(Collective.BARRIER)));
            }
        });
        long five8 = 5 * 8192 + 64;
        // the segment of two slots and a line (tiled between nodes of one rank), its chunk forced to 8 KiB
        assertEquals(five8 + " TILED from 16385 chunk 8192", got.get("allreduce"));
        assertEquals(five8 + " TILED from 16385 chunk 8192", got.get("reduce"));
        assertEquals("0", got.get("barrier"));
        Map<String, Long> one = new ConcurrentHashMap<>();
        ThreadRanks.run(2, CFG, comm -> one.put("r" + comm.rank(), comm.engine().cheapLongPath(Collective.ALLREDUCE)));
        assertEquals(0L, one.get("r0"));
        assertEquals(0L, one.get("r1"));
    }
}
