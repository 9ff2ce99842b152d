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

    /** Forgets the rounds recorded so far. */
    public void clear() {
        rounds = 0;
        u = null;
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
        rounds++;
    }
}
