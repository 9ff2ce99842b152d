package org.sharp4j.osu;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;
import org.sharp4j.Config;
import org.sharp4j.Sharp4j;
import org.sharp4j.bootstrap.Bootstrap;
import org.sharp4j.bootstrap.ThreadBootstrap;

/** Runs a benchmark command line on N sharp4j ranks as threads of this JVM, each with its own output streams. */
final class ThreadJob {
    /** What one rank printed and returned. */
    record RankResult(int exit, String out, String err, Throwable thrown) {
    }

    private ThreadJob() {
    }

    static List<RankResult> run(int n, Kind kind, String... args) {
        return run(n, kind, UnaryOperator.identity(), args);
    }

    /** {@code wrap} may replace each rank's backend (tests inject faults with it). */
    static List<RankResult> run(int n, Kind kind, UnaryOperator<Backend> wrap, String... args) {
        return runWith(n, kind, (boot, opts) -> Osu.Backends.of(wrap.apply(new Sharp4jBackend(Sharp4j.create(boot, Config.defaults()), true))),
                args);
    }

    /**
     * Runs a {@code --compare builtin|table=|tune=} command line: each rank opens two communicators over its
     * thread bootstrap, the second with the comparison's settings, as {@link Osu#openPair} does; rank 0 hands
     * both to {@code check} before the run.
     */
    static List<RankResult> runPairs(int n, Kind kind, java.util.function.BiConsumer<Sharp4jBackend, Sharp4jBackend> check, String... args) {
        return runWith(n, kind, (boot, opts) -> {
            Sharp4jBackend a = new Sharp4jBackend(Sharp4j.create(boot, Config.defaults()), true);
            Sharp4jBackend b = new Sharp4jBackend(Sharp4j.create(boot, opts.comparison().apply(Config.defaults())), true);
            if (boot.rank() == 0) {
                check.accept(a, b);
            }
            return new Osu.Backends(List.of(a, b), List.of(a, b));
        }, args);
    }

    /** Runs the command line on {@code n} thread ranks, each opening its backends with {@code open} over its bootstrap. */
    private static List<RankResult> runWith(int n, Kind kind, java.util.function.BiFunction<Bootstrap, OsuOptions, Osu.Backends> open,
            String... args) {
        List<Bootstrap> boots = ThreadBootstrap.group(n, 60_000);
        RankResult[] results = new RankResult[n];
        List<Thread> threads = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            final int rank = r;
            Thread t = new Thread(() -> {
                ByteArrayOutputStream out = new ByteArrayOutputStream();
                ByteArrayOutputStream err = new ByteArrayOutputStream();
                int exit = -1;
                Throwable thrown = null;
                try (PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
                        PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
                    exit = Osu.run(kind, args, o, e, opts -> open.apply(boots.get(rank), opts));
                } catch (Throwable e) {
                    thrown = e;
                }
                results[rank] = new RankResult(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8), thrown);
            }, "osu-rank-" + r);
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }
        for (int r = 0; r < n; r++) {
            try {
                threads.get(r).join(180_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (threads.get(r).isAlive()) {
                throw new AssertionError("rank " + r + " of " + kind.program + " " + String.join(" ", args) + " still running (hang)");
            }
        }
        return List.of(results);
    }

    /** A backend that passes every call to {@code d}; tests override what they break. */
    static class Delegating implements Backend {
        final Backend d;

        Delegating(Backend d) {
            this.d = d;
        }

        @Override
        public String name() {
            return d.name();
        }

        @Override
        public int rank() {
            return d.rank();
        }

        @Override
        public int size() {
            return d.size();
        }

        @Override
        public void barrier() {
            d.barrier();
        }

        @Override
        public void allreduce(Buffers b, int count, boolean inPlace) {
            d.allreduce(b, count, inPlace);
        }

        @Override
        public void reduce(Buffers b, int count, int root, boolean inPlace) {
            d.reduce(b, count, root, inPlace);
        }

        @Override
        public void reduceToZero(double[] in, double[] out, StatOp op) {
            d.reduceToZero(in, out, op);
        }

        @Override
        public int allreduceSum(int v) {
            return d.allreduceSum(v);
        }

        @Override
        public void abort(String reason) {
            d.abort(reason);
        }

        @Override
        public void close() {
            d.close();
        }
    }
}
