package org.sharp4j.coll;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.sharp4j.Config;
import org.sharp4j.Sharp4jException;
import org.sharp4j.bootstrap.Bootstrap;
import org.sharp4j.shm.Segment;
import org.sharp4j.shm.WaitPolicy;
import org.sharp4j.shm.Waiter;
import org.sharp4j.spi.InterNodeContext;
import org.sharp4j.spi.InterNodeProvider;
import org.sharp4j.spi.InterNodeStep;
import org.sharp4j.spi.KnownProviders;
import org.sharp4j.spi.Plugins;
import org.sharp4j.topology.Topology;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Chooses and builds phase 3. Collective over the bootstrap: every rank calls it, and every rank
 * makes the same choice: the usable host path with the highest priority (shared memory when all
 * nodes are simulated on one host, else a registered one such as UCX), then, around it, the first
 * usable offload (SHARP). "Usable" means no rank objected; objections are logged by rank 0.
 */
final class InterNodeSteps {
    private static final Logger LOG = LoggerFactory.getLogger(InterNodeSteps.class);

    /** The built-in host path: simulated nodes on one host meet in shared memory. */
    static final InterNodeProvider SHARED_MEMORY = new InterNodeProvider() {
        @Override
        public String name() {
            return "shared memory (simulated nodes on one host)";
        }

        @Override
        public String id() {
            return "shm";
        }

        @Override
        public int priority() {
            return 100; // on one host nothing beats it
        }

        @Override
        public String unavailableReason(InterNodeContext ctx) {
            return ctx.topology().singleHost() ? null : "the nodes are on different hosts";
        }

        @Override
        public InterNodeStep create(InterNodeContext ctx, InterNodeStep hostPath) {
            return createShm(ctx);
        }
    };

    private InterNodeSteps() {
    }

    /** Result of the choice: the step on this rank (null off node leaders) and its description. */
    static final class Choice {
        final InterNodeStep step;
        final String description;
        /** Whether an offload engaged on some node leader (the same on every rank). */
        final boolean offloaded;

        Choice(InterNodeStep step, String description) {
            this(step, description, false);
        }

        Choice(InterNodeStep step, String description, boolean offloaded) {
            this.step = step;
            this.description = description;
            this.offloaded = offloaded;
        }
    }

