package org.sharp4j.mpi;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import org.sharp4j.logging.StderrLogback;
import org.slf4j.ILoggerFactory;
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
 * <p>The part of the policy all sharp4j programs share is {@link StderrLogback}'s. Not a Logback
 * {@code Configurator} service as in osu-bench and the all-in-one artifact: the agent's classes are
 * also the library jar's, which must not configure a program's logging.
 * Called once from the agent's premain, before any of its loggers logs: SLF4J's first use lets
 * Logback configure itself (with nothing found, its console default), and this replaces that.
 */
final class AgentLogging {
    /** The level of the {@code org.sharp4j.mpi} loggers, default INFO. */
    static final String MPI_LEVEL_PROPERTY = "sharp4j.mpi.log.level";
    /** The level of the other {@code org.sharp4j} loggers, default WARN. */
    static final String LEVEL_PROPERTY = StderrLogback.LEVEL_PROPERTY;

    private AgentLogging() {
    }

    /** Configures Logback as the class comment says, unless the program configures it or another SLF4J backend is bound. */
    static void configure() {
        if (StderrLogback.userConfigured(System.getProperty("logback.configurationFile"), ClassLoader.getSystemClassLoader())) {
            return;
        }
        ILoggerFactory factory = LoggerFactory.getILoggerFactory();
        if (factory instanceof LoggerContext) {
            apply((LoggerContext) factory);
        }
    }

    /** Replaces {@code lc}'s configuration with the agent's. */
    static void apply(LoggerContext lc) {
        lc.reset();
        StderrLogback.configure(lc, level(LEVEL_PROPERTY, Level.WARN));
        lc.getLogger("org.sharp4j.mpi").setLevel(level(MPI_LEVEL_PROPERTY, Level.INFO));
    }

    /**
     * The level a property names, or {@code otherwise} when it is unset; a value that is no level is
     * reported on stderr (logging is not set up yet) and {@code otherwise} used.
     */
    static Level level(String property, Level otherwise) {
        String v = System.getProperty(property);
        Level l = StderrLogback.parseLevel(v, otherwise);
        if (l == null) {
            System.err.println("sharp4j-mpi: " + property + " must be one of TRACE, DEBUG, INFO, WARN, ERROR, OFF, got '" + v
                    + "'; using " + otherwise);
            return otherwise;
        }
        return l;
    }
}
