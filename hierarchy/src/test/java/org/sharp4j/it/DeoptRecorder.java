package org.sharp4j.it;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedMethod;
import jdk.jfr.consumer.RecordingStream;

/**
 * The JIT's deoptimizations in {@code org.sharp4j} code from a point of a rank's program on (JFR's
 * jdk.Deoptimization), for the launcher ranks that check that a program's first calls find the hot
 * path compiled for them ({@link FirstCallsMain}, the fallback module's {@code FirstLongCallsMain}).
 * A deoptimization there means C2 compiled a branch as a trap because the heating never took it:
 * the calls after it run interpreted while it recompiles, on the rank's core.
 *
 * <p>Open it before {@code Sharp4j.init()}: starting JFR throws every compiled method away
 * ({@code make_not_entrant}), which after init would hide what the heating left.
 */
public final class DeoptRecorder implements AutoCloseable {
    private final RecordingStream rs = new RecordingStream();
    private final List<String> found = new ArrayList<>();
    /** From when events count: set by the program's thread, read by the stream's. */
    private volatile Instant from;

    public DeoptRecorder() throws InterruptedException {
        rs.enable("jdk.Deoptimization").withStackTrace();
        rs.onEvent("jdk.Deoptimization", e -> {
            RecordedMethod m = e.getValue("method");
            Instant f = from;
            if (f != null && e.getStartTime().isAfter(f) && m != null && m.getType().getName().startsWith("org.sharp4j")) {
                String line = m.getType().getName() + "." + m.getName() + "@" + e.getInt("bci") + " " + e.getString("reason") + " "
                        + e.getString("action") + frames(e.getStackTrace() == null ? null : e.getStackTrace().getFrames());
                synchronized (found) {
                    found.add(line);
                }
            }
        });
        rs.startAsync();
        Thread.sleep(1_000); // the stream has started (and its deoptimizations happened)
    }

    /** Counts from now on: call it right before the program's first call. */
    public void countFromNow() {
        from = Instant.now();
    }

    /**
     * Prints {@code rank R deopt METHOD@BCI REASON ACTION <- FRAMES} for each one so far, after
     * waiting for the stream's last batch (it delivers about once a second).
     */
    public void print(int rank) throws InterruptedException {
        Thread.sleep(2_000);
        synchronized (found) {
            for (String d : found) {
                System.out.println("rank " + rank + " deopt " + d);
            }
        }
    }

    @Override
    public void close() {
        rs.close();
    }

    private static String frames(List<RecordedFrame> frames) {
        if (frames == null) {
            return "";
        }
        StringBuilder sb = new StringBuilder(" <-");
        for (int i = 0; i < Math.min(5, frames.size()); i++) {
            String type = frames.get(i).getMethod().getType().getName();
            sb.append(' ').append(type.substring(type.lastIndexOf('.') + 1)).append('.').append(frames.get(i).getMethod().getName());
        }
        return sb.toString();
    }
}
