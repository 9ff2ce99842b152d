package org.sharp4j.tuning;

/**
 * How the shared-memory phases move data inside a node.
 *
 * <ul>
 *   <li>{@link #EXCHANGE}: every member publishes its contribution next to its flag and reads all
 *       the others, folding them itself in member order: one cache-line transfer on the critical
 *       path, {@code a + (q-1) b m}; wins for small m and small q.</li>
 *   <li>{@link #TREE}: k-nomial reduce up the socket tree, then the socket tree of leaders, flat
 *       release down. Latency-bound: cost ~ (k-1)(a + b m) ceil(log_k q) (paper 001), so small
 *       radix wins for small m.</li>
 *   <li>{@link #TILED}: every rank of a socket reduces its cache-line-aligned tile of every
 *       contribution (reduce-scatter), then all read the result (allgather). Bandwidth-bound:
 *       each rank touches q*m/q = m bytes instead of the leader touching q*m.</li>
 *   <li>{@link #DIRECT}: Reduce only, one socket of one node: non-root members copy their input into
 *       their slots chunk by chunk and return; the root folds its own input in place with theirs,
 *       left to right over the members, straight into its output as the chunks are published.
 *       Root's critical path {@code (q-1) m} fold steps pipelined against the others' copies of m,
 *       against tiled's copy-in m + fold m/q over q inputs + copy-out m: wins for small q.</li>
 *   <li>{@link #PIPELINED}: Allreduce and Reduce, one socket of one node: tiled's tiles and bits,
 *       three chunks in flight (copied in, folded, read out), each wait a full step behind the
 *       publication it needs, per-tile flags, no wait for every member after the first chunk;
 *       a Reduce's non-root members fold their tiles and return, only the root reads out.</li>
 *   <li>{@link #CMA}: Reduce only, one socket of one node: {@link #DIRECT}, but a member whose input is
 *       a direct buffer copies nothing; the root reads it from the member's process
 *       ({@code process_vm_readv}, one copy by the kernel into a block in the root's cache) and folds
 *       it. The member's cost falls from m to 0 (it waits until the root has read), the root's stays
 *       one read of (q-1) m plus the fold; where the input did not change since the last call (a
 *       benchmark's), its lines are still in the root's cache. The engine runs {@link #DIRECT} where
 *       the ranks cannot read each other's memory.</li>
 *   <li>{@link #CMA_SPLIT}: Allreduce and Reduce, one socket of one node, every member's input and
 *       every output direct buffers: every rank folds its slice m/q of all q inputs (its own in place,
 *       the others read from their processes) and writes its slice of the result into the other
 *       members' outputs (a Reduce: the root's; {@code process_vm_writev}). Per rank: (q-1) m/q read
 *       by the kernel, a fold of m/q over q inputs, (q-1) m/q written (a Reduce: m/q, off the root);
 *       the Reduce root's critical path falls from {@link #CMA}'s (q-1) m read plus the fold of m to a
 *       q-th of that, plus one flag from every member at the end. Calls whose buffers do not qualify
 *       run as {@link #CMA} (Reduce) or {@link #PIPELINED} (Allreduce).</li>
 * </ul>
 */
public enum IntraNodeAlgorithm {
    EXCHANGE, TREE, TILED, DIRECT, PIPELINED, CMA, CMA_SPLIT
}
