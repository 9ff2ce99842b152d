package org.sharp4j;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.sharp4j.bootstrap.Bootstrap;
import org.sharp4j.bootstrap.RendezvousBootstrap;
import org.sharp4j.bootstrap.SingletonBootstrap;
import org.sharp4j.bootstrap.pmix.PmixBootstrap;
import org.sharp4j.coll.Engine;
import org.sharp4j.spi.BootstrapProvider;
import org.sharp4j.spi.Plugins;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Entry points: build a {@link Communicator} for this process or for a given bootstrap. */
public final class Sharp4j {
    /** System property choosing how {@link #init()} finds the job's ranks: auto (default), pmix, mpi, launcher or singleton. */
    public static final String BOOTSTRAP_PROPERTY = "sharp4j.bootstrap";

    private static final Logger LOG = LoggerFactory.getLogger(Sharp4j.class);
    private static final AtomicBoolean SELECTION_LOGGED = new AtomicBoolean();

    private Sharp4j() {
    }

    /**
     * The communicator of all ranks of this job, configured by the {@code sharp4j.*} system
     * properties. Under the embedded launcher ({@code bin/sharp4j-run}) the ranks meet through
     * its rendezvous; under a PMIx launcher ({@code mpirun} of Open MPI 4+, {@code srun --mpi=pmix})
     * through libpmix; a program started alone is a job of one rank, but a process that the
     * environment shows to be one rank of a larger job (Slurm, Open MPI, PMIx or PMI variables) that no
     * bootstrap can join gets a {@link Sharp4jException} saying what to add or set, never a silent job
     * of one. {@code sharp4j.bootstrap}
     * (auto, pmix, mpi, launcher, singleton) forces one; an initialised Open MPI Java world is used
     * when PMIx is not (module {@code mpi}). Collective: every rank calls it.
     */
    public static Communicator init() {
        return init(Config.fromSystemProperties());
    }

    public static Communicator init(Config config) {
        Bootstrap b = selectBootstrap(System.getProperty(BOOTSTRAP_PROPERTY, "auto"), System.getenv());
        try {
            return new Communicator(Engine.create(b, config), b, true);
        } catch (RuntimeException e) {
            b.close();
            throw e;
        }
    }

    /**
     * The bootstrap {@link #init()} would use (the {@code sharp4j.bootstrap} property, auto by default), for
     * tools that build several communicators over one job, e.g. {@code sharp4j tune}. The caller owns and closes it.
     */
    public static Bootstrap bootstrap() {
        return selectBootstrap(System.getProperty(BOOTSTRAP_PROPERTY, "auto"), System.getenv());
    }

    /** A communicator over an explicit bootstrap (threads, PMIx, MPI, ...). The caller keeps ownership of {@code b}. */
    public static Communicator create(Bootstrap b, Config config) {
        return new Communicator(Engine.create(b, config), b, false);
    }

    /**
     * The bootstrap {@code mode} names. auto: the embedded launcher's rendezvous if
     * {@code SHARP4J_RENDEZVOUS} is set (only the launcher sets it, for its own ranks), else PMIx if
     * {@code PMIX_RANK} and {@code PMIX_NAMESPACE} are set and libpmix loads, else a registered
     * {@link BootstrapProvider} that is usable (mpi: an initialised Open MPI Java world of more than
     * one rank), else a job of one rank, but only when nothing in {@code env} says that this process
     * is one rank of a larger job ({@link #largerJob}): then it throws, naming what was found and
     * what to add or set. The choice and its reason are logged at INFO once per process.
     */
    static Bootstrap selectBootstrap(String mode, Map<String, String> env) {
        return selectBootstrap(mode, env, Sharp4j::pmixProblem, Thread.currentThread().getContextClassLoader());
    }

