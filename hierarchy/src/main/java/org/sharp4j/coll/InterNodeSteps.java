package org.sharp4j.coll;

import java.nio.file.Path;
import org.sharp4j.Config;
import org.sharp4j.Sharp4jException;
import org.sharp4j.bootstrap.Bootstrap;
import org.sharp4j.shm.Segment;
import org.sharp4j.shm.WaitPolicy;
import org.sharp4j.shm.Waiter;
import org.sharp4j.spi.InterNodeStep;
import org.sharp4j.topology.Topology;

/** Chooses and builds phase 3. Collective over the bootstrap: every rank calls it. */
final class InterNodeSteps {
    private InterNodeSteps() {
    }

    static String describe(Topology topo, boolean[] onMyHost) {
        return topo.singleHost() ? "shared memory between " + topo.nodeCount() + " simulated nodes"
                : "unavailable (" + topo.nodeCount() + " hosts)";
    }

    /** Returns this rank's inter-node step, or null when it is not a node leader or there is one node. */
    static InterNodeStep create(Bootstrap boot, Config cfg, Topology topo, Engine engine, boolean[] onMyHost) {
        int nodes = topo.nodeCount();
        if (nodes == 1) {
            return null;
        }
        if (!topo.singleHost()) {
            // The UCX (fallback) and SHARP (sharp-jni) steps plug in here in their own modules.
            throw new Sharp4jException("the job spans " + nodes + " hosts but no inter-node transport is available in this "
                    + "build: run all ranks on one host, or simulate nodes with -Dsharp4j.topology.nodes=K");
        }
        int[] leaders = new int[nodes];
        for (int n = 0; n < nodes; n++) {
            leaders[n] = topo.nodeLeader(n);
        }
        int rank = boot.rank();
        int me = topo.nodeOf(rank);
        boolean leader = leaders[me] == rank;
        Path path = cfg.shmDir().resolve("sharp4j-" + boot.jobId() + "-cluster");
        int slot = cfg.slotBytes();
        long size = ShmLevel.size(nodes, slot, 0, 0);
        // Node leaders wait across nodes a little longer than ranks wait inside a node, so that the
        // rank next to a failure times out first and its precise blame reaches everyone.
        WaitPolicy p = engine.waiter().policy();
        Waiter waiter = new Waiter(p.withTimeout(p.timeoutNanos + Math.max(1_000_000_000L, p.timeoutNanos / 10)), engine);
        Segment seg = null;
        try {
            if (rank == 0) {
                seg = Segment.create(path, size, ShmLevel.touchBytes(nodes, slot, 0));
                CleanupOnExit.register(path);
            }
            ShmInterNode step = rank == 0 ? new ShmInterNode(seg, nodes, 0, leaders, cfg.tuning().treeRadix(), slot,
                    waiter, rank, true) : null;
            boot.barrier();
            if (leader && rank != 0) {
                seg = Segment.open(path, size);
                step = new ShmInterNode(seg, nodes, me, leaders, cfg.tuning().treeRadix(), slot, waiter, rank, false);
                step.level().checkHeader();
            }
            boot.barrier();
            return step;
        } finally {
            if (rank == 0) {
                Segment.unlink(path);
                CleanupOnExit.unregister(path);
            }
        }
    }
}
