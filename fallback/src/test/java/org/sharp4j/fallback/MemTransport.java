package org.sharp4j.fallback;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import org.sharp4j.PeerFailureException;
import org.sharp4j.Sharp4jException;
import org.sharp4j.fallback.transport.Transport;

/**
 * An in-memory {@link Transport} for n peers driven by n threads, faithful to the contract:
 * posting never blocks and completes nothing visible; {@link #test} alone reports completion;
 * a receive matches the oldest unmatched send of its (source, tag), a send the oldest posted
 * receive of its (source, tag); data is copied when a pair matches (under the mesh's lock, by
 * whichever thread posted second); a receive shorter than its message completes truncated.
 *
 * <p>Faults: {@link Mesh#kill} makes a peer dead: requests of the others with it fail with a
 * {@link PeerFailureException} naming its global rank, its own calls throw. {@link #oversizeSend}
 * replaces a later send with a longer message (a peer that disagrees, or a buggy one).
 *
 * <p>Nothing is allocated per message: requests live in fixed arrays, queues are intrusive
 * linked lists of int ids, state is read with volatile array access.
 */
final class MemTransport implements Transport {
    private static final VarHandle INTS = MethodHandles.arrayElementVarHandle(int[].class);
    static final int POOL = 1024;
    private static final int FREE = 0;
    private static final int PENDING = 1;
    private static final int DONE = 2;
    private static final int TRUNC = 3;
    private static final int SEND = 1;
    private static final int RECV = 2;
    /** The peer of an any-source receive. */
    static final int ANY = -1;

    /** The shared mailbox of n peers. */
    static final class Mesh {
        final int n;
        final int[] globalRanks;
        final MemTransport[] ends;
        final int[] dead;
        final Object lock = new Object();
        /** Intrusive links, by id = peer * POOL + handle. */
        final int[] next;
        /** Per destination: unmatched sends to it, posted receives of it (FIFO). */
        final int[] unexpHead;
        final int[] unexpTail;
        final int[] recvHead;
        final int[] recvTail;

        Mesh(int n, int[] globalRanks) {
            this.n = n;
            this.globalRanks = globalRanks.clone();
            this.ends = new MemTransport[n];
            this.dead = new int[n];
            this.next = new int[n * POOL];
            this.unexpHead = new int[n];
            this.unexpTail = new int[n];
            this.recvHead = new int[n];
            this.recvTail = new int[n];
            for (int d = 0; d < n; d++) {
                unexpHead[d] = unexpTail[d] = recvHead[d] = recvTail[d] = -1;
                ends[d] = new MemTransport(this, d);
            }
        }

        /** n peers whose global ranks are {@code 10 + 3p} (not the node index, so mixing them up shows). */
        static Mesh of(int n) {
            int[] g = new int[n];
            for (int p = 0; p < n; p++) {
                g[p] = 10 + 3 * p;
            }
            return new Mesh(n, g);
        }

        MemTransport end(int p) {
            return ends[p];
        }

        void kill(int p) {
            INTS.setVolatile(dead, p, 1);
        }

        boolean isDead(int p) {
            return (int) INTS.getVolatile(dead, p) != 0;
        }

        private void append(int[] head, int[] tail, int d, int id) {
            next[id] = -1;
            if (tail[d] < 0) {
                head[d] = id;
            } else {
                next[tail[d]] = id;
            }
            tail[d] = id;
        }

        /** Removes the first entry of list d accepted by (owner, peer, tag), returning its id or -1. */
        private int take(int[] head, int[] tail, int d, int owner, int peerOf, long tag) {
            int prev = -1;
            for (int id = head[d]; id >= 0; prev = id, id = next[id]) {
                MemTransport e = ends[id / POOL];
                int h = id % POOL;
                if ((owner < 0 || e.me == owner) && (e.peer[h] == peerOf || e.peer[h] == ANY) && e.tag[h] == tag) {
                    unlink(head, tail, d, prev, id);
                    return id;
                }
            }
            return -1;
        }

        private void unlink(int[] head, int[] tail, int d, int prev, int id) {
            int nx = next[id];
            if (prev < 0) {
                head[d] = nx;
            } else {
                next[prev] = nx;
            }
            if (tail[d] == id) {
                tail[d] = prev;
            }
        }

        /** Removes every entry of {@code owner} from list d. */
        private void removeOwned(int[] head, int[] tail, int d, int owner) {
            int prev = -1;
            int id = head[d];
            while (id >= 0) {
                int nx = next[id];
                if (id / POOL == owner) {
                    unlink(head, tail, d, prev, id);
                } else {
                    prev = id;
                }
                id = nx;
            }
        }
    }

