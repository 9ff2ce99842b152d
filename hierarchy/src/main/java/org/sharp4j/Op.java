package org.sharp4j;

/**
 * Reduction operators, with MPI's meaning. SUM, PROD, MIN and MAX apply to every type; the
 * bitwise (BAND, BOR, BXOR) and logical (LAND, LOR: non-zero is true, the result is 1 or 0) ops
 * only to INT and LONG, as in MPI.
 */
public enum Op {
    SUM, PROD, MIN, MAX, BAND, BOR, BXOR, LAND, LOR;

    /** Whether MPI defines this op for {@code type}. */
    public boolean validFor(DataType type) {
        return type.integral || ordinal() <= MAX.ordinal();
    }
}
