package org.sharp4j.fallback.transport;

import java.nio.ByteBuffer;

/**
 * Tagged point-to-point messaging among the node leaders, the only thing the k-nomial algorithms
 * need from the network. Peers are numbered by node index, 0..{@link #peers()}-1.
 *
 * <p>Contract (what UCX's tag matching gives, and what the in-memory test transport mimics):
 * <ul>
 *   <li>{@link #send} and {@link #recv} only post; the buffer region belongs to the transport
 *       until {@link #test} reports the request complete;</li>
 *   <li>a receive matches the oldest unmatched send from the same peer with the same tag;
 *       messages between a pair with one tag arrive in posting order, except that a transport may
 *       carry short and long messages on separate channels (UCX over TCP: below and from
 *       {@code UcxTransport.SPLIT_MIN_BYTES}), and then keeps the order within each class only.
 *       The host path's tags name the call, round and fragment, so its messages never depend on
 *       order across classes;</li>
 *   <li>tags are 48-bit (0 .. 2^48-1): the transport keeps the upper bits for the source;</li>
 *   <li>requests are small int handles from a fixed pool: posting and testing allocate nothing in
 *       this interface (a transport may allocate inside its library, e.g. jucx's UcpRequest);</li>
 *   <li>errors name the peer: a dead or disconnected peer raises
 *       {@link org.sharp4j.PeerFailureException} with that peer's global rank, other transport
 *       errors a {@link org.sharp4j.Sharp4jException} carrying the transport's own status text.</li>
 * </ul>
 * Single-threaded: one node leader thread drives it.
 */
public interface Transport extends AutoCloseable {
    /** Largest tag + 1. */
    long TAG_LIMIT = 1L << 48;

    /** This leader's peer index (its node index). */
    int peer();

    /** Number of peers (nodes). */
    int peers();

    /** Global rank of {@code peer}'s node leader, for error messages. */
    int globalRank(int peer);

    /** Posts a send of {@code buf[off, off+len)} to {@code peer}; returns the request handle. */
    int send(int peer, long tag, ByteBuffer buf, int off, int len);

    /** Posts a receive of at most {@code len} bytes into {@code buf[off, ...)} from {@code peer}; returns the request handle. */
    int recv(int peer, long tag, ByteBuffer buf, int off, int len);

    /**
     * Posts a receive of at most {@code len} bytes from whichever peer sends {@code tag} first (the
     * host path's one abort receive, instead of one per peer); returns the request handle. A failed
     * peer does not fail it.
     */
    int recvAny(long tag, ByteBuffer buf, int off, int len);

    /**
     * Drives the transport once (UCX: one {@code ucp_worker_progress}) and reports on one request:
     * -1 while it is pending; once complete, the bytes transferred (for a receive, the sender's
     * length), and the handle is free again. A receive whose sender sent more than {@code len}
     * throws {@link TruncatedException}. Must not be called again for a completed handle.
     */
    int test(int request);

    /**
     * While {@code on} (the engine's heating, {@link org.sharp4j.spi.InterNodeStep#heating}), a
     * transport may report some completed sends as pending to their first {@link #test}, as a
     * slower network would: callers' branches on "still in flight" then have a profile before C2
     * compiles them. Default: nothing.
     */
    default void heating(boolean on) {
    }

    /** Drives the transport once without looking at a request. */
    void progress();

    /**
     * Events the transport's progress calls reported so far (UCX: the sum of what
     * {@code ucp_worker_progress} returned): it grows while messages move. Waits hand it to the
     * {@link org.sharp4j.shm.Waiter} ({@link org.sharp4j.shm.Waiter.Condition#activity}), which
     * does not park while it grows. Default 0: the transport cannot tell.
     */
    default long progressEvents() {
        return 0;
    }

    /**
     * Drives the transport once and looks, without taking it, for an arrived message from any
     * peer that no receive has matched yet and whose tag equals {@code tag} on the bits set in
     * {@code mask}; returns that message's tag, or -1. Slow path (the host path's recovery
     * triggers): it may allocate.
     */
    long probe(long tag, long mask);

    /** Sends posted so far (statistics; tests count the host messages of a call with it). */
    long sendCount();

    /** Cancels every pending request (after an error), so buffers can be reused or freed. */
    void cancelAll();

    /**
     * Cancels one receive that no message will match (the host path's split spine payload that a
     * header said is not coming) and frees its handle; returns once the transport let go of its
     * buffer. A message that matched it meanwhile is dropped. Slow path: only a call the nodes
     * disagree on, or one that failed elsewhere, gets here.
     */
    void cancel(int request);

    @Override
    void close();

    /**
     * {@link #close()} after the job failed: a peer may be stopped or unreachable, so requests to
     * it will never complete and waiting for them only delays the error's report; implementations
     * may then wait less before leaving their resources to the process's exit.
     */
    default void closeAfterFailure() {
        close();
    }

    /** A message longer than the posted receive: the peers disagree on the call. */
    final class TruncatedException extends org.sharp4j.Sharp4jException {
        private static final long serialVersionUID = 1L;
        private final int peer;

        public TruncatedException(int peer, String message) {
            super(message);
            this.peer = peer;
        }

        public int peer() {
            return peer;
        }
    }
}
