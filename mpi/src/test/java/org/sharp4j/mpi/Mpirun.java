package org.sharp4j.mpi;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.sharp4j.testkit.Procs;

/**
 * Starts Open MPI Java programs under mpirun the way .ci/mpi-env.sh says ({@link Procs#mpiEnv}),
 * for the end-to-end tests.
 */
final class Mpirun {
    static String mpiJar;
    static String mpirunFlags;
    static String javaOpts;
    static Path mpirun;
    private static boolean loaded;

    private Mpirun() {
    }

    /** Reads .ci/mpi-env.sh once; why mpirun cannot run here (mpirun or mpi.jar missing), or null. */
    static synchronized String problem() throws IOException, InterruptedException {
        if (!loaded) {
            loaded = true;
            Procs.MpiEnv env = Procs.mpiEnv();
            mpiJar = env.mpiJar();
            mpirunFlags = env.mpirunFlags();
            javaOpts = env.javaOpts();
            mpirun = env.mpirun();
        }
        if (mpirun == null) {
            return "mpirun is not on PATH (run .ci/setup-mpi.sh)";
        }
        if (!Files.isRegularFile(Path.of(mpiJar))) {
            return "no mpi.jar at " + mpiJar + " (run .ci/setup-mpi.sh)";
        }
        return null;
    }

    /**
     * mpirun [flags] [extra mpirun args] -np N JAVA [MPI_JAVA_OPTS] [jvmArgs] -cp CP MAIN args.
     */
    static Procs.Result run(int np, String javaExe, List<String> mpirunArgs, List<String> jvmArgs, String classPath, String main,
            List<String> env, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add(mpirun.toString());
        cmd.addAll(Procs.words(mpirunFlags));
        cmd.addAll(mpirunArgs);
        cmd.addAll(List.of("-np", Integer.toString(np), javaExe));
        cmd.addAll(Procs.words(javaOpts));
        cmd.addAll(jvmArgs);
        cmd.addAll(List.of("-Xmx256m", "-cp", classPath, main));
        cmd.addAll(List.of(args));
        return Procs.run(cmd, env, 300);
    }
}
