package org.sharp4j.coll;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Short-lived files in a temporary directory that the creating process deletes within
 * milliseconds ({@link NativeKernels}' library copy, {@link JitDirective}'s directive file), named
 * {@code PREFIX PID - RANDOM SUFFIX} so that a process killed in those milliseconds leaves a file
 * the next creator recognises and deletes: nothing stays in {@code /tmp}, even after a kill -9.
 */
final class PidFiles {
    private static final Logger LOG = LoggerFactory.getLogger(PidFiles.class);

    private PidFiles() {
    }

    /** Deletes the dead processes' leftovers in {@code dir}, then creates this process's file there. */
    static Path create(Path dir, String prefix, String suffix) throws IOException {
        removeStale(dir, prefix, suffix);
        return Files.createTempFile(dir, prefix + ProcessHandle.current().pid() + "-", suffix);
    }

    /**
     * Deletes the files {@code prefix PID - ... suffix} in {@code dir} whose pid no longer runs.
     * Best effort: never throws (a missing directory, a file another process deleted first).
     */
    static void removeStale(Path dir, String prefix, String suffix) {
        try (DirectoryStream<Path> d = Files.newDirectoryStream(dir, prefix + "*" + suffix)) {
            for (Path p : d) {
                String rest = p.getFileName().toString().substring(prefix.length());
                int dash = rest.indexOf('-');
                long pid;
                try {
                    pid = Long.parseLong(dash < 0 ? "" : rest.substring(0, dash));
                } catch (NumberFormatException e) {
                    continue; // not one of ours
                }
                if (!ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
                    Files.deleteIfExists(p);
                }
            }
        } catch (IOException | RuntimeException e) {
            LOG.debug("could not look for stale {}*{} files in {}", prefix, suffix, dir, e);
        }
    }
}