    /**
     * As {@link #selectBootstrap(String, Map)}, with what decides it given (tests): {@code pmixProblem}
     * says why libpmix cannot be used (null: it can), {@code plugins} is where bootstrap providers are looked for.
     */
    static Bootstrap selectBootstrap(String mode, Map<String, String> env, Supplier<String> pmixProblem, ClassLoader plugins) {
        String m = mode == null ? "auto" : mode.trim().toLowerCase(Locale.ROOT);
        Bootstrap b;
        String why;
        switch (m) {
            case "launcher":
                b = RendezvousBootstrap.fromEnvironment();
                if (b == null) {
                    throw new Sharp4jException(BOOTSTRAP_PROPERTY + "=launcher but " + RendezvousBootstrap.ENV_RENDEZVOUS
                            + " is not set: start the ranks with bin/sharp4j-run");
                }
                why = BOOTSTRAP_PROPERTY + "=launcher";
                break;
            case "pmix":
                b = newPmix();
                why = BOOTSTRAP_PROPERTY + "=pmix";
                break;
            case "singleton":
                b = new SingletonBootstrap();
                why = BOOTSTRAP_PROPERTY + "=singleton";
                break;
            case "auto": {
                // PMIx (mpirun, PRRTE, srun --mpi=pmix), then an initialised Open MPI Java world (a
                // launcher whose PMIx we cannot load), then a job of one. The embedded launcher's
                // variable is checked before all of them: it sets it for its own ranks only, while
                // PMIx variables may be inherited from an allocation bin/sharp4j-run was started in.
                List<String> no = new ArrayList<>();
                b = null;
                why = null;
                String pmix = null;
                if (env.get(RendezvousBootstrap.ENV_RENDEZVOUS) != null) {
                    b = RendezvousBootstrap.fromEnvironment();
                    why = "auto: " + RendezvousBootstrap.ENV_RENDEZVOUS + " is set (embedded launcher)";
                } else if (env.get("PMIX_RANK") != null && env.get("PMIX_NAMESPACE") != null) {
                    pmix = pmixProblem.get();
                    if (pmix == null) {
                        b = new PmixBootstrap();
                        why = "auto: PMIX_RANK and PMIX_NAMESPACE are set and libpmix loaded";
                    } else {
                        no.add("pmix: PMIX_RANK and PMIX_NAMESPACE are set but " + pmix);
                    }
                } else {
                    no.add("pmix: PMIX_RANK/PMIX_NAMESPACE not set");
                }
                if (b == null) {
                    List<String> skipped = new ArrayList<>();
                    for (BootstrapProvider p : Plugins.load(BootstrapProvider.class, plugins, skipped)) {
                        String problem = p.unavailableReason();
                        if (problem == null) {
                            b = p.create();
                            why = "auto: " + p.name() + " is usable" + (no.isEmpty() ? "" : " (" + String.join("; ", no) + ")");
                            break;
                        }
                        no.add(p.name() + ": " + problem);
                    }
                    for (String s : skipped) {
                        no.add("plugin skipped: " + s);
                    }
                }
                if (b == null) {
                    String larger = largerJob(env, pmix);
                    if (larger != null) {
                        throw new Sharp4jException(larger + " No bootstrap can join the other ranks (" + String.join("; ", no)
                                + "), and sharp4j does not compute alone by mistake: set -D" + BOOTSTRAP_PROPERTY
                                + "=singleton to run each process as a job of one rank on purpose.");
                    }
                    b = new SingletonBootstrap();
                    why = "auto: running as a job of one rank (" + String.join("; ", no) + "; launcher: "
                            + RendezvousBootstrap.ENV_RENDEZVOUS + " not set)";
                }
                break;
            }
            default: {
                for (BootstrapProvider p : Plugins.load(BootstrapProvider.class, plugins, new ArrayList<>())) {
                    if (p.name().equals(m)) {
                        String problem = p.unavailableReason();
                        if (problem != null) {
                            throw new Sharp4jException(BOOTSTRAP_PROPERTY + "=" + m + " but " + problem);
                        }
                        b = p.create();
                        why = BOOTSTRAP_PROPERTY + "=" + m;
                        String detail = "rank " + b.rank() + " of " + b.size();
                        LOG.info("sharp4j: bootstrap {} chosen ({}): {}", b.name(), why, detail);
                        return b;
                    }
                }
                throw new IllegalArgumentException(BOOTSTRAP_PROPERTY + " must be auto, pmix, mpi, launcher or singleton, got '"
                        + mode + "'" + (m.equals("mpi") ? " (mpi needs the sharp4j-mpi module and Open MPI's mpi.jar on the class path)" : ""));
            }
        }
        String detail = "pmix".equals(b.name()) ? b.toString() : "rank " + b.rank() + " of " + b.size();
        if (SELECTION_LOGGED.compareAndSet(false, true)) {
            LOG.info("sharp4j: bootstrap {} chosen ({}): {}", b.name(), why, detail);
        } else {
            LOG.debug("sharp4j: bootstrap {} chosen ({}): {}", b.name(), why, detail);
        }
        return b;
    }

