package org.sharp4j.mpi;

import static net.bytebuddy.matcher.ElementMatchers.isStatic;
import static net.bytebuddy.matcher.ElementMatchers.named;
import static net.bytebuddy.matcher.ElementMatchers.nameStartsWith;
import static net.bytebuddy.matcher.ElementMatchers.not;
import static net.bytebuddy.matcher.ElementMatchers.takesArgument;
import static net.bytebuddy.matcher.ElementMatchers.takesArguments;

import java.lang.instrument.IllegalClassFormatException;
import java.lang.instrument.Instrumentation;
import java.security.ProtectionDomain;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import net.bytebuddy.agent.builder.AgentBuilder;
import net.bytebuddy.agent.builder.ResettableClassFileTransformer;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.description.method.MethodDescription;
import net.bytebuddy.description.type.TypeDescription;
import net.bytebuddy.dynamic.DynamicType;
import net.bytebuddy.matcher.ElementMatcher;
import net.bytebuddy.utility.JavaModule;
import org.sharp4j.coll.JitDirective;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code -javaagent}: with {@code -Dsharp4j.enable=true}, Open MPI Java's
 * {@code Comm.allReduce}, {@code reduce} and {@code barrier} start with a call to
 * {@link MpiRouter}, which runs them on sharp4j when its rules allow and otherwise lets MPI's own
 * code run; {@code iAllReduce}, {@code iReduce}, {@code iBarrier} are only counted;
 * {@code Comm.free()}/{@code disconnect()} and {@code MPI.Finalize()} first close sharp4j's
 * communicators. Without the property, or with any value but {@code true}, it returns at once:
 * no class is touched, nothing is logged, the program runs exactly as without it.
 *
 * <pre>
 * mpirun -x JAVA_TOOL_OPTIONS="-javaagent:sharp4j-mpi-VERSION-agent.jar -Dsharp4j.enable=true" -np 4 java -cp app.jar:mpi.jar App
 * </pre>
 */
public final class Sharp4jAgent {
    /** The switch: {@code -Dsharp4j.enable=true}. */
    public static final String ENABLE_PROPERTY = "sharp4j.enable";

    private static final Object LOCK = new Object();
    private static final String BYTE_BUDDY_SAFE = "net.bytebuddy.safe";

    /** {@code -Dsharp4j.mpi.jitDirective=false}: the agent leaves the JIT as it is ({@link JitDirective}). */
    public static final String JIT_DIRECTIVE_PROPERTY = "sharp4j.mpi.jitDirective";

    /**
     * {@code -Dsharp4j.mpi.gcAfterSetUp=false}: no garbage collection at the end of the first communicator's set-up
     * (see {@link CommState#collectSetUpGarbage}).
     */
    public static final String GC_AFTER_SET_UP_PROPERTY = "sharp4j.mpi.gcAfterSetUp";

    private Sharp4jAgent() {
    }

    public static void premain(String args, Instrumentation inst) {
        start(inst);
    }

    /** Attached to a running JVM: classes already loaded are retransformed. */
    public static void agentmain(String args, Instrumentation inst) {
        start(inst);
    }

    /** True when {@code sharp4j.enable} is {@code true} (case and surrounding blanks ignored). */
    static boolean enabled() {
        String v = System.getProperty(ENABLE_PROPERTY);
        return v != null && v.trim().toLowerCase(Locale.ROOT).equals("true");
    }

    private static void start(Instrumentation inst) {
        if (!enabled()) {
            return;
        }
        synchronized (LOCK) {
            if (AgentStatus.installed) {
                return;
            }
            AgentLogging.configure();
            // Byte Buddy's safe mode: no sun.misc.Unsafe (JDK 24+ warns on stderr about its memory access). The agent
            // only inlines advice and injects no class, which is all safe mode gives up. In the agent jar this name is
            // relocated with Byte Buddy, so it concerns only the agent's own copy, never the program's.
            if (System.getProperty(BYTE_BUDDY_SAFE) == null) {
                System.setProperty(BYTE_BUDDY_SAFE, "true");
            }
            Logger log = LoggerFactory.getLogger(Sharp4jAgent.class);
            boolean loud = worldRank() == 0;
            // First, before Byte Buddy and the engine generate classes: the JDK's class generator stays out of C2, whose
            // repeated compiles of it otherwise land in the program's first timed calls (see JitDirective).
            if (!System.getProperty(JIT_DIRECTIVE_PROPERTY, "true").trim().equalsIgnoreCase("false")) {
                String why = JitDirective.keepClassSpinnerOutOfC2();
                if (why != null) {
                    log.debug("sharp4j-mpi: the JDK's class generator is left to C2 (no compiler directive: {})", why);
                }
            }
            try {
                install(inst, log);
                AgentStatus.installed = true;
                String msg = "sharp4j-mpi agent installed ({}=true): mpi.Comm allReduce, reduce and barrier on intra-communicators "
                        + "go through sharp4j for MPI.INT, LONG, FLOAT, DOUBLE with MPI.SUM, PROD, MIN, MAX (and BAND, BOR, BXOR, "
                        + "LAND, LOR on INT, LONG); everything else goes to MPI";
                if (loud) {
                    log.info(msg, ENABLE_PROPERTY);
                } else {
                    log.debug(msg, ENABLE_PROPERTY);
                }
            } catch (RuntimeException | LinkageError e) {
                log.warn("sharp4j-mpi agent could not be installed; the program runs on MPI alone", e);
            }
        }
    }

