package org.sharp4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sharp4j.bootstrap.Bootstrap;
import org.sharp4j.bootstrap.SingletonBootstrap;
import org.sharp4j.spi.BootstrapProvider;
import org.sharp4j.spi.Plugins;

/**
 * How {@code Sharp4j.init()} picks its bootstrap in auto mode from an injected environment (the real
 * one is never changed): a process that the environment shows to be one rank of a larger job, which
 * no bootstrap can join, fails with what was found and what to do, instead of computing as a job of
 * one; a job of one stays allowed when nothing says otherwise; a plugin that cannot load is skipped.
 */
class BootstrapSelectionTest {
    /** libpmix "cannot load" here, whatever this machine has: the selection must not depend on it. */
    static final Supplier<String> NO_LIBPMIX = () -> "libpmix not found (test)";
    static final Supplier<String> LIBPMIX_MUST_NOT_BE_ASKED = () -> {
        throw new AssertionError("libpmix looked up although PMIx variables are not set");
    };
    /** No bootstrap provider at all: the hierarchy module registers none, nor do its tests. */
    static final ClassLoader NO_PLUGINS = BootstrapSelectionTest.class.getClassLoader();

    @TempDir
    Path tmp;

    static Sharp4jException fails(Map<String, String> env, Supplier<String> pmix, ClassLoader plugins) {
        return assertThrows(Sharp4jException.class, () -> Sharp4j.selectBootstrap("auto", env, pmix, plugins).close());
    }

    static void alone(String mode, Map<String, String> env, Supplier<String> pmix) {
        Bootstrap b = Sharp4j.selectBootstrap(mode, env, pmix, NO_PLUGINS);
        try {
            assertTrue(b instanceof SingletonBootstrap, b::toString);
            assertEquals(1, b.size());
            assertEquals(0, b.rank());
        } finally {
            b.close();
        }
    }

    /** srun without --mpi=pmix: every task has SLURM_PROCID, SLURM_STEP_ID and the step's task count, no PMIx. */
    @Test
    void srunWithoutPmixFailsNamingTheFix() {
        Map<String, String> env = Map.of("SLURM_PROCID", "3", "SLURM_STEP_ID", "0", "SLURM_NTASKS", "6", "SLURM_NPROCS", "6",
                "SLURM_STEP_NUM_TASKS", "6", "SLURM_JOB_ID", "17");
        String m = fails(env, LIBPMIX_MUST_NOT_BE_ASKED, NO_PLUGINS).getMessage();
        assertTrue(m.contains("one rank of a job of 6 processes (SLURM_PROCID=3 SLURM_STEP_NUM_TASKS=6)"), m);
        assertTrue(m.contains("run the ranks with srun --mpi=pmix"), m);
        assertTrue(m.contains("srun --mpi=list"), m);
        assertTrue(m.contains("pmix: PMIX_RANK/PMIX_NAMESPACE not set"), m);
        assertTrue(m.contains("-Dsharp4j.bootstrap=singleton"), m);
    }

    /** mpirun or srun --mpi=pmix, but libpmix (or JNA) does not load: the fix is a library, not the launcher. */
    @Test
    void pmixLauncherWithoutLibpmixFailsNamingJnaAndLibpmix() {
        Map<String, String> env = Map.of("PMIX_RANK", "1", "PMIX_NAMESPACE", "slurm.pmix.4.0", "SLURM_PROCID", "1",
                "SLURM_STEP_ID", "0", "SLURM_STEP_NUM_TASKS", "6");
        String m = fails(env, NO_LIBPMIX, NO_PLUGINS).getMessage();
        assertTrue(m.contains("one rank of a job of 6 processes (PMIX_RANK=1 PMIX_NAMESPACE=slurm.pmix.4.0, SLURM_PROCID=1 SLURM_STEP_NUM_TASKS=6)"), m);
        assertTrue(m.contains("cannot use libpmix (libpmix not found (test))"), m);
        assertTrue(m.contains("JNA (net.java.dev.jna:jna"), m);
        assertTrue(m.contains("libpmix2"), m);
        assertTrue(m.contains("-Dsharp4j.pmix.library="), m);
        assertTrue(m.contains("-Dsharp4j.bootstrap=singleton"), m);

        // PMIx variables alone do not give the size: they count as a larger job all the same.
        String only = fails(Map.of("PMIX_RANK", "0", "PMIX_NAMESPACE", "prterun-x-1@1"), NO_LIBPMIX, NO_PLUGINS).getMessage();
        assertTrue(only.contains("one rank of a job of several processes (a PMIx launcher) (PMIX_RANK=0 PMIX_NAMESPACE=prterun-x-1@1)"), only);
    }

