package org.sharp4j.coll;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.management.JMException;
import javax.management.ObjectName;

/**
 * Keeps the JDK's own bytecode spinner out of C2 for the rest of this JVM's life, with one
 * compiler directive (the runtime form of {@code jcmd PID Compiler.directives_add FILE}); the
 * agent adds it at start ({@code -Dsharp4j.mpi.jitDirective=false} leaves the JIT as it is).
 *
 * <h2>Why</h2>
 * The JDK generates classes at run time with its internal copy of ASM: lambda forms (method handles,
 * var handles, string concatenation), bound method handle species, dynamic proxies. A JVM that
 * loads the agent, Byte Buddy, Logback and sharp4j generates 250-280 of them before the program's
 * first timed call, against about 35 for an Open MPI Java program alone, and every one of them
 * runs {@code jdk.internal.org.objectweb.asm.Frame::execute} (2,305 bytes of bytecode) once per
 * instruction to compute stack map frames (on JDK 24+ the ClassFile API's stack map generator). So C2 compiles that method, 170-300 ms of the JVM's only
 * C2 thread on a 2-core node, and compiles it again after each uncommon trap: 3 to 4 times per
 * run (PrintCompilation, OMB Java's OSUReduce through the agent). The last one starts when the
 * program itself generates a class, e.g. OMB's {@code String.format} at the end of its first message
 * size, and the program's own loop, whose OSR compile then waits behind it, runs its next size
 * in C1 code: OMB's 8-byte row was 0.9-3.1 us against 0.3-0.5 for the sizes around it. Kept in C1
 * (C2 excluded, so the JVM compiles these methods at tier 1), class generation stays as fast as an
 * application needs for code that runs at start-up, and C2 is free for the program's loops.
 *
 * <h2>How</h2>
 * Directives come from a file only, so the directive is written to a short-lived file in {@code
 * java.io.tmpdir} ({@link PidFiles}: deleted at once, a killed process's leftover by the next JVM)
 * and passed to the platform MBean server's {@code DiagnosticCommand} MBean. The directive stack
 * holds at most {@code CompilerDirectivesLimit} (50) entries; this adds one per JVM. Methods already
 * C2-compiled keep their code until it is next invalidated.
 */
public final class JitDirective {
    /**
     * The JDK's class generators: its internal ASM up to JDK 23 ({@code Frame::execute}), the
     * ClassFile API's implementation from JDK 24 ({@code StackMapGenerator::processBlock}, 2,767
     * bytes, the same story on Temurin 25). A pattern no loaded class matches costs nothing.
     */
    static final String DIRECTIVE = "[{ match: [\"jdk/internal/org/objectweb/asm/*.*\", \"jdk/internal/classfile/impl/*.*\"], "
            + "c2: { Exclude: true } }]";

    static final String PREFIX = "sharp4j-jit-";

    private static final AtomicBoolean ADDED = new AtomicBoolean();

    private JitDirective() {
    }

    /**
     * Adds the directive to this JVM unless it was added before; returns null when it is in place,
     * otherwise why not (no management support, a read-only temporary directory, a JVM without
     * directives). Never throws: without it, the JVM compiles as it always does.
     */
    public static String keepClassSpinnerOutOfC2() {
        if (ADDED.get()) {
            return null;
        }
        synchronized (ADDED) {
            if (ADDED.get()) {
                return null;
            }
            Path file = null;
            try {
                file = PidFiles.create(Path.of(System.getProperty("java.io.tmpdir")), PREFIX, ".json");
                Files.writeString(file, DIRECTIVE, StandardCharsets.US_ASCII);
                Object out = ManagementFactory.getPlatformMBeanServer().invoke(new ObjectName("com.sun.management:type=DiagnosticCommand"),
                        "compilerDirectivesAdd", new Object[] {new String[] {file.toString()}}, new String[] {String[].class.getName()});
                String said = String.valueOf(out).trim();
                if (!said.startsWith("1 compiler directives added")) {
                    return "the JVM answered \"" + said + "\"";
                }
                ADDED.set(true);
                return null;
            } catch (IOException | JMException | RuntimeException e) {
                return e.toString();
            } finally {
                if (file != null) {
                    try {
                        Files.deleteIfExists(file);
                    } catch (IOException e) {
                        // the next JVM's PidFiles.create removes it
                    }
                }
            }
        }
    }

    /** The JVM's directive stack as {@code jcmd PID Compiler.directives_print} shows it (tests, diagnosis). */
    static String print() throws JMException {
        return String.valueOf(ManagementFactory.getPlatformMBeanServer().invoke(new ObjectName("com.sun.management:type=DiagnosticCommand"),
                "compilerDirectivesPrint", new Object[] {new String[0]}, new String[] {String[].class.getName()}));
    }
}