    private final Mesh mesh;
    private final int me;
    private final int[] kind = new int[POOL];
    private final int[] peer = new int[POOL];
    private final long[] tag = new long[POOL];
    private final ByteBuffer[] buf = new ByteBuffer[POOL];
    private final int[] off = new int[POOL];
    private final int[] len = new int[POOL];
    private final int[] state = new int[POOL];
    private final int[] result = new int[POOL];
    private final int[] free = new int[POOL];
    private int freeTop;
    private boolean closed;
    // statistics and fault injection (owner thread only)
    long sends;
    /** Receives posted into {@link #watched} (a test's buffer: which receives land where). */
    ByteBuffer watched;
    int recvsIntoWatched;
    long bytesSent;
    private int oversizeIn;
    private long jitter;
    private final int[] hiddenPolls = new int[POOL];
    private int oversizeExtra;
    private ByteBuffer junk;

    private MemTransport(Mesh mesh, int me) {
        this.mesh = mesh;
        this.me = me;
        for (int h = POOL - 1; h >= 0; h--) {
            free[freeTop++] = h;
        }
    }

    /**
     * From now on a completed request stays invisible for 0..{@code maxPolls} more polls (a
     * seeded, allocation-free choice per request): completions then surface in orders a network
     * produces (a later fragment or another peer first, a receive before its sender's send).
     */
    void jitter(long seed, int maxPolls) {
        jitter = seed | 1;
        jitterMax = maxPolls;
    }

    private int jitterMax;

    /** The {@code nth} send from now (1 = the next one) carries {@code extra} more bytes of junk than asked. */
    void oversizeSend(int nth, int extra) {
        oversizeIn = nth;
        oversizeExtra = extra;
        junk = ByteBuffer.allocateDirect(1 << 20);
    }

    @Override
    public int peer() {
        return me;
    }

    @Override
    public int peers() {
        return mesh.n;
    }

    @Override
    public int globalRank(int p) {
        return mesh.globalRanks[p];
    }

    private void checkAlive() {
        if (closed) {
            throw new IllegalStateException("transport closed");
        }
        if (mesh.isDead(me)) {
            throw new Sharp4jException("peer " + me + " was killed");
        }
    }

    private int alloc(int k, int p, long tg, ByteBuffer b, int o, int l) {
        if ((p < 0 && p != ANY) || p >= mesh.n || p == me) {
            throw new IllegalArgumentException("bad peer " + p);
        }
        if (tg < 0 || tg >= TAG_LIMIT) {
            throw new IllegalArgumentException("bad tag " + tg);
        }
        if (o < 0 || l < 0 || o + l > b.capacity()) {
            throw new IndexOutOfBoundsException("region [" + o + ", +" + l + ") of a buffer of " + b.capacity());
        }
        if (freeTop == 0) {
            throw new IllegalStateException("request pool exhausted");
        }
        int h = free[--freeTop];
        kind[h] = k;
        peer[h] = p;
        tag[h] = tg;
        buf[h] = b;
        off[h] = o;
        len[h] = l;
        result[h] = 0;
        if (jitter != 0) {
            jitter ^= jitter << 13;
            jitter ^= jitter >>> 7;
            jitter ^= jitter << 17;
            hiddenPolls[h] = (int) Long.remainderUnsigned(jitter, jitterMax + 1);
        } else {
            hiddenPolls[h] = 0;
        }
        INTS.setVolatile(state, h, PENDING);
        return h;
    }

    @Override
    public int send(int p, long tg, ByteBuffer b, int o, int l) {
        checkAlive();
        if (oversizeIn > 0 && --oversizeIn == 0) {
            b = junk;
            o = 0;
            l = l + oversizeExtra;
        }
        int h = alloc(SEND, p, tg, b, o, l);
        sends++;
        bytesSent += l;
        synchronized (mesh.lock) {
            int rid = mesh.take(mesh.recvHead, mesh.recvTail, p, -1, me, tg);
            if (rid >= 0) {
                deliver(this, h, mesh.ends[rid / POOL], rid % POOL);
            } else {
                mesh.append(mesh.unexpHead, mesh.unexpTail, p, me * POOL + h);
            }
        }
        java.util.function.LongConsumer hook = onSend; // after the message is matched or queued
        if (hook != null) {
            hook.accept(tg);
        }
        return h;
    }

