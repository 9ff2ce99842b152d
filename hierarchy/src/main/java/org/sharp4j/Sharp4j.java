package org.sharp4j;

import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.sharp4j.bootstrap.Bootstrap;
import org.sharp4j.bootstrap.RendezvousBootstrap;
import org.sharp4j.bootstrap.SingletonBootstrap;
import org.sharp4j.bootstrap.pmix.PmixBootstrap;
import org.sharp4j.coll.Engine;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Entry points: build a {@link Communicator} for this process or for a given bootstrap. */
public final class Sharp4j {
    /** System property choosing how {@link #init()} finds the job's ranks: auto (default), launcher, pmix or singleton. */
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
     * (auto, launcher, pmix, singleton) forces one. Collective: every rank calls it.
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
     * {@code SHARP4J_RENDEZVOUS} is set, else PMIx if {@code PMIX_RANK} and {@code PMIX_NAMESPACE}
     * are set and libpmix loads, else a job of one rank. The choice and its reason are logged at
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
            case "auto":
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
                        b = new SingletonBootstrap();
                        why = "auto: PMIX_RANK and PMIX_NAMESPACE are set but " + problem + "; running as a job of one rank";
                    }
                } else {
                    b = new SingletonBootstrap();
                    why = "auto: neither " + RendezvousBootstrap.ENV_RENDEZVOUS + " nor PMIX_RANK/PMIX_NAMESPACE is set";
                }
                break;
            default:
                throw new IllegalArgumentException(BOOTSTRAP_PROPERTY + " must be auto, launcher, pmix or singleton, got '" + mode + "'");
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
