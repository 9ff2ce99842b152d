package org.sharp4j.shm;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Ordered 64-bit access to shared memory.
 *
 * <p>The protocol is single-writer: every flag word has exactly one writer rank. A writer stores
 * its payload with plain stores, then the flag with {@link #release}; a reader loads the flag with
 * {@link #acquire} and, once it sees the value it waits for, reads the payload with plain loads.
 * The release/acquire pair orders the payload before the flag (x86: a compiler barrier only; ARM:
 * stlr/ldar), which is all the synchronisation the collectives need: no CAS, no fences beyond it.
 */
public final class Flags {
    private static final VarHandle LONG = MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.nativeOrder());
    private static final VarHandle INT = MethodHandles.byteBufferViewVarHandle(int[].class, ByteOrder.nativeOrder());

    private Flags() {
    }

    public static long acquire(ByteBuffer b, int off) {
        return (long) LONG.getAcquire(b, off);
    }

    public static void release(ByteBuffer b, int off, long v) {
        LONG.setRelease(b, off, v);
    }

    /** Plain load; ordered only by a preceding {@link #acquire} of the flag that published it. */
    public static long plain(ByteBuffer b, int off) {
        return (long) LONG.get(b, off);
    }

    /** Plain store; published by a following {@link #release}. */
    public static void put(ByteBuffer b, int off, long v) {
        LONG.set(b, off, v);
    }

    /** Plain 4-byte load (payload words, as {@link #plain}). */
    public static int plainInt(ByteBuffer b, int off) {
        return (int) INT.get(b, off);
    }

    /** Plain 4-byte store (payload words, as {@link #put}). */
    public static void putInt(ByteBuffer b, int off, int v) {
        INT.set(b, off, v);
    }

    /** Volatile load, for slow-path words (abort, progress) that are read without a paired flag. */
    public static long volatileGet(ByteBuffer b, int off) {
        return (long) LONG.getVolatile(b, off);
    }

    public static void volatileSet(ByteBuffer b, int off, long v) {
        LONG.setVolatile(b, off, v);
    }

    /** Compare-and-set with volatile semantics, for slow-path words with several writers (the abort word). */
    public static boolean cas(ByteBuffer b, int off, long expect, long v) {
        return LONG.compareAndSet(b, off, expect, v);
    }
}