    private static void install(Instrumentation inst, Logger log) {
        List<Hook> commHooks = List.of(
                new Hook("allReduce(Object, Object, int, Datatype, Op)", CommAdvice.AllReduce.class,
                        named("allReduce").and(takesArguments(5)).and(takesArgument(0, Object.class)).and(takesArgument(1, Object.class))
                                .and(takesArgument(2, int.class)).and(takesArgument(3, named("mpi.Datatype")))
                                .and(takesArgument(4, named("mpi.Op")))),
                new Hook("allReduce(Object, int, Datatype, Op)", CommAdvice.AllReduceInPlace.class,
                        named("allReduce").and(takesArguments(4)).and(takesArgument(0, Object.class)).and(takesArgument(1, int.class))
                                .and(takesArgument(2, named("mpi.Datatype"))).and(takesArgument(3, named("mpi.Op")))),
                new Hook("reduce(Object, Object, int, Datatype, Op, int)", CommAdvice.Reduce.class,
                        named("reduce").and(takesArguments(6)).and(takesArgument(0, Object.class)).and(takesArgument(1, Object.class))
                                .and(takesArgument(2, int.class)).and(takesArgument(3, named("mpi.Datatype")))
                                .and(takesArgument(4, named("mpi.Op"))).and(takesArgument(5, int.class))),
                new Hook("reduce(Object, int, Datatype, Op, int)", CommAdvice.ReduceInPlace.class,
                        named("reduce").and(takesArguments(5)).and(takesArgument(0, Object.class)).and(takesArgument(1, int.class))
                                .and(takesArgument(2, named("mpi.Datatype"))).and(takesArgument(3, named("mpi.Op")))
                                .and(takesArgument(4, int.class))),
                new Hook("barrier()", CommAdvice.Barrier.class, named("barrier").and(takesArguments(0))),
                new Hook("iAllReduce(...)", CommAdvice.NonBlocking.class, named("iAllReduce")),
                new Hook("iReduce(...)", CommAdvice.NonBlocking.class, named("iReduce")),
                new Hook("iBarrier()", CommAdvice.NonBlocking.class, named("iBarrier").and(takesArguments(0))),
                new Hook("free()", CommAdvice.Free.class, named("free").and(takesArguments(0)).and(not(isStatic()))),
                new Hook("disconnect()", CommAdvice.Free.class, named("disconnect").and(takesArguments(0)).and(not(isStatic()))));
        List<Hook> mpiHooks = List.of(
                new Hook("Finalize()", CommAdvice.Finalize.class, named("Finalize").and(takesArguments(0)).and(isStatic())));
        new AgentBuilder.Default()
                .disableClassFormatChanges()
                .with(AgentBuilder.RedefinitionStrategy.RETRANSFORMATION)
                .ignore(not(nameStartsWith("mpi.")))
                .with(MpiClassesOnly::new)
                .with(new Reporter(log, commHooks, mpiHooks))
                .type(named("mpi.Comm"))
                .transform((builder, type, loader, module, domain) -> {
                    for (Hook h : commHooks) {
                        builder = builder.visit(h.advice.on(h.matcher));
                    }
                    return builder;
                })
                .type(named("mpi.MPI"))
                .transform((builder, type, loader, module, domain) -> {
                    for (Hook h : mpiHooks) {
                        builder = builder.visit(h.advice.on(h.matcher));
                    }
                    return builder;
                })
                .installOn(inst);
    }

