package org.sharp4j.sharp;

import java.io.File;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.coll.CallStatus;
import org.sharp4j.coll.Desc;
import org.sharp4j.spi.InterNodeStep;
import org.sharp4j.tuning.Collective;

/**
 * Cost of one blocking SHARP Allreduce through the binding vs a C loop calling the same emulator
 * (target/native/bench_allreduce), in one run, for 8 B, 64 B and 1 KiB of INT SUM on a SHARP world
 * of one rank (no OOB traffic: what is measured is the call itself).
 *
 * <ul>
 *   <li>C: {@code sharp_coll_do_allreduce} in a C loop (spec fields written per call);</li>
 *   <li>binding: {@link SharpTeam#allreduce} (the nine spec fields written through a ByteBuffer view,
 *       {@code _nb}, {@code req_test} until complete, {@code req_wait}: JNA direct-mapped calls with
 *       raw addresses);</li>
 *   <li>step: {@link SharpStep#allreduce}, i.e. the binding plus what the offload adds per call:
 *       dispatch, the registration cache, polling through the engine's waiter, the copy of the
 *       result out of its registered buffer. No host message (a successful call sends none).</li>
 * </ul>
 *
 * Usage: {@code SharpCallBench [iterations] [repeats]} (default 200000, 5; the median of the repeats is
 * reported). The library is {@code sharp4j.sharp.lib} or target/native/libsharp_coll.so.
 */
public final class SharpCallBench {
    static final int[] SIZES = {8, 64, 1024};

    private SharpCallBench() {
    }

    public static void main(String[] args) throws Exception {
        long iters = args.length > 0 ? Long.parseLong(args[0]) : 200_000;
        int repeats = args.length > 1 ? Integer.parseInt(args[1]) : 5;
        for (String line : run(iters, repeats)) {
            System.out.println(line);
        }
    }

    /** The report lines (a header, one line per size). */
    static List<String> run(long iters, int repeats) throws Exception {
        File dir = SharpTestSupport.nativeDir();
        String libPath = System.getProperty(SharpSettings.LIB, new File(dir, "libsharp_coll.so").getPath());
        SharpLibrary lib = SharpLibrary.load(new File(libPath));
        NoHost host = new NoHost();
        OobChannel oob = new OobChannel(host, 0, 1);
        SharpTeam team = new SharpTeam(lib, oob);
        check(team.init(0x5EED, -1), "sharp_coll_init");
        check(team.queryCaps(), "sharp_coll_caps_query");
        check(team.commInit(), "sharp_coll_comm_init");
        ByteBuffer mem = ByteBuffer.allocateDirect(1 << 17).order(ByteOrder.nativeOrder());
        long base = SharpTeam.address(mem);
        org.sharp4j.shm.Waiter waiter = new org.sharp4j.shm.Waiter(new org.sharp4j.shm.WaitPolicy(20_000, 1_000_000, 50_000,
                60_000_000_000L), (awaited, waited, timeout) -> { });
        SharpStep step = new SharpStep(host, team, waiter, team.dtypes, team.reduceOps,
                new long[] {team.payload, team.payload, team.payload}, 3, 0, 1, 0); // allreduce, reduce, barrier
        CallStatus st = new CallStatus();

        double[][] java = new double[SIZES.length][repeats];
        double[][] stepNs = new double[SIZES.length][repeats];
        double[][] c = new double[SIZES.length][repeats];
        File exe = new File(dir, "bench_allreduce");
        for (int rep = 0; rep < repeats; rep++) {
            for (int s = 0; s < SIZES.length; s++) {
                int bytes = SIZES[s];
                int count = bytes / 4;
                long warm = iters / 10 + 1;
                for (long k = 0; k < warm; k++) {
                    team.allreduce(base, base + 65536, bytes, count, SharpAbi.DTYPE_INT, SharpAbi.OP_SUM);
                }
                long t0 = System.nanoTime();
                for (long k = 0; k < iters; k++) {
                    int rc = team.allreduce(base, base + 65536, bytes, count, SharpAbi.DTYPE_INT, SharpAbi.OP_SUM);
                    if (rc != 0) {
                        throw new IllegalStateException("allreduce: " + rc);
                    }
                }
                java[s][rep] = (System.nanoTime() - t0) / (double) iters;

                long desc = Desc.make(Collective.ALLREDUCE, DataType.INT, Op.SUM, 0, count);
                for (long k = 0; k < warm; k++) {
                    step.allreduce(mem, 0, count, DataType.INT, Op.SUM, desc, st);
                }
                t0 = System.nanoTime();
                for (long k = 0; k < iters; k++) {
                    step.allreduce(mem, 0, count, DataType.INT, Op.SUM, desc, st);
                }
                stepNs[s][rep] = (System.nanoTime() - t0) / (double) iters;
            }
            List<String> cmd = new ArrayList<>(List.of(exe.getPath(), Long.toString(iters)));
            for (int b : SIZES) {
                cmd.add(Integer.toString(b));
            }
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (p.waitFor() != 0) {
                throw new IllegalStateException(exe + " failed: " + out);
            }
            int s = 0;
            for (String line : out.split("\n")) {
                String[] w = line.trim().split(" ");
                if (w.length == 4 && w[0].equals("bytes")) {
                    c[s++][rep] = Double.parseDouble(w[3]);
                }
            }
            if (s != SIZES.length) {
                throw new IllegalStateException("unexpected output of " + exe + ": " + out);
            }
        }
        if (step.sharpCalls == 0 || step.hostCalls != 0) {
            throw new IllegalStateException("the step did not use SHARP: " + step);
        }
        team.close();

        List<String> lines = new ArrayList<>();
        lines.add(String.format("# one SHARP Allreduce (INT SUM, 1 rank) on %s, %d iterations, median of %d runs",
                lib.file(), iters, repeats));
        lines.add(String.format("%8s %12s %14s %8s %12s %14s", "bytes", "C ns/call", "binding ns", "ratio", "diff ns",
                "step ns/call"));
        for (int s = 0; s < SIZES.length; s++) {
            double cm = median(c[s]);
            double jm = median(java[s]);
            lines.add(String.format("%8d %12.1f %14.1f %8.2f %12.1f %14.1f", SIZES[s], cm, jm, jm / cm, jm - cm,
                    median(stepNs[s])));
        }
        return lines;
    }

    private static void check(int rc, String what) {
        if (rc != 0) {
            throw new IllegalStateException(what + ": " + rc);
        }
    }

    static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    /** The host path of a job with one node: nothing to exchange, nothing to recover. */
    static final class NoHost implements org.sharp4j.spi.RecoverableStep {
        @Override
        public void recoveryListener(Listener l) {
        }

        @Override
        public boolean pollRecovery() {
            return false;
        }

        @Override
        public void recoveryCollective(long callSeq, int phase, Collective c, ByteBuffer buf, int off, int count, DataType t,
                Op op, int rootNode, long desc, CallStatus status) {
        }

        @Override
        public long messagesSent() {
            return 0;
        }

        @Override
        public String name() {
            return "no-op host path (one node)";
        }

        @Override
        public void allreduce(ByteBuffer buf, int off, int count, DataType type, Op op, long desc, CallStatus status) {
        }

        @Override
        public void reduce(ByteBuffer buf, int off, int count, DataType type, Op op, int rootNode, long desc, CallStatus status) {
        }

        @Override
        public void barrier(long desc, CallStatus status) {
        }

        @Override
        public void close() {
        }
    }
}
