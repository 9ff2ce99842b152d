package org.sharp4j.fallback;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.bootstrap.Bootstrap;
import org.sharp4j.bootstrap.ThreadBootstrap;
import org.sharp4j.coll.CallStatus;
import org.sharp4j.coll.Desc;
import org.sharp4j.fallback.transport.Transport;
import org.sharp4j.fallback.ucx.UcxTransport;
import org.sharp4j.tuning.Collective;
import org.slf4j.LoggerFactory;

/**
 * Closing the host path over real UCX while another node leader is still inside the last call.
 * A Reduce's non-root leaders return once their part is handed over, and may close at once; the
 * root may still be reading. Closing took their UCX endpoints away under it: the root failed with
 * "node leader ... disconnected: Endpoint timeout" (seen: 3 namespace hosts, 16 MiB Reduce, then
 * close; the tuner's sweep at 3 hosts failed the same way between its communicators). The leaders
 * now meet before they close.
 */
class UcxCloseTest {
    private static final long TIMEOUT = TimeUnit.SECONDS.toNanos(60);
    /** The steps' timeout where a leader dies: the meeting may have to run into it (see that test). */
    private static final long SHORT_TIMEOUT = TimeUnit.SECONDS.toNanos(8);

    @BeforeAll
    static void ucxPresent() {
        assertNull(UcxTransport.loadError(), "UCX must load on the test machine (.ci/setup.sh installs libucx0)");
    }

    @Test
    void leadersThatCloseRightAfterAReduceDoNotFailARootStillInIt() {
        final int n = 3;
        final int count = 2 << 20; // 16 MiB of doubles: parts in flight, rendezvous messages
        final long seed = 7;
        int[] leaders = {0, 1, 2};
        HostStep[] steps = new HostStep[n];
        List<Bootstrap> boots = ThreadBootstrap.group(n, 60_000);
        String[] result = new String[n];
        Throwable[] errs = Team.run(n, 120_000, node -> {
            try (HostStep step = new HostStep(UcxTransport.connect(boots.get(node), leaders, Map.of("TLS", "tcp"), TIMEOUT),
                    Team.table(null, n), Team.waiter(TIMEOUT, steps, node), "t")) {
                steps[node] = step;
                ByteBuffer buf = ByteBuffer.allocateDirect(count * 8).order(ByteOrder.nativeOrder());
                for (int call = 0; call < 3; call++) {
                    Inputs.fill(buf, 0, DataType.DOUBLE, Op.SUM, seed + call, node, count);
                    if (node == 0 && call == 2) {
                        Thread.sleep(1_500); // the root lags behind the leaders that go ahead
                    }
                    CallStatus st = new CallStatus();
                    step.reduce(buf, 0, count, DataType.DOUBLE, Op.SUM, 0,
                            Desc.make(Collective.REDUCE, DataType.DOUBLE, Op.SUM, 0, count), st, false);
                    assertTrue(st.ok(), "call " + call + ": " + st);
                    if (node == 0) {
                        result[call] = Inputs.check(buf, 0, DataType.DOUBLE, Op.SUM, seed + call, n, count);
                    }
                }
            }
        });
        noErrors(errs);
        for (int call = 0; call < 3; call++) {
            assertNull(result[call], "the root's result of call " + call);
        }
    }

    /**
     * A leader that dies after the last call (its transport goes away without the meeting): the
     * others' close still returns, within the timeout, and each says at WARN that the meeting ended
     * early, naming a leader. Before, the miss was logged at DEBUG only, so a node lost at the end
     * of a job went unreported. How the others learn it depends on UCX: usually the endpoint to the
     * dead leader fails within a second ("disconnected", naming it), but on a loaded machine (a CI
     * run) no endpoint error came and the meeting ran into the timeout; so the steps here have a
     * short one, and a "disconnected" WARN must name the dead leader.
     */
    @Test
    void aLeaderGoneBeforeTheMeetingIsNamedAtWarnAndCloseStillReturns() throws Exception {
        final int n = 3;
        final int dead = 2;
        int[] leaders = {0, 1, 2};
        HostStep[] steps = new HostStep[n];
        Transport[] trs = new Transport[n];
        List<Bootstrap> boots = ThreadBootstrap.group(n, 60_000);
        long[] closeNanos = new long[n];
        ch.qos.logback.classic.Logger logger =
                (ch.qos.logback.classic.Logger) LoggerFactory.getLogger("org.sharp4j.fallback");
        ListAppender<ILoggingEvent> app = new ListAppender<>();
        app.start();
        logger.addAppender(app);
        Throwable[] errs;
        try {
            errs = Team.run(n, 120_000, node -> {
                trs[node] = UcxTransport.connect(boots.get(node), leaders, Map.of("TLS", "tcp"), TIMEOUT);
                steps[node] = new HostStep(trs[node], Team.table(null, n), Team.waiter(SHORT_TIMEOUT, steps, node), "t");
                ByteBuffer buf = ByteBuffer.allocateDirect(64).order(ByteOrder.nativeOrder());
                CallStatus st = new CallStatus();
                steps[node].allreduce(buf, 0, 8, DataType.DOUBLE, Op.SUM,
                        Desc.make(Collective.ALLREDUCE, DataType.DOUBLE, Op.SUM, 0, 8), st, false);
                assertTrue(st.ok(), "allreduce: " + st);
                if (node == dead) {
                    trs[node].closeAfterFailure(); // gone: no meeting, no goodbye
                    return;
                }
                Thread.sleep(300); // the dead leader's endpoints are down before the meeting starts
                long t0 = System.nanoTime();
                steps[node].close();
                closeNanos[node] = System.nanoTime() - t0;
            });
        } finally {
            logger.detachAppender(app);
        }
        noErrors(errs);
        List<String> warns = new ArrayList<>();
        synchronized (app.list) {
            for (ILoggingEvent e : app.list) {
                if (e.getLevel().isGreaterOrEqual(Level.WARN) && e.getFormattedMessage().contains("meeting before close")) {
                    warns.add(e.getFormattedMessage());
                }
            }
        }
        for (int r = 0; r < n; r++) {
            if (r != dead) {
                assertTrue(closeNanos[r] < 3 * SHORT_TIMEOUT, "leader " + r + "'s close waited "
                        + closeNanos[r] / 1_000_000 + " ms for a dead leader");
            }
        }
        assertEquals(n - 1, warns.size(), "one WARN about the missed meeting per leader left: " + warns);
        for (String w : warns) {
            assertTrue(w.contains("rank "), "the WARN names a leader: " + w);
            if (w.contains("disconnected")) {
                assertTrue(w.contains("rank " + dead) || w.contains("node " + dead), "a disconnect names the dead leader: " + w);
            }
        }
    }

    private static void noErrors(Throwable[] errs) {
        for (int r = 0; r < errs.length; r++) {
            if (errs[r] != null) {
                throw new AssertionError("leader " + r + ": " + errs[r], errs[r]);
            }
        }
    }
}
