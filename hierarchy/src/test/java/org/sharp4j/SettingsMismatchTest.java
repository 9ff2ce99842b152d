package org.sharp4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.IntFunction;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sharp4j.bootstrap.Bootstrap;
import org.sharp4j.bootstrap.ThreadBootstrap;
import org.sharp4j.tuning.IntraNodeTuning;

/**
 * Ranks started with different job-wide settings (issue 16): a tiled threshold on one rank used to
 * show up as a mismatch between internal warm-up calls, or hang. Creation now fails on every rank
 * with the same message naming the setting, before any segment exists.
 */
class SettingsMismatchTest {
    @TempDir
    Path shm;

    private Throwable[] create(int n, IntFunction<Config> cfg) throws InterruptedException {
        List<Bootstrap> boots = ThreadBootstrap.group(n, 30_000);
        AtomicReferenceArray<Throwable> errs = new AtomicReferenceArray<>(n);
        Thread[] t = new Thread[n];
        for (int r = 0; r < n; r++) {
            final int rank = r;
            t[r] = new Thread(() -> {
                try (Communicator c = Sharp4j.create(boots.get(rank), cfg.apply(rank))) {
                    c.barrier();
                } catch (Throwable e) {
                    errs.set(rank, e);
                }
            });
            t[r].start();
        }
        Throwable[] out = new Throwable[n];
        for (int r = 0; r < n; r++) {
            t[r].join(60_000);
            out[r] = errs.get(r);
        }
        return out;
    }

    private void expectOnEveryRank(Throwable[] errs, String... fragments) throws IOException {
        String first = null;
        for (int r = 0; r < errs.length; r++) {
            assertTrue(errs[r] instanceof Sharp4jException, "rank " + r + ": " + errs[r]);
            String m = errs[r].getMessage();
            for (String f : fragments) {
                assertTrue(m.contains(f), "rank " + r + ": '" + m + "' lacks '" + f + "'");
            }
            if (first == null) {
                first = m;
            }
            assertEquals(first, m, "every rank reports the same error");
        }
        try (Stream<Path> files = Files.list(shm)) {
            assertEquals(List.of(), files.toList(), "a segment was created before the settings were compared");
        }
    }

    @Test
    void aTiledThresholdOnOneRankIsNamed() throws Exception {
        Config base = Config.defaults().withShmDir(shm);
        Throwable[] errs = create(3, r -> r == 2 ? base.withTuning(new IntraNodeTuning(2, 1024)) : base);
        expectOnEveryRank(errs, "different sharp4j settings", "rank 2 has", "tuning rules");
    }

    @Test
    void aSlotSizeOnOneRankIsNamed() throws Exception {
        Config base = Config.defaults().withShmDir(shm);
        Throwable[] errs = create(2, r -> r == 1 ? base.withSlotBytes(8192) : base);
        expectOnEveryRank(errs, "rank 1 has sharp4j.slot.bytes=8192 (rank 0: auto)");
    }

    @Test
    void aWarmupCountOnOneRankIsNamed() throws Exception {
        Config base = Config.defaults().withShmDir(shm);
        Throwable[] errs = create(2, r -> r == 1 ? base.withWarmupRounds(3) : base);
        expectOnEveryRank(errs, "sharp4j.warmup=3 (rank 0: 16)");
    }

    @Test
    void aLongWarmupOnOneRankIsNamed() throws Exception {
        // the long heating is collective: ranks that disagree would wait in different calls
        Config base = Config.defaults().withShmDir(shm);
        Throwable[] errs = create(2, r -> r == 1 ? base.withLongWarmup("on") : base);
        expectOnEveryRank(errs, "sharp4j.warmup.long=on (rank 0: auto)");
    }
}
