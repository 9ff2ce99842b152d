package org.sharp4j.fallback.algo;

import java.nio.ByteBuffer;
import org.sharp4j.DataType;
import org.sharp4j.Op;

/**
 * The data rounds of one part as an algorithm describes them ({@link RoundSink}), recorded instead
 * of run, for {@link PostedRounds} to run later without blocking. Round by round: the tag's round
 * number, the group (size, this node's position, the node at every position), what goes to and
 * comes from each position (element ranges), and whether received data is combined or copied.
 * All of a part's rounds work on one buffer region, type and op. Fixed arrays sized for the
 * largest pattern ({@link Exchange#MAX_ROUND} + 1 rounds of {@link Exchange#MAX_RADIX} members):
 * recording allocates nothing.
 */
public final class Schedule implements RoundSink {
    static final int MAX_ROUNDS = Exchange.MAX_ROUND + 1;
    private static final int K = Exchange.MAX_RADIX;

    int rounds;
    final int[] round = new int[MAX_ROUNDS];
    final int[] g = new int[MAX_ROUNDS];
    final int[] mp = new int[MAX_ROUNDS];
    final boolean[] combine = new boolean[MAX_ROUNDS];
    final int[] peer = new int[MAX_ROUNDS * K];
    final boolean[] sendTo = new boolean[MAX_ROUNDS * K];
    final boolean[] recvFrom = new boolean[MAX_ROUNDS * K];
    final int[] sOff = new int[MAX_ROUNDS * K];
    final int[] sLen = new int[MAX_ROUNDS * K];
    final int[] rOff = new int[MAX_ROUNDS * K];
    final int[] rLen = new int[MAX_ROUNDS * K];
    ByteBuffer u;
    int uOff;
    DataType t;
    Op op;
    /**
     * Where this node's own data is read in its first round that reads it ({@link #firstOwn}), or
     * null: then in {@link #u} as in every other round. See {@link #source}.
     */
    ByteBuffer x;
    int xOff;
    /** The first recorded round in which this node sends or combines (reads its own data), or -1. */
    int firstOwn = -1;

    /** Forgets the rounds recorded so far (and the source). */
    public void clear() {
        rounds = 0;
        u = null;
        x = null;
        firstOwn = -1;
    }

    /**
     * Reads this node's own data from {@code src[off, ...)} (the caller's input, the same element
     * range as the rounds' buffer region) instead of from the buffer, which then receives the
     * result without holding the input first: the copy of the input into it is saved. Set before
     * the rounds are recorded; {@code null} (or the buffer region itself) reads the buffer.
     *
     * <p>Why one round suffices: in every algorithm here a node's first round that touches its
     * own data reads all of it that the node ever reads, and writes the buffer before any later
     * round reads it: recursive k-ing sends and folds the whole vector (an extra node of a
     * non-power group sends it whole to its proxy, then only receives the result; the proxy folds
     * it whole); SRA's first reduce-scatter round sends the other blocks and folds this node's own
     * block, later rounds work inside that block or on received data; in the tree a leaf sends its
     * vector and is done, an inner node's first fold covers the vector. So that round reads
     * {@code src} (its sends, and its fold's own operand, the result going to the buffer) and every
     * later round the buffer, and the input is never written.
     */
    public void source(ByteBuffer src, int off) {
        x = src;
        xOff = off;
    }

    /** Rounds recorded. */
    public int rounds() {
        return rounds;
    }

    @Override
    public void group(int groupSize, int myPos) {
        if (rounds == MAX_ROUNDS) {
            throw new IllegalStateException("more than " + MAX_ROUNDS + " rounds in one part");
        }
        g[rounds] = groupSize;
        mp[rounds] = myPos;
        int b = rounds * K;
        for (int i = 0; i < groupSize; i++) {
            sendTo[b + i] = false;
            recvFrom[b + i] = false;
        }
    }

    @Override
    public void member(int pos, int p) {
        peer[rounds * K + pos] = p;
    }

    @Override
    public void sendTo(int pos, int off, int len) {
        int i = rounds * K + pos;
        sendTo[i] = true;
        sOff[i] = off;
        sLen[i] = len;
    }

    @Override
    public void recvFrom(int pos, int off, int len) {
        int i = rounds * K + pos;
        recvFrom[i] = true;
        rOff[i] = off;
        rLen[i] = len;
    }

    @Override
    public void dataRound(int r, ByteBuffer buf, int off, DataType type, Op o, boolean comb) {
        if (u == null) {
            u = buf;
            uOff = off;
            t = type;
            op = o;
        } else if (u != buf || uOff != off || t != type || op != o) {
            throw new IllegalStateException("a part's rounds must share one buffer region, type and op");
        }
        round[rounds] = r;
        combine[rounds] = comb;
        if (firstOwn < 0 && readsOwn(rounds)) {
            firstOwn = rounds;
        }
        rounds++;
    }

    /** Whether this node sends in round {@code i}, or folds something into its data there. */
    private boolean readsOwn(int i) {
        int b = i * K;
        for (int pos = 0; pos < g[i]; pos++) {
            if (pos != mp[i] && (sendTo[b + pos] || combine[i] && recvFrom[b + pos])) {
                return true;
            }
        }
        return false;
    }

    /** Whether round {@code i} reads this node's own data from {@link #x} rather than the buffer. */
    boolean fromSource(int i) {
        return x != null && i == firstOwn;
    }
}
