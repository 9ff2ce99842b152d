package org.sharp4j.sharp;

import org.sharp4j.ThreadRanks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.sharp4j.sharp.SharpTestSupport.config;
import static org.sharp4j.sharp.SharpTestSupport.map;
import static org.sharp4j.sharp.SharpTestSupport.plus;
import static org.sharp4j.sharp.SharpTestSupport.sharpOn;
import static org.sharp4j.sharp.SharpTestSupport.with;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sharp4j.Op;
import org.sharp4j.Sharp4jException;

/** Where the binding looks for libsharp_coll, and the three modes. */
class SharpLookupTest {
    @TempDir
    Path tmp;

    static Properties props(String... kv) {
        Properties p = new Properties();
        for (int i = 0; i < kv.length; i += 2) {
            p.setProperty(kv[i], kv[i + 1]);
        }
        return p;
    }

    File fakeLib(String dir, String name) throws IOException {
        Path d = Files.createDirectories(tmp.resolve(dir));
        return Files.createFile(d.resolve(name)).toFile();
    }

    @Test
    void lookupOrderIsPropertyThenJnaPathThenLdLibraryPathThenHpcx() throws IOException {
        File a = fakeLib("a", "libsharp_coll.so");
        File b = fakeLib("b", "libsharp_coll.so.5");
        File c = fakeLib("c", "libsharp_coll.so");
        File d = fakeLib("hpcx/lib", "libsharp_coll.so.4");
        Map<String, String> env = map("LD_LIBRARY_PATH", "/nonexistent:" + c.getParent(), "HPCX_SHARP_DIR", tmp.resolve("hpcx").toString());
        assertEquals(a, SharpLibrary.locate(props(SharpSettings.LIB, a.getPath(), "jna.library.path", b.getParent()), env).file);
        assertEquals(a, SharpLibrary.locate(props(SharpSettings.LIB, a.getParent(), "jna.library.path", b.getParent()), env).file);
        assertEquals(b, SharpLibrary.locate(props("jna.library.path", b.getParent()), env).file);
        assertEquals(c, SharpLibrary.locate(props(), env).file);
        assertEquals(d, SharpLibrary.locate(props(), map("HPCX_SHARP_DIR", tmp.resolve("hpcx").toString())).file);
        // A property naming nothing does not stop the search.
        assertEquals(c, SharpLibrary.locate(props(SharpSettings.LIB, "/nonexistent/lib.so"), env).file);
    }

    @Test
    void notFoundNamesEveryPlaceLookedAt() {
        Map<String, String> env = map("LD_LIBRARY_PATH", "/opt/x/lib:/opt/y/lib", "HPCX_SHARP_DIR", "/opt/hpcx/sharp");
        Sharp4jException e = assertThrows(Sharp4jException.class,
                () -> SharpLibrary.load(props(SharpSettings.LIB, "/no/such/libsharp_coll.so", "jna.library.path", "/jna/dir"), env));
        String m = e.getMessage();
        for (String s : new String[] {"libsharp_coll not found", "sharp4j.sharp.lib=/no/such/libsharp_coll.so (no such file)",
            "jna.library.path=/jna/dir", "LD_LIBRARY_PATH=/opt/x/lib:/opt/y/lib", "$HPCX_SHARP_DIR/lib=/opt/hpcx/sharp/lib"}) {
            assertTrue(m.contains(s), "'" + s + "' missing from: " + m);
        }
        SharpLibrary.Location l = SharpLibrary.locate(props(), map());
        assertNull(l.file);
        assertTrue(l.describe().contains("HPCX_SHARP_DIR unset") && l.describe().contains("LD_LIBRARY_PATH (unset)"), l.describe());
    }

    /** The process environment must not hold a libsharp_coll for the next two tests. */
    static void assumeNoLibraryInEnvironment() {
        SharpLibrary.Location l = SharpLibrary.locate(props(), System.getenv());
        Assumptions.assumeTrue(l.file == null, "this environment has " + l.file);
    }

    @Test
    void sharpOnWithoutTheLibraryFailsOnEveryRankNamingWhereItLooked() {
        assumeNoLibraryInEnvironment();
        Map<String, String> p = plus(sharpOn(), SharpSettings.LIB, "/nonexistent/sharp/lib", "jna.library.path", null);
        with(p, map(), () -> {
            Throwable[] e = ThreadRanks.runCollect(4, config(2, 1), comm -> { }, 120_000);
            for (Throwable t : e) {
                assertTrue(t instanceof Sharp4jException, String.valueOf(t));
                String m = t.getMessage();
                assertTrue(m.contains("sharp4j.sharp=on but SHARP cannot be used") && m.contains("libsharp_coll not found; looked in")
                        && m.contains("/nonexistent/sharp/lib") && m.contains("LD_LIBRARY_PATH"), m);
            }
        });
    }

    @Test
    void autoWithoutTheLibraryQuietlyUsesTheHostPath() {
        assumeNoLibraryInEnvironment();
        Map<String, String> p = plus(sharpOn(), SharpSettings.MODE, "auto", SharpSettings.LIB, "/nonexistent", "jna.library.path", null);
        try (SharpTestSupport.LogCapture log = new SharpTestSupport.LogCapture()) {
            with(p, map(), () -> ThreadRanks.run(4, config(2, 1), comm -> {
                assertTrue(comm.interNode().startsWith("UCX"), comm.interNode());
                long[] s = new long[1];
                comm.allreduce(new long[] {comm.rank()}, s, Op.SUM);
                assertEquals(6, s[0]);
            }));
            log.assertSharpWarnings(0);
        }
    }

    @Test
    void offNeverUsesSharp() {
        long sharp0 = SharpStep.SHARP_CALLS.get();
        with(plus(sharpOn(), SharpSettings.MODE, "off"), map(), () -> ThreadRanks.run(4, config(2, 1), comm -> {
            assertTrue(comm.interNode().startsWith("UCX"), comm.interNode());
            comm.barrier();
        }));
        assertEquals(0, SharpStep.SHARP_CALLS.get() - sharp0);
    }

    @Test
    void badModeIsRejected() {
        assertThrows(IllegalArgumentException.class, () -> SharpSettings.fromProperties(props(SharpSettings.MODE, "maybe")));
        SharpSettings s = SharpSettings.fromProperties(props(SharpSettings.MAX_BYTES, "4k"));
        assertEquals(SharpSettings.Mode.AUTO, s.mode);
        assertEquals(4096, s.maxBytes);
        assertEquals(-1, s.minNodes); // unset: the tuning table decides
        assertEquals(3, s.maxFailures);
    }
}