    /**
     * The transformer as registered with the JVM, which calls it for every class any loader defines
     * for the rest of the run: it hands Byte Buddy only the classes of package {@code mpi} (by the
     * internal name the JVM passes, a string test) and answers "unchanged" for all others itself.
     * Why: Byte Buddy's own transformer builds a type pool and a description of each class before
     * its ignore matcher turns it away. A program's later class loads (the first {@code printf} of an
     * OSU-style benchmark: {@code Formatter} and the locale data, about 60 classes) ran that code, and
     * C2 compiled it ({@code TypePool.describe}, 14 KB; with it {@code HashSet.add}) while the program's
     * first routed calls ran on the same two cores (LogCompilation, 2 ranks on 2 CPUs). The ignore
     * matcher stays: it says the same for anything that reaches Byte Buddy another way.
     *
     * <p>It stays registered after {@code mpi.Comm} and {@code mpi.MPI} are instrumented (removing it
     * would also spare the JVM its upcall per class): a profiler or debugger that retransforms
     * {@code mpi.Comm} later gets the advice back only through it, and a rank whose {@code mpi.Comm}
     * lost the advice would call {@code MPI_Allreduce} where the other ranks call sharp4j, a hang.
     */
    static final class MpiClassesOnly extends ResettableClassFileTransformer.WithDelegation {
        MpiClassesOnly(ResettableClassFileTransformer byteBuddy) {
            super(byteBuddy);
        }

        /** Whether the class of this internal name (null for some hidden classes) may be one of the instrumented ones. */
        static boolean mpiClass(String internalName) {
            return internalName != null && internalName.startsWith("mpi/");
        }

        @Override
        public byte[] transform(ClassLoader loader, String internalName, Class<?> redefined, ProtectionDomain domain, byte[] bytes)
                throws IllegalClassFormatException {
            return mpiClass(internalName) ? classFileTransformer.transform(loader, internalName, redefined, domain, bytes) : null;
        }

        @Override
        public byte[] transform(Module module, ClassLoader loader, String internalName, Class<?> redefined, ProtectionDomain domain,
                byte[] bytes) throws IllegalClassFormatException {
            return mpiClass(internalName) ? classFileTransformer.transform(module, loader, internalName, redefined, domain, bytes) : null;
        }
    }

    /** One instrumented method: a readable signature, the advice, and the matcher. */
    private static final class Hook {
        final String signature;
        final Advice advice;
        final ElementMatcher<? super MethodDescription> matcher;

        Hook(String signature, Class<?> adviceClass, ElementMatcher<? super MethodDescription> matcher) {
            this.signature = signature;
            this.advice = Advice.to(adviceClass);
            this.matcher = matcher;
        }
    }

    /** Logs what was instrumented, and warns when a method the rules expect is missing from this mpi.jar. */
    private static final class Reporter extends AgentBuilder.Listener.Adapter {
        private final Logger log;
        private final List<Hook> commHooks;
        private final List<Hook> mpiHooks;

        Reporter(Logger log, List<Hook> commHooks, List<Hook> mpiHooks) {
            this.log = log;
            this.commHooks = commHooks;
            this.mpiHooks = mpiHooks;
        }

        @Override
        public void onTransformation(TypeDescription type, ClassLoader loader, JavaModule module, boolean loaded, DynamicType dynamicType) {
            List<Hook> hooks = type.getName().equals("mpi.MPI") ? mpiHooks : commHooks;
            List<String> missing = new ArrayList<>();
            for (Hook h : hooks) {
                if (type.getDeclaredMethods().filter(h.matcher).isEmpty()) {
                    missing.add(h.signature);
                }
            }
            if (!missing.isEmpty()) {
                log.warn("sharp4j-mpi: {} has no {}: those calls go to MPI unobserved (an Open MPI Java other than 4.x?)",
                        type.getName(), String.join(", ", missing));
            }
            log.debug("sharp4j-mpi: instrumented {}{}", type.getName(), loaded ? " (retransformed)" : "");
        }

        @Override
        public void onError(String typeName, ClassLoader loader, JavaModule module, boolean loaded, Throwable error) {
            log.warn("sharp4j-mpi: could not instrument {}; its calls go to MPI", typeName, error);
        }
    }

    private static int worldRank() {
        for (String name : new String[] {"OMPI_COMM_WORLD_RANK", "PMIX_RANK"}) {
            String v = System.getenv(name);
            if (v != null) {
                try {
                    return Integer.parseInt(v.trim());
                } catch (NumberFormatException e) {
                    return 0;
                }
            }
        }
        return 0;
    }
}
