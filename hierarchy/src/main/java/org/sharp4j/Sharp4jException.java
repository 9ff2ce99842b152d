package org.sharp4j;

/** Base of sharp4j's runtime errors: a collective that could not complete. */
public class Sharp4jException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public Sharp4jException(String message) {
        super(message);
    }

    public Sharp4jException(String message, Throwable cause) {
        super(message, cause);
    }
}
