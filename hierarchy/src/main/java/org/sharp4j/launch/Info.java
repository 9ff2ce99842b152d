package org.sharp4j.launch;

import java.util.ArrayList;
import java.util.List;
import org.sharp4j.Communicator;
import org.sharp4j.Config;
import org.sharp4j.Sharp4j;
import org.sharp4j.bootstrap.Bootstrap;
import org.sharp4j.coll.Engine;
import org.sharp4j.spi.InterNodeContext;
import org.sharp4j.spi.InterNodeProvider;
import org.sharp4j.spi.KnownProviders;
import org.sharp4j.spi.Plugins;
import org.sharp4j.topology.Topology;
import org.sharp4j.tuning.Collective;
import org.sharp4j.tuning.CompiledTable;
import org.sharp4j.tuning.Sizes;

/**
 * {@code sharp4j info}: what a communicator of this job looks like (nodes, sockets, leaders),
 * which inter-node paths were found and why they are (not) used, the tuning table in force with
 * the source of every rule, and the effective settings. Rank 0 prints.
 */
public final class Info {
    /** Where the SHARP offload lives when its module is on the class path. */
    static final String SHARP_PROVIDER_CLASS = "org.sharp4j.sharp.SharpProvider";

    private Info() {
    }

    public static void main(String[] args) {
        try (Communicator comm = Sharp4j.init()) {
            String r = report(comm);
            if (comm.rank() == 0) {
                System.out.print(r);
                System.out.flush();
            }
        }
    }

    /** The report (local: every rank can build it; only the local rank's view of leaders differs not at all). */
    public static String report(Communicator comm) {
        Engine e = comm.engine();
        Config cfg = e.config();
        Topology t = comm.topology();
        StringBuilder sb = new StringBuilder();
        sb.append("sharp4j info\n");
        sb.append("  job: ").append(comm.size()).append(" rank(s), ").append(t.nodeCount()).append(" node(s)")
                .append(t.simulated() ? " (simulated)" : "").append(t.singleHost() ? ", one host" : "").append('\n');
        for (int n = 0; n < t.nodeCount(); n++) {
            sb.append("  node ").append(n).append(": ").append(t.nodeRanks(n).length).append(" rank(s), ")
                    .append(t.socketCount(n)).append(cfg.groupByNuma() ? " NUMA group(s)" : " socket(s)")
                    .append(", node leader rank ").append(t.nodeLeader(n)).append('\n');
            for (int s = 0; s < t.socketCount(n); s++) {
                int[] rs = t.socketRanks(n, s);
                sb.append("    socket ").append(s).append(": ").append(rs.length).append(" rank(s) ")
                        .append(java.util.Arrays.toString(rs)).append(", leader rank ").append(t.socketLeader(n, s)).append('\n');
            }
        }
        sb.append("  inter-node phase in use: ").append(comm.interNode()).append('\n');

        List<InterNodeProvider> providers = new ArrayList<>();
        List<String> skipped = new ArrayList<>();
        providers.addAll(Plugins.load(InterNodeProvider.class, skipped));
        for (String s : skipped) {
            sb.append("  plugin skipped: ").append(s).append('\n');
        }
        InterNodeContext ctx = new InterNodeContext(new LocalOnly(comm.rank(), comm.size()), cfg, t, e.waiter());
        sb.append(sharpLine(providers, ctx, comm, t));
        sb.append(ucxLine(providers, ctx));

        CompiledTable table = e.table();
        sb.append("  tuning sources (lowest precedence first): ").append(cfg.tuningTable()).append('\n');
        for (String l : cfg.tuningTable().describeSources()) {
            sb.append("    ").append(l).append('\n');
        }
        sb.append("  active table for ").append(table.nodes()).append(" node(s), ").append(table.ppn())
                .append(" rank(s) per node (segment, choice <- the rule that set it [its provenance: measured on this cluster,"
                + " modelled, built in, table file, override string, legacy property]):\n");
        for (String l : table.describe()) {
            sb.append("    ").append(l).append('\n');
        }
        sb.append("  effective settings:\n");
        sb.append("    tree radix for 8 B allreduce / barrier: ").append(e.treeRadix(Collective.ALLREDUCE, 8)).append(" / ")
                .append(e.treeRadix(Collective.BARRIER, 0)).append(" (per call from the table)\n");
        sb.append("    allreduce: tree up to ").append(Math.max(-1, Math.min(table.tiledThreshold(Collective.ALLREDUCE), cfg.slotBytes())))
                .append(" B, then tiled (-1: tiled from 0; a tree message never exceeds the slot)\n");
        long sharpMax = table.sharpMaxBytes(Collective.ALLREDUCE);
        sb.append("    SHARP size limit (allreduce): ").append(sharpMax == 0 ? "SHARP not chosen by the table for this job shape"
                : Sizes.format(sharpMax) + " (exclusive)").append('\n');
        sb.append("    slot (chunk) ").append(cfg.slotBytes()).append(" B, shared buffer ").append(cfg.sharedBytes()).append(" B\n");
        sb.append("    wait ").append(e.waiter().policy()).append('\n');
        sb.append("    topology group ").append(cfg.groupByNuma() ? "numa" : "socket").append(", simulated nodes ")
                .append(cfg.simulatedNodes()).append(", simulated sockets ").append(cfg.simulatedSockets()).append('\n');
        sb.append("    shm dir ").append(cfg.shmDir()).append(", warm-up rounds ").append(cfg.warmupRounds()).append('\n');
        sb.append("    reduction kernels from 2 KiB: ").append(org.sharp4j.coll.Reductions.kernelsInUse()).append('\n');
        sb.append("    stores for what other ranks read next, from 16 KiB: ").append(cfg.stores())
                .append("auto".equals(cfg.stores()) ? " (streaming or ordinary, per call from this rank's timings)" : "").append('\n');
        String peer = e.peerReadsWhyNot();
        sb.append("    peer reads (cma, cma_split): ").append(peer == null ? "yes, the socket's ranks read each other's inputs"
                : "no, cma and cma_split run as direct (a cma_split Allreduce as pipelined): " + peer).append('\n');
        if (peer == null) {
            String gate = e.builtInCmaWhyNot();
            sb.append("    built-in cma and cma_split Reduces, cma_split Allreduces of 3+ ranks: ").append(gate == null ? "yes (reading another process is cheap here)"
                    : "no: " + gate).append('\n');
            String pair = e.builtInPairSplitWhyNot();
            sb.append("    built-in cma_split Allreduce of 2 ranks: ").append(pair == null ? "yes" : "no: " + pair).append('\n');
        }
        return sb.toString();
    }

