package org.sharp4j.mpi;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.security.ProtectionDomain;
import java.util.ArrayList;
import java.util.List;
import net.bytebuddy.agent.builder.ResettableClassFileTransformer;
import org.junit.jupiter.api.Test;

/** The agent's filter in front of Byte Buddy: only package {@code mpi} reaches it, in both of the JVM's call forms. */
class MpiClassesOnlyTest {
    /** Records what reaches it and answers with a marker class file. */
    private static final class Recording extends ResettableClassFileTransformer.AbstractBase {
        final List<String> seen = new ArrayList<>();
        final byte[] answer = {(byte) 0xca, (byte) 0xfe};

        @Override
        public byte[] transform(ClassLoader loader, String name, Class<?> redefined, ProtectionDomain domain, byte[] bytes) {
            seen.add("legacy " + name);
            return answer;
        }

        @Override
        public byte[] transform(Module module, ClassLoader loader, String name, Class<?> redefined, ProtectionDomain domain, byte[] bytes) {
            seen.add("module " + name);
            return answer;
        }

        @Override
        public java.util.Iterator<net.bytebuddy.agent.builder.AgentBuilder.Transformer> iterator(
                net.bytebuddy.description.type.TypeDescription type, ClassLoader loader, net.bytebuddy.utility.JavaModule module,
                Class<?> redefined, ProtectionDomain domain) {
            return java.util.Collections.emptyIterator();
        }

        @Override
        public boolean reset(java.lang.instrument.Instrumentation inst, ResettableClassFileTransformer t,
                net.bytebuddy.agent.builder.AgentBuilder.RedefinitionStrategy s,
                net.bytebuddy.agent.builder.AgentBuilder.RedefinitionStrategy.DiscoveryStrategy d,
                net.bytebuddy.agent.builder.AgentBuilder.RedefinitionStrategy.BatchAllocator b,
                net.bytebuddy.agent.builder.AgentBuilder.RedefinitionStrategy.Listener l) {
            return false;
        }
    }

    @Test
    void onlyClassesOfPackageMpiReachByteBuddyInEitherForm() throws Exception {
        Recording bb = new Recording();
        Sharp4jAgent.MpiClassesOnly f = new Sharp4jAgent.MpiClassesOnly(bb);
        Module m = Object.class.getModule();
        byte[] in = {1, 2, 3};
        for (String other : new String[] {"java/util/Formatter", "mpiapps/OsuDirect", "org/sharp4j/mpi/CommState", "Mpi", "mpi", null}) {
            assertNull(f.transform(null, other, null, null, in), other);
            assertNull(f.transform(m, null, other, null, null, in), other);
        }
        assertEquals(List.of(), bb.seen, "classes outside package mpi reached Byte Buddy");
        assertArrayEquals(bb.answer, f.transform(null, "mpi/Comm", null, null, in));
        assertArrayEquals(bb.answer, f.transform(m, null, "mpi/MPI", null, null, in));
        assertArrayEquals(bb.answer, f.transform(m, null, "mpi/Intracomm", null, null, in));
        assertEquals(List.of("legacy mpi/Comm", "module mpi/MPI", "module mpi/Intracomm"), bb.seen);
    }
}
