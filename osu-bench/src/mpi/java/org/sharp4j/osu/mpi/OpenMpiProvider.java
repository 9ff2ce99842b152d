package org.sharp4j.osu.mpi;

import mpi.MPI;
import org.sharp4j.bootstrap.Bootstrap;
import org.sharp4j.mpi.MpiBootstrap;
import org.sharp4j.osu.Backend;
import org.sharp4j.osu.MpiProvider;

/** Loaded by name by {@code org.sharp4j.osu.Osu} when a run asks for Open MPI. */
public final class OpenMpiProvider implements MpiProvider {
    private MpiBootstrap bootstrap;

    public OpenMpiProvider() {
    }

    @Override
    public Backend open(String[] args) throws Exception {
        boolean initHere = !MPI.isInitialized();
        if (initHere) {
            MPI.Init(args);
        }
        MpiBackend b = new MpiBackend(MPI.COMM_WORLD, initHere);
        bootstrap = MpiBootstrap.world();
        return b;
    }

    @Override
    public Bootstrap bootstrap() {
        if (bootstrap == null) {
            throw new IllegalStateException("open() first");
        }
        return bootstrap;
    }
}
