package org.sharp4j.fallback.algo;

import java.nio.ByteBuffer;
import org.sharp4j.DataType;
import org.sharp4j.Op;

/**
 * Where an algorithm's data rounds go: {@link Exchange} runs each round as it is described
 * (blocking), {@link Schedule} records the rounds so that {@link PostedRounds} can run them later
 * without blocking (a part of a long call in flight while the node reduces the next chunks). The
 * algorithms describe a round the same way for both, so a part folds in the same bracket whether
 * it runs blocking or posted.
 */
public interface RoundSink {
    /** Starts describing a round's group: {@code g} members, this node at position {@code mp}. */
    void group(int g, int mp);

    /** Position {@code pos} is node {@code p}. */
    void member(int pos, int p);

    /** Send elements {@code [off, off+len)} of the buffer to position {@code pos}. */
    void sendTo(int pos, int off, int len);

    /** Receive {@code len} elements from position {@code pos}, combined into (or copied to) elements {@code [off, off+len)}. */
    void recvFrom(int pos, int off, int len);

    /** The round just described, on data rounds (no header): see {@link Exchange#dataRound}. */
    void dataRound(int round, ByteBuffer u, int uOff, DataType t, Op op, boolean combine);
}
