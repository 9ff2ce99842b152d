package org.sharp4j.osu;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The send and receive buffers of one benchmark run: direct ByteBuffers in native byte order
 * ({@code -a buffer}, the default, as in OMB-J) or Java arrays ({@code -a arrays}). In-place runs
 * use the receive buffer alone, as OMB passes {@code MPI_IN_PLACE} and its receive buffer.
 *
 * <p>Contents follow OMB: without {@code -c} the send buffer holds ones and the receive buffer
 * zeros; with {@code -c} every iteration refills them with OMB's reduction pattern (element
 * {@code i} of iteration {@code it} is {@code ((i % 100) + 1) * (it + 1)}, times 10 for integers,
 * 2.0 for floating point, 7 modulo 256 for char) and checks the result against that value times
 * the number of ranks (floating point within 0.001, like OMB's ERROR_DELTA).
 */
public final class Buffers {
    private static final double ERROR_DELTA = 0.001;

    public final ElemType type;
    public final boolean arrays;
    /** Capacity in elements. */
    public final int capacity;
    private final ByteBuffer sendBuf;
    private final ByteBuffer recvBuf;
    private final Object sendArr;
    private final Object recvArr;

    private Buffers(ElemType type, boolean arrays, int capacity) {
        this.type = type;
        this.arrays = arrays;
        this.capacity = capacity;
        if (arrays) {
            sendArr = newArray(type, capacity);
            recvArr = newArray(type, capacity);
            sendBuf = null;
            recvBuf = null;
        } else {
            int bytes = Math.max(1, Math.multiplyExact(capacity, type.bytes));
            sendBuf = ByteBuffer.allocateDirect(bytes).order(ByteOrder.nativeOrder());
            recvBuf = ByteBuffer.allocateDirect(bytes).order(ByteOrder.nativeOrder());
            sendArr = null;
            recvArr = null;
        }
        for (int i = 0; i < capacity; i++) {
            put(true, i, 1, 1.0);
        }
    }

    /** Buffers for up to {@code capacity} elements of {@code type}. */
    public static Buffers allocate(ElemType type, boolean arrays, int capacity) {
        return new Buffers(type, arrays, capacity);
    }

    private static Object newArray(ElemType type, int n) {
        switch (type) {
            case CHAR:
                return new byte[n];
            case INT:
                return new int[n];
            case LONG:
                return new long[n];
            case FLOAT:
                return new float[n];
            default:
                return new double[n];
        }
    }

    /** The send buffer: a direct ByteBuffer or a byte[], int[], long[], float[] or double[]. */
    public Object send() {
        return arrays ? sendArr : sendBuf;
    }

    /** The receive buffer (the only buffer of an in-place run). */
    public Object recv() {
        return arrays ? recvArr : recvBuf;
    }

    /** The send buffer as a direct ByteBuffer (null with {@code -a arrays}). */
    public ByteBuffer sendBuffer() {
        return sendBuf;
    }

    /** The receive buffer as a direct ByteBuffer (null with {@code -a arrays}). */
    public ByteBuffer recvBuffer() {
        return recvBuf;
    }

    private static long pattern(int i, int iter) {
        return (long) ((i % 100) + 1) * (iter + 1);
    }

    /** OMB's {@code omb_assign_to_type} of value {@code val}, as a long (integers) or double (floating point). */
    private void putPattern(boolean send, int i, long val) {
        switch (type) {
            case CHAR:
                put(send, i, (byte) (7 * (byte) val), 0);
                break;
            case INT:
                put(send, i, (int) val * 10, 0);
                break;
            case LONG:
                put(send, i, val * 10L, 0);
                break;
            case FLOAT:
                put(send, i, 0, (float) val * 2.0f);
                break;
            default:
                put(send, i, 0, (double) val * 2.0);
                break;
        }
    }

    /** Fills the buffers for validated iteration {@code iter} (OMB's set_buffer_validation for reductions). */
    public void fillValidation(int iter, int count, boolean inPlace) {
        for (int i = 0; i < count; i++) {
            long v = pattern(i, iter);
            if (inPlace) {
                putPattern(false, i, v);
            } else {
                putPattern(true, i, v);
                put(false, i, 0, 0.0);
            }
        }
    }

    /** 1 when the receive buffer is not the reduction of iteration {@code iter} over {@code nprocs} ranks, else 0. */
    public int checkReduction(int iter, int count, int nprocs) {
        for (int i = 0; i < count; i++) {
            long val = pattern(i, iter) * nprocs;
            switch (type) {
                case CHAR:
                    if (getLong(false, i) != (byte) (7 * (byte) val)) {
                        return 1;
                    }
                    break;
                case INT:
                    if (getLong(false, i) != (int) val * 10) {
                        return 1;
                    }
                    break;
                case LONG:
                    if (getLong(false, i) != val * 10L) {
                        return 1;
                    }
                    break;
                case FLOAT:
                    if (!(Math.abs(getDouble(false, i) - (float) val * 2.0f) <= ERROR_DELTA)) {
                        return 1;
                    }
                    break;
                default:
                    if (!(Math.abs(getDouble(false, i) - (double) val * 2.0) <= ERROR_DELTA)) {
                        return 1;
                    }
                    break;
            }
        }
        return 0;
    }

    /** Adds one to element {@code i} of the receive buffer (tests inject wrong results with it). */
    public void corrupt(int i) {
        if (type == ElemType.FLOAT || type == ElemType.DOUBLE) {
            put(false, i, 0, getDouble(false, i) + 1.0);
        } else {
            put(false, i, getLong(false, i) + 1, 0);
        }
    }

    /** Element {@code i} of the receive buffer as a double. */
    public double recvValue(int i) {
        return type == ElemType.FLOAT || type == ElemType.DOUBLE ? getDouble(false, i) : getLong(false, i);
    }

    private void put(boolean send, int i, long lv, double dv) {
        if (arrays) {
            Object a = send ? sendArr : recvArr;
            switch (type) {
                case CHAR:
                    ((byte[]) a)[i] = (byte) lv;
                    break;
                case INT:
                    ((int[]) a)[i] = (int) lv;
                    break;
                case LONG:
                    ((long[]) a)[i] = lv;
                    break;
                case FLOAT:
                    ((float[]) a)[i] = (float) dv;
                    break;
                default:
                    ((double[]) a)[i] = dv;
                    break;
            }
        } else {
            ByteBuffer b = send ? sendBuf : recvBuf;
            switch (type) {
                case CHAR:
                    b.put(i, (byte) lv);
                    break;
                case INT:
                    b.putInt(i * 4, (int) lv);
                    break;
                case LONG:
                    b.putLong(i * 8, lv);
                    break;
                case FLOAT:
                    b.putFloat(i * 4, (float) dv);
                    break;
                default:
                    b.putDouble(i * 8, dv);
                    break;
            }
        }
    }

    private long getLong(boolean send, int i) {
        if (arrays) {
            Object a = send ? sendArr : recvArr;
            switch (type) {
                case CHAR:
                    return ((byte[]) a)[i];
                case INT:
                    return ((int[]) a)[i];
                default:
                    return ((long[]) a)[i];
            }
        }
        ByteBuffer b = send ? sendBuf : recvBuf;
        switch (type) {
            case CHAR:
                return b.get(i);
            case INT:
                return b.getInt(i * 4);
            default:
                return b.getLong(i * 8);
        }
    }

    private double getDouble(boolean send, int i) {
        if (arrays) {
            Object a = send ? sendArr : recvArr;
            return type == ElemType.FLOAT ? ((float[]) a)[i] : ((double[]) a)[i];
        }
        ByteBuffer b = send ? sendBuf : recvBuf;
        return type == ElemType.FLOAT ? b.getFloat(i * 4) : b.getDouble(i * 8);
    }
}
