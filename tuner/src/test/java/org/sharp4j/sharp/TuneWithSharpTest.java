package org.sharp4j.sharp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.sharp4j.sharp.SharpTestSupport.config;
import static org.sharp4j.sharp.SharpTestSupport.map;
import static org.sharp4j.sharp.SharpTestSupport.plus;
import static org.sharp4j.sharp.SharpTestSupport.sharpOn;
import static org.sharp4j.sharp.SharpTestSupport.with;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.sharp4j.Config;
import org.sharp4j.bootstrap.Bootstrap;
import org.sharp4j.bootstrap.ThreadBootstrap;
import org.sharp4j.tuner.Tuner;
import org.sharp4j.tuning.Algorithm;
import org.sharp4j.tuning.Collective;
import org.sharp4j.tuning.CompiledTable;
import org.sharp4j.tuning.TuningTable;
import org.sharp4j.tuner.Measurement;
import org.sharp4j.tuner.TuneTable;

/** {@code sharp4j tune} with the SHARP emulator: SHARP is measured against the host path per size, and SHARP forced on is refused. */
class TuneWithSharpTest {
    static List<Object> sweep(Config cfg, Tuner.Options o) throws Exception {
        List<Bootstrap> boots = ThreadBootstrap.group(2, 60_000);
        AtomicReference<Tuner.Result> res = new AtomicReference<>();
        List<Object> errors = new ArrayList<>();
        List<Thread> ts = new ArrayList<>();
        for (Bootstrap b : boots) {
            Thread t = new Thread(() -> {
                try {
                    Tuner.Result r = Tuner.run(b, cfg, o, Set.of(), m -> { }, b.rank() == 0 ? System.err : null);
                    if (b.rank() == 0) {
                        res.set(r);
                    }
                } catch (Throwable e) {
                    synchronized (errors) {
                        errors.add(e);
                    }
                }
            });
            t.setDaemon(true);
            t.start();
            ts.add(t);
        }
        for (Thread t : ts) {
            t.join(240_000);
        }
        List<Object> out = new ArrayList<>();
        out.add(res.get());
        out.add(errors);
        return out;
    }

    static Tuner.Options tiny() {
        Tuner.Options o = Tuner.Options.quick();
        o.collectives = EnumSet.of(Collective.ALLREDUCE, Collective.BARRIER);
        o.sizes = new long[] {8, 65536};
        o.interRadices = new int[] {2};
        o.pipelines = new int[] {4}; // the default depth only: the plain sharp candidate
        o.iterations = 20;
        o.warmup = 2;
        o.maxRounds = 2;
        return o;
    }

    @Test
    void sharpIsMeasuredAgainstTheHostPathPerSize() {
        with(plus(sharpOn(), SharpSettings.MODE, "auto"), map(), () -> {
            try {
                List<Object> r = sweep(config(2, 1), tiny());
                assertTrue(((List<?>) r.get(1)).isEmpty(), r.get(1).toString());
                Tuner.Result res = (Tuner.Result) r.get(0);
                // 2 nodes x 1 rank: no intra-node candidates; first what runs on no chosen spine: knomial:radix=2's
                // barrier (the spine), sharp (2 + barrier); then on the spine: knomial:radix=2 (2 sizes), sra:radix=2 (2);
                // point by point, every candidate of a point together
                List<String> got = res.measurements.stream().map(m -> m.candidate() + "@" + m.bytes()).toList();
                assertEquals(List.of("sharp@8", "sharp@65536", "knomial:radix=2@0", "sharp@0", "knomial:radix=2@8", "sra:radix=2@8",
                        "knomial:radix=2@65536", "sra:radix=2@65536"), got);
                assertTrue(res.measurements.stream().allMatch(m -> m.passes() == 2), res.measurements.toString());
                assertTrue(res.measurements.stream().allMatch(m -> m.layer().equals(Measurement.INTER) && m.nodes() == 2 && m.ppn() == 1));
                List<String> sec = TuneTable.section(res.measurements, 2, 1, TuneTable.GUARD);
                CompiledTable t = TuningTable.builtIn().withFileLines(sec, "tuned").compile(2, 1);
                boolean sharpAt8 = TuneTable.choose(res.measurements, TuneTable.GUARD).stream()
                        .anyMatch(c -> c.collective() == Collective.ALLREDUCE && c.bytes() == 8 && c.candidate().equals("sharp"));
                assertEquals(sharpAt8, t.interAlgorithm(Collective.ALLREDUCE, 8) == Algorithm.SHARP, sec.toString());
                assertEquals(sharpAt8, t.sharpMaxBytes(Collective.ALLREDUCE) > 0, sec.toString());
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        });
    }

    /**
     * Pipeline depths where SHARP is phase 3: with the emulator's payload cut to 4 KiB a 64 KiB allreduce is 17
     * operations, so depths 1 and 8 are measured there (not at 8 B, one operation), and the depth the choice
     * took is the one the written table gives the engine.
     */
    @Test
    void pipelineDepthsAreMeasuredWhereCallsSpanSeveralOperationsAndTheChoiceIsWritten() {
        with(plus(sharpOn(), SharpSettings.MODE, "auto"), map("SHARP_EMU_MAX_PAYLOAD", "4096"), () -> {
            try {
                Tuner.Options o = tiny();
                o.collectives = EnumSet.of(Collective.ALLREDUCE);
                o.pipelines = new int[] {1, 4, 8};
                List<Object> r = sweep(config(2, 1), o);
                assertTrue(((List<?>) r.get(1)).isEmpty(), r.get(1).toString());
                Tuner.Result res = (Tuner.Result) r.get(0);
                List<String> got = res.measurements.stream().map(m -> m.candidate() + "@" + m.bytes()).toList();
                assertEquals(List.of("sharp@8", "sharp@65536", "sharp:pipeline=1@65536", "sharp:pipeline=8@65536",
                        "knomial:radix=2@8", "sra:radix=2@8", "knomial:radix=2@65536", "sra:radix=2@65536"), got);
                List<String> sec = TuneTable.section(res.measurements, 2, 1, TuneTable.GUARD);
                CompiledTable t = TuningTable.builtIn().withFileLines(sec, "tuned").compile(2, 1);
                for (TuneTable.Choice c : TuneTable.choose(res.measurements, TuneTable.GUARD)) {
                    if (c.candidate().startsWith("sharp")) {
                        assertEquals(Algorithm.SHARP, t.interAlgorithm(Collective.ALLREDUCE, c.bytes()), sec.toString());
                        int depth = c.candidate().equals("sharp") ? CompiledTable.DEFAULT_SHARP_PIPELINE
                                : Integer.parseInt(c.candidate().substring("sharp:pipeline=".length()));
                        assertEquals(depth, t.sharpPipeline(Collective.ALLREDUCE, c.bytes()), sec.toString());
                    } else {
                        assertTrue(t.interAlgorithm(Collective.ALLREDUCE, c.bytes()) != Algorithm.SHARP, sec.toString());
                    }
                }
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        });
    }

    @Test
    void sharpForcedOnIsRefusedNamingTheSetting() {
        with(sharpOn(), map(), () -> {
            try {
                List<Object> r = sweep(config(2, 1), tiny());
                List<?> errors = (List<?>) r.get(1);
                assertEquals(2, errors.size(), errors.toString());
                assertTrue(errors.get(0).toString().contains("sharp4j.sharp=on makes SHARP take calls whatever the table says"), errors.toString());
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        });
    }
}
