package org.sharp4j.sharp;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import org.sharp4j.Sharp4jException;
import org.sharp4j.bootstrap.Bootstrap;
import org.sharp4j.spi.InterNodeContext;
import org.sharp4j.tuning.Collective;
import org.sharp4j.tuning.CompiledTable;
import org.sharp4j.spi.InterNodeProvider;
import org.sharp4j.spi.InterNodeStep;
import org.sharp4j.spi.RecoverableStep;
import org.sharp4j.spi.Warnings;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * SHARP in-network aggregation as the phase-3 offload (registered in
 * {@code META-INF/services/org.sharp4j.spi.InterNodeProvider}), switched by {@code sharp4j.sharp}
 * (see {@link SharpSettings}).
 *
 * <p>{@link #create} is collective over the bootstrap and keeps every rank in step:
 * <ol>
 *   <li>every node leader loads libsharp_coll; rank 0 draws the SHARP job id; one bootstrap
 *       allgather shares the id and any load error;</li>
 *   <li>the node leaders run {@code sharp_coll_init}, {@code sharp_coll_caps_query} and
 *       {@code sharp_coll_comm_init} (retried twice on ELOCK_FAILED) with the OOB callbacks over
 *       the host path ({@link OobChannel}), agreeing on each outcome over the host path; one
 *       bootstrap allgather then tells every rank the result and the capabilities (the masks are
 *       ANDed and the payload limit is the smallest, so the per-call dispatch is the same everywhere).</li>
 * </ol>
 * On a failure every rank makes the same choice: in auto mode rank 0 logs one WARN line (the
 * library's strerror text and the call that failed) and the host path is used; in on mode every
 * rank throws, naming the reason (for a missing library: every place looked at).
 */
public final class SharpProvider implements InterNodeProvider {
    private static final Logger LOG = LoggerFactory.getLogger(SharpProvider.class);
    private static final SecureRandom RANDOM = new SecureRandom();
    /** comm_init attempts when the library answers ELOCK_FAILED ("can retry"). */
    static final int COMM_INIT_ATTEMPTS = 3;

    @Override
    public String name() {
        return "SHARP";
    }

    /** Why the latest setup in this JVM fell back (the same text on every rank), for sharp4j info. */
    private static volatile String lastFailure;

    @Override
    public String setupFailure() {
        return lastFailure;
    }

    @Override
    public boolean offload() {
        return true;
    }

    @Override
    public String unavailableReason(InterNodeContext ctx) {
        SharpSettings s = SharpSettings.fromSystemProperties();
        if (s.mode == SharpSettings.Mode.OFF) {
            return SharpSettings.MODE + "=off";
        }
        int nodes = ctx.topology().nodeCount();
        if (s.minNodes > 0 && nodes < s.minNodes) {
            return nodes + " node(s), fewer than " + SharpSettings.MIN_NODES + "=" + s.minNodes;
        }
        if (!forced(s) && s.maxBytes < 0) {
            CompiledTable t = table(ctx);
            boolean chosen = false;
            for (Collective c : Collective.values()) {
                chosen |= t.sharpMaxBytes(c) > 0;
            }
            if (!chosen) {
                // Say why rather than stay silent (UCC users hit exactly that: #1164).
                return "the tuning table does not choose SHARP for " + nodes + " node(s) x " + t.ppn()
                        + " rank(s) per node (built-in: messages up to 2 KiB from 4 nodes); set " + SharpSettings.MODE
                        + "=on, " + SharpSettings.MIN_NODES + ", or a sharp4j.tune rule such as all:0-2k:sharp";
            }
        }
        if (s.mode == SharpSettings.Mode.ON || !ctx.nodeLeader()) {
            return null; // create() reports a missing library on every rank at once; only node leaders load it
        }
        try {
            SharpLibrary.load(System.getProperties(), System.getenv());
            return null;
        } catch (Sharp4jException e) {
            return e.getMessage();
        }
    }

    @Override
    public InterNodeStep create(InterNodeContext ctx, InterNodeStep hostPath) {
        SharpSettings s = SharpSettings.fromSystemProperties();
        Bootstrap boot = ctx.bootstrap();
        boolean leader = hostPath != null;
        // A failed SHARP call is recovered on the host path without a host round on success
        // (SharpStep): that needs a host path that can run recovery collectives (UCX's).
        String notRecoverable = leader && !(hostPath instanceof RecoverableStep) ? "the host path (" + hostPath.name()
                + ") cannot recover failed SHARP calls; use the UCX host path (sharp4j.internode=ucx)" : null;
        byte[][] rec = boot.allgather(notRecoverable == null ? new byte[0] : notRecoverable.getBytes(StandardCharsets.UTF_8));
        for (int r = 0; r < rec.length; r++) {
            if (rec[r].length > 0) {
                return giveUp(boot, s, hostPath, "rank " + r + ": " + new String(rec[r], StandardCharsets.UTF_8));
            }
        }
        int nodes = ctx.topology().nodeCount();
        int node = ctx.node();

        // Round 1: the library on every node leader, the job id from rank 0.
        SharpLibrary lib = null;
        String err = null;
        if (leader) {
            try {
                lib = SharpLibrary.load(System.getProperties(), System.getenv());
            } catch (Sharp4jException e) {
                err = e.getMessage();
            }
        }
        long jobId = 0;
        if (boot.rank() == 0) {
            do {
                jobId = RANDOM.nextLong() & Long.MAX_VALUE;
            } while (jobId == 0);
        }
        byte[][] all = boot.allgather(encode(err, jobId));
        jobId = ByteBuffer.wrap(all[0]).getLong(0);
        String reason = firstError(all);
        if (reason != null) {
            return giveUp(boot, s, hostPath, "libsharp_coll cannot be used: " + reason);
        }

        // Round 2: context and communicator of the node leaders, OOB over the host path.
        SharpTeam team = null;
        String failure = null;
        if (leader) {
            OobChannel oob = new OobChannel(hostPath, node, nodes);
            team = new SharpTeam(lib, oob);
            try {
                failure = setUp(team, jobId, collTimeoutMillis(ctx));
            } catch (RuntimeException | Error e) { // e.g. a peer failure seen inside an OOB callback
                team.close();
                throw e;
            }
            if (failure != null) {
                team.close();
                team = null;
            }
        }
        // What every leader must use alike: capability masks (ANDed), payload, chunk and per-collective
        // size limits (the smallest), so that every call is dispatched and cut the same way everywhere.
        CompiledTable table = table(ctx);
        long[] mine = new long[SHARED_WORDS];
        if (team != null) {
            mine[1] = team.dtypes;
            mine[2] = team.reduceOps;
            mine[3] = team.payload;
            mine[4] = team.featureMask;
            mine[5] = team.tagDtypes;
            mine[6] = s.chunkBytes >= 0 ? s.chunkBytes : team.payload;
            mine[PIPELINE_WORD] = s.pipeline > 0 ? s.pipeline : Long.MAX_VALUE; // unset: the table's
            for (Collective c : Collective.values()) {
                long fromTable = table.sharpMaxBytes(c) - 1;
                mine[7 + c.ordinal()] = s.maxBytes >= 0 ? s.maxBytes
                        : forced(s) ? Math.max(team.payload, fromTable) : fromTable >= 0 ? fromTable : -1;
            }
        }
        all = boot.allgather(leader ? encode(failure, mine) : new byte[0]);
        reason = firstError(all);
        if (reason != null) {
            if (team != null) {
                team.close();
            }
            return giveUp(boot, s, hostPath, reason);
        }
        long[] agreed = new long[SHARED_WORDS];
        java.util.Arrays.fill(agreed, Long.MAX_VALUE);
        agreed[1] = agreed[2] = agreed[4] = agreed[5] = -1;
        for (byte[] a : all) {
            if (a.length > 0) {
                ByteBuffer b = ByteBuffer.wrap(a);
                for (int i = 1; i < SHARED_WORDS; i++) {
                    long v = b.getLong(8 * i);
                    boolean mask = i == 1 || i == 2 || i == 4 || i == 5;
                    agreed[i] = mask ? agreed[i] & v : Math.min(agreed[i], v);
                }
            }
        }
        long dtypes = agreed[1];
        long ops = agreed[2];
        long payload = agreed[3];
        lastFailure = null; // set up on every node leader
        if (!leader) {
            return null;
        }
        long[] maxBytes = new long[Collective.values().length];
        for (Collective c : Collective.values()) {
            maxBytes[c.ordinal()] = agreed[7 + c.ordinal()];
        }
        int chunk = (int) Math.max(8, Math.min(Math.min(agreed[6], payload), SharpTeam.WINDOW) & ~7L);
        // sharp4j.sharp.pipeline where some leader set it (the smallest), else the table's per call (the same job-wide)
        int pipeline = agreed[PIPELINE_WORD] == Long.MAX_VALUE ? 0 : (int) agreed[PIPELINE_WORD];
        long sat = (agreed[4] & SharpAbi.FEATURE_SAT) != 0 ? satThreshold() : Long.MAX_VALUE;
        if (boot.rank() == ctx.nodeLeaders()[0]) {
            LOG.debug("sharp4j: SHARP team of {} node leaders from {} (job id {}): dtypes 0x{}, ops 0x{}, payload {} B, "
                    + "chunk {} B, streaming from {} B, max bytes {}, {}", nodes, lib.file(), Long.toHexString(jobId),
                    Long.toHexString(dtypes), Long.toHexString(ops), payload, chunk, sat == Long.MAX_VALUE ? "never" : sat,
                    java.util.Arrays.toString(maxBytes), s);
        }
        int[] leaders = ctx.nodeLeaders();
        return new SharpStep((RecoverableStep) hostPath, team, ctx.waiter(), dtypes, ops, maxBytes, s.maxFailures, node, nodes,
                leaders[(node + 1) % nodes], ctx.config().slotBytes(), chunk, pipeline, table, sat);
    }

    /**
     * Smallest operation sent with streaming aggregation where the job reports SAT: the library's
     * own SHARP_COLL_SAT_THRESHOLD when the user set it (it is set alike on every rank of a job),
     * else its default, 16 KiB.
     */
    static long satThreshold() {
        String v = System.getenv("SHARP_COLL_SAT_THRESHOLD");
        if (v != null && !v.isBlank()) {
            try {
                return Math.max(1, Long.parseLong(v.trim()));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("SHARP_COLL_SAT_THRESHOLD is not a number of bytes: '" + v + "'", e);
            }
        }
        return 16384;
    }

    /** The library's coll_timeout: sharp4j.timeout (ms, at most Integer.MAX_VALUE), so nothing inside it waits forever. */
    private static int collTimeoutMillis(InterNodeContext ctx) {
        return (int) Math.min(Integer.MAX_VALUE, Math.max(1, ctx.config().timeoutNanos() / 1_000_000L));
    }

    /** SHARP used whatever the tuning table says (within the capabilities). */
    private static boolean forced(SharpSettings s) {
        return s.mode == SharpSettings.Mode.ON || s.minNodes > 0;
    }

    private static CompiledTable table(InterNodeContext ctx) {
        return ctx.config().tuningTable().compile(ctx.topology().nodeCount(), ctx.topology().maxRanksPerNode());
    }

    /** Init, caps, comm init with the agreements between node leaders; null on success, else the reason. */
    private static String setUp(SharpTeam team, long jobId, int collTimeoutMillis) {
        OobChannel oob = team.oob;
        int rc = team.init(jobId, collTimeoutMillis);
        long o = oob.agree(rc, OobChannel.SETUP_DESC, null);
        if (o != OobChannel.ALL_OK) {
            return describe(team, "sharp_coll_init", o, 1);
        }
        rc = team.queryCaps();
        o = oob.agree(rc, OobChannel.SETUP_DESC, null);
        if (o != OobChannel.ALL_OK) {
            return describe(team, "sharp_coll_caps_query", o, 1);
        }
        for (int attempt = 1; ; attempt++) {
            rc = team.commInit();
            o = oob.agree(rc, OobChannel.SETUP_DESC, null);
            if (o == OobChannel.ALL_OK) {
                return null;
            }
            if (OobChannel.failedCode(o) != SharpAbi.ELOCK_FAILED || attempt == COMM_INIT_ATTEMPTS) {
                return describe(team, "sharp_coll_comm_init", o, attempt);
            }
            try {
                Thread.sleep(10L * attempt); // the tree lock is held by another job: try again shortly
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return describe(team, "sharp_coll_comm_init", o, attempt);
            }
        }
    }

    private static String describe(SharpTeam team, String call, long outcome, int attempts) {
        int code = OobChannel.failedCode(outcome);
        return call + " failed with " + code + " (" + team.lib.strerror(code) + ") on node " + OobChannel.failedNode(outcome)
                + (attempts > 1 ? " after " + attempts + " attempts" : "");
    }

    /** The same on every rank: on mode throws, auto mode logs once (rank 0) and keeps the host path. */
    private static InterNodeStep giveUp(Bootstrap boot, SharpSettings s, InterNodeStep hostPath, String reason) {
        lastFailure = reason;
        if (s.mode == SharpSettings.Mode.ON) {
            if (hostPath != null) {
                hostPath.close();
            }
            throw new Sharp4jException(SharpSettings.MODE + "=on but SHARP cannot be used: " + reason);
        }
        if (boot.rank() == 0) {
            Warnings.warn(LOG, "sharp4j: SHARP not used, falling back to {}: {}", hostPath != null ? hostPath.name() : "the host path",
                    reason);
        }
        return hostPath;
    }

    /**
     * Words of the setup allgather: job id, dtypes, ops, payload, features, tag dtypes, chunk, max bytes per collective,
     * sharp4j.sharp.pipeline (Long.MAX_VALUE where unset).
     */
    private static final int PIPELINE_WORD = 7 + Collective.values().length;
    private static final int SHARED_WORDS = PIPELINE_WORD + 1;
    private static final int HEADER = 8 * SHARED_WORDS;

    private static byte[] encode(String err, long... words) {
        byte[] e = err == null ? new byte[0] : err.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(HEADER + e.length);
        for (long w : words) {
            b.putLong(w);
        }
        return b.position(HEADER).put(e).array();
    }

    /** The first rank's error text, prefixed with its rank, or null. */
    private static String firstError(byte[][] all) {
        for (int r = 0; r < all.length; r++) {
            if (all[r].length > HEADER) {
                return "rank " + r + ": " + new String(all[r], HEADER, all[r].length - HEADER, StandardCharsets.UTF_8);
            }
        }
        return null;
    }
}
