package org.sharp4j.mpi;

/**
 * Why a call went to MPI instead of sharp4j. Every reason depends only on what MPI requires to be
 * the same on all ranks of a collective (the communicator, datatype, op, count and root) or on the
 * communicator's set-up, which all ranks agree on, never on rank-local state such as the kind of
 * buffer: matching calls take the same path on every rank.
 */
enum PassReason {
    INTERCOMM("inter-communicator"),
    DERIVED_DATATYPE("derived datatype"),
    UNSUPPORTED_DATATYPE("predefined datatype sharp4j does not reduce"),
    USER_OP("user-defined op"),
    UNSUPPORTED_OP("predefined op sharp4j does not support for the datatype"),
    NO_ELEMENTS("count <= 0"),
    BAD_ROOT("root out of range"),
    SINGLE_RANK("single-rank communicator"),
    UNAVAILABLE("sharp4j could not be set up on the communicator"),
    NON_BLOCKING("non-blocking call"),
    FINALIZED("after MPI.Finalize"),
    NESTED("called while sharp4j sets the communicator up");

    static final PassReason[] ALL = values();

    final String text;

    PassReason(String text) {
        this.text = text;
    }
}
