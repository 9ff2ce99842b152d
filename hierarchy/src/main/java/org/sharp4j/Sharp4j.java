package org.sharp4j;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.concurrent.atomic.AtomicBoolean;
import org.sharp4j.bootstrap.Bootstrap;
import org.sharp4j.bootstrap.RendezvousBootstrap;
import org.sharp4j.bootstrap.SingletonBootstrap;
import org.sharp4j.bootstrap.pmix.PmixBootstrap;
import org.sharp4j.coll.Engine;
import org.sharp4j.spi.BootstrapProvider;
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
     * through libpmix; a program started alone is a job of one rank. {@code sharp4j.bootstrap}
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

    /** A communicator over an explicit bootstrap (threads, PMIx, MPI, ...). The caller keeps ownership of {@code b}. */
    public static Communicator create(Bootstrap b, Config config) {
        return new Communicator(Engine.create(b, config), b, false);
    }

    /**
     * The bootstrap {@code mode} names. auto: the embedded launcher's rendezvous if
     * {@code SHARP4J_RENDEZVOUS} is set (only the launcher sets it, for its own ranks), else PMIx if
     * {@code PMIX_RANK} and {@code PMIX_NAMESPACE} are set and libpmix loads, else a registered
     * {@link BootstrapProvider} that is usable (mpi: an initialised Open MPI Java world of more than
     * one rank), else a job of one rank. The choice and its reason are logged at
     * INFO once per process.
     */
    static Bootstrap selectBootstrap(String mode, Map<String, String> env) {
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
                if (env.get(RendezvousBootstrap.ENV_RENDEZVOUS) != null) {
                    b = RendezvousBootstrap.fromEnvironment();
                    why = "auto: " + RendezvousBootstrap.ENV_RENDEZVOUS + " is set (embedded launcher)";
                } else if (env.get("PMIX_RANK") != null && env.get("PMIX_NAMESPACE") != null) {
                    String problem;
                    try {
                        problem = PmixBootstrap.libraryProblem();
                    } catch (LinkageError e) { // JNA, an optional dependency, is missing
                        problem = "PMIx bootstrap unavailable: " + e;
                    }
                    if (problem == null) {
                        b = new PmixBootstrap();
                        why = "auto: PMIX_RANK and PMIX_NAMESPACE are set and libpmix loaded";
                    } else {
                        no.add("pmix: PMIX_RANK and PMIX_NAMESPACE are set but " + problem);
                    }
                } else {
                    no.add("pmix: PMIX_RANK/PMIX_NAMESPACE not set");
                }
                if (b == null) {
                    for (BootstrapProvider p : ServiceLoader.load(BootstrapProvider.class)) {
                        String problem = p.unavailableReason();
                        if (problem == null) {
                            b = p.create();
                            why = "auto: " + p.name() + " is usable" + (no.isEmpty() ? "" : " (" + String.join("; ", no) + ")");
                            break;
                        }
                        no.add(p.name() + ": " + problem);
                    }
                }
                if (b == null) {
                    b = new SingletonBootstrap();
                    why = "auto: running as a job of one rank (" + String.join("; ", no) + "; launcher: "
                            + RendezvousBootstrap.ENV_RENDEZVOUS + " not set)";
                }
                break;
            }
            default: {
                for (BootstrapProvider p : ServiceLoader.load(BootstrapProvider.class)) {
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

    private static Bootstrap newPmix() {
        try {
            return new PmixBootstrap();
        } catch (LinkageError e) {
            throw new Sharp4jException(BOOTSTRAP_PROPERTY + "=pmix needs JNA (net.java.dev.jna:jna) on the class path: " + e, e);
        }
    }
}
