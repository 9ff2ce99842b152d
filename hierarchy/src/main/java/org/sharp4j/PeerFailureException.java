package org.sharp4j;

/**
 * A peer rank died or did not arrive within the configured timeout
 * ({@code sharp4j.timeout}). The communicator is unusable afterwards, as an MPI communicator
 * after a process failure.
 */
public class PeerFailureException extends Sharp4jException {
    private static final long serialVersionUID = 1L;
    private final int[] ranks;

    public PeerFailureException(String message, int[] ranks) {
        super(message);
        this.ranks = ranks.clone();
    }

    /** The ranks blamed: those that died or never arrived. */
    public int[] ranks() {
        return ranks.clone();
    }
}