    @Test
    void openMpiWithoutPmixVariablesFailsNamingTheMpiModule() {
        String m = fails(Map.of("OMPI_COMM_WORLD_SIZE", "4", "OMPI_COMM_WORLD_RANK", "2"), LIBPMIX_MUST_NOT_BE_ASKED, NO_PLUGINS)
                .getMessage();
        assertTrue(m.contains("one rank of a job of 4 processes (OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_RANK=2)"), m);
        assertTrue(m.contains("org.sharp4j:sharp4j-mpi and Open MPI's mpi.jar"), m);
    }

    @Test
    void pmiOnlyLauncherFailsNamingPmix() {
        String m = fails(Map.of("PMI_RANK", "0", "PMI_SIZE", "2"), LIBPMIX_MUST_NOT_BE_ASKED, NO_PLUGINS).getMessage();
        assertTrue(m.contains("one rank of a job of 2 processes (PMI_RANK=0 PMI_SIZE=2)"), m);
        assertTrue(m.contains("not PMI-1/PMI-2 ones: start the ranks with srun --mpi=pmix or Open MPI's mpirun"), m);
    }

    /** Nothing, or only a size of 1, or a Slurm batch script (no step): a job of one rank, as before. */
    @Test
    void aJobOfOneStaysAllowedWhenNothingSaysOtherwise() {
        alone("auto", Map.of(), LIBPMIX_MUST_NOT_BE_ASKED);
        // sbatch -n 6's batch script: SLURM_PROCID=0 and SLURM_NTASKS=6 but no SLURM_STEP_ID (checked on Slurm 22.05).
        alone("auto", Map.of("SLURM_PROCID", "0", "SLURM_NTASKS", "6", "SLURM_NPROCS", "6", "SLURM_JOB_ID", "1"),
                LIBPMIX_MUST_NOT_BE_ASKED);
        // salloc: no task id at all.
        alone("auto", Map.of("SLURM_NTASKS", "2", "SLURM_JOB_ID", "2"), LIBPMIX_MUST_NOT_BE_ASKED);
        // srun --mpi=pmix -n 1 and mpirun -np 1 where libpmix does not load: the size says 1.
        alone("auto", Map.of("PMIX_RANK", "0", "PMIX_NAMESPACE", "slurm.pmix.5.0", "SLURM_PROCID", "0", "SLURM_STEP_ID", "0",
                "SLURM_STEP_NUM_TASKS", "1"), NO_LIBPMIX);
        alone("auto", Map.of("PMIX_RANK", "0", "PMIX_NAMESPACE", "prterun-x-1@1", "OMPI_COMM_WORLD_SIZE", "1"), NO_LIBPMIX);
        alone("auto", Map.of("PMI_SIZE", "1", "PMI_RANK", "0"), LIBPMIX_MUST_NOT_BE_ASKED);
    }

    /** sharp4j.bootstrap=singleton: alone on purpose, whatever the environment says. */
    @Test
    void singletonModeRunsAloneInsideALargerJob() {
        alone("singleton", Map.of("SLURM_PROCID", "3", "SLURM_STEP_ID", "0", "SLURM_STEP_NUM_TASKS", "6"), LIBPMIX_MUST_NOT_BE_ASKED);
        alone("singleton", Map.of("PMIX_RANK", "1", "PMIX_NAMESPACE", "n", "OMPI_COMM_WORLD_SIZE", "2"), NO_LIBPMIX);
    }

