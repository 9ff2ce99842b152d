package org.sharp4j.tuning;

/** A malformed table file line or override token: says where (file and line, or property) and why. */
public final class TuningFormatException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;
    private final String where;
    private final int line;
    private final String reason;

    /**
     * @param where the file, or the property/variable the text came from
     * @param line 1-based line in a file; 0 for an override string
     */
    public TuningFormatException(String where, int line, String text, String reason) {
        super(where + (line > 0 ? ":" + line : "") + ": " + reason + (text == null ? "" : " in '" + text.trim() + "'"));
        this.where = where;
        this.line = line;
        this.reason = reason;
    }

    public String where() {
        return where;
    }

    public int line() {
        return line;
    }

    public String reason() {
        return reason;
    }
}
