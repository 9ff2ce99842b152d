package org.sharp4j.it;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.sharp4j.Communicator;
import org.sharp4j.Config;
import org.sharp4j.Op;
import org.sharp4j.Sharp4j;
import org.sharp4j.bootstrap.pmix.PmixBootstrap;

/**
 * A rank of the PMIx tests (started by {@code mpirun}, or by the embedded launcher for the auto
 * selection test). {@code PmixMain} (no argument): {@link Sharp4j#init()} (bootstrap chosen by
 * {@code sharp4j.bootstrap}), an allreduce, a barrier, prints
 * {@code PMIXMAIN rank R size N nodes K local L of M sum S max X OK}. {@code PmixMain raw}: a
 * {@link PmixBootstrap} used directly: repeated allgathers of different sizes (empty included) and
 * a communicator over it; prints {@code PMIXRAW rank R size N ... OK}. Exit code 3 on a wrong result.
 */
public final class PmixMain {
    private PmixMain() {
    }

    public static void main(String[] args) {
        if (args.length > 0 && args[0].equals("raw")) {
            raw();
            return;
        }
        try (Communicator comm = Sharp4j.init()) {
            int r = comm.rank();
            int n = comm.size();
            long[] v = {r + 1, 1, (long) r * r};
            long[] sum = new long[3];
            comm.allreduce(v, sum, Op.SUM);
            int[] max = new int[1];
            comm.allreduce(new int[] {r}, max, Op.MAX);
            comm.barrier();
            long sq = 0;
            for (int i = 0; i < n; i++) {
                sq += (long) i * i;
            }
            boolean ok = sum[0] == (long) n * (n + 1) / 2 && sum[1] == n && sum[2] == sq && max[0] == n - 1;
            int node = comm.topology().nodeOf(r);
            System.out.println("PMIXMAIN rank " + r + " size " + n + " nodes " + comm.topology().nodeCount() + " local "
                    + comm.topology().localIndex(r) + " of " + comm.topology().nodeRanks(node).length + " sum "
                    + Arrays.toString(sum) + " max " + max[0] + (ok ? " OK" : " WRONG"));
            System.out.flush();
            if (!ok) {
                System.exit(3);
            }
        }
    }

    private static void raw() {
        try (PmixBootstrap b = new PmixBootstrap()) {
            int r = b.rank();
            int n = b.size();
            boolean ok = true;
            for (int round = 0; round < 5; round++) {
                // Round-dependent content and length (round 2: empty on every rank); a stale key would show.
                byte[] mine = round == 2 ? new byte[0] : ("r" + r + "g" + round + "x".repeat(r * 100 + round)).getBytes(StandardCharsets.US_ASCII);
                byte[][] all = b.allgather(mine);
                for (int p = 0; p < n; p++) {
                    String expect = round == 2 ? "" : "r" + p + "g" + round + "x".repeat(p * 100 + round);
                    if (!expect.equals(new String(all[p], StandardCharsets.US_ASCII))) {
                        System.out.println("PMIXRAW rank " + r + " round " + round + " from " + p + " WRONG: " + new String(all[p], StandardCharsets.US_ASCII));
                        ok = false;
                    }
                }
                b.barrier();
            }
            long[] sum = new long[1];
            try (Communicator comm = Sharp4j.create(b, Config.fromSystemProperties())) {
                comm.allreduce(new long[] {r + 1}, sum, Op.SUM);
            }
            ok &= sum[0] == (long) n * (n + 1) / 2;
            System.out.println("PMIXRAW rank " + r + " size " + n + " lrank " + b.localRank() + " lsize " + b.localSize() + " host "
                    + b.hostname() + " job " + b.jobId() + " version " + b.libraryVersion() + " sum " + sum[0] + (ok ? " OK" : " WRONG"));
            System.out.flush();
            if (!ok) {
                System.exit(3);
            }
        }
    }
}
