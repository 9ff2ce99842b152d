package org.sharp4j.spi;

import org.sharp4j.Config;
import org.sharp4j.bootstrap.Bootstrap;
import org.sharp4j.shm.Waiter;
import org.sharp4j.topology.Topology;

/** What an {@link InterNodeProvider} gets to build its step. */
public final class InterNodeContext {
    private final Bootstrap bootstrap;
    private final Config config;
    private final Topology topology;
    private final Waiter waiter;

    public InterNodeContext(Bootstrap bootstrap, Config config, Topology topology, Waiter waiter) {
        this.bootstrap = bootstrap;
        this.config = config;
        this.topology = topology;
        this.waiter = waiter;
    }

    /** Job-wide exchange, usable during creation only (every rank takes part). */
    public Bootstrap bootstrap() {
        return bootstrap;
    }

    public Config config() {
        return config;
    }

    public Topology topology() {
        return topology;
    }

    /** The engine's waiting policy and failure probe (dead peers, aborts, timeout). */
    public Waiter waiter() {
        return waiter;
    }

    public int rank() {
        return bootstrap.rank();
    }

    /** Index of this rank's node. */
    public int node() {
        return topology.nodeOf(bootstrap.rank());
    }

    public boolean nodeLeader() {
        return topology.nodeLeader(node()) == bootstrap.rank();
    }

    /** Global rank of every node leader, by node index. */
    public int[] nodeLeaders() {
        int[] l = new int[topology.nodeCount()];
        for (int n = 0; n < l.length; n++) {
            l[n] = topology.nodeLeader(n);
        }
        return l;
    }
}