    /** A usable bootstrap plugin of more than one rank, as the mpi module's is after MPI.Init. */
    public static final class UsableProvider implements BootstrapProvider {
        @Override
        public String name() {
            return "usable";
        }

        @Override
        public String unavailableReason() {
            return null;
        }

        @Override
        public Bootstrap create() {
            return new Bootstrap() {
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
                    return "usable-job";
                }

                @Override
                public byte[][] allgather(byte[] mine) {
                    return new byte[][] {mine.clone()};
                }

                @Override
                public String name() {
                    return "usable";
                }

                @Override
                public void close() {
                }
            };
        }
    }

    /** What the mpi module's provider did on a class path without mpi.jar: its class needs one that is missing. */
    public static final class NeedsMissingClass implements BootstrapProvider {
        public NeedsMissingClass() {
            throw new NoClassDefFoundError("mpi/MPIException");
        }

        @Override
        public String name() {
            return "broken";
        }

        @Override
        public String unavailableReason() {
            return null;
        }

        @Override
        public Bootstrap create() {
            throw new AssertionError();
        }
    }

    /** A class loader that registers {@code providers} (class names) as bootstrap providers, in that order. */
    ClassLoader registering(String... providers) throws Exception {
        Path services = Files.createDirectories(tmp.resolve("META-INF/services"));
        Files.writeString(services.resolve(BootstrapProvider.class.getName()), String.join("\n", providers) + "\n", StandardCharsets.UTF_8);
        return new URLClassLoader(new URL[] {tmp.toUri().toURL()}, NO_PLUGINS);
    }

    @Test
    void aPluginThatCannotLoadIsSkippedWithItsReason() throws Exception {
        ClassLoader l = registering("org.sharp4j.NoSuchProvider", NeedsMissingClass.class.getName(), UsableProvider.class.getName());
        List<String> skipped = new ArrayList<>();
        List<BootstrapProvider> loaded = Plugins.load(BootstrapProvider.class, l, skipped);
        assertEquals(1, loaded.size(), skipped::toString);
        assertTrue(loaded.get(0) instanceof UsableProvider, loaded::toString);
        assertEquals(2, skipped.size(), skipped::toString);
        assertTrue(skipped.get(0).contains("org.sharp4j.NoSuchProvider not found"), skipped::toString);
        assertTrue(skipped.get(1).contains(NeedsMissingClass.class.getName() + " could not be instantiated"), skipped::toString);
        assertTrue(skipped.get(1).contains("java.lang.NoClassDefFoundError: mpi/MPIException"), skipped::toString);

        // auto mode goes past them to the usable one, even inside a Slurm step
        Bootstrap b = Sharp4j.selectBootstrap("auto", Map.of("SLURM_PROCID", "1", "SLURM_STEP_ID", "0", "SLURM_STEP_NUM_TASKS", "2"),
                LIBPMIX_MUST_NOT_BE_ASKED, l);
        try {
            assertEquals("usable", b.name());
        } finally {
            b.close();
        }
    }

    @Test
    void aSkippedPluginIsNamedWhenTheJobCannotBeJoined() throws Exception {
        ClassLoader l = registering(NeedsMissingClass.class.getName());
        // alone: a job of one rank, no ServiceConfigurationError
        alone("auto", Map.of(), LIBPMIX_MUST_NOT_BE_ASKED);
        Bootstrap b = Sharp4j.selectBootstrap("auto", Map.of(), LIBPMIX_MUST_NOT_BE_ASKED, l);
        b.close();
        assertEquals(1, b.size());
        // in a larger job: the exception lists the skipped plugin and why
        String m = fails(Map.of("OMPI_COMM_WORLD_SIZE", "2"), LIBPMIX_MUST_NOT_BE_ASKED, l).getMessage();
        assertTrue(m.contains("plugin skipped: Provider " + NeedsMissingClass.class.getName()
                + " could not be instantiated: java.lang.NoClassDefFoundError: mpi/MPIException"), m);
    }
}
