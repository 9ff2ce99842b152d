package org.sharp4j.mpi;

/**
 * Whether the {@code -javaagent} instrumented Open MPI's classes in this JVM. A class of its own,
 * free of Byte Buddy and of mpi.* types, so that reading it loads neither.
 */
final class AgentStatus {
    /** Set by {@link Sharp4jAgent} once its transformer is installed (sharp4j.enable=true). */
    static volatile boolean installed;

    private AgentStatus() {
    }
}
