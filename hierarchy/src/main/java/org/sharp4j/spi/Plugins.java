package org.sharp4j.spi;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one place sharp4j finds its plugins ({@link BootstrapProvider}, {@link InterNodeProvider}).
 * A registered provider that cannot be loaded (a class it needs is missing, e.g. the mpi module's
 * provider on a class path without Open MPI's {@code mpi.jar}; its constructor throws) is skipped:
 * its reason is logged once per process at INFO and returned to the caller, never thrown as a
 * {@link ServiceConfigurationError}.
 */
public final class Plugins {
    private static final Logger LOG = LoggerFactory.getLogger(Plugins.class);
    private static final Set<String> LOGGED = ConcurrentHashMap.newKeySet();

    private Plugins() {
    }

    /** The providers of {@code type} that load, from the thread's context class loader (as {@link ServiceLoader#load(Class)}). */
    public static <T> List<T> load(Class<T> type, List<String> skipped) {
        return load(type, Thread.currentThread().getContextClassLoader(), skipped);
    }

    /**
     * The providers of {@code type} registered for {@code loader} that load, in ServiceLoader's
     * order; one line per provider that does not ("{@code <class>: <error>}") is added to {@code skipped}.
     */
    public static <T> List<T> load(Class<T> type, ClassLoader loader, List<String> skipped) {
        List<T> out = new ArrayList<>();
        Iterator<T> it = ServiceLoader.load(type, loader).iterator();
        // ServiceLoader goes on to the next provider after an error; bound the loop all the same.
        for (int guard = 0; guard < 1000; guard++) {
            try {
                if (!it.hasNext()) {
                    break;
                }
                out.add(it.next());
            } catch (ServiceConfigurationError e) {
                String why = reason(e);
                skipped.add(why);
                if (LOGGED.add(type.getName() + " " + why)) {
                    LOG.info("sharp4j: plugin skipped ({}): {}", type.getSimpleName(), why);
                }
            }
        }
        return out;
    }

    /** ServiceLoader's message ("org.sharp4j.spi.X: Provider Y could not be instantiated") and the root cause. */
    static String reason(ServiceConfigurationError e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String msg = e.getMessage();
        int colon = msg == null ? -1 : msg.indexOf(": ");
        String head = colon >= 0 ? msg.substring(colon + 2) : String.valueOf(msg);
        return root == e ? head : head + ": " + root;
    }
}
