package org.sharp4j.fallback.ucx;

import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.sharp4j.Sharp4jException;
import org.sharp4j.bootstrap.Bootstrap;
import org.sharp4j.bootstrap.RendezvousBootstrap;

/**
 * A rank of the transport-level process tests, started by the embedded launcher:
 * {@code UcxExchangeMain ITERATIONS} makes every rank a UCX peer and exchanges checked messages of
 * several sizes between every pair ITERATIONS times (-1: until something
 * fails). Prints {@code rank R pid P ready on HOST} once connected, {@code rank R: exchange OK} at the
 * end, {@code rank R: FAILED: message} and exit code 1 on an error.
 */
public final class UcxExchangeMain {
    private UcxExchangeMain() {
    }

    public static void main(String[] args) throws Exception {
        long iterations = Long.parseLong(args[0]);
        Bootstrap boot = RendezvousBootstrap.fromEnvironment();
        int me = boot.rank();
        int n = boot.size();
        int[] all = new int[n];
        for (int i = 0; i < n; i++) {
            all[i] = i;
        }
        UcxTransport t = null;
        try {
            t = UcxTransport.connect(boot, all, UcxTransport.configFromProperties(System.getProperties()), 60_000_000_000L);
            System.out.println("rank " + me + " pid " + ProcessHandle.current().pid() + " ready on "
                    + InetAddress.getLocalHost().getHostName());
            System.out.flush();
            int[] sizes = {0, 8, 4096, 65536, 1 << 20};
            ByteBuffer out = ByteBuffer.allocateDirect(1 << 20).order(ByteOrder.nativeOrder());
            ByteBuffer in = ByteBuffer.allocateDirect(n << 20).order(ByteOrder.nativeOrder());
            int[] recvs = new int[n];
            int[] sends = new int[n];
            for (long it = 0; iterations < 0 || it < iterations; it++) {
                int s = sizes[(int) (it % sizes.length)];
                for (int i = 0; i + 8 <= s; i += 4096) {
                    out.putLong(i, it * 1000 + me);
                }
                for (int p = 0; p < n; p++) {
                    if (p != me) {
                        recvs[p] = t.recv(p, it & 0xffff, in, p << 20, s);
                        sends[p] = t.send(p, it & 0xffff, out, 0, s);
                    }
                }
                // Poll every pending request in turn, so that the first failure seen is the first
                // that happened (waiting on one peer at a time would see a live peer's later exit
                // before a dead peer's disconnect when that live peer gave up first).
                int[] got = new int[n];
                int pending = 2 * (n - 1);
                java.util.Arrays.fill(got, -1);
                boolean[] sent = new boolean[n];
                while (pending > 0) {
                    for (int p = 0; p < n; p++) {
                        if (p == me) {
                            continue;
                        }
                        if (!sent[p] && t.test(sends[p]) >= 0) {
                            sent[p] = true;
                            pending--;
                        }
                        if (got[p] < 0 && (got[p] = t.test(recvs[p])) >= 0) {
                            pending--;
                        }
                    }
                    Thread.onSpinWait();
                }
                for (int p = 0; p < n; p++) {
                    if (p == me) {
                        continue;
                    }
                    if (got[p] != s) {
                        throw new Sharp4jException("iteration " + it + ": got " + got[p] + " bytes from " + p + ", expected " + s);
                    }
                    for (int i = 0; i + 8 <= s; i += 4096) {
                        if (in.getLong((p << 20) + i) != it * 1000 + p) {
                            throw new Sharp4jException("iteration " + it + ": wrong data from " + p + " at " + i);
                        }
                    }
                }
            }
            System.out.println("rank " + me + ": exchange OK");
        } catch (RuntimeException e) {
            System.out.println("rank " + me + ": FAILED: " + e.getMessage());
            System.out.flush();
            Thread.sleep(2000); // stay connected a moment: the others should see the original failure, not ours
            System.exit(1);
        } finally {
            if (t != null) {
                t.close();
            }
            boot.close();
        }
    }
}
