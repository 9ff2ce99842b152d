package org.sharp4j.sharp;

import org.sharp4j.ThreadRanks;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.sharp4j.sharp.SharpTestSupport.config;
import static org.sharp4j.sharp.SharpTestSupport.map;
import static org.sharp4j.sharp.SharpTestSupport.plus;
import static org.sharp4j.sharp.SharpTestSupport.sharpOn;
import static org.sharp4j.sharp.SharpTestSupport.with;

import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.sharp4j.launch.Info;

/** {@code sharp4j info} with the SHARP emulator: found and initialised; found but its init failing. */
class InfoWithSharpTest {
    static String info(int ranks, int nodes) {
        AtomicReference<String> out = new AtomicReference<>();
        ThreadRanks.run(ranks, config(nodes, 1), comm -> {
            String r = Info.report(comm);
            if (comm.rank() == 0) {
                out.set(r);
            }
        });
        System.out.println(out.get());
        return out.get();
    }

    @Test
    void sharpFoundAndInitialised() {
        with(sharpOn(), map(), () -> {
            String r = info(4, 2);
            assertTrue(r.contains("SHARP: found (") && r.contains(SharpProvider.class.getName()), r);
            assertTrue(r.contains("usable here; initialised (phase 3 is SHARP"), r);
            assertTrue(r.contains("inter-node phase in use: SHARP"), r);
        });
    }

    @Test
    void sharpFoundButInitFails() {
        try (SharpTestSupport.LogCapture log = new SharpTestSupport.LogCapture()) {
            with(plus(sharpOn(), SharpSettings.MODE, "auto", SharpSettings.MIN_NODES, "2"), map("SHARP_EMU_FAIL_INIT", "-11"), () -> {
                String r = info(4, 2);
                assertTrue(r.contains("SHARP: found (") && r.contains("not initialised"), r);
                assertTrue(!r.contains("inter-node phase in use: SHARP"), r);
                // why, in the report itself, with sharp_coll_strerror's text
                assertTrue(r.contains("not initialised: ") && r.contains("sharp_coll_init failed with -11 (Cannot create SHARP job)"), r);
                log.assertSharpWarnings(1, "Cannot create SHARP job");
            });
        }
    }
}
