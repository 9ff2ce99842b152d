package org.sharp4j;

/** Element types sharp4j reduces. Data in buffers is read in native byte order, as MPI does. */
public enum DataType {
    INT(4, true), LONG(8, true), FLOAT(4, false), DOUBLE(8, false);

    /** Bytes per element. */
    public final int size;
    /** Integer types accept the bitwise and logical ops. */
    public final boolean integral;

    DataType(int size, boolean integral) {
        this.size = size;
        this.integral = integral;
    }

    /** The type of a Java primitive array, or null when {@code array} is not int[], long[], float[] or double[]. */
    public static DataType ofArray(Object array) {
        if (array instanceof double[]) {
            return DOUBLE;
        } else if (array instanceof long[]) {
            return LONG;
        } else if (array instanceof int[]) {
            return INT;
        } else if (array instanceof float[]) {
            return FLOAT;
        }
        return null;
    }
}
