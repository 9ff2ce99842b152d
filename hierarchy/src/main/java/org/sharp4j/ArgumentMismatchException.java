package org.sharp4j;

/**
 * Ranks called the same collective with different arguments (count, type, op, root or a
 * different collective). Thrown on every rank of the call; the communicator stays usable.
 */
public class ArgumentMismatchException extends Sharp4jException {
    private static final long serialVersionUID = 1L;

    public ArgumentMismatchException(String message) {
        super(message);
    }
}
