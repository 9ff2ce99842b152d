package org.sharp4j.bootstrap;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;

/**
 * The embedded launcher's side of the rendezvous: accepts one connection per rank (on loopback
 * unless given another address, e.g. a bridge that network-namespace "hosts" reach), then
 * serves allgather rounds (each round: one message from every rank, the concatenation to all)
 * until the ranks disconnect. A rank that disconnects mid-job makes the next round fail on every
 * other rank with its rank number instead of hanging them.
 */
public final class RendezvousServer implements AutoCloseable {
    static final int MAGIC = 0x53483458; // "SH4X"

    private final ServerSocket server;
    private final int size;
    private final Thread thread;
    private volatile Throwable failure;

    public RendezvousServer(int size) throws IOException {
        this(size, InetAddress.getLoopbackAddress());
    }

    /** Listens on {@code bind} (any free port). */
    public RendezvousServer(int size, InetAddress bind) throws IOException {
        this.size = size;
        this.server = new ServerSocket();
        server.bind(new InetSocketAddress(bind, 0));
        this.thread = new Thread(this::serve, "sharp4j-rendezvous");
        thread.setDaemon(true);
    }

    public String address() {
        return server.getInetAddress().getHostAddress() + ":" + server.getLocalPort();
    }

    public void start() {
        thread.start();
    }

    /** Why serving stopped early, if it did (for the launcher's diagnostics). */
    public Throwable failure() {
        return failure;
    }

    private void serve() {
        Socket[] socks = new Socket[size];
        DataInputStream[] ins = new DataInputStream[size];
        DataOutputStream[] outs = new DataOutputStream[size];
        try {
            server.setSoTimeout(120_000);
            for (int i = 0; i < size; i++) {
                Socket s;
                try {
                    s = server.accept();
                } catch (SocketTimeoutException e) {
                    throw new IOException("only " + i + " of " + size + " ranks connected within 120 s", e);
                }
                s.setTcpNoDelay(true);
                DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
                if (in.readInt() != MAGIC) {
                    s.close();
                    i--;
                    continue;
                }
                int rank = in.readInt();
                int sz = in.readInt();
                if (rank < 0 || rank >= size || sz != size || socks[rank] != null) {
                    throw new IOException("bad rendezvous hello: rank " + rank + " size " + sz);
                }
                socks[rank] = s;
                ins[rank] = in;
                outs[rank] = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
            }
            byte[][] msgs = new byte[size][];
            while (true) {
                for (int r = 0; r < size; r++) {
                    int len;
                    try {
                        len = ins[r].readInt();
                    } catch (IOException eof) {
                        if (r == 0 && allClosed(ins, r)) {
                            return; // normal end of job: every rank closed its connection
                        }
                        fail(outs, r);
                        return;
                    }
                    msgs[r] = new byte[len];
                    ins[r].readFully(msgs[r]);
                }
                for (int r = 0; r < size; r++) {
                    try {
                        for (byte[] m : msgs) {
                            outs[r].writeInt(m.length);
                            outs[r].write(m);
                        }
                        outs[r].flush();
                    } catch (IOException ignored) {
                        // that rank is gone; it will be noticed on the next round
                    }
                }
            }
        } catch (IOException e) {
            failure = e;
        } finally {
            for (Socket s : socks) {
                if (s != null) {
                    try {
                        s.close();
                    } catch (IOException ignored) {
                        // closing
                    }
                }
            }
        }
    }

    /** Rank 0 closed; treat the job as finished if the others close too (they read EOF next). */
    private static boolean allClosed(DataInputStream[] ins, int from) {
        for (int r = from + 1; r < ins.length; r++) {
            try {
                if (ins[r].read() >= 0) {
                    return false;
                }
            } catch (IOException e) {
                // closed
            }
        }
        return true;
    }

    private void fail(DataOutputStream[] outs, int failedRank) {
        for (int r = 0; r < outs.length; r++) {
            if (r != failedRank) {
                try {
                    outs[r].writeInt(-1);
                    outs[r].writeInt(failedRank);
                    outs[r].flush();
                } catch (IOException ignored) {
                    // gone as well
                }
            }
        }
    }

    @Override
    public void close() {
        try {
            server.close();
        } catch (IOException ignored) {
            // closing
        }
    }
}
