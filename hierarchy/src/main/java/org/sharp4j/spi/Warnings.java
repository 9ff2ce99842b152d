package org.sharp4j.spi;

import java.io.PrintStream;
import org.slf4j.ILoggerFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.helpers.MessageFormatter;
import org.slf4j.helpers.NOPLoggerFactory;

/**
 * Warnings that must reach the user even when the application has no SLF4J backend: sharp4j's
 * library modules depend on slf4j-api alone, and without a backend SLF4J drops every message (it
 * only says once that it found no provider). A warning sent here goes to the logger as usual when
 * a backend is present (where the user's configuration decides, including switching it off), and
 * to stderr, as one line, when there is none.
 */
public final class Warnings {
    private Warnings() {
    }

    /** {@code log.warn(format, args)}, or the same formatted line on stderr when SLF4J has no backend. */
    public static void warn(Logger log, String format, Object... args) {
        warn(log, noBackend(LoggerFactory.getILoggerFactory()), System.err, format, args);
    }

    static void warn(Logger log, boolean noBackend, PrintStream err, String format, Object... args) {
        if (noBackend) {
            err.println(MessageFormatter.arrayFormat(format, args).getMessage());
        } else {
            log.warn(format, args);
        }
    }

    /** True for SLF4J's fallback when no provider is on the class path (its no-operation factory). */
    static boolean noBackend(ILoggerFactory factory) {
        return factory instanceof NOPLoggerFactory;
    }
}
