package org.sharp4j.spi;

import java.nio.ByteBuffer;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.coll.CallStatus;
import org.sharp4j.tuning.Collective;

/**
 * Phase 3 of the hierarchy: the collective among node leaders, one per node. Called only on node
 * leaders, in the same order on all of them, with the node's partial result in shared memory.
 *
 * <p>Implementations: shared memory for simulated nodes on one host (in this module), the UCX
 * k-nomial host path ({@code fallback}), SHARP ({@code sharp-jni}).
 *
 * <p>{@code desc} is the call's signature (see {@code Desc}); an implementation that can carry
 * it should compare it between nodes and record a disagreement with
 * {@link CallStatus#mismatch}, and must merge the statuses of all nodes so that every node
 * leader ends with the same status (for reduce: at least the root's node).
 */
public interface InterNodeStep extends AutoCloseable {
    String name();

    /** In place: {@code buf[off, off + count*size)} holds this node's data; on return, the reduction over all nodes. */
    void allreduce(ByteBuffer buf, int off, int count, DataType type, Op op, long desc, CallStatus status);

    /** In place; on return the result is needed only on the leader of {@code rootNode}. */
    void reduce(ByteBuffer buf, int off, int count, DataType type, Op op, int rootNode, long desc, CallStatus status);

    /**
     * A long call reaches phase 3 in several parts (consecutive ranges of the vector, in order, the
     * same on every node). {@code more = false}: the call's first part, or a whole call, checked as
     * above. {@code more = true}: a later part of the call whose first part this step ran and that
     * ended ok on every node leader (else the engine would have thrown), so the call's arguments
     * were compared then and an implementation may run the data rounds only (the UCX host path
     * skips its spine). The default runs the full call, argument check included.
     */
    default void allreduce(ByteBuffer buf, int off, int count, DataType type, Op op, long desc, CallStatus status,
            boolean more) {
        allreduce(buf, off, count, type, op, desc, status);
    }

    /** {@link #reduce}, a part of a long call: see {@link #allreduce(ByteBuffer, int, int, DataType, Op, long, CallStatus, boolean)}. */
    default void reduce(ByteBuffer buf, int off, int count, DataType type, Op op, int rootNode, long desc, CallStatus status,
            boolean more) {
        reduce(buf, off, count, type, op, rootNode, desc, status);
    }

    /**
     * The longest allreduce of {@code callBytes} bytes that this step runs in one blocking call with
     * its argument check merged into the data rounds (no round more than the check's own), or 0
     * (the default) if it runs none so. A caller that would cut such a call into a first part and
     * later parts may hand it over whole instead: one call's rounds where the parts would pay
     * theirs one after the other. Depends only on {@code callBytes} and job-wide settings, so every
     * node cuts a call alike.
     */
    default long mergedAllreduceBytes(long callBytes) {
        return 0;
    }

    /**
     * {@link #mergedAllreduceBytes} for a reduce: the longest reduce of {@code callBytes} bytes this
     * step runs in one blocking call with its argument check merged into the data rounds, or 0 (the
     * default). Depends only on {@code callBytes} and job-wide settings.
     */
    default long mergedReduceBytes(long callBytes) {
        return 0;
    }

    /**
     * A call's first part or a whole call ({@code more = false} of the part methods; a barrier
     * ignores the data), blocking, with this node's data read from {@code src[srcOff, srcOff +
     * count*size)} and the result in {@code buf}; {@code src} is only read. It saves the caller the
     * copy of its input into its output where the step can read it in place (issue 12 item 5). The
     * default copies and runs the part method.
     */
    default void run(Collective c, ByteBuffer src, int srcOff, ByteBuffer buf, int off, int count, DataType type, Op op,
            int rootNode, long desc, CallStatus status) {
        if (c == Collective.BARRIER) {
            barrier(desc, status);
            return;
        }
        if (src != buf || srcOff != off) {
            buf.put(off, src, srcOff, count * type.size); // absolute bulk put: no allocation
        }
        if (c == Collective.REDUCE) {
            reduce(buf, off, count, type, op, rootNode, desc, status, false);
        } else {
            allreduce(buf, off, count, type, op, desc, status, false);
        }
    }

    /**
     * Parts of a long call this step can keep in flight at once through {@link #post} (issue 12 item
     * 4): the engine posts a later part and goes on reducing the next chunks on its node while the
     * part travels between nodes. 0 (the default): {@link #post} runs the part to completion before
     * it returns, as the blocking part methods do.
     */
    default int partsInFlight() {
        return 0;
    }

