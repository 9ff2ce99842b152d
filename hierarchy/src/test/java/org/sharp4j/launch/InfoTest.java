package org.sharp4j.launch;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.sharp4j.Config;
import org.sharp4j.ThreadRanks;

/**
 * {@code sharp4j info} on hierarchy alone (neither sharp-jni nor fallback on the class path: it says what
 * to add), with an override string in force. The tuner's provenance checks are in the tuner's
 * TunerAndInfoTest, where both transports are on the class path.
 */
class InfoTest {
    @Test
    void infoWithoutSharpLibrary() {
        Config cfg = Config.defaults().withWarmupRounds(0).withSimulatedTopology(2, 1)
                .withTuneOverride("allreduce:0-64:tiled");
        AtomicReference<String> out = new AtomicReference<>();
        ThreadRanks.run(2, cfg, comm -> {
            String r = Info.report(comm);
            if (comm.rank() == 0) {
                out.set(r);
            }
        });
        String r = out.get();
        System.out.println(r);
        assertTrue(r.contains("2 rank(s), 2 node(s) (simulated)"), r);
        assertTrue(r.contains("node 1: 1 rank(s), 1 socket(s), node leader rank 1"), r);
        assertTrue(r.contains("SHARP: not found") && r.contains("the sharp-jni module is not on the class path")
                && r.contains("not initialised"), r);
        assertTrue(r.contains("UCX: not found") && r.contains("add the dependency org.sharp4j:sharp4j-fallback"), r);
        assertTrue(r.contains("add the dependency org.sharp4j:sharp4j-sharp-jni"), r);
        assertTrue(r.contains("inter-node phase in use: shared memory"), r);
        assertTrue(r.contains("override string (Config.withTuneOverride)"), r);
        assertTrue(r.matches("(?s).*allreduce +intra 0-64 +tiled chunk=slot +<- Config.withTuneOverride rule 1.*\\[override string\\].*"), r);
        assertTrue(r.contains("effective settings"), r);
        // which kernels fold large messages: native where this build made them, else the Java form and why not
        assertTrue(r.contains("reduction kernels from 2 KiB: " + org.sharp4j.coll.Reductions.kernelsInUse()), r);
        assertTrue(org.sharp4j.coll.Reductions.kernelsInUse().startsWith("native") || r.contains("native not used: "), r);
        assertTrue(r.contains("stores for what other ranks read next, from 16 KiB: auto (streaming or ordinary"), r);
        // two simulated nodes: the cma Reduce (one socket of one node) does not apply, and says so
        assertTrue(r.contains("peer reads (cma, cma_split): no, cma and cma_split run as direct (a cma_split Allreduce as pipelined): several sockets or nodes"), r);
    }
}
