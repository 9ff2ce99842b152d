package org.sharp4j.coll;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;
import org.sharp4j.Config;
import org.sharp4j.Op;
import org.sharp4j.tuning.Collective;
import org.sharp4j.tuning.IntraNodeAlgorithm;

/**
 * {@link PeerReads}: reads of a process's memory and their failures, the creation's probe, and the
 * engine's agreement on the cma Reduce (every member of a socket takes it, or none does). The cma
 * Reduce's bits are DirectReduceTest's; across processes, LauncherProcessTest's.
 */
class PeerReadsTest {
    private static final long ME = ProcessHandle.current().pid();

    private static void assumeLoaded() {
        assumeTrue(NativeKernels.AVAILABLE, () -> "native kernels not loaded: " + NativeKernels.whyNot);
    }

    @Test
    void theAddressOfNullIsZeroNotACrash() {
        assumeLoaded();
        assertEquals(0, PeerReads.address(null)); // HotSpot's GetDirectBufferAddress(null) kills the JVM
        ByteBuffer b = ByteBuffer.allocateDirect(64);
        assertTrue(PeerReads.address(b) != 0);
    }

    @Test
    void aReadCopiesTheRangeAtTheAddress() {
        assumeLoaded();
        ByteBuffer src = ByteBuffer.allocateDirect(300_000).order(ByteOrder.nativeOrder());
        for (int i = 0; i < src.capacity(); i++) {
            src.put(i, (byte) (i * 31 + 7));
        }
        ByteBuffer dst = ByteBuffer.allocateDirect(300_000);
        // an odd offset on both sides, more than a page, crossing several
        assertEquals(0, PeerReads.read(ME, PeerReads.address(src) + 1001, dst, 17, 250_001));
        for (int i = 0; i < 250_001; i++) {
            if (dst.get(17 + i) != src.get(1001 + i)) {
                assertEquals(src.get(1001 + i), dst.get(17 + i), "byte " + i);
            }
        }
        assertEquals(0, dst.get(16));
        assertEquals(0, dst.get(17 + 250_001));
    }

