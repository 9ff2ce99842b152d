package org.sharp4j.mpi;

/** The Open MPI Java calls the router counts. The first three can be routed; the non-blocking ones always go to MPI. */
enum Call {
    ALLREDUCE("allReduce"), REDUCE("reduce"), BARRIER("barrier"), IALLREDUCE("iAllReduce"), IREDUCE("iReduce"), IBARRIER("iBarrier");

    static final Call[] ALL = values();

    /** The method's name in mpi.Comm. */
    final String method;

    Call(String method) {
        this.method = method;
    }
}
