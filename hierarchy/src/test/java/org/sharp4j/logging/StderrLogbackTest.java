package org.sharp4j.logging;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.core.ConsoleAppender;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StderrLogbackTest {
    @Test
    void aUserConfigurationTakesPrecedence(@TempDir Path dir) throws Exception {
        try (URLClassLoader none = new URLClassLoader(new URL[] {dir.toUri().toURL()}, null)) {
            assertFalse(StderrLogback.userConfigured(null, none));
            assertFalse(StderrLogback.userConfigured(" ", none), "a blank property names no file");
            assertTrue(StderrLogback.userConfigured("/etc/my-logback.xml", none));
        }
        Files.writeString(dir.resolve("logback.xml"), "<configuration/>");
        try (URLClassLoader withFile = new URLClassLoader(new URL[] {dir.toUri().toURL()}, null)) {
            assertTrue(StderrLogback.userConfigured(null, withFile));
        }
        Files.delete(dir.resolve("logback.xml"));
        Files.writeString(dir.resolve("logback-test.xml"), "<configuration/>");
        try (URLClassLoader withTestFile = new URLClassLoader(new URL[] {dir.toUri().toURL()}, null)) {
            assertTrue(StderrLogback.userConfigured(null, withTestFile));
        }
    }

    @Test
    void levelsAreParsedWithoutLogbacksDebugForATypo() {
        assertEquals(Level.WARN, StderrLogback.parseLevel(null, Level.WARN));
        assertEquals(Level.INFO, StderrLogback.parseLevel("  ", Level.INFO));
        assertEquals(Level.DEBUG, StderrLogback.parseLevel(" debug ", Level.WARN));
        assertEquals(Level.OFF, StderrLogback.parseLevel("OFF", Level.WARN));
        assertNull(StderrLogback.parseLevel("loud", Level.WARN), "no level: the caller says so");
    }

    @Test
    void oneStderrAppenderRootAtWarnSharp4jAtItsLevel() {
        LoggerContext lc = new LoggerContext();
        StderrLogback.configure(lc, Level.INFO);
        Logger root = lc.getLogger(Logger.ROOT_LOGGER_NAME);
        assertEquals(Level.WARN, root.getLevel());
        assertEquals(Level.INFO, lc.getLogger("org.sharp4j.coll.Engine").getEffectiveLevel());
        assertEquals(Level.WARN, lc.getLogger("com.example.Program").getEffectiveLevel());
        ConsoleAppender<?> err = (ConsoleAppender<?>) root.getAppender(StderrLogback.APPENDER);
        assertNotNull(err);
        assertTrue(err.isStarted());
        assertEquals("System.err", err.getTarget(), "stdout belongs to the program");
        assertEquals(StderrLogback.PATTERN, ((PatternLayoutEncoder) err.getEncoder()).getPattern());
    }
}