    @Test
    void failuresSayWhichAndReadNothingAsIfWhole() throws Exception {
        assumeLoaded();
        ByteBuffer dst = ByteBuffer.allocateDirect(8192);
        // nothing is mapped at 4 KiB (the kernel keeps the first 64 KiB unmapped): EFAULT, named
        long errno = PeerReads.read(ME, 4096, dst, 0, 64);
        assertEquals(14, errno);
        assertTrue(PeerReads.errnoName(errno).startsWith("EFAULT"), PeerReads.errnoName(errno));
        // a range whose first page is there and second is not (a file mapping past the file's end):
        // the kernel reads the first page and stops; not a short success, EFAULT
        java.nio.file.Path f = java.nio.file.Files.createTempFile("sharp4j-peerreads-", ".bin");
        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(f, java.nio.file.StandardOpenOption.READ,
                java.nio.file.StandardOpenOption.WRITE)) {
            java.nio.MappedByteBuffer m = ch.map(java.nio.channels.FileChannel.MapMode.READ_WRITE, 0, 8192);
            m.put(0, (byte) 42);
            ch.truncate(4096);
            assertEquals(0, PeerReads.read(ME, PeerReads.address(m), dst, 0, 4096));
            assertEquals(42, dst.get(0));
            assertEquals(14, PeerReads.read(ME, PeerReads.address(m), dst, 0, 8192));
        } finally {
            java.nio.file.Files.deleteIfExists(f);
        }
        long end = PeerReads.address(dst);
        // a process that is gone: ESRCH, which the engine reports as the rank's death
        Process p = new ProcessBuilder("true").start();
        long gone = p.pid();
        p.waitFor();
        assumeTrue(ProcessHandle.of(gone).isEmpty(), "pid reused at once");
        assertEquals(PeerReads.ESRCH, PeerReads.read(gone, end, dst, 0, 8));
        assertTrue(PeerReads.errnoName(PeerReads.ESRCH).startsWith("ESRCH"));
    }

    @Test
    void theProbeReadsTheOfferedWordAndChecksItsValue() throws Exception {
        assumeLoaded();
        assertNull(PeerReads.prepare(true));
        ByteBuffer scratch = ByteBuffer.allocateDirect(8);
        assertNull(PeerReads.probe(ME, PeerReads.cookieAddress(), PeerReads.COOKIE_VALUE, scratch));
        String wrong = PeerReads.probe(ME, PeerReads.cookieAddress(), PeerReads.COOKIE_VALUE ^ 1, scratch);
        assertNotNull(wrong);
        assertTrue(wrong.contains("where it offered"), wrong);
        String unmapped = PeerReads.probe(ME, 4096, 1, scratch);
        assertTrue(unmapped.contains("EFAULT"), unmapped);
        assertEquals("sharp4j.cma=off", PeerReads.prepare(false));
    }

    /**
     * One rank (the root of the Reduces) with {@code sharp4j.cma=off}: no member of the socket takes
     * the cma Reduce, all run the direct one, and the results are right. A root that ran direct while
     * its members ran cma would fold slots its members never wrote.
     */
    @Test
    void oneRankWithoutPeerReadsTakesTheWholeSocketToDirect() {
        assumeLoaded();
        Config base = Config.defaults().withSlotBytes(4096).withTimeoutNanos(60_000_000_000L).withTuneOverride("reduce:0-inf:cma");
        String[] why = new String[3];
        IntraNodeAlgorithm[] alg = new IntraNodeAlgorithm[3];
        long[][] got = new long[3][];
        Throwable[] errs = runEach(3, r -> r == 1 ? base.withCma(false) : base, comm -> {
            int me = comm.rank();
            why[me] = comm.engine().peerReadsWhyNot();
            alg[me] = comm.engine().algorithm(Collective.REDUCE, 80_000);
            ByteBuffer in = ByteBuffer.allocateDirect(8 * 10_000).order(ByteOrder.nativeOrder());
            ByteBuffer out = ByteBuffer.allocateDirect(8 * 10_000).order(ByteOrder.nativeOrder());
            for (int i = 0; i < 10_000; i++) {
                in.putLong(8 * i, (me + 1L) * 1_000_003L + i);
            }
            comm.reduce(in, 0, me == 1 ? out : null, 0, 10_000, org.sharp4j.DataType.LONG, Op.SUM, 1);
            if (me == 1) {
                got[1] = new long[10_000];
                for (int i = 0; i < 10_000; i++) {
                    got[1][i] = out.getLong(8 * i);
                }
            }
        });
        for (int r = 0; r < 3; r++) {
            assertNull(errs[r], "rank " + r + ": " + errs[r]);
            assertEquals(IntraNodeAlgorithm.DIRECT, alg[r], "rank " + r);
            assertNotNull(why[r], "rank " + r);
        }
        assertEquals("sharp4j.cma=off", why[1]);
        assertTrue(why[0].startsWith("rank 1 does not offer its memory"), why[0]);
        assertTrue(why[2].startsWith("rank 1 does not offer its memory"), why[2]);
        for (int i = 0; i < 10_000; i++) {
            assertEquals(6L * 1_000_003L + 3L * i, got[1][i], "element " + i);
        }
    }

    /**
     * A member read from its process stores nothing, so its call's time says nothing of its store
     * kinds: it must not enter the stores' choice (StoreChoice), which the direct Reduce's copying
     * members feed with the same sizes.
     */
    @Test
    void aMemberReadFromItsProcessDoesNotFeedTheStoresChoice() {
        assumeLoaded();
        for (String alg : new String[] {"cma", "direct"}) {
            Config cfg = Config.defaults().withTimeoutNanos(60_000_000_000L).withWarmupRounds(0).withTuneOverride("reduce:0-inf:" + alg);
            long[] recorded = new long[2];
            Throwable[] errs = runEach(2, r -> cfg, comm -> {
                ByteBuffer in = ByteBuffer.allocateDirect(65536).order(ByteOrder.nativeOrder());
                ByteBuffer out = ByteBuffer.allocateDirect(65536).order(ByteOrder.nativeOrder());
                for (int i = 0; i < 20; i++) {
                    comm.reduce(in, 0, comm.rank() == 0 ? out : null, 0, 8192, org.sharp4j.DataType.LONG, Op.SUM, 0);
                }
                recorded[comm.rank()] = comm.engine().stores.recorded();
            });
            assertNull(errs[0], String.valueOf(errs[0]));
            assertNull(errs[1], String.valueOf(errs[1]));
            assertEquals(0, recorded[0], alg + ": the root copies nothing");
            assertEquals(alg.equals("cma") ? 0 : 20, recorded[1], alg + ": the member");
        }
    }

    /**
     * The gate of the built-in cma Reduces reads the offers alone (so every member decides alike): the
     * first member of the socket whose measured cost exceeds the bound is named; members that did not
     * measure ({@code -}: sharp4j.cma=on), offered nothing, or are not of the socket do not count.
     */
    @Test
    void theCostGateIsAFunctionOfTheOffersAlone() {
        int[] sock = {0, 1, 2};
        assertNull(PeerReads.costGate(sock, new String[] {"11:22:1.50", "33:44:2.00", "55:66:3.00"}));
        String why = PeerReads.costGate(sock, new String[] {"11:22:1.50", "33:44:3.01", "55:66:7.25"});
        assertNotNull(why);
        assertTrue(why.contains("3.01x") && why.contains("rank 1") && why.contains("16 KiB"), why);
        assertNull(PeerReads.costGate(sock, new String[] {"11:22:-", "33:44:-", "55:66:1.00"}));
        assertNull(PeerReads.costGate(sock, new String[] {"-", "33:44", "55:66:0.90"}), "no offer, or one without a cost field");
        // rank 3 is on another socket: its cost does not gate this one
        assertNull(PeerReads.costGate(sock, new String[] {"11:22:1.00", "33:44:1.00", "55:66:1.00", "77:88:9.00"}));
        assertNotNull(PeerReads.costGate(new int[] {2, 3}, new String[] {"11:22:1.00", "33:44:1.00", "55:66:1.00", "77:88:9.00"}));
        // two members' split Allreduce: a bound of its own, between the two
        int[] pair = {0, 1};
        assertNull(PeerReads.pairSplitGate(pair, new String[] {"11:22:3.50", "33:44:4.00"}));
        assertNotNull(PeerReads.costGate(pair, new String[] {"11:22:3.50", "33:44:4.00"}));
        String pairWhy = PeerReads.pairSplitGate(pair, new String[] {"11:22:3.50", "33:44:4.01"});
        assertTrue(pairWhy != null && pairWhy.contains("4.01x") && pairWhy.contains("rank 1") && pairWhy.contains("two ranks"), pairWhy);
        assertNull(PeerReads.pairSplitGate(pair, new String[] {"11:22:-", "33:44:-"}));
    }

    /**
     * Two ranks with the built-in table: where reading another process costs more than the bound
     * ({@code sharp4j.debug.cmaReadCost} stands for the measurement) the built-in cma (16 KiB) and
     * cma_split (1 MiB) Reduces run as direct on both members, an override's cma is still followed,
     * and sharp4j.cma=on skips the gate; a cheap read leaves the built-in choice. Each case runs Reduces
     * at both sizes and checks the root's sums: members that disagreed on the protocol would leave the
     * root folding slots nobody wrote, or waiting for them.
     */
    @Test
    void aCostlyReadRunsTheBuiltInCmaReducesAsDirectOnEveryMember() {
        assumeLoaded();
        Config base = Config.defaults().withTimeoutNanos(60_000_000_000L);
        withReadCost("9", () -> {
            gateCase(base, IntraNodeAlgorithm.DIRECT, IntraNodeAlgorithm.DIRECT, true);
            gateCase(base.withTuneOverride("reduce:16k-inf:nodes=1:ppn=2:cma"), IntraNodeAlgorithm.CMA, IntraNodeAlgorithm.CMA, true);
            gateCase(base.withCmaOn(), IntraNodeAlgorithm.CMA, IntraNodeAlgorithm.CMA_SPLIT, false);
        });
        withReadCost("1.2", () -> gateCase(base, IntraNodeAlgorithm.CMA, IntraNodeAlgorithm.CMA_SPLIT, false));
    }

    /** Runs {@code body} with {@code sharp4j.debug.cmaReadCost} (what a creation takes for its read cost measurement) at {@code cost}. */
    private static void withReadCost(String cost, Runnable body) {
        String prop = "sharp4j.debug.cmaReadCost";
        System.setProperty(prop, cost);
        try {
            body.run();
        } finally {
            System.clearProperty(prop);
        }
    }

    /**
     * The built-in table's split Allreduce (1 MiB: 2 ranks from 64 KiB, 3-4 from 256 KiB): of four
     * members it runs as the pipelined one on every member where reading another process is costly
     * (above 3x a fold), and stays split where it is cheap; of two it stays split up to the pair's
     * higher bound (4x) and runs pipelined above it. Each case checks every
     * member's sums of three Allreduces: members that disagreed on the algorithm would wait for
     * flags nobody publishes (the timeout) or fold slots nobody wrote.
     */
    @Test
    void aCostlyReadRunsTheBuiltInSplitAllreduceAsPipelinedTwoMembersAtAHigherBound() {
        assumeLoaded();
        Config base = Config.defaults().withTimeoutNanos(60_000_000_000L);
        withReadCost("9", () -> {
            allreduceCase(base, 4, IntraNodeAlgorithm.PIPELINED);
            allreduceCase(base, 2, IntraNodeAlgorithm.PIPELINED);
            allreduceCase(base.withCmaOn(), 4, IntraNodeAlgorithm.CMA_SPLIT);
            allreduceCase(base.withCmaOn(), 2, IntraNodeAlgorithm.CMA_SPLIT);
            // a table's cma_split (not the built-in one) is followed
            allreduceCase(base.withTuneOverride("allreduce:64k-inf:nodes=1:ppn=2:cma_split"), 2, IntraNodeAlgorithm.CMA_SPLIT);
        });
        withReadCost("3.5", () -> {
            allreduceCase(base, 4, IntraNodeAlgorithm.PIPELINED);
            allreduceCase(base, 2, IntraNodeAlgorithm.CMA_SPLIT);
        });
        withReadCost("1.2", () -> allreduceCase(base, 4, IntraNodeAlgorithm.CMA_SPLIT));
    }

    private static void allreduceCase(Config cfg, int ranks, IntraNodeAlgorithm expect) {
        int count = 131072; // 1 MiB of longs
        IntraNodeAlgorithm[] alg = new IntraNodeAlgorithm[ranks];
        String[] peerWhy = new String[ranks];
        long[] splits = new long[ranks];
        long[][] got = new long[ranks][];
        Throwable[] errs = runEach(ranks, r -> cfg, comm -> {
            int me = comm.rank();
            peerWhy[me] = comm.engine().peerReadsWhyNot();
            alg[me] = comm.engine().algorithm(Collective.ALLREDUCE, 8L * count);
            ByteBuffer in = ByteBuffer.allocateDirect(8 * count).order(ByteOrder.nativeOrder());
            ByteBuffer out = ByteBuffer.allocateDirect(8 * count).order(ByteOrder.nativeOrder());
            long before = comm.engine().cmaSplitCalls();
            long[] sums = new long[3 * count];
            for (int round = 0; round < 3; round++) {
                for (int i = 0; i < count; i++) {
                    in.putLong(8 * i, (me + 1L) * 1_000_003L + i + round);
                }
                comm.allreduce(in, 0, out, 0, count, org.sharp4j.DataType.LONG, Op.SUM);
                for (int i = 0; i < count; i++) {
                    sums[round * count + i] = out.getLong(8 * i);
                }
            }
            splits[me] = comm.engine().cmaSplitCalls() - before;
            got[me] = sums;
        });
        for (int r = 0; r < ranks; r++) {
            assertNull(errs[r], "rank " + r + ": " + errs[r]);
        }
        assumeTrue(peerWhy[0] == null, () -> "no peer reads here: " + peerWhy[0]);
        long weights = (long) ranks * (ranks + 1) / 2;
        for (int r = 0; r < ranks; r++) {
            assertEquals(expect, alg[r], ranks + " ranks, rank " + r);
            assertEquals(expect == IntraNodeAlgorithm.CMA_SPLIT ? 3 : 0, splits[r], "split calls of rank " + r);
            for (int round = 0; round < 3; round++) {
                for (int i = 0; i < count; i++) {
                    long want = weights * 1_000_003L + (long) ranks * (i + round);
                    if (got[r][round * count + i] != want) {
                        throw new AssertionError("rank " + r + ", round " + round + ", element " + i + ": " + got[r][round * count + i]
                                + " instead of " + want);
                    }
                }
            }
        }
    }

    private static void gateCase(Config cfg, IntraNodeAlgorithm at16k, IntraNodeAlgorithm at1m, boolean gated) {
        int count16k = 2048; // 16 KiB of longs
        int count1m = 131072; // 1 MiB
        IntraNodeAlgorithm[][] alg = new IntraNodeAlgorithm[2][2];
        String[] why = new String[2];
        String[] peerWhy = new String[2];
        long[][] got = new long[2][];
        Throwable[] errs = runEach(2, r -> cfg, comm -> {
            int me = comm.rank();
            peerWhy[me] = comm.engine().peerReadsWhyNot();
            why[me] = comm.engine().builtInCmaWhyNot();
            alg[me][0] = comm.engine().algorithm(Collective.REDUCE, 8L * count16k);
            alg[me][1] = comm.engine().algorithm(Collective.REDUCE, 8L * count1m);
            ByteBuffer in = ByteBuffer.allocateDirect(8 * count1m).order(ByteOrder.nativeOrder());
            ByteBuffer out = ByteBuffer.allocateDirect(8 * count1m).order(ByteOrder.nativeOrder());
            for (int i = 0; i < count1m; i++) {
                in.putLong(8 * i, (me + 1L) * 1_000_003L + i);
            }
            long[] sums = new long[count16k + count1m];
            for (int round = 0; round < 3; round++) {
                comm.reduce(in, 0, me == 0 ? out : null, 0, count16k, org.sharp4j.DataType.LONG, Op.SUM, 0);
                if (me == 0) {
                    for (int i = 0; i < count16k; i++) {
                        sums[i] = out.getLong(8 * i);
                    }
                }
                comm.reduce(in, 0, me == 0 ? out : null, 0, count1m, org.sharp4j.DataType.LONG, Op.SUM, 0);
                if (me == 0) {
                    for (int i = 0; i < count1m; i++) {
                        sums[count16k + i] = out.getLong(8 * i);
                    }
                }
            }
            got[me] = sums;
        });
        for (int r = 0; r < 2; r++) {
            assertNull(errs[r], "rank " + r + ": " + errs[r]);
        }
        assumeTrue(peerWhy[0] == null, () -> "no peer reads here: " + peerWhy[0]);
        for (int r = 0; r < 2; r++) {
            assertEquals(at16k, alg[r][0], "16 KiB, rank " + r);
            assertEquals(at1m, alg[r][1], "1 MiB, rank " + r);
            if (gated) {
                assertNotNull(why[r], "rank " + r);
                assertTrue(why[r].contains("9.00x"), why[r]);
            } else {
                assertNull(why[r], "rank " + r + ": " + why[r]);
            }
        }
        for (int i = 0; i < count16k; i++) {
            assertEquals(3L * 1_000_003L + 2L * i, got[0][i], "16 KiB, element " + i);
        }
        for (int i = 0; i < count1m; i++) {
            assertEquals(3L * 1_000_003L + 2L * i, got[0][count16k + i], "1 MiB, element " + i);
        }
    }

    private static Throwable[] runEach(int n, java.util.function.IntFunction<Config> cfgOf, org.sharp4j.ThreadRanks.Body body) {
        return org.sharp4j.ThreadRanks.runCollect(n, cfgOf, body, 120_000);
    }
}
