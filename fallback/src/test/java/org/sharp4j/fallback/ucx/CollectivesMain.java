package org.sharp4j.fallback.ucx;

import java.net.InetAddress;
import org.sharp4j.Communicator;
import org.sharp4j.Sharp4j;

/**
 * A rank of the process and network-namespace tests: {@code CollectivesMain [MAX_BYTES]} runs
 * {@link CollectiveChecks#everything} (every type and op, Allreduce and Reduce to every root,
 * Barriers), large Allreduces up to MAX_BYTES (default 2 MiB) and the bit-identity check. Prints
 * {@code rank R: N collectives OK on HOST (node X of K, phase 3: NAME, spin S us)}; a wrong result or an
 * error ends it with exit code 3 / 1 and the message.
 */
public final class CollectivesMain {
    private CollectivesMain() {
    }

    public static void main(String[] args) throws Exception {
        int max = args.length > 0 ? Integer.parseInt(args[0]) : 2 << 20;
        int rank = -1;
        try (Communicator comm = Sharp4j.init()) {
            rank = comm.rank();
            CollectiveChecks c = new CollectiveChecks(comm, max);
            c.everything(new int[] {0, 1, 7, 64, 1000, 9000}, 1);
            for (int bytes = Math.min(64 << 10, max); ; bytes = Math.min(4 * bytes, max)) {
                c.exact(org.sharp4j.DataType.DOUBLE, org.sharp4j.Op.SUM, bytes / 8, -1, bytes);
                c.exact(org.sharp4j.DataType.INT, org.sharp4j.Op.BXOR, bytes / 4 - 1, comm.size() - 1, bytes + 1);
                c.bitIdentical(bytes / 8, bytes + 2);
                if (bytes >= max) {
                    break;
                }
            }
            comm.barrier();
            System.out.println("rank " + rank + ": " + (c.calls + 1) + " collectives OK on " + InetAddress.getLocalHost().getHostName()
                    + " (node " + comm.topology().nodeOf(rank) + " of " + comm.topology().nodeCount() + ", phase 3: "
                    + comm.interNode() + ", spin " + comm.engine().waiter().policy().spinNanos / 1000 + " us)");
        } catch (AssertionError e) {
            System.out.println("rank " + rank + ": WRONG RESULT: " + e.getMessage());
            System.out.flush();
            System.exit(3);
        } catch (RuntimeException e) {
            System.out.println("rank " + rank + ": FAILED: " + e);
            System.out.flush();
            System.exit(1);
        }
    }
}
