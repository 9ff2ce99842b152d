package org.sharp4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
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
}