    static Choice create(Bootstrap boot, Config cfg, Topology topo, Engine engine) {
        List<String> skipped = new ArrayList<>(); // plugins that could not load, e.g. UCX's without jucx
        List<InterNodeProvider> registered = Plugins.load(InterNodeProvider.class, skipped);
        String notLoaded = skipped.isEmpty() ? "" : "; plugin(s) skipped: " + String.join("; ", skipped);
        // sharp4j.sharp is read by the SHARP module itself; when that module is missing nobody would, and
        // "on" (fail loudly rather than run without SHARP) would silently mean nothing. Checked on one node too,
        // so that a build that lacks the module fails on the first test, not on the cluster.
        String sharpMode = System.getProperty("sharp4j.sharp", "").trim().toLowerCase(java.util.Locale.ROOT);
        if ((sharpMode.equals("on") || sharpMode.equals("true") || sharpMode.equals("1"))
                && registered.stream().noneMatch(pr -> pr.offload() && pr.id().equals("sharp"))) {
            throw new Sharp4jException("sharp4j.sharp=" + sharpMode + " but the SHARP offload is not on the class path: "
                    + KnownProviders.addHint("sharp"));
        }
        if (topo.nodeCount() == 1) {
            return new Choice(null, "none (one node)");
        }
        // Node leaders wait across nodes a little longer than ranks wait inside a node, so that the
        // rank next to a failure times out first and its precise blame reaches everyone.
        WaitPolicy p = engine.waiter().policy();
        Waiter waiter = new Waiter(p.withTimeout(p.timeoutNanos + Math.max(1_000_000_000L, p.timeoutNanos / 10)), engine);
        InterNodeContext ctx = new InterNodeContext(boot, cfg, topo, waiter);
        List<InterNodeProvider> all = new ArrayList<>();
        all.add(SHARED_MEMORY);
        all.addAll(registered);
        List<InterNodeProvider> hosts = new ArrayList<>();
        List<InterNodeProvider> offloads = new ArrayList<>();
        for (InterNodeProvider pr : all) {
            (pr.offload() ? offloads : hosts).add(pr);
        }
        hosts.sort(Comparator.comparingInt(InterNodeProvider::priority).reversed());
        String forced = cfg.interNode();
        if (!forced.equals("auto")) {
            hosts.removeIf(h -> !h.id().equals(forced));
            if (hosts.isEmpty()) {
                String present = String.join(", ", all.stream().filter(h -> !h.offload()).map(InterNodeProvider::id)
                        .toArray(String[]::new)) + notLoaded;
                String hint = KnownProviders.addHint(forced);
                throw new Sharp4jException("sharp4j.internode=" + forced + (hint != null
                        ? " but that host path is not on the class path: " + hint + " (on the class path: " + present + ")"
                        : " names no inter-node host path on the class path (known: " + present + ")"));
            }
        }
        List<String> why = new ArrayList<>();
        InterNodeProvider host = null;
        for (InterNodeProvider pr : hosts) {
            String objection = agree(boot, pr, ctx);
            if (objection == null) {
                host = pr;
                break;
            }
            why.add(pr.name() + ": " + objection);
        }
        if (host == null) {
            throw new Sharp4jException("the job spans " + topo.nodeCount() + " nodes" + (topo.singleHost() ? " (simulated on one host)"
                    : " on different hosts") + " but no inter-node "
                    + "transport is usable" + (why.isEmpty() && skipped.isEmpty() ? "" : " (" + String.join("; ", why)
                            + (why.isEmpty() ? notLoaded.substring(2) : notLoaded) + ")")
                    + (!forced.equals("auto") ? " (forced by sharp4j.internode=" + forced + ")"
                            : all.stream().anyMatch(h -> h.id().equals("ucx")) ? "; or run all ranks on one host"
                            : ": the UCX host path is not on the class path: " + KnownProviders.addHint("ucx")
                                    + ", or run all ranks on one host"));
        }
        InterNodeStep step = host.create(ctx, null);
        String description = host.name();
        boolean offloaded = false;
        for (InterNodeProvider off : offloads) {
            String objection = agree(boot, off, ctx);
            if (objection == null) {
                InterNodeStep wrapped = off.create(ctx, step);
                // An offload whose setup failed hands the host path back (and logs why); only the
                // node leaders can tell, so they say whether it engaged and every rank describes
                // phase 3 the same way.
                boolean engaged = step != null && wrapped != step;
                byte[][] said = boot.allgather(new byte[] {(byte) (engaged ? 1 : 0)});
                boolean any = false;
                for (byte[] b : said) {
                    any |= b[0] == 1;
                }
                step = wrapped;
                if (any) {
                    description = off.name() + " over " + description;
                    offloaded = true;
                }
                break;
            }
            if (boot.rank() == 0) {
                LOG.info("sharp4j: {} not used: {}", off.name(), objection);
            }
        }
        return new Choice(step, description, offloaded);
    }

    /** Null when every rank can use {@code pr}, else the first objection (with its rank). */
    private static String agree(Bootstrap boot, InterNodeProvider pr, InterNodeContext ctx) {
        String mine = pr.unavailableReason(ctx);
        byte[][] all = boot.allgather(mine == null ? new byte[0] : mine.getBytes(StandardCharsets.UTF_8));
        for (int r = 0; r < all.length; r++) {
            if (all[r].length > 0) {
                return "rank " + r + ": " + new String(all[r], StandardCharsets.UTF_8);
            }
        }
        return null;
    }

    private static InterNodeStep createShm(InterNodeContext ctx) {
        Bootstrap boot = ctx.bootstrap();
        Config cfg = ctx.config();
        Topology topo = ctx.topology();
        int nodes = topo.nodeCount();
        int[] leaders = ctx.nodeLeaders();
        int rank = boot.rank();
        int me = ctx.node();
        boolean leader = ctx.nodeLeader();
        Path path = cfg.shmDir().resolve("sharp4j-" + boot.jobId() + "-cluster");
        int slot = cfg.slotBytes();
        long size = ShmLevel.size(nodes, slot, 0, 0);
        Segment seg = null;
        try {
            if (leader) {
                CleanupOnExit.register(path); // any leader exiting while the name exists removes it
            }
            if (rank == 0) {
                seg = Segment.create(path, size);
            }
            ShmInterNode step = rank == 0 ? new ShmInterNode(seg, nodes, 0, leaders, cfg.tuning().treeRadix(), slot,
                    ctx.waiter(), rank, true) : null;
            boot.barrier();
            if (leader && rank != 0) {
                seg = Segment.open(path, size);
                step = new ShmInterNode(seg, nodes, me, leaders, cfg.tuning().treeRadix(), slot, ctx.waiter(), rank, false);
                step.level().checkHeader();
            }
            boot.barrier();
            return step;
        } finally {
            if (leader) {
                Segment.unlinkQuietly(path);
                CleanupOnExit.unregister(path);
            }
        }
    }
}
