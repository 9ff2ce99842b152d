package org.sharp4j.coll;

import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.sharp4j.shm.Segment;

/**
 * Segment files this process created and has not unlinked yet (only during setup, between
 * create and the moment every local rank has mapped them). A JVM exit in that window unlinks them
 * here; a {@code kill -9} in that window is covered by the launcher, which removes the job's files.
 */
final class CleanupOnExit {
    private static final Set<Path> PENDING = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            for (Path p : PENDING) {
                try {
                    Segment.unlink(p);
                } catch (RuntimeException ignored) {
                    // best effort at exit
                }
            }
        }, "sharp4j-shm-cleanup"));
    }

    private CleanupOnExit() {
    }

    static void register(Path p) {
        PENDING.add(p);
    }

    static void unregister(Path p) {
        PENDING.remove(p);
    }
}
