package org.sharp4j.coll;

import java.nio.ByteBuffer;
import org.sharp4j.ArgumentMismatchException;
import org.sharp4j.shm.Flags;

/**
 * Outcome of one collective as it travels up the tree and back down: zero, or the first pair of
 * ranks found to disagree on the call ({@code (rankA+1) << 32 | (rankB+1)}) with both
 * descriptors. The root's value is broadcast, so every rank throws the same error. One instance
 * per communicator, reset per call: nothing is allocated unless there is an error.
 */
public final class CallStatus {
    long code;
    long descA;
    long descB;

    public void reset() {
        code = 0;
    }

    public boolean ok() {
        return code == 0;
    }

    /** Records that {@code rankA} called {@code descA} where {@code rankB} called {@code descB} (first one wins). */
    public void mismatch(int rankA, long descA, int rankB, long descB) {
        if (code == 0) {
            code = ((long) (rankA + 1) << 32) | (rankB + 1);
            this.descA = descA;
            this.descB = descB;
        }
    }

    public void merge(CallStatus o) {
        if (code == 0 && o.code != 0) {
            code = o.code;
            descA = o.descA;
            descB = o.descB;
        }
    }

    /**
     * Writes the raw status (code, descA, descB: three longs in {@code b}'s byte order) at
     * {@code b[off, off+24)}, for inter-node steps that carry it in messages.
     */
    public void writeRaw(ByteBuffer b, int off) {
        b.putLong(off, code);
        b.putLong(off + 8, descA);
        b.putLong(off + 16, descB);
    }

    /** Replaces this status with one written by {@link #writeRaw} (on this or another node). */
    public void readRaw(ByteBuffer b, int off) {
        code = b.getLong(off);
        descA = b.getLong(off + 8);
        descB = b.getLong(off + 16);
    }

    /** Merges the status published in a control block (after an acquire of its flag). */
    void mergeFrom(ByteBuffer b, int ctl) {
        long c = Flags.plain(b, ctl + ShmLevel.STATUS);
        if (c != 0 && code == 0) {
            code = c;
            descA = Flags.plain(b, ctl + ShmLevel.ERR_A);
            descB = Flags.plain(b, ctl + ShmLevel.ERR_B);
        }
    }

    /** Writes into a control block before its flag is released. */
    void writeTo(ByteBuffer b, int ctl) {
        Flags.put(b, ctl + ShmLevel.STATUS, code);
        if (code != 0) {
            Flags.put(b, ctl + ShmLevel.ERR_A, descA);
            Flags.put(b, ctl + ShmLevel.ERR_B, descB);
        }
    }

    public ArgumentMismatchException toException() {
        int a = (int) (code >>> 32) - 1;
        int b = (int) code - 1;
        return new ArgumentMismatchException("ranks called the same collective with different arguments: rank " + a
                + " called " + Desc.describe(descA) + " but rank " + b + " called " + Desc.describe(descB));
    }
}