    /**
     * Starts a later part of a long call ({@code more = true} of the part methods: the call's first
     * part ran and ended ok on every node leader, so no argument check is needed) without waiting
     * for it: {@code buf[off, off + count*size)} belongs to the step until {@link #test} or {@link
     * #await} reports the part complete, which they do in posting order only (a part is complete
     * once every part posted before it is). Returns the part's handle. At most {@link
     * #partsInFlight()} parts may be outstanding; every part of a call completes before the next
     * call of any kind reaches this step (the engine awaits them), and every node posts the same
     * parts in the same order. Failures throw as the blocking methods do, from whichever of post,
     * {@link #progress}, test or await notices them. The default runs the part now.
     */
    default int post(Collective c, ByteBuffer buf, int off, int count, DataType type, Op op, int rootNode, long desc,
            CallStatus status) {
        if (c == Collective.REDUCE) {
            reduce(buf, off, count, type, op, rootNode, desc, status, true);
        } else {
            allreduce(buf, off, count, type, op, desc, status, true);
        }
        return 0;
    }

    /**
     * {@link #post} with this node's data of the part read from {@code src[srcOff, srcOff +
     * count*size)} instead of from {@code buf}, which receives the result (and belongs to the step
     * until the part completes, as in {@link #post}); {@code src} is only read, and stays the
     * caller's to keep unchanged until then. It saves the caller the copy of its input into its
     * output (issue 12 item 5: direct buffers read in place). The default copies and posts.
     */
    default int post(Collective c, ByteBuffer src, int srcOff, ByteBuffer buf, int off, int count, DataType type, Op op,
            int rootNode, long desc, CallStatus status) {
        if (src != buf || srcOff != off) {
            buf.put(off, src, srcOff, count * type.size); // absolute bulk put: no allocation
        }
        return post(c, buf, off, count, type, op, rootNode, desc, status);
    }

    /** Drives the parts in flight without waiting (the engine calls it from its own waits); default: nothing to drive. */
    default void progress() {
    }

    /**
     * A count that grows while the parts' messages move ({@link org.sharp4j.shm.Waiter.Condition#activity}):
     * the node leader's waits that drive the parts do not park while it grows. Default 0: cannot tell.
     */
    default long activity() {
        return 0;
    }

    /** Drives the parts in flight once; true when part {@code handle} (and every part before it) is complete. */
    default boolean test(int handle) {
        return true;
    }

    /** Waits (spin, yield, park, failure probe, timeout) until part {@code handle} is complete. */
    default void await(int handle) {
    }

    /**
     * The engine's heating runs while {@code on} (the calling thread, around it): a step may then
     * vary the outcomes that depend on timing (a message still in flight when tested, a part
     * complete before it is awaited), so that the profile C2 compiles the step from has both ways of
     * each such branch. Heated in lockstep, they went one way only, and C2 compiled the other as a
     * trap that a program's first long calls took. Outside the heating nothing may change. Default:
     * nothing to vary.
     */
    default void heating(boolean on) {
    }

    /** Returns once every node leader called it. */
    void barrier(long desc, CallStatus status);

    /**
     * Slow path, best effort: tell the other node leaders that {@code rank} gave up on the job,
     * blaming {@code blamed} (or -1), so that they fail now rather than at their timeout. Offloads
     * pass it to the host path they wrap.
     */
    default void abort(int rank, int blamed) {
    }

    /** Slow path: {@code (blamed+1) << 32 | (giver+1)} if another node leader gave up, else 0. */
    default long abortWord() {
        return 0;
    }

    /** {@link #askAlive}: no answer within the grace (or no way to ask): the peer is the culprit. */
    int PEER_SILENT = 0;
    /** {@link #askAlive}: asked, the grace is not over. */
    int PEER_PENDING = 1;
    /** {@link #askAlive}: it answered, so it is alive and waiting itself; the end of the chain of waits names the culprit. */
    int PEER_ANSWERED = 2;

    /**
     * Slow path, on the node leader's thread inside one of its waits, after the timeout: is the
     * leader of {@code node}, which this leader waits for, alive? Across hosts no process probe or
     * heartbeat can tell a stopped leader from one that waits for a third; so this asks it, once per
     * wait (the wait began at {@code waitStartNanos}), and reports {@link #PEER_PENDING} until it
     * answers ({@link #PEER_ANSWERED}) or {@code graceNanos} pass ({@link #PEER_SILENT}). The
     * default cannot ask: silent.
     */
    default int askAlive(int node, long waitStartNanos, long graceNanos) {
        return PEER_SILENT;
    }

    /** Slow path, at every failure probe of a wait: answers the other leaders' {@link #askAlive} queries. */
    default void answerQueries() {
    }

    @Override
    void close();
}
