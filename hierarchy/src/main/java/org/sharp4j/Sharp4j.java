package org.sharp4j;

import org.sharp4j.bootstrap.Bootstrap;
import org.sharp4j.bootstrap.RendezvousBootstrap;
import org.sharp4j.bootstrap.SingletonBootstrap;
import org.sharp4j.coll.Engine;

/** Entry points: build a {@link Communicator} for this process or for a given bootstrap. */
public final class Sharp4j {
    private Sharp4j() {
    }

    /**
     * The communicator of all ranks of this job, configured by the {@code sharp4j.*} system
     * properties. Under the embedded launcher ({@code bin/sharp4j-run}) the ranks meet through
     * its rendezvous; a program started alone is a job of one rank. Collective: every rank calls it.
     */
    public static Communicator init() {
        return init(Config.fromSystemProperties());
    }

    public static Communicator init(Config config) {
        Bootstrap b = RendezvousBootstrap.fromEnvironment();
        if (b == null) {
            b = new SingletonBootstrap();
        }
        try {
            return new Communicator(Engine.create(b, config), b, true);
        } catch (RuntimeException e) {
            b.close();
            throw e;
        }
    }

    /** A communicator over an explicit bootstrap (threads, PMIx, MPI, ...). The caller keeps ownership of {@code b}. */
    public static Communicator create(Bootstrap b, Config config) {
        return new Communicator(Engine.create(b, config), b, false);
    }
}
