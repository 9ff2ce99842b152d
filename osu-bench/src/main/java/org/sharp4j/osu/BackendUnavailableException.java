package org.sharp4j.osu;

/** A backend the command line asked for cannot run here; the message says what to do. */
public final class BackendUnavailableException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public BackendUnavailableException(String message) {
        super(message);
    }

    public BackendUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}
