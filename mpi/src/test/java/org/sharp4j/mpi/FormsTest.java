package org.sharp4j.mpi;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import org.junit.jupiter.api.Test;
import org.sharp4j.DataType;

/** The buffer forms of Open MPI Java and their raw-memory copies (no MPI needed). */
class FormsTest {
    @Test
    void classifiesWhatOpenMpiAccepts() {
        assertEquals(Forms.ARRAY, Forms.classify(new double[2], DataType.DOUBLE));
        assertEquals(Forms.INVALID, Forms.classify(new long[2], DataType.DOUBLE));
        assertEquals(Forms.ARRAY, Forms.classify(DoubleBuffer.wrap(new double[4], 1, 2).slice(), DataType.DOUBLE));
        assertEquals(Forms.INVALID, Forms.classify(DoubleBuffer.wrap(new double[4]).asReadOnlyBuffer(), DataType.DOUBLE));
        assertEquals(Forms.INVALID, Forms.classify(ByteBuffer.allocate(16), DataType.DOUBLE)); // heap bytes: not a double[]
        assertEquals(Forms.DIRECT, Forms.classify(ByteBuffer.allocateDirect(16), DataType.INT));
        assertEquals(Forms.STAGED, Forms.classify(ByteBuffer.allocateDirect(16).asIntBuffer(), DataType.INT));
        assertEquals(Forms.INVALID, Forms.classify(null, DataType.INT));
        assertEquals(Forms.INVALID, Forms.classify("text", DataType.INT));
    }

    @Test
    void heapBufferDataStartsAtArrayOffsetWhateverThePosition() {
        double[] a = {9, 9, 1, 2, 3};
        DoubleBuffer b = DoubleBuffer.wrap(a, 2, 3).slice();
        b.position(2);
        assertSame(a, Forms.array(b));
        assertEquals(2, Forms.offset(b));
        Forms.Scratch scratch = new Forms.Scratch(64);
        Forms.copyIn(b, Forms.ARRAY, scratch, 24, DataType.DOUBLE, new Forms.Whole());
        assertEquals(1.0, scratch.bytes.getDouble(0));
        assertEquals(3.0, scratch.bytes.getDouble(16));
    }

    @Test
    void directTypedBuffersCopyRawMemoryInTheirOwnOrder() {
        IntBuffer be = ByteBuffer.allocateDirect(8).asIntBuffer(); // big-endian view
        be.put(0, 1).put(1, 0x01020304);
        be.position(1).limit(1); // MPI ignores both
        Forms.Scratch scratch = new Forms.Scratch(64);
        Forms.Whole whole = new Forms.Whole();
        Forms.checkStaged("buf", be, Forms.STAGED, 8, DataType.INT, true);
        Forms.copyIn(be, Forms.STAGED, scratch, 8, DataType.INT, whole);
        ByteBuffer raw = scratch.bytes.duplicate().order(ByteOrder.BIG_ENDIAN);
        assertEquals(1, raw.getInt(0));
        assertEquals(0x01020304, raw.getInt(4));
        scratch.bytes.putInt(0, 7).putInt(4, 8); // native order
        Forms.copyOut(scratch, be, Forms.STAGED, 8, DataType.INT, whole);
        int seven = ByteOrder.nativeOrder() == ByteOrder.BIG_ENDIAN ? 7 : Integer.reverseBytes(7);
        assertEquals(seven, be.get(0));
    }

