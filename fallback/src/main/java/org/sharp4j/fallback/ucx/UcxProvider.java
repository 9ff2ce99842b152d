package org.sharp4j.fallback.ucx;

import java.util.Map;
import org.sharp4j.fallback.HostStep;
import org.sharp4j.spi.InterNodeContext;
import org.sharp4j.spi.InterNodeProvider;
import org.sharp4j.spi.InterNodeStep;
import org.sharp4j.tuning.CompiledTable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The UCX host path for phase 3 (registered in
 * {@code META-INF/services/org.sharp4j.spi.InterNodeProvider}): the k-nomial algorithms of
 * {@link HostStep} over a {@link UcxTransport} among the node leaders.
 *
 * <p>Priority 10: used between real hosts; on one host the shared-memory path (100) wins unless
 * {@code sharp4j.internode=ucx} forces this one. Unavailable (and the reason logged by the
 * engine) where jucx or UCX's native libraries do not load. UCX settings: {@code
 * sharp4j.ucx.tls}, {@code sharp4j.ucx.net.devices}, {@code sharp4j.ucx.split} and {@code
 * sharp4j.ucx.tcp.congestion}, or UCX's own {@code UCX_*} variables
 * (see {@link UcxTransport}).
 */
public final class UcxProvider implements InterNodeProvider {
    private static final Logger LOG = LoggerFactory.getLogger(UcxProvider.class);

    @Override
    public String name() {
        return "UCX k-nomial";
    }

    @Override
    public String id() {
        return "ucx";
    }

    @Override
    public int priority() {
        return 10;
    }

    @Override
    public String unavailableReason(InterNodeContext ctx) {
        // Only node leaders talk UCX: the other ranks never load jucx (nor extract its library).
        return ctx == null || ctx.nodeLeader() ? UcxTransport.loadError() : null;
    }

    /** Collective: the transport among the node leaders (every rank takes part in its two exchanges). */
    @Override
    public InterNodeStep create(InterNodeContext ctx, InterNodeStep hostPath) {
        Map<String, String> ucx = UcxTransport.configFromProperties(System.getProperties());
        long timeout = ctx.waiter().policy().timeoutNanos;
        UcxTransport t = UcxTransport.connect(ctx.bootstrap(), ctx.nodeLeaders(), ucx, timeout, UcxTransport.DEFAULT_POOL,
                System.getProperty(UcxTransport.SPLIT_PROPERTY, "auto"), System.getProperty(UcxTransport.CONGESTION_PROPERTY, "auto"));
        if (t == null) {
            return null;
        }
        try {
            CompiledTable table = ctx.config().tuningTable().compile(ctx.topology().nodeCount(), ctx.topology().maxRanksPerNode());
            if (ctx.rank() == 0) {
                String lib = UcxTransport.libucpPath();
                LOG.info("sharp4j: UCX k-nomial between {} node leaders, {}{}{}; libucp {} (UCX_LOG_LEVEL=info shows the"
                        + " lanes UCX picked)", t.peers(), UcxTransport.describeConfig(ucx),
                        t.split() ? ", long messages from a send worker" : "",
                        t.congestion() == null ? "" : ", TCP congestion control " + t.congestion(), lib != null ? lib : "(path unknown)");
            }
            if (ctx.rank() == 0 && t.congestionRefused() != null) { // once per job, not once per node
                org.sharp4j.spi.Warnings.warn(LOG, "sharp4j: rank {}: {}={} refused by the kernel: {}; UCX's sockets keep"
                        + " the system's congestion control", ctx.rank(), UcxTransport.CONGESTION_PROPERTY,
                        System.getProperty(UcxTransport.CONGESTION_PROPERTY, "auto"), t.congestionRefused());
            }
            return new HostStep(t, table, ctx.waiter(), name(), HostStep.DEFAULT_FRAG_BYTES, ctx.config().interPipeline(),
                    ctx.config().interFragment() > 0 ? ctx.config().interFragment()
                            : HostStep.partFragBytes(t.peers(), HostStep.DEFAULT_FRAG_BYTES));
        } catch (RuntimeException | Error e) {
            t.close();
            throw e;
        }
    }
}
