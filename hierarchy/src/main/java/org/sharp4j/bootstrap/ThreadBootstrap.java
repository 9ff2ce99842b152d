package org.sharp4j.bootstrap;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import org.sharp4j.PeerFailureException;
import org.sharp4j.Sharp4jException;

/**
 * Ranks as threads of one JVM: each thread gets its own {@link Bootstrap} and builds its own
 * communicator, mapping the same shared-memory files as separate processes would. This is how the
 * fast tests run many ranks and topologies without starting JVMs.
 */
public final class ThreadBootstrap implements Bootstrap {
    private final Group group;
    private final int rank;

    private ThreadBootstrap(Group group, int rank) {
        this.group = group;
        this.rank = rank;
    }

    /** One bootstrap per rank of a new job of {@code size} thread ranks. */
    public static List<Bootstrap> group(int size, long timeoutMillis) {
        if (size < 1) {
            throw new IllegalArgumentException("size must be >= 1, got " + size);
        }
        Group g = new Group(size, timeoutMillis);
        List<Bootstrap> list = new ArrayList<>(size);
        for (int r = 0; r < size; r++) {
            list.add(new ThreadBootstrap(g, r));
        }
        return list;
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return group.size;
    }

    @Override
    public String jobId() {
        return group.jobId;
    }

    @Override
    public byte[][] allgather(byte[] mine) {
        return group.allgather(rank, mine);
    }

    @Override
    public String name() {
        return "threads";
    }

    @Override
    public void close() {
    }

    /** A generation-counted rendezvous: round g completes when all ranks deposited for round g. */
    private static final class Group {
        final int size;
        final long timeoutMillis;
        final String jobId = "t" + ProcessHandle.current().pid() + "-" + Long.toHexString(ThreadLocalRandom.current().nextLong());
        byte[][] current;
        byte[][] done;
        int arrived;
        long generation;

        Group(int size, long timeoutMillis) {
            this.size = size;
            this.timeoutMillis = timeoutMillis;
            this.current = new byte[size][];
        }

        synchronized byte[][] allgather(int rank, byte[] mine) {
            long gen = generation;
            current[rank] = mine.clone();
            if (++arrived == size) {
                done = current;
                current = new byte[size][];
                arrived = 0;
                generation++;
                notifyAll();
                return done.clone();
            }
            long deadline = System.currentTimeMillis() + timeoutMillis;
            while (generation == gen) {
                long left = deadline - System.currentTimeMillis();
                if (left <= 0) {
                    List<Integer> missing = new ArrayList<>();
                    for (int r = 0; r < size; r++) {
                        if (current[r] == null) {
                            missing.add(r);
                        }
                    }
                    throw new PeerFailureException("bootstrap allgather: ranks " + missing + " did not arrive within "
                            + timeoutMillis + " ms", missing.stream().mapToInt(Integer::intValue).toArray());
                }
                try {
                    wait(left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new Sharp4jException("interrupted in bootstrap allgather", e);
                }
            }
            return done.clone();
        }
    }
}
