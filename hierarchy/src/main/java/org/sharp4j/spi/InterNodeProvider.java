package org.sharp4j.spi;

/**
 * A way to build phase 3, found with {@link java.util.ServiceLoader} (register the class in
 * {@code META-INF/services/org.sharp4j.spi.InterNodeProvider}). Two kinds:
 *
 * <ul>
 *   <li>host paths (UCX k-nomial, or shared memory between simulated nodes on one host), of
 *       which the engine uses the available one with the highest {@link #priority()};</li>
 *   <li>offloads ({@link #offload()} true, e.g. SHARP), which wrap the chosen host path and fall
 *       back to it when they refuse or fail an operation.</li>
 * </ul>
 *
 * The choice must be the same on every rank: the engine asks {@link #unavailableReason} locally,
 * agrees through the bootstrap (a provider is used only if no rank objects), then calls
 * {@link #create} on every rank.
 */
public interface InterNodeProvider {
    String name();

    /**
     * Short lower-case id for {@code sharp4j.internode=<id>}, which forces this host path (e.g.
     * {@code ucx} between simulated nodes on one host, where shared memory would win).
     */
    default String id() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }

    /** True for in-network offloads that wrap a host path. */
    default boolean offload() {
        return false;
    }

    /** Among usable host paths the highest wins. */
    default int priority() {
        return 0;
    }

    /** Local check, no communication: null when this rank can use the provider, else why not (logged). */
    String unavailableReason(InterNodeContext ctx);

    /**
     * Collective over {@code ctx.bootstrap()}: every rank calls it. Returns the step on node leaders
     * and null on the other ranks.
     *
     * @param hostPath for offloads, the host path to fall back to (null on ranks that are not node leaders)
     */
    InterNodeStep create(InterNodeContext ctx, InterNodeStep hostPath);

    /**
     * Diagnostics ({@code sharp4j info}): why the latest {@link #create} in this JVM handed back
     * the host path (every rank of the job has the same reason), or null when it engaged or never ran.
     */
    default String setupFailure() {
        return null;
    }
}
