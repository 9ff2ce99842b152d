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

    private static Throwable[] runEach(int n, java.util.function.IntFunction<Config> cfgOf, org.sharp4j.ThreadRanks.Body body) {
        return org.sharp4j.ThreadRanks.runCollect(n, cfgOf, body, 120_000);
    }
}
