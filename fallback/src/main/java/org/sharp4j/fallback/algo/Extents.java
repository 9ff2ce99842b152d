package org.sharp4j.fallback.algo;

import java.nio.ByteBuffer;

/**
 * Whether two buffers share memory, by their extents rather than by identity (another view of the
 * same memory is another object): what a round needs to know before it receives a peer's data into
 * the buffer while it reads this node's own data from a source ({@link PostedRounds}' and
 * {@link Exchange}'s "straight into the result"). The native addresses of the last pair asked about
 * are kept (a call's parts reuse its buffers), so a call pays at most one lookup each. Not
 * thread-safe: one per round runner.
 */
final class Extents {
    private ByteBuffer lastX;
    private ByteBuffer lastU;
    private long lastXAddr;
    private long lastUAddr;

    /**
     * Whether {@code x} and {@code u} share no byte: direct buffers by their native extents, heap
     * buffers by their arrays and ranges, a heap and a direct buffer never.
     */
    boolean disjoint(ByteBuffer x, ByteBuffer u) {
        if (x.isDirect() != u.isDirect()) {
            return true;
        }
        if (!x.isDirect()) {
            if (!x.hasArray() || !u.hasArray()) {
                return false; // read-only heap buffers: cannot tell, take the scratch
            }
            if (x.array() != u.array()) {
                return true;
            }
            int xa = x.arrayOffset();
            int ua = u.arrayOffset();
            return xa + x.capacity() <= ua || ua + u.capacity() <= xa;
        }
        if (x != lastX) {
            lastX = x;
            lastXAddr = com.sun.jna.Pointer.nativeValue(com.sun.jna.Native.getDirectBufferPointer(x));
        }
        if (u != lastU) {
            lastU = u;
            lastUAddr = com.sun.jna.Pointer.nativeValue(com.sun.jna.Native.getDirectBufferPointer(u));
        }
        return lastXAddr + x.capacity() <= lastUAddr || lastUAddr + u.capacity() <= lastXAddr;
    }
}
