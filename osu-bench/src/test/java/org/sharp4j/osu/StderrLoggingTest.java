package org.sharp4j.osu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.Configurator.ExecutionStatus;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sharp4j.testkit.Procs;

/** Logging of the benchmarks and tools: to stderr only, no logback.xml in the jar, the user's configuration wins. */
class StderrLoggingTest {
    /** A class loader that sees nothing (no logback.xml), or only {@code dir}. */
    private static ClassLoader loader(Path dir) throws Exception {
        return new URLClassLoader(dir == null ? new URL[0] : new URL[] {dir.toUri().toURL()}, null);
    }

    @Test
    void withoutAConfigurationSharp4jLogsGoToStderrAtTheChosenLevel() throws Exception {
        PrintStream out0 = System.out;
        PrintStream err0 = System.err;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        String level0 = System.getProperty(StderrLogging.LEVEL_PROPERTY);
        LoggerContext lc = new LoggerContext();
        lc.setMDCAdapter(new ch.qos.logback.classic.util.LogbackMDCAdapter()); // as Logback's SLF4J provider does
        try {
            System.setOut(new PrintStream(out, true));
            System.setErr(new PrintStream(err, true));
            System.setProperty(StderrLogging.LEVEL_PROPERTY, "info");
            StderrLogging c = new StderrLogging(loader(null));
            c.setContext(lc);
            assertEquals(ExecutionStatus.DO_NOT_INVOKE_NEXT_IF_ANY, c.configure(lc));
            lc.getLogger("org.sharp4j.Engine").info("engine info");
            lc.getLogger("org.sharp4j.Engine").debug("engine debug");
            lc.getLogger("com.example.App").info("other info");
            lc.getLogger("com.example.App").warn("other warn");
        } finally {
            System.setOut(out0);
            System.setErr(err0);
            lc.stop();
            if (level0 == null) {
                System.clearProperty(StderrLogging.LEVEL_PROPERTY);
            } else {
                System.setProperty(StderrLogging.LEVEL_PROPERTY, level0);
            }
        }
        assertEquals("", out.toString(), "nothing on stdout");
        String e = err.toString();
        assertTrue(e.contains("INFO  Engine - engine info"), e);
        assertTrue(e.contains("WARN  App - other warn"), e);
        assertFalse(e.contains("engine debug") || e.contains("other info"), e);
    }

    @Test
    void theUsersLogbackXmlOrConfigurationFileWins(@TempDir Path dir) throws Exception {
        assertFalse(new StderrLogging(loader(dir)).userConfigured());
        Files.writeString(dir.resolve("logback.xml"), "<configuration/>");
        StderrLogging c = new StderrLogging(loader(dir));
        assertTrue(c.userConfigured());
        LoggerContext lc = new LoggerContext();
        c.setContext(lc);
        assertEquals(ExecutionStatus.INVOKE_NEXT_IF_ANY, c.configure(lc));
        assertTrue(lc.getLogger(ch.qos.logback.classic.Logger.ROOT_LOGGER_NAME).iteratorForAppenders().hasNext() == false,
                "stepped aside but added an appender");
        System.setProperty("logback.configurationFile", dir.resolve("logback.xml").toString());
        try {
            assertTrue(new StderrLogging(loader(null)).userConfigured());
        } finally {
            System.clearProperty("logback.configurationFile");
        }
    }

    @Test
    void aBadLevelNamesTheProperty() {
        assertEquals(ch.qos.logback.classic.Level.WARN, StderrLogging.level(null));
        assertEquals(ch.qos.logback.classic.Level.DEBUG, StderrLogging.level(" debug "));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> StderrLogging.level("loud"));
        assertEquals("sharp4j.log.level: 'loud' is not a log level (TRACE, DEBUG, INFO, WARN, ERROR, OFF)", e.getMessage());
    }

    @Test
    void noJarOfTheBenchmarksClassPathShipsALogbackXml() throws Exception {
        List<URL> found = Collections.list(StderrLoggingTest.class.getClassLoader().getResources("logback.xml"));
        assertEquals(List.of(), found);
    }

    /**
     * The benchmarks' real class path (no test classes, hence no logback-test.xml): a run through
     * the launcher at INFO has sharp4j's log lines on stderr and only the OSU table on stdout.
     */
    @Test
    void anOsuRunHasOnlyItsTableOnStdoutAndTheLogOnStderr() throws Exception {
        List<String> cp = new ArrayList<>(Procs.classPath());
        cp.removeIf(e -> e.endsWith("test-classes") || e.endsWith("-tests.jar") || Procs.isMpiJar(e));
        Procs.Result r = Procs.run(List.of(Procs.java(), "-Dsharp4j.log.level=INFO", "-cp", Procs.join(cp),
                "org.sharp4j.launch.LocalLauncher", "-np", "2", "osu_allreduce", "-m", "8:8", "-i", "10", "-x", "1"), 180);
        assertEquals(0, r.exit(), r::toString);
        for (String l : r.out().split("\n")) {
            assertTrue(l.isEmpty() || l.startsWith("#") || l.matches("\\d+ +[0-9.]+"), "not OSU output on stdout: '" + l + "'\n" + r);
        }
        assertEquals(1, EndToEndThreadsTest.rows(r.out()).size(), r::toString);
        assertTrue(r.err().contains(" INFO  Sharp4j - sharp4j: bootstrap launcher chosen"), r::toString);
        assertFalse(r.err().contains("logback"), "Logback's status dump:\n" + r);
    }
}
