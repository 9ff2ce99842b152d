package org.sharp4j.all;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.Configurator;
import ch.qos.logback.classic.spi.ConfiguratorRank;
import ch.qos.logback.core.spi.ContextAwareBase;
import org.sharp4j.logging.StderrLogback;

/**
 * Logback's configuration when the application has none, for programs that depend on the
 * all-in-one artifact: WARN and above on stderr (sharp4j's own loggers at
 * {@code -Dsharp4j.log.level}, default WARN), nothing on stdout, which belongs to the program.
 * Without it Logback would log everything at DEBUG on stdout. It steps aside (Logback then
 * proceeds as usual) as soon as the application configures Logback itself: a
 * {@code logback.configurationFile} property, or a {@code logback-test.xml} or {@code logback.xml}
 * on the class path. Registered in {@code META-INF/services/ch.qos.logback.classic.spi.Configurator}.
 */
@ConfiguratorRank(ConfiguratorRank.FALLBACK)
public final class LogbackDefaults extends ContextAwareBase implements Configurator {
    /** The property that sets the level of sharp4j's loggers (also read by osu-bench's logback.xml). */
    public static final String LEVEL_PROPERTY = StderrLogback.LEVEL_PROPERTY;

    @Override
    public ExecutionStatus configure(LoggerContext lc) {
        if (StderrLogback.userConfigured(System.getProperty("logback.configurationFile"), LogbackDefaults.class.getClassLoader())) {
            return ExecutionStatus.INVOKE_NEXT_IF_ANY;
        }
        StderrLogback.configure(lc, sharp4jLevel(System.getProperty(LEVEL_PROPERTY)));
        return ExecutionStatus.DO_NOT_INVOKE_NEXT_IF_ANY;
    }

    /**
     * The level of the org.sharp4j loggers: WARN when unset; a value that is not a level is
     * reported on stderr (this runs while logging starts, so it cannot throw nor log) and WARN used.
     */
    static Level sharp4jLevel(String value) {
        Level l = StderrLogback.parseLevel(value, Level.WARN);
        if (l == null) {
            System.err.println("sharp4j: " + LEVEL_PROPERTY + " must be one of TRACE, DEBUG, INFO, WARN, ERROR, OFF, got '"
                    + value + "'; using WARN");
            return Level.WARN;
        }
        return l;
    }
}
