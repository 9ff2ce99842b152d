package org.sharp4j.sharp;

import org.sharp4j.ThreadRanks;

import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.sharp4j.Config;
import org.sharp4j.Op;

/**
 * End-to-end latency of a small Allreduce through the whole hierarchy on simulated nodes (one rank
 * per node, threads of this JVM): the shared-memory host path alone vs SHARP (the emulator, whose
 * data moves through the OOB callbacks over that same host path, plus the agreement round).
 * With the emulator SHARP cannot be faster than the host path it runs over; the numbers show what
 * the offload's per-call machinery costs on top of it.
 *
 * <p>Usage: {@code SharpHierarchyBench [iterations] [nodes]} (default 20000, 2).
 */
public final class SharpHierarchyBench {
    private SharpHierarchyBench() {
    }

    public static void main(String[] args) {
        int iters = args.length > 0 ? Integer.parseInt(args[0]) : 20_000;
        int nodes = args.length > 1 ? Integer.parseInt(args[1]) : 2;
        System.setProperty(SharpSettings.LIB, System.getProperty(SharpSettings.LIB,
                new File(SharpTestSupport.nativeDir(), "libsharp_coll.so").getPath()));
        List<String> out = new ArrayList<>();
        out.add(String.format("# Allreduce LONG SUM through the hierarchy, %d simulated nodes x 1 rank, %d iterations (rank 0)",
                nodes, iters));
        out.add(String.format("%8s %16s %16s %10s", "bytes", "host path us", "SHARP(emu) us", "SHARP/host"));
        for (int count : new int[] {1, 8, 128}) {
            double host = measure("off", nodes, count, iters);
            double sharp = measure("on", nodes, count, iters);
            out.add(String.format("%8d %16.2f %16.2f %10.2f", count * 8, host, sharp, sharp / host));
        }
        out.forEach(System.out::println);
    }

    static double measure(String mode, int nodes, int count, int iters) {
        System.setProperty(SharpSettings.MODE, mode);
        Config cfg = Config.defaults().withSimulatedTopology(nodes, 1);
        AtomicLong ns = new AtomicLong();
        ThreadRanks.run(nodes, cfg, comm -> {
            long[] in = new long[count];
            long[] res = new long[count];
            for (int i = 0; i < iters / 5; i++) {
                comm.allreduce(in, 0, res, 0, count, Op.SUM);
            }
            comm.barrier();
            long t0 = System.nanoTime();
            for (int i = 0; i < iters; i++) {
                comm.allreduce(in, 0, res, 0, count, Op.SUM);
            }
            if (comm.rank() == 0) {
                ns.set(System.nanoTime() - t0);
            }
        });
        return ns.get() / 1e3 / iters;
    }
}