    static String sharpLine(List<InterNodeProvider> providers, InterNodeContext ctx, Communicator comm, Topology t) {
        InterNodeProvider sharp = null;
        StringBuilder others = new StringBuilder();
        for (InterNodeProvider p : providers) {
            if (p.offload() && (p.getClass().getName().equals(SHARP_PROVIDER_CLASS)
                    || p.name().toLowerCase(java.util.Locale.ROOT).contains("sharp"))) {
                sharp = p;
            } else if (p.offload()) {
                String why;
                try {
                    why = p.unavailableReason(ctx);
                } catch (RuntimeException ex) {
                    why = ex.toString();
                }
                others.append("  other offload: ").append(p.name()).append(" (").append(p.getClass().getName()).append("): ")
                        .append(why == null ? "usable" : "unusable: " + why).append('\n');
            }
        }
        return sharpOnly(sharp, ctx, comm, t) + others;
    }

    private static String sharpOnly(InterNodeProvider sharp, InterNodeContext ctx, Communicator comm, Topology t) {
        if (sharp == null) {
            boolean classThere;
            try {
                Class.forName(SHARP_PROVIDER_CLASS, false, Info.class.getClassLoader());
                classThere = true;
            } catch (ClassNotFoundException | LinkageError ex) {
                classThere = false;
            }
            return "  SHARP: not found. Looked for an offload InterNodeProvider registered in META-INF/services ("
                    + "ServiceLoader) and for " + SHARP_PROVIDER_CLASS + ": "
                    + (classThere ? "the class is there but not registered"
                            : "the sharp-jni module is not on the class path (" + KnownProviders.addHint("sharp") + ")")
                    + "; not initialised\n";
        }
        String why;
        try {
            why = sharp.unavailableReason(ctx);
        } catch (RuntimeException ex) {
            why = "its availability check failed: " + ex;
        }
        boolean used = comm.interNode().contains(sharp.name());
        String state;
        if (used) {
            state = "initialised (phase 3 is " + comm.interNode() + ")";
        } else if (t.nodeCount() == 1) {
            state = "not initialised: one node, there is no inter-node phase";
        } else if (why != null) {
            state = "not initialised: " + why;
        } else if (sharp.setupFailure() != null) {
            state = "not initialised: " + sharp.setupFailure();
        } else {
            state = "not initialised: another rank objected or its initialisation failed (see the log of rank 0)";
        }
        return "  SHARP: found (" + sharp.name() + ", " + sharp.getClass().getName() + "); "
                + (why == null ? "usable here" : "unusable here: " + why) + "; " + state + "\n";
    }

    static String ucxLine(List<InterNodeProvider> providers, InterNodeContext ctx) {
        for (InterNodeProvider p : providers) {
            if (!p.offload() && p.name().toLowerCase(java.util.Locale.ROOT).contains("ucx")) {
                String why;
                try {
                    why = p.unavailableReason(ctx);
                } catch (RuntimeException ex) {
                    why = "its availability check failed: " + ex;
                }
                return "  UCX: found (" + p.name() + "); " + (why == null ? "usable" : "unusable: " + why) + "\n";
            }
        }
        return "  UCX: not found (no UCX host-path InterNodeProvider on the class path: " + KnownProviders.addHint("ucx") + ");"
                + " simulated nodes on one host use shared memory\n";
    }

    /** A bootstrap for local availability checks only: they must not communicate. */
    private static final class LocalOnly implements Bootstrap {
        private final int rank;
        private final int size;

        LocalOnly(int rank, int size) {
            this.rank = rank;
            this.size = size;
        }

        @Override
        public int rank() {
            return rank;
        }

        @Override
        public int size() {
            return size;
        }

        @Override
        public String jobId() {
            return "info";
        }

        @Override
        public byte[][] allgather(byte[] mine) {
            throw new UnsupportedOperationException("sharp4j info: availability checks must not communicate");
        }

        @Override
        public String name() {
            return "info (local checks only)";
        }

        @Override
        public void close() {
        }
    }
}