    @Test
    void directByteBufferLimitIsLiftedToTheCapacity() {
        Forms.Whole whole = new Forms.Whole();
        ByteBuffer b = ByteBuffer.allocateDirect(32);
        b.limit(4);
        ByteBuffer d = Forms.direct(b, 32, whole);
        assertEquals(32, d.limit());
        ByteBuffer full = ByteBuffer.allocateDirect(32).order(java.nio.ByteOrder.nativeOrder());
        assertSame(full, Forms.direct(full, 32, whole));
        ByteBuffer small = ByteBuffer.allocateDirect(8).order(java.nio.ByteOrder.nativeOrder());
        assertSame(small, Forms.direct(small, 16, whole)); // too short even in capacity: sharp4j names it
        // Open MPI reduces raw memory whatever the order flag says: a native-order view of the same memory
        ByteBuffer big = ByteBuffer.allocateDirect(16); // BIG_ENDIAN
        ByteBuffer view = Forms.direct(big, 16, whole);
        assertEquals(java.nio.ByteOrder.nativeOrder(), view.order());
        view.putLong(0, 42);
        assertEquals(42, big.order(java.nio.ByteOrder.nativeOrder()).getLong(0));
    }

    @Test
    void stagedChecksNameTheProblem() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Forms.checkStaged("recv buffer", new double[2], Forms.ARRAY, 24, DataType.DOUBLE, true));
        assertTrue(e.getMessage().startsWith("recv buffer too short"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> Forms.checkStaged("send buffer", ByteBuffer.allocateDirect(16).asDoubleBuffer(), Forms.STAGED, 24, DataType.DOUBLE,
                        false));
        assertTrue(e.getMessage().startsWith("send buffer too short"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Forms.checkStaged("buffer", new long[3], Forms.INVALID, 24,
                DataType.DOUBLE, true));
        assertTrue(e.getMessage().contains("cannot hold MPI.DOUBLE"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Forms.checkStaged("buffer", null, Forms.INVALID, 8, DataType.INT, true));
        assertEquals("buffer is null", e.getMessage());
    }

    @Test
    void arraysRoundTripThroughTheScratchBuffer() {
        Forms.Scratch scratch = new Forms.Scratch(64);
        long[] in = {1, -2, Long.MAX_VALUE};
        Forms.copyIn(in, Forms.ARRAY, scratch, 24, DataType.LONG, new Forms.Whole());
        long[] out = new long[3];
        Forms.copyOut(scratch, out, Forms.ARRAY, 24, DataType.LONG, new Forms.Whole());
        assertArrayEquals(in, out);
    }

    @Test
    void wholeMakesOneDuplicatePerBufferObjectOverTheSameMemory() {
        Forms.Whole whole = new Forms.Whole();
        // OSU style: LITTLE_ENDIAN set explicitly (native here), flipped while empty: limit 0
        ByteBuffer recv = ByteBuffer.allocateDirect(64).order(ByteOrder.LITTLE_ENDIAN);
        recv.flip();
        ByteBuffer d = Forms.direct(recv, 16, whole);
        assertEquals(64, d.limit());
        assertEquals(0, d.position());
        assertEquals(ByteOrder.nativeOrder(), d.order());
        assertSame(d, Forms.direct(recv, 16, whole), "the second call reuses the duplicate: no allocation per call");
        d.putInt(8, 0x11223344);
        assertEquals(0x11223344, recv.duplicate().clear().order(ByteOrder.nativeOrder()).getInt(8), "same memory");
        // the user changes the object's order and limit later: still its raw memory, native order, full limit
        recv.order(ByteOrder.BIG_ENDIAN).limit(3).position(2);
        assertSame(d, Forms.direct(recv, 16, whole));
        assertEquals(64, d.limit());
        // a native buffer whose limit covers the data is used as it is, whatever its position
        ByteBuffer send = ByteBuffer.allocateDirect(64).order(ByteOrder.nativeOrder());
        send.position(60);
        assertSame(send, Forms.direct(send, 64, whole));
        assertEquals(1, whole.size());
        // more buffers than slots: the oldest is replaced, every answer stays a view of its own buffer
        ByteBuffer[] many = new ByteBuffer[Forms.Whole.SLOTS + 2];
        for (int i = 0; i < many.length; i++) {
            many[i] = ByteBuffer.allocateDirect(16);
            many[i].limit(0);
            ByteBuffer v = Forms.direct(many[i], 8, whole);
            v.putLong(0, i + 100L);
            assertEquals(i + 100L, many[i].duplicate().clear().order(ByteOrder.nativeOrder()).getLong(0));
        }
        assertEquals(Forms.Whole.SLOTS, whole.size());
        ByteBuffer again = Forms.direct(recv, 16, whole); // evicted: a new duplicate, still right
        again.putInt(8, 5);
        assertEquals(5, recv.duplicate().clear().order(ByteOrder.nativeOrder()).getInt(8));
        whole.clear();
        assertEquals(0, whole.size());
    }

    @Test
    void stagedTypedViewsCopyTheirRawMemoryFromTheViewStartWhateverPositionAndLimit() {
        Forms.Whole whole = new Forms.Whole();
        Forms.Scratch scratch = new Forms.Scratch(4096);
        for (ByteOrder order : new ByteOrder[] {ByteOrder.LITTLE_ENDIAN, ByteOrder.BIG_ENDIAN}) {
            for (int n : new int[] {3, 16, 300}) { // element by element up to a line (native order), bulk above
                ByteBuffer mem = ByteBuffer.allocateDirect(8 * n + 16).order(order);
                // a view of a slice starting at byte 8: the data starts there
                ByteBuffer at8 = mem.position(8).slice().order(order);
                IntBuffer iv = at8.asIntBuffer();
                FloatBuffer fv = at8.asFloatBuffer();
                DoubleBuffer dv = at8.asDoubleBuffer();
                LongBuffer lv = at8.asLongBuffer();
                // odd bit patterns: a signalling NaN's bits must come through unchanged
                for (int i = 0; i < n; i++) {
                    lv.put(i, 0x7ff0_0000_0000_0001L + i * 0x0101_0101L);
                }
                for (Buffer v : new Buffer[] {iv, fv, dv, lv}) {
                    int es = v instanceof IntBuffer || v instanceof FloatBuffer ? 4 : 8;
                    v.position(1).limit(1); // MPI ignores both
                    Forms.copyIn(v, Forms.STAGED, scratch, n * es, DataType.INT, whole);
                    for (int b = 0; b < n * es; b++) {
                        assertEquals(at8.get(b), scratch.bytes.get(b), order + " " + v.getClass().getSimpleName() + " n=" + n + " byte " + b);
                    }
                    // and back, into a view with limit 0 of other memory
                    ByteBuffer outMem = ByteBuffer.allocateDirect(8 * n + 8).order(order);
                    Buffer out = v instanceof IntBuffer ? outMem.asIntBuffer() : v instanceof FloatBuffer ? outMem.asFloatBuffer()
                            : v instanceof DoubleBuffer ? outMem.asDoubleBuffer() : outMem.asLongBuffer();
                    out.limit(0);
                    outMem.put(n * es, (byte) 0x5a); // just past the data: untouched
                    Forms.copyOut(scratch, out, Forms.STAGED, n * es, DataType.INT, whole);
                    for (int b = 0; b < n * es; b++) {
                        assertEquals(at8.get(b), outMem.get(b), order + " out " + v.getClass().getSimpleName() + " n=" + n + " byte " + b);
                    }
                    assertEquals((byte) 0x5a, outMem.get(n * es));
                }
            }
        }
    }

    @Test
    void quietRestoresCountersAndFirstCallMarksAndForgetsBuffers() {
        CommState s = new CommState(null, 7);
        s.routed[0] = 5;
        s.routed[2] = 1;
        Object saved = s.quiet();
        s.routed[0] += 1000;
        s.routed[1] += 1000;
        ByteBuffer b = ByteBuffer.allocateDirect(16);
        b.limit(0);
        Forms.direct(b, 8, s.whole);
        assertEquals(1, s.whole.size());
        s.loud(saved);
        assertArrayEquals(new long[] {5, 0, 1}, s.routed);
        assertEquals(0, s.whole.size());
    }
}
