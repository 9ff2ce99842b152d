package org.sharp4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.sharp4j.bootstrap.Bootstrap;
import org.sharp4j.bootstrap.ThreadBootstrap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sharp4j.spi.InterNodeContext;
import org.sharp4j.spi.InterNodeProvider;
import org.sharp4j.spi.InterNodeStep;

/** Phase 3 providers: an offload wraps the host path when every rank accepts it, and is skipped when one objects. */
class InterNodeProviderTest {
    static final Config CFG = Config.defaults().withSimulatedTopology(2, 1).withWarmupRounds(0);

    @AfterEach
    void off() {
        CountingOffloadProvider.mode = null;
    }

    @Test
    void anOffloadEveryRankAcceptsWrapsTheHostPath() {
        CountingOffloadProvider.mode = "all";
        CountingOffloadProvider.CALLS.set(0);
        ThreadRanks.run(4, CFG, comm -> {
            assertEquals("counting offload over shared memory (simulated nodes on one host)", comm.interNode());
            long[] sum = new long[1];
            comm.allreduce(new long[] {comm.rank()}, 0, sum, 0, 1, Op.SUM);
            assertArrayEquals(new long[] {6}, sum);
            comm.barrier();
        });
        assertEquals(4, CountingOffloadProvider.CALLS.get(), "2 node leaders x (allreduce + barrier)");
    }

    @Test
    void oneObjectingRankKeepsEveryRankOnTheHostPath() {
        CountingOffloadProvider.mode = "not-rank-3";
        CountingOffloadProvider.CALLS.set(0);
        ThreadRanks.run(4, CFG, comm -> {
            assertTrue(comm.interNode().startsWith("shared memory"), comm.interNode());
            comm.barrier();
        });
        assertEquals(0, CountingOffloadProvider.CALLS.get());
    }

    /** What the UCX plugin would do on a class path without jucx: a class it needs is missing. */
    public static final class NeedsMissingClass implements InterNodeProvider {
        public NeedsMissingClass() {
            throw new NoClassDefFoundError("org/openucx/jucx/ucp/UcpContext");
        }

        @Override
        public String id() {
            return "broken";
        }

        @Override
        public String name() {
            return "broken";
        }

        @Override
        public int priority() {
            return 100;
        }

        @Override
        public boolean offload() {
            return false;
        }

        @Override
        public String unavailableReason(InterNodeContext ctx) {
            return null;
        }

        @Override
        public InterNodeStep create(InterNodeContext ctx, InterNodeStep hostPath) {
            throw new AssertionError();
        }
    }

    /**
     * A registered inter-node plugin that cannot be instantiated is passed over (the job runs on the
     * next host path) instead of ending in ServiceConfigurationError, and the error that says no
     * host path is usable names it.
     */
    @Test
    void anInterNodePluginThatCannotLoadIsSkippedAndNamed(@TempDir Path tmp) throws Exception {
        Path services = Files.createDirectories(tmp.resolve("META-INF/services"));
        Files.writeString(services.resolve(InterNodeProvider.class.getName()), NeedsMissingClass.class.getName() + "\n",
                StandardCharsets.UTF_8);
        Thread self = Thread.currentThread();
        ClassLoader before = self.getContextClassLoader();
        try (URLClassLoader l = new URLClassLoader(new URL[] {tmp.toUri().toURL()}, InterNodeProviderTest.class.getClassLoader())) {
            self.setContextClassLoader(l); // the rank threads inherit it; plugins are looked up through it
            ThreadRanks.run(4, CFG, comm -> {
                assertTrue(comm.interNode().startsWith("shared memory"), comm.interNode());
                long[] sum = new long[1];
                comm.allreduce(new long[] {comm.rank()}, 0, sum, 0, 1, Op.SUM);
                assertArrayEquals(new long[] {6}, sum);
            });
            Throwable[] errors = ThreadRanks.runCollect(4, CFG.withInterNode("broken"), comm -> { }, 120_000);
            for (Throwable e : errors) {
                assertTrue(e instanceof Sharp4jException, String.valueOf(e));
                assertTrue(e.getMessage().contains("sharp4j.internode=broken names no inter-node host path on the class path"), e.getMessage());
                assertTrue(e.getMessage().contains("plugin(s) skipped: Provider " + NeedsMissingClass.class.getName()
                        + " could not be instantiated: java.lang.NoClassDefFoundError: org/openucx/jucx/ucp/UcpContext"), e.getMessage());
            }
        } finally {
            self.setContextClassLoader(before);
        }
    }

    /** Every rank fails, and the message names the Maven artifact to add, not only the provider id. */
    private static void assertEveryRankNames(Throwable[] errs, String... parts) {
        for (int r = 0; r < errs.length; r++) {
            assertNotNull(errs[r], "rank " + r + " did not fail");
            Throwable t = errs[r];
            while (!(t instanceof Sharp4jException) && t.getCause() != null) {
                t = t.getCause();
            }
            assertTrue(t instanceof Sharp4jException, "rank " + r + ": " + errs[r]);
            for (String p : parts) {
                assertTrue(t.getMessage().contains(p), "rank " + r + ": '" + p + "' missing in: " + t.getMessage());
            }
        }
    }

    @Test
    void forcingUcxWithoutTheFallbackModuleNamesItsArtifact() {
        // the hierarchy's test class path has no UCX provider, as for a user who depends on sharp4j-hierarchy only
        Throwable[] errs = ThreadRanks.runCollect(2, CFG.withInterNode("ucx"), comm -> { }, 60_000);
        assertEveryRankNames(errs, "sharp4j.internode=ucx", "org.sharp4j:sharp4j-fallback", "org.sharp4j:sharp4j,");
    }

    @Test
    void sharpOnWithoutTheSharpModuleNamesItsArtifact() {
        System.setProperty("sharp4j.sharp", "on");
        try {
            // one node too: the missing module shows on the first run, not only on the cluster
            Throwable[] errs = ThreadRanks.runCollect(2, Config.defaults().withWarmupRounds(0), comm -> { }, 60_000);
            assertEveryRankNames(errs, "sharp4j.sharp=on", "org.sharp4j:sharp4j-sharp-jni");
        } finally {
            System.clearProperty("sharp4j.sharp");
        }
    }

    @Test
    void ranksOnDifferentHostsWithoutUcxNameTheFallbackArtifact() throws InterruptedException {
        // two "hosts" (host names differ): shared memory objects, and this class path has no UCX host path
        List<Bootstrap> boots = ThreadBootstrap.group(2, 60_000);
        Throwable[] errs = new Throwable[2];
        Thread[] ts = new Thread[2];
        for (int r = 0; r < 2; r++) {
            final int rank = r;
            ts[r] = new Thread(() -> {
                try (Communicator c = Sharp4j.create(boots.get(rank), Config.defaults().withWarmupRounds(0).withHostname("host-" + rank))) {
                    c.barrier();
                } catch (Throwable e) {
                    errs[rank] = e;
                }
            }, "rank-" + r);
            ts[r].setDaemon(true);
            ts[r].start();
        }
        for (Thread t : ts) {
            t.join(60_000);
        }
        assertEveryRankNames(errs, "2 nodes on different hosts", "the nodes are on different hosts",
                "the UCX host path is not on the class path: add the dependency org.sharp4j:sharp4j-fallback");
    }
}
