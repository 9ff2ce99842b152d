package org.sharp4j.topology;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;

/** What one rank tells the others at setup: where it runs. */
public final class RankInfo {
    /** Host name used to group ranks into nodes (after any override). */
    public final String hostname;
    /** Physical socket from affinity, or -1 when unbound. */
    public final int socket;
    public final int numaNode;
    public final int socketsOnHost;
    public final long pid;

    public RankInfo(String hostname, int socket, int numaNode, int socketsOnHost, long pid) {
        this.hostname = hostname;
        this.socket = socket;
        this.numaNode = numaNode;
        this.socketsOnHost = socketsOnHost;
        this.pid = pid;
    }

    public byte[] encode() {
        try {
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            DataOutputStream o = new DataOutputStream(b);
            o.writeUTF(hostname);
            o.writeInt(socket);
            o.writeInt(numaNode);
            o.writeInt(socketsOnHost);
            o.writeLong(pid);
            o.flush();
            return b.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static RankInfo decode(byte[] bytes) {
        try {
            DataInputStream i = new DataInputStream(new ByteArrayInputStream(bytes));
            return new RankInfo(i.readUTF(), i.readInt(), i.readInt(), i.readInt(), i.readLong());
        } catch (IOException e) {
            throw new UncheckedIOException("corrupt rank info from bootstrap", e);
        }
    }
}
