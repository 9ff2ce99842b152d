package org.sharp4j.bootstrap;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import org.sharp4j.PeerFailureException;
import org.sharp4j.Sharp4jException;

/**
 * The client side of the embedded launcher's rendezvous ({@link RendezvousServer}): a TCP
 * connection to the launcher on loopback, kept for the job's lifetime. Reads its identity from
 * the environment the launcher sets: {@code SHARP4J_RANK}, {@code SHARP4J_SIZE},
 * {@code SHARP4J_JOB_ID}, {@code SHARP4J_RENDEZVOUS=host:port}.
 */
public final class RendezvousBootstrap implements Bootstrap {
    public static final String ENV_RANK = "SHARP4J_RANK";
    public static final String ENV_SIZE = "SHARP4J_SIZE";
    public static final String ENV_JOB = "SHARP4J_JOB_ID";
    public static final String ENV_RENDEZVOUS = "SHARP4J_RENDEZVOUS";

    private final int rank;
    private final int size;
    private final String jobId;
    private final Socket socket;
    private final DataInputStream in;
    private final DataOutputStream out;

    public RendezvousBootstrap(int rank, int size, String jobId, String hostPort, int connectTimeoutMillis) {
        this.rank = rank;
        this.size = size;
        this.jobId = jobId;
        int colon = hostPort.lastIndexOf(':');
        if (colon < 0) {
            throw new Sharp4jException(ENV_RENDEZVOUS + " must be host:port, got '" + hostPort + "'");
        }
        try {
            socket = new Socket();
            socket.setTcpNoDelay(true);
            socket.connect(new InetSocketAddress(hostPort.substring(0, colon), Integer.parseInt(hostPort.substring(colon + 1))),
                    connectTimeoutMillis);
            in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
            out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream()));
            out.writeInt(RendezvousServer.MAGIC);
            out.writeInt(rank);
            out.writeInt(size);
            out.flush();
        } catch (IOException | NumberFormatException e) {
            throw new Sharp4jException("rank " + rank + ": cannot reach the launcher's rendezvous at " + hostPort + ": " + e, e);
        }
    }

    /** From the launcher's environment variables, or null when they are not set. */
    public static RendezvousBootstrap fromEnvironment() {
        String hp = System.getenv(ENV_RENDEZVOUS);
        if (hp == null) {
            return null;
        }
        return new RendezvousBootstrap(Integer.parseInt(require(ENV_RANK)), Integer.parseInt(require(ENV_SIZE)),
                require(ENV_JOB), hp, 30_000);
    }

    private static String require(String name) {
        String v = System.getenv(name);
        if (v == null || v.isBlank()) {
            throw new Sharp4jException(ENV_RENDEZVOUS + " is set but " + name + " is not: start ranks with bin/sharp4j-run");
        }
        return v;
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return size;
    }

    @Override
    public String jobId() {
        return jobId;
    }

    @Override
    public synchronized byte[][] allgather(byte[] mine) {
        try {
            out.writeInt(mine.length);
            out.write(mine);
            out.flush();
            byte[][] all = new byte[size][];
            for (int r = 0; r < size; r++) {
                int len = in.readInt();
                if (len < 0) {
                    int failed = in.readInt();
                    throw new PeerFailureException("bootstrap allgather: rank " + failed
                            + " disconnected from the launcher (died?)", new int[] {failed});
                }
                all[r] = new byte[len];
                in.readFully(all[r]);
            }
            return all;
        } catch (IOException e) {
            throw new Sharp4jException("rank " + rank + ": rendezvous with the launcher failed: " + e, e);
        }
    }

    @Override
    public String name() {
        return "launcher";
    }

    @Override
    public void close() {
        try {
            socket.close();
        } catch (IOException ignored) {
            // nothing to do
        }
    }
}
