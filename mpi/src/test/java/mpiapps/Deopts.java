package mpiapps;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedMethod;
import jdk.jfr.consumer.RecordingStream;

/**
 * Runs another program's {@code main} while JFR records the JIT's deoptimizations, then prints
 * {@code DEOPT METHOD@BCI REASON <- CALLERS} for each one in sharp4j code outside the set-up (the
 * engine's heating, the agent's warm-up), and {@code deopts: N}:
 * {@code mpiapps.Deopts mpiapps.OsuDirect allreduce float typed ...}.
 *
 * <p>Such a deoptimization is C2 throwing away compiled sharp4j code because the program took a
 * branch the set-up never took: the calls after it run interpreted and in C1 while it recompiles,
 * on the rank's core. Left out: {@code CommState.logFirst}, which runs once per first call of a
 * kind and is compiled on its own on purpose (see {@code CommState.quiet}): its trap costs nothing
 * to the routed path; and the agent's shaded Byte Buddy ({@code org.sharp4j.mpi.shaded}), which
 * transforms classes as the program loads them, not a call's path (seen: a class_check in its
 * {@code TypePool} while OsuDirect loaded a class mid-run). The stream starts first: starting JFR makes every compiled method not entrant.
 *
 * <p>For {@link OsuDirect} it also prints {@code C2 METHOD} for each C2 compilation of sharp4j code
 * (the same exclusions) that began after the program's timed calls began ({@link OsuDirect#timedStart}),
 * and {@code c2 after the timed start: N}: code the set-up left in C1 and C2 compiled during the
 * program's calls, on the rank's core, while the calls before it ran in C1's profiling code.
 */
public final class Deopts {
    private Deopts() {
    }

    public static void main(String[] args) throws Exception {
        List<String> found = new ArrayList<>();
        List<Object[]> compiled = new ArrayList<>(); // C2's compilations of sharp4j code: {start Instant, method}, under found's lock
        try (RecordingStream rs = new RecordingStream()) {
            rs.enable("jdk.Deoptimization").withStackTrace();
            rs.onEvent("jdk.Deoptimization", e -> {
                RecordedMethod m = e.getValue("method");
                if (m == null || !m.getType().getName().startsWith("org.sharp4j") || m.getName().equals("logFirst")
                        || m.getType().getName().startsWith("org.sharp4j.mpi.shaded.")) {
                    return;
                }
                List<RecordedFrame> frames = e.getStackTrace() == null ? List.of() : e.getStackTrace().getFrames();
                StringBuilder callers = new StringBuilder();
                for (RecordedFrame f : frames) {
                    RecordedMethod fm = f.getMethod();
                    String type = fm.getType().getName();
                    if (type.equals("org.sharp4j.mpi.WarmUp") || type.equals("org.sharp4j.Communicator") && fm.getName().startsWith("heat")
                            || type.equals("org.sharp4j.coll.Engine") && fm.getName().equals("warmUp")) {
                        return; // the set-up: it takes these on purpose
                    }
                    if (callers.length() < 300) {
                        callers.append(' ').append(type.substring(type.lastIndexOf('.') + 1)).append('.').append(fm.getName());
                    }
                }
                synchronized (found) {
                    found.add(m.getType().getName() + "." + m.getName() + "@" + e.getInt("bci") + " " + e.getString("reason") + " <-" + callers);
                }
            });
            rs.enable("jdk.Compilation").withThreshold(java.time.Duration.ZERO);
            rs.onEvent("jdk.Compilation", e -> {
                RecordedMethod m = e.getValue("method");
                if (m != null && e.getInt("compileLevel") == 4 && m.getType().getName().startsWith("org.sharp4j")
                        && !m.getType().getName().startsWith("org.sharp4j.mpi.shaded.") && !m.getName().equals("logFirst")) {
                    synchronized (found) {
                        compiled.add(new Object[] {e.getStartTime(), m.getType().getName() + "." + m.getName() + m.getDescriptor()});
                    }
                }
            });
            rs.startAsync();
            Thread.sleep(1_000);
            // a program that ends with System.exit (the OSU ports) reports from a shutdown hook
            Thread report = new Thread(() -> report(found, compiled));
            Runtime.getRuntime().addShutdownHook(report);
            Class.forName(args[0]).getMethod("main", String[].class).invoke(null, (Object) Arrays.copyOfRange(args, 1, args.length));
            Runtime.getRuntime().removeShutdownHook(report);
            report(found, compiled);
        }
    }

    private static void report(List<String> found, List<Object[]> compiled) {
        try {
            Thread.sleep(2_000); // the stream delivers about once a second
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        synchronized (found) {
            for (String f : found) {
                System.out.println("DEOPT " + f);
            }
            System.out.println("deopts: " + found.size());
            java.time.Instant from = OsuDirect.timedStart;
            if (from != null) {
                int n = 0;
                for (Object[] c : compiled) {
                    if (((java.time.Instant) c[0]).isAfter(from)) {
                        System.out.println("C2 " + c[1]);
                        n++;
                    }
                }
                System.out.println("c2 after the timed start: " + n);
            }
        }
    }
}
