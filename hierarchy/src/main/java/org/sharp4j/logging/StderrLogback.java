package org.sharp4j.logging;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.ConsoleAppender;

/**
 * How sharp4j's programs log when their user configured nothing: one appender to stderr (stdout
 * belongs to the program: OSU tables, results), every logger at WARN, sharp4j's at the level of
 * {@link #LEVEL_PROPERTY}. The one home of that policy for its three users: the all-in-one
 * artifact's {@code LogbackDefaults}, osu-bench's {@code StderrLogging} (both Logback
 * {@code Configurator} services) and the agent's {@code AgentLogging}.
 *
 * <p>Logback is an optional dependency of this module: only those callers, which bring it, load
 * this class. Stateless; callers configure a context before its loggers are in use.
 */
public final class StderrLogback {
    /** The level of the {@code org.sharp4j} loggers (TRACE, DEBUG, INFO, WARN, ERROR, OFF; default WARN). */
    public static final String LEVEL_PROPERTY = "sharp4j.log.level";
    /** The stderr appender's name. */
    public static final String APPENDER = "SHARP4J_ERR";
    /** Time, level, the logger's simple name, the message. */
    public static final String PATTERN = "%d{HH:mm:ss.SSS} %-5level %logger{0} - %msg%n";

    private StderrLogback() {
    }

    /**
     * Whether the program configures Logback itself, so that Logback's own lookup applies: a
     * non-blank {@code logback.configurationFile} property, or a {@code logback-test.xml} or
     * {@code logback.xml} that {@code cl} finds.
     */
    public static boolean userConfigured(String configurationFile, ClassLoader cl) {
        return configurationFile != null && !configurationFile.isBlank() || cl.getResource("logback-test.xml") != null
                || cl.getResource("logback.xml") != null;
    }

    /** The level {@code value} names (case and surrounding blanks ignored), {@code unset} when it is null or blank, null when it names none. */
    public static Level parseLevel(String value, Level unset) {
        if (value == null || value.isBlank()) {
            return unset;
        }
        return Level.toLevel(value.trim(), null);
    }

    /** Adds the stderr appender to {@code lc}'s root logger at WARN and sets the {@code org.sharp4j} loggers to {@code sharp4j}. */
    public static void configure(LoggerContext lc, Level sharp4j) {
        PatternLayoutEncoder encoder = new PatternLayoutEncoder();
        encoder.setContext(lc);
        encoder.setPattern(PATTERN);
        encoder.start();
        ConsoleAppender<ILoggingEvent> err = new ConsoleAppender<>();
        err.setContext(lc);
        err.setName(APPENDER);
        err.setTarget("System.err");
        err.setEncoder(encoder);
        err.start();
        Logger root = lc.getLogger(Logger.ROOT_LOGGER_NAME);
        root.setLevel(Level.WARN);
        root.addAppender(err);
        lc.getLogger("org.sharp4j").setLevel(sharp4j);
    }
}
