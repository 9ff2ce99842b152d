package org.sharp4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A /dev/shm too small for the segments (a container's default is 64 MiB; here a 1 MiB tmpfs):
 * creation must fail on every rank with a message naming the directory and the size needed, and
 * leave no file, instead of a SIGBUS-born InternalError at the first store (issue 16). Needs root
 * to mount the tmpfs: skipped otherwise, saying so, except under CI=true, where it fails.
 */
class SmallShmTest {
    private Path dir;
    private boolean mounted;

    @BeforeEach
    void mountSmallTmpfs() throws Exception {
        boolean root = "root".equals(System.getProperty("user.name"));
        if (!root && "true".equals(System.getenv("CI"))) {
            throw new AssertionError("CI runs as root: this test must run there (mounts a 1 MiB tmpfs)");
        }
        assumeTrue(root, "skipped: mounting a small tmpfs needs root");
        dir = Files.createTempDirectory("sharp4j-small-shm");
        Process p = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "sharp4j-small-shm", dir.toString())
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0, "mount failed: " + out);
        mounted = true;
    }

    @AfterEach
    void unmount() throws Exception {
        if (mounted) {
            new ProcessBuilder("umount", dir.toString()).inheritIO().start().waitFor(30, TimeUnit.SECONDS);
        }
        if (dir != null) {
            Files.deleteIfExists(dir);
        }
    }

    @Test
    void everyRankGetsAMessageNamingTheDirectoryAndNothingIsLeft() throws Exception {
        Config cfg = Config.defaults().withShmDir(dir).withSimulatedTopology(1, 2).withTimeoutNanos(60_000_000_000L);
        long t0 = System.nanoTime();
        Throwable[] errs = ThreadRanks.runCollect(4, cfg, Communicator::barrier, 60_000);
        double s = (System.nanoTime() - t0) / 1e9;
        for (int r = 0; r < 4; r++) {
            assertTrue(errs[r] instanceof Sharp4jException, "rank " + r + ": " + errs[r]);
            String m = errs[r].getMessage();
            assertTrue(m.contains("not enough space in " + dir) && m.contains("needs") && m.contains("sharp4j.shm.dir"),
                    "rank " + r + ": " + m);
        }
        assertTrue(s < 20, "took " + s + " s");
        try (Stream<Path> files = Files.list(dir)) {
            assertEquals(List.of(), files.toList());
        }
    }
}
