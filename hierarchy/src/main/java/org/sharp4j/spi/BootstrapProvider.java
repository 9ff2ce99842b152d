package org.sharp4j.spi;

import org.sharp4j.bootstrap.Bootstrap;

/**
 * A bootstrap that lives outside this module, found with {@link java.util.ServiceLoader}
 * (register it in {@code META-INF/services/org.sharp4j.spi.BootstrapProvider}). The one there is:
 * {@code mpi}, the Open MPI Java bindings' {@code MPI.COMM_WORLD} (module {@code mpi}), which
 * {@code Sharp4j.init()} uses after PMIx and before the embedded launcher, or when
 * {@code sharp4j.bootstrap=mpi}.
 */
public interface BootstrapProvider {
    /** The value of {@code sharp4j.bootstrap} that forces it, e.g. {@code mpi}. */
    String name();

    /** Local and cheap: null when {@link #create} can work in this process, else why not (logged). */
    String unavailableReason();

    /** Collective over the job's processes. */
    Bootstrap create();
}