    @Override
    public int recvAny(long tg, ByteBuffer b, int o, int l) {
        checkAlive();
        int h = alloc(RECV, ANY, tg, b, o, l);
        synchronized (mesh.lock) {
            int sid = mesh.take(mesh.unexpHead, mesh.unexpTail, me, -1, me, tg);
            if (sid >= 0) {
                deliver(mesh.ends[sid / POOL], sid % POOL, this, h);
            } else {
                mesh.append(mesh.recvHead, mesh.recvTail, me, me * POOL + h);
            }
        }
        return h;
    }

    @Override
    public int recv(int p, long tg, ByteBuffer b, int o, int l) {
        checkAlive();
        if (b == watched) {
            recvsIntoWatched++;
        }
        int h = alloc(RECV, p, tg, b, o, l);
        synchronized (mesh.lock) {
            int sid = mesh.take(mesh.unexpHead, mesh.unexpTail, me, p, me, tg);
            if (sid >= 0) {
                deliver(mesh.ends[sid / POOL], sid % POOL, this, h);
            } else {
                mesh.append(mesh.recvHead, mesh.recvTail, me, me * POOL + h);
            }
        }
        return h;
    }

    /** Called with each send's tag as it is posted (a test's hook), or null. */
    volatile java.util.function.LongConsumer onSend;

    /** Copies a matched message (under the lock) and completes both requests. */
    private static void deliver(MemTransport s, int sh, MemTransport r, int rh) {
        int n = Math.min(s.len[sh], r.len[rh]);
        if (n > 0) {
            r.buf[rh].put(r.off[rh], s.buf[sh], s.off[sh], n);
        }
        r.result[rh] = s.len[sh];
        s.result[sh] = s.len[sh];
        INTS.setVolatile(r.state, rh, s.len[sh] > r.len[rh] ? TRUNC : DONE);
        INTS.setVolatile(s.state, sh, DONE);
    }

    @Override
    public int test(int h) {
        checkAlive();
        int st = (int) INTS.getVolatile(state, h);
        if (st == PENDING) {
            if (peer[h] != ANY && mesh.isDead(peer[h])) {
                throw new PeerFailureException("peer rank " + mesh.globalRanks[peer[h]] + " is dead (node " + peer[h] + ")",
                        new int[] {mesh.globalRanks[peer[h]]});
            }
            return -1;
        }
        if (st == FREE) {
            throw new IllegalStateException("test of a free request " + h);
        }
        if (hiddenPolls[h] > 0) {
            hiddenPolls[h]--;
            return -1;
        }
        int r = result[h];
        int p = peer[h];
        int l = len[h];
        release(h);
        if (st == TRUNC) {
            throw new TruncatedException(p, "message of " + r + " bytes from node " + p + " into a receive of " + l);
        }
        return r;
    }

    private void release(int h) {
        buf[h] = null;
        kind[h] = 0;
        INTS.setVolatile(state, h, FREE);
        free[freeTop++] = h;
    }

    @Override
    public void progress() {
        Thread.onSpinWait();
    }

    @Override
    public long probe(long tg, long mask) {
        checkAlive();
        synchronized (mesh.lock) {
            for (int id = mesh.unexpHead[me]; id >= 0; id = mesh.next[id]) {
                MemTransport e = mesh.ends[id / POOL];
                long t = e.tag[id % POOL];
                if (((t ^ tg) & mask) == 0) {
                    return t;
                }
            }
        }
        return -1;
    }

    @Override
    public long sendCount() {
        return sends;
    }

    @Override
    public void cancelAll() {
        synchronized (mesh.lock) {
            for (int d = 0; d < mesh.n; d++) {
                mesh.removeOwned(mesh.unexpHead, mesh.unexpTail, d, me);
            }
            mesh.removeOwned(mesh.recvHead, mesh.recvTail, me, me);
        }
        for (int h = 0; h < POOL; h++) {
            if ((int) INTS.getVolatile(state, h) != FREE) {
                release(h);
            }
        }
    }

    @Override
    public void cancel(int h) {
        synchronized (mesh.lock) {
            int id = me * POOL + h;
            int prev = -1;
            for (int x = mesh.recvHead[me]; x >= 0; prev = x, x = mesh.next[x]) {
                if (x == id) {
                    mesh.unlink(mesh.recvHead, mesh.recvTail, me, prev, x);
                    break;
                }
            }
        }
        if ((int) INTS.getVolatile(state, h) == FREE) {
            throw new IllegalStateException("cancel of a free request " + h);
        }
        release(h);
    }

    /** Requests not yet reported complete (leak check). */
    int inUse() {
        return POOL - freeTop;
    }

    @Override
    public void close() {
        if (!closed) {
            cancelAll();
            closed = true;
        }
    }
}
