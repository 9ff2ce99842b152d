package org.sharp4j.mpi;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.ConsoleAppender;
import org.slf4j.ILoggerFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The agent's logging when the program brings no Logback configuration of its own: sharp4j-mpi's
 * install line, first routed calls and summary at INFO ({@code sharp4j.mpi.log.level}), the rest
 * of sharp4j at WARN ({@code sharp4j.log.level}), every other logger at WARN, all to stderr.
 *
 * <p>Set in code, not from an XML file: reading one (Logback's Joran, with the JDK's XML parser)
 * loaded about 470 more classes and spun about 90 more lambda classes in every rank, about 0.2 s
 * of a program's start (OMB's {@code OSUAllReduce} through the agent, 2 ranks, mpirun's wall time,
 * 6 runs each, alternating: 3.29-3.51 s, median 3.36, against 3.39-3.75 s, median 3.58). The
 * lambdas also warm the JDK's own bytecode writer, which the program's first string
 * concatenations or lambdas can then push over C2's threshold during its first calls.
 *
 * <p>Not a Logback {@code Configurator} service as in osu-bench and the all-in-one artifact: the
 * agent's classes are also the library jar's, which must not configure a program's logging.
 * Called once from the agent's premain, before any of its loggers logs: SLF4J's first use lets
 * Logback configure itself (with nothing found, its console default), and this replaces that.
 */
final class AgentLogging {
    /** The level of the {@code org.sharp4j.mpi} loggers, default INFO. */
    static final String MPI_LEVEL_PROPERTY = "sharp4j.mpi.log.level";
    /** The level of the other {@code org.sharp4j} loggers, default WARN. */
    static final String LEVEL_PROPERTY = "sharp4j.log.level";

    private AgentLogging() {
    }

    /** Configures Logback as the class comment says, unless the program configures it or another SLF4J backend is bound. */
    static void configure() {
        if (userConfigured(System.getProperty("logback.configurationFile"), ClassLoader.getSystemClassLoader())) {
            return;
        }
        ILoggerFactory factory = LoggerFactory.getILoggerFactory();
        if (factory instanceof LoggerContext) {
            apply((LoggerContext) factory);
        }
    }

    /** Whether the program configures Logback itself: {@code -Dlogback.configurationFile}, or a file Logback looks for. */
    static boolean userConfigured(String configurationFile, ClassLoader cl) {
        return configurationFile != null || cl.getResource("logback-test.xml") != null || cl.getResource("logback.xml") != null;
    }

    /** Replaces {@code lc}'s configuration with the agent's. */
    static void apply(LoggerContext lc) {
        lc.reset();
        ConsoleAppender<ILoggingEvent> err = new ConsoleAppender<>();
        err.setContext(lc);
        err.setName("SHARP4J_ERR");
        err.setTarget("System.err");
        PatternLayoutEncoder enc = new PatternLayoutEncoder();
        enc.setContext(lc);
        enc.setPattern("%d{HH:mm:ss.SSS} %-5level %logger{0} - %msg%n");
        enc.start();
        err.setEncoder(enc);
        err.start();
        ch.qos.logback.classic.Logger root = lc.getLogger(Logger.ROOT_LOGGER_NAME);
        root.setLevel(Level.WARN);
        root.addAppender(err);
        lc.getLogger("org.sharp4j").setLevel(level(LEVEL_PROPERTY, Level.WARN));
        lc.getLogger("org.sharp4j.mpi").setLevel(level(MPI_LEVEL_PROPERTY, Level.INFO));
    }

    /**
     * The level a property names, or {@code otherwise} when it is unset; a value that is no level is
     * reported on stderr (logging is not set up yet) and {@code otherwise} used.
     */
    static Level level(String property, Level otherwise) {
        String v = System.getProperty(property);
        if (v == null || v.isBlank()) {
            return otherwise;
        }
        Level l = Level.toLevel(v.trim(), null);
        if (l == null) {
            System.err.println("sharp4j-mpi: " + property + " must be one of TRACE, DEBUG, INFO, WARN, ERROR, OFF, got '" + v
                    + "'; using " + otherwise);
            return otherwise;
        }
        return l;
    }
}
