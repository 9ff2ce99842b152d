package org.sharp4j.bootstrap;

/** A job of one rank: what a program started without a launcher gets. */
public final class SingletonBootstrap implements Bootstrap {
    private final String jobId = "p" + ProcessHandle.current().pid() + "-" + Long.toHexString(System.nanoTime());

    @Override
    public int rank() {
        return 0;
    }

    @Override
    public int size() {
        return 1;
    }

    @Override
    public String jobId() {
        return jobId;
    }

    @Override
    public byte[][] allgather(byte[] mine) {
        return new byte[][] {mine.clone()};
    }

    @Override
    public String name() {
        return "singleton";
    }

    @Override
    public void close() {
    }
}
