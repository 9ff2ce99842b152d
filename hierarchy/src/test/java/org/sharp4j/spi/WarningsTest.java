package org.sharp4j.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.slf4j.helpers.NOPLogger;
import org.slf4j.helpers.NOPLoggerFactory;

/** A warning that matters reaches stderr when SLF4J has no backend; the artifact hints name real coordinates. */
class WarningsTest {
    @Test
    void withoutABackendTheWarningGoesToStderrFormatted() {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        PrintStream err = new PrintStream(buf, true, StandardCharsets.UTF_8);
        Warnings.warn(NOPLogger.NOP_LOGGER, true, err, "sharp4j: SHARP not used, falling back to {}: {}", "UCX", "no libsharp_coll");
        assertEquals("sharp4j: SHARP not used, falling back to UCX: no libsharp_coll" + System.lineSeparator(),
                buf.toString(StandardCharsets.UTF_8));
    }

    @Test
    void withABackendItIsTheBackendsBusinessNotStderr() {
        // a backend that has WARN switched off (the user's choice) must not be bypassed
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        Warnings.warn(NOPLogger.NOP_LOGGER, false, new PrintStream(buf, true, StandardCharsets.UTF_8), "x {}", 1);
        assertEquals(0, buf.size());
    }

    @Test
    void noBackendIsSlf4jsNoOperationFactoryOnly() {
        assertTrue(Warnings.noBackend(new NOPLoggerFactory()));
        // the tests run with Logback: a real backend
        assertFalse(Warnings.noBackend(LoggerFactory.getILoggerFactory()));
    }

    @Test
    void hintsNameMavenCoordinates() {
        assertEquals("org.sharp4j:sharp4j-fallback", KnownProviders.artifactOf("ucx"));
        assertEquals("org.sharp4j:sharp4j-sharp-jni", KnownProviders.artifactOf("SHARP"));
        assertNull(KnownProviders.artifactOf("shm"));
        assertNull(KnownProviders.addHint("nope"));
        assertTrue(KnownProviders.addHint("ucx").contains("org.sharp4j:sharp4j-fallback (or org.sharp4j:sharp4j,"));
    }
}
