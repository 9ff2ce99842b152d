package org.sharp4j.osu;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.Configurator;
import ch.qos.logback.core.spi.ContextAwareBase;
import org.sharp4j.logging.StderrLogback;

/**
 * Logback's configuration for the benchmarks and tools when the program has none of its own:
 * everything to stderr (stdout carries the OSU tables that scripts parse), sharp4j at
 * {@code sharp4j.log.level} (default WARN), everything else at WARN.
 *
 * <p>A {@code logback.xml} inside this jar would do the same, but Logback then finds two when the
 * user's program brings its own, and prints its "Resource [logback.xml] occurs multiple times"
 * status dump to stdout. Logback asks {@link Configurator} services (this one is registered in
 * {@code META-INF/services}) before it looks for files, so this one steps aside when
 * {@code -Dlogback.configurationFile} is given or a {@code logback-test.xml} / {@code logback.xml}
 * is on the class path, and Logback then reads that as usual.
 */
public final class StderrLogging extends ContextAwareBase implements Configurator {
    /** The level of the {@code org.sharp4j} loggers (TRACE, DEBUG, INFO, WARN, ERROR, OFF). */
    public static final String LEVEL_PROPERTY = StderrLogback.LEVEL_PROPERTY;

    private final ClassLoader loader;

    /** Used by Logback's service lookup. */
    public StderrLogging() {
        this(StderrLogging.class.getClassLoader());
    }

    /** Looks for the user's configuration files through {@code loader}. */
    StderrLogging(ClassLoader loader) {
        this.loader = loader;
    }

    /** Whether the program configures Logback itself (then Logback's own lookup takes over). */
    boolean userConfigured() {
        return StderrLogback.userConfigured(System.getProperty("logback.configurationFile"), loader);
    }

    /**
     * The level named by {@code sharp4j.log.level}, WARN when it is not set.
     *
     * @throws IllegalArgumentException when it names no level
     */
    static Level level(String value) {
        Level l = StderrLogback.parseLevel(value, Level.WARN);
        if (l == null) {
            throw new IllegalArgumentException(LEVEL_PROPERTY + ": '" + value + "' is not a log level (TRACE, DEBUG, INFO, WARN, ERROR, OFF)");
        }
        return l;
    }

    @Override
    public ExecutionStatus configure(LoggerContext lc) {
        if (userConfigured()) {
            addInfo("sharp4j: the program has its own Logback configuration; using it");
            return ExecutionStatus.INVOKE_NEXT_IF_ANY;
        }
        StderrLogback.configure(lc, level(System.getProperty(LEVEL_PROPERTY)));
        return ExecutionStatus.DO_NOT_INVOKE_NEXT_IF_ANY;
    }
}
