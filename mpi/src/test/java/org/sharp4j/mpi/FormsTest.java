package org.sharp4j.mpi;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.IntBuffer;
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
}
