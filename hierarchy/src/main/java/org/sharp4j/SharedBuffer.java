package org.sharp4j;

import java.nio.ByteBuffer;

/**
 * This rank's buffer inside the shared-memory segment (MPI-3 shared-window style, papers 000 and
 * 002): data written here is read in place by the collectives, skipping the copy-in, and results
 * are written back here. Obtain it with {@link Communicator#sharedBuffer()}; valid until the
 * communicator is closed. Native byte order; use absolute indexes.
 *
 * <p>Do not write into it while a collective on it is running on this rank (there is none after
 * the call returns: every collective completes its reads of this buffer before any rank returns).
 */
public final class SharedBuffer {
    private final Communicator owner;
    private final ByteBuffer view;

    SharedBuffer(Communicator owner, ByteBuffer view) {
        this.owner = owner;
        this.view = view;
    }

    /** The buffer: position 0, capacity = {@link #capacity()} bytes, native order. */
    public ByteBuffer buffer() {
        return view;
    }

    public int capacity() {
        return view.capacity();
    }

    Communicator owner() {
        return owner;
    }
}
