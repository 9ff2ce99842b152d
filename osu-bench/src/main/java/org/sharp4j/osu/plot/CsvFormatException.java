package org.sharp4j.osu.plot;

import java.nio.file.Path;

/** A CSV file that cannot be plotted: its message is {@code FILE:LINE: reason} (or {@code FILE: reason}). */
public final class CsvFormatException extends Exception {
    private static final long serialVersionUID = 1L;

    private final transient Path file;
    private final int line;
    private final String reason;

    /** {@code line} is 1-based; 0 when the problem is not on one line (missing file, no rows). */
    public CsvFormatException(Path file, int line, String reason) {
        super(file + (line > 0 ? ":" + line : "") + ": " + reason);
        this.file = file;
        this.line = line;
        this.reason = reason;
    }

    public Path file() {
        return file;
    }

    /** 1-based line number, or 0. */
    public int line() {
        return line;
    }

    public String reason() {
        return reason;
    }
}
