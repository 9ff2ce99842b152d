package org.sharp4j.osu;

import java.util.Locale;
import org.sharp4j.DataType;

/**
 * Element types of {@code -T}: OMB 7.x's {@code mpi_char}, {@code mpi_int}, {@code mpi_float}, plus
 * {@code mpi_long} and {@code mpi_double}, which sharp4j also reduces. OMB's MPI_CHAR is one byte;
 * sharp4j has no one-byte type, so {@link #CHAR} runs on the MPI backend only ({@link #sharp4j()} is null).
 */
public enum ElemType {
    CHAR(1, "MPI_CHAR", null),
    INT(4, "MPI_INT", DataType.INT),
    LONG(8, "MPI_LONG", DataType.LONG),
    FLOAT(4, "MPI_FLOAT", DataType.FLOAT),
    DOUBLE(8, "MPI_DOUBLE", DataType.DOUBLE);

    /** Bytes per element. */
    public final int bytes;
    /** The name OMB prints in {@code # Datatype: MPI_FLOAT.} */
    public final String mpiName;
    private final DataType sharp4j;

    ElemType(int bytes, String mpiName, DataType sharp4j) {
        this.bytes = bytes;
        this.mpiName = mpiName;
        this.sharp4j = sharp4j;
    }

    /** sharp4j's type, or null for {@link #CHAR}. */
    public DataType sharp4j() {
        return sharp4j;
    }

    /** {@code char}, {@code MPI_CHAR}, {@code mpi_char}, ... (case-insensitive). */
    public static ElemType parse(String s) {
        String t = s.trim().toLowerCase(Locale.ROOT);
        if (t.startsWith("mpi_")) {
            t = t.substring(4);
        }
        for (ElemType e : values()) {
            if (e.name().toLowerCase(Locale.ROOT).equals(t)) {
                return e;
            }
        }
        throw new IllegalArgumentException("unknown type '" + s + "' (expected char, int, long, float, double or all)");
    }

    @Override
    public String toString() {
        return name().toLowerCase(Locale.ROOT);
    }
}
