package org.sharp4j.mpi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.core.Appender;
import ch.qos.logback.core.ConsoleAppender;
import ch.qos.logback.core.read.ListAppender;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;

/** The agent's logging set-up on a private LoggerContext (the test JVM's own stays as it is). */
class AgentLoggingTest {
    private final LoggerContext lc = new LoggerContext();

    @AfterEach
    void clearProperties() {
        System.clearProperty(AgentLogging.LEVEL_PROPERTY);
        System.clearProperty(AgentLogging.MPI_LEVEL_PROPERTY);
    }

    @Test
    void theAgentsLevelsAndOneStderrAppenderInPlaceOfWhatWasThere() {
        ch.qos.logback.classic.Logger root = lc.getLogger(Logger.ROOT_LOGGER_NAME);
        ListAppender<ch.qos.logback.classic.spi.ILoggingEvent> before = new ListAppender<>();
        before.setContext(lc);
        before.start();
        root.addAppender(before); // Logback's console default when it found no configuration
        root.setLevel(Level.DEBUG);
        AgentLogging.apply(lc);
        assertEquals(Level.WARN, root.getLevel());
        assertEquals(Level.INFO, lc.getLogger("org.sharp4j.mpi.CommState").getEffectiveLevel());
        assertEquals(Level.WARN, lc.getLogger("org.sharp4j.coll.Engine").getEffectiveLevel());
        assertEquals(Level.WARN, lc.getLogger("com.example.Program").getEffectiveLevel());
        ConsoleAppender<?> err = (ConsoleAppender<?>) root.getAppender(org.sharp4j.logging.StderrLogback.APPENDER);
        assertNotNull(err, "the stderr appender");
        assertEquals("System.err", err.getTarget());
        int appenders = 0;
        for (Iterator<Appender<ch.qos.logback.classic.spi.ILoggingEvent>> it = root.iteratorForAppenders(); it.hasNext(); it.next()) {
            appenders++;
        }
        assertEquals(1, appenders, "what was configured before is replaced, not kept");
    }

    @Test
    void thePropertiesSetTheLevels() {
        System.setProperty(AgentLogging.MPI_LEVEL_PROPERTY, "debug");
        System.setProperty(AgentLogging.LEVEL_PROPERTY, " ERROR ");
        AgentLogging.apply(lc);
        assertEquals(Level.DEBUG, lc.getLogger("org.sharp4j.mpi.MpiRouter").getEffectiveLevel());
        assertEquals(Level.ERROR, lc.getLogger("org.sharp4j.coll.Engine").getEffectiveLevel());
    }

    @Test
    void aValueThatIsNoLevelIsNamedAndTheDefaultUsed() {
        System.setProperty(AgentLogging.LEVEL_PROPERTY, "loud");
        PrintStream saved = System.err;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        System.setErr(new PrintStream(buf, true, StandardCharsets.UTF_8));
        try {
            assertEquals(Level.WARN, AgentLogging.level(AgentLogging.LEVEL_PROPERTY, Level.WARN));
        } finally {
            System.setErr(saved);
        }
        String said = buf.toString(StandardCharsets.UTF_8);
        assertTrue(said.contains("sharp4j.log.level") && said.contains("'loud'") && said.contains("using WARN"), said);
        assertEquals(Level.INFO, AgentLogging.level(AgentLogging.MPI_LEVEL_PROPERTY, Level.INFO), "unset: the default");
    }
}