    /**
     * Null unless {@code env} says that this process is one rank of a job of more than one: then
     * what says so and what to do about it, in two sentences. Looked at: PMIx ({@code PMIX_RANK},
     * {@code PMIX_NAMESPACE}; the job size unknown, so it counts unless a size below says 1), Open
     * MPI ({@code OMPI_COMM_WORLD_SIZE}), Slurm's task variables ({@code SLURM_PROCID} with
     * {@code SLURM_STEP_NUM_TASKS}, else {@code SLURM_NTASKS} or {@code SLURM_NPROCS}; a batch script,
     * which has no {@code SLURM_STEP_ID}, is not a task) and PMI-1/2 ({@code PMI_SIZE}).
     * {@code pmixProblem}: why libpmix could not be used, if PMIx variables were set.
     */
    static String largerJob(Map<String, String> env, String pmixProblem) {
        List<String> saw = new ArrayList<>();
        int known = 0; // the largest job size a variable gives, 0 if none does
        boolean pmix = env.get("PMIX_RANK") != null || env.get("PMIX_NAMESPACE") != null;
        if (pmix) {
            saw.add(variables(env, "PMIX_RANK", "PMIX_NAMESPACE"));
        }
        int ompi = size(env, "OMPI_COMM_WORLD_SIZE");
        if (ompi > 0) {
            saw.add(variables(env, "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"));
            known = Math.max(known, ompi);
        }
        boolean slurm = env.get("SLURM_PROCID") != null && env.get("SLURM_STEP_ID") != null;
        if (slurm) {
            String var = env.get("SLURM_STEP_NUM_TASKS") != null ? "SLURM_STEP_NUM_TASKS"
                    : env.get("SLURM_NTASKS") != null ? "SLURM_NTASKS" : "SLURM_NPROCS";
            int n = size(env, var);
            if (n > 0) {
                saw.add(variables(env, "SLURM_PROCID", var));
                known = Math.max(known, n);
            } else {
                slurm = false;
            }
        }
        int pmi = size(env, "PMI_SIZE");
        if (pmi > 0) {
            saw.add(variables(env, "PMI_RANK", "PMI_SIZE"));
            known = Math.max(known, pmi);
        }
        if (known > 1 || (pmix && known == 0)) {
            String what = "sharp4j: this process is one rank of a job of " + (known > 1 ? known + " processes" : "several processes (a PMIx launcher)")
                    + " (" + String.join(", ", saw) + ").";
            String fix;
            if (pmix) {
                fix = "The launcher speaks PMIx but sharp4j cannot use libpmix (" + pmixProblem + "): keep JNA (net.java.dev.jna:jna,"
                        + " a dependency of org.sharp4j:sharp4j-hierarchy) on the class path and install libpmix (Debian: libpmix2)"
                        + " or set -D" + PmixBootstrap.LIBRARY_PROPERTY + "=/path/to/libpmix.so.2.";
            } else if (slurm) {
                fix = "Slurm started it without PMIx: run the ranks with srun --mpi=pmix (srun --mpi=list must list pmix;"
                        + " or MpiDefault=pmix in slurm.conf).";
            } else if (ompi > 0) {
                fix = "Open MPI's mpirun set no PMIx variables (Open MPI 4 or newer sets them): use Open MPI 4+, or add"
                        + " org.sharp4j:sharp4j-mpi and Open MPI's mpi.jar to the class path and call MPI.Init before Sharp4j.init().";
            } else {
                fix = "sharp4j joins PMIx launchers, not PMI-1/PMI-2 ones: start the ranks with srun --mpi=pmix or Open MPI's mpirun.";
            }
            return what + " " + fix;
        }
        return null;
    }

    private static int size(Map<String, String> env, String var) {
        String v = env.get(var);
        if (v == null) {
            return 0;
        }
        try {
            return Math.max(0, Integer.parseInt(v.trim()));
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    private static String variables(Map<String, String> env, String... vars) {
        List<String> out = new ArrayList<>();
        for (String v : vars) {
            if (env.get(v) != null) {
                out.add(v + "=" + env.get(v));
            }
        }
        return String.join(" ", out);
    }

    private static String pmixProblem() {
        try {
            return PmixBootstrap.libraryProblem();
        } catch (LinkageError e) { // JNA missing from the class path
            return "PMIx bootstrap needs JNA (net.java.dev.jna:jna) on the class path: " + e;
        }
    }

    private static Bootstrap newPmix() {
        try {
            return new PmixBootstrap();
        } catch (LinkageError e) {
            throw new Sharp4jException(BOOTSTRAP_PROPERTY + "=pmix needs JNA (net.java.dev.jna:jna) on the class path: " + e, e);
        }
    }
}
