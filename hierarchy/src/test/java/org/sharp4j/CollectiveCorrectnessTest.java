package org.sharp4j;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.sharp4j.tuning.Collective;
import org.sharp4j.tuning.IntraNodeAlgorithm;
import org.sharp4j.tuning.IntraNodeTuning;

/**
 * Every type x op x size x ranks (1..8) x topology (1-2 simulated nodes, 1-2 simulated sockets)
 * x root, for Allreduce and Reduce through arrays, direct buffers, in-place arrays and the shared
 * buffer, bit-compared with {@link Reference}'s sequential reduction in the documented order.
 */
class CollectiveCorrectnessTest {

    /** Small slots and threshold so that inline, slot, tiled, chunked and multi-chunk paths all run on small data. */
    static final Config SMALL = Config.defaults().withSlotBytes(4096).withSharedBytes(64 * 1024)
            .withTuning(new IntraNodeTuning(3, 512)).withTimeoutNanos(120_000_000_000L);
    static final Config DEFAULT = Config.defaults().withTimeoutNanos(120_000_000_000L);
    /** SMALL with the exchange up to 256 bytes (inline and slot data), the tree up to 512, tiled above. */
    static final Config EXCHANGE = SMALL.withTuneOverride("allreduce,reduce,barrier:0-257:exchange");

    static Stream<Arguments> topologies() {
        List<Arguments> out = new ArrayList<>();
        String only = System.getProperty("test.ranks"); // e.g. -Dtest.ranks=6 to debug one size
        for (int ranks = 1; ranks <= 8; ranks++) {
            if (only != null && Integer.parseInt(only) != ranks) {
                continue;
            }
            for (int nodes = 1; nodes <= 2; nodes++) {
                for (int sockets = 1; sockets <= 2; sockets++) {
                    if (nodes > ranks || nodes * sockets > ranks) {
                        continue;
                    }
                    out.add(Arguments.of(ranks, nodes, sockets, "small"));
                    out.add(Arguments.of(ranks, nodes, sockets, "exchange"));
                    if (ranks == 2 || ranks == 5 || ranks == 8) {
                        out.add(Arguments.of(ranks, nodes, sockets, "default"));
                    }
                }
            }
        }
        return out.stream();
    }

    enum Api { ARRAYS, BUFFERS, IN_PLACE, SHARED, IN_PLACE_BUFFER }

    @ParameterizedTest(name = "{0} ranks, {1} node(s) x {2} socket(s), {3} tuning")
    @MethodSource("topologies")
    void everyTypeOpSizeAndRoot(int ranks, int nodes, int sockets, String tuning) {
        Config cfg = (tuning.equals("small") ? SMALL : tuning.equals("exchange") ? EXCHANGE : DEFAULT)
                .withSimulatedTopology(nodes, sockets);
        ThreadRanks.run(ranks, cfg, comm -> {
            int slotElems8 = cfg.slotBytes() / 8;
            int thr = cfg.tuning().tiledThresholdBytes();
            long seed = 1;
            for (DataType t : DataType.values()) {
                // 32, 64, 65: 4- and 8-byte types at 128-520 B, across the built-in exchange/tree boundary (256 B)
                int[] counts = {0, 1, 2, 5, 6, 7, 8, 9, 10, 11, 13, 32, 64, 65, 257, thr / t.size, thr / t.size + 1,
                    cfg.slotBytes() / t.size, cfg.slotBytes() / t.size + 1, 3 * slotElems8 * 8 / t.size + 5};
                for (Op op : Op.values()) {
                    if (!op.validFor(t)) {
                        continue;
                    }
                    for (int count : counts) {
                        seed++;
                        Api api = Api.values()[(int) (seed % Api.values().length)];
                        check(comm, Collective.ALLREDUCE, t, op, count, 0, seed, api);
                        check(comm, Collective.REDUCE, t, op, count, (int) (seed % comm.size()), seed + 1_000_000, api);
                    }
                }
                // every root, for an inline and a chunked size
                for (int root = 0; root < comm.size(); root++) {
                    for (int count : new int[] {1, cfg.slotBytes() / t.size + 1}) {
                        seed++;
                        check(comm, Collective.REDUCE, t, Op.SUM, count, root, seed, Api.values()[root % 4]);
                    }
                }
            }
        });
    }

    /** Sizes of the two-rank exchange above the inline data: every 4 B to 104 B, then each data line count's edges up to 256 B (the exchange area) and one past it. */
    static final int[] PAIR_SIZES = {44, 48, 52, 56, 60, 64, 68, 72, 76, 80, 84, 88, 92, 96, 100, 104, 148, 152, 156, 200, 204, 208, 212,
        248, 252, 256, 264};

    /**
     * Two ranks on one socket above one line's inline data (40 B) up to 256 B and just past it:
     * direct and shared buffers take {@code ExchangeAlgorithm.runPair}, arrays the inline path up
     * to 64 B and the general one above (the engine's dispatch), the data in the exchange area up
     * to 256 B. Every form, type and op, both roots, bit for bit.
     */
    @Test
    void twoRanksFrom41To256BytesInEveryForm() {
        ThreadRanks.run(2, EXCHANGE, comm -> {
            long seed = 7;
            for (DataType t : DataType.values()) {
                for (int bytes : PAIR_SIZES) {
                    if (bytes % t.size != 0) {
                        continue;
                    }
                    for (Op op : Op.values()) {
                        if (!op.validFor(t)) {
                            continue;
                        }
                        for (Api api : Api.values()) {
                            seed++;
                            check(comm, Collective.ALLREDUCE, t, op, bytes / t.size, 0, seed, api);
                            check(comm, Collective.REDUCE, t, op, bytes / t.size, (int) (seed % 2), seed + 1_000_000, api);
                        }
                    }
                }
            }
        });
    }

    /**
     * The same sizes with the two ranks on different forms in one call (one passes arrays and takes
     * the inline lane or the general path, the other buffers and takes {@code runPair}, or the
     * shared buffer, in place...):
     * both paths must put the data where the other reads it and publish the same signature. Every
     * ordered pair of forms, every type and op, both roots, bit for bit.
     */
    @Test
    void twoRanksFrom41To256BytesWithADifferentFormOnEachRank() {
        ThreadRanks.run(2, EXCHANGE, comm -> {
            long seed = 70_000;
            Api[] apis = Api.values();
            for (DataType t : DataType.values()) {
                for (int bytes : new int[] {44, 48, 60, 64, 72, 96, 104, 152, 208, 256}) {
                    for (Op op : Op.values()) {
                        if (!op.validFor(t) || bytes % t.size != 0) {
                            continue;
                        }
                        for (Api a0 : apis) {
                            for (Api a1 : apis) {
                                if (a0 == a1) {
                                    continue;
                                }
                                Api mine = comm.rank() == 0 ? a0 : a1;
                                seed++;
                                check(comm, Collective.ALLREDUCE, t, op, bytes / t.size, 0, seed, mine);
                                check(comm, Collective.REDUCE, t, op, bytes / t.size, (int) (seed % 2), seed + 1_000_000, mine);
                            }
                        }
                    }
                }
            }
        });
    }

    @ParameterizedTest(name = "{0} ranks")
    @org.junit.jupiter.params.provider.ValueSource(ints = {1, 2, 3, 4, 5, 6, 7, 8})
    void severalMebibytesForEveryRankCount(int ranks) {
        // The richest topology the rank count allows: 2 nodes x 2 sockets from 4 ranks on.
        Config cfg = DEFAULT.withSimulatedTopology(ranks >= 2 ? 2 : 1, ranks >= 4 ? 2 : 1);
        ThreadRanks.run(ranks, cfg, comm -> {
            int i = 0;
            for (DataType t : DataType.values()) {
                Op op = new Op[] {Op.SUM, Op.MIN, Op.MAX, Op.PROD}[i++];
                int count = 3 * 1024 * 1024 / t.size + 3;
                check(comm, Collective.ALLREDUCE, t, op, count, 0, 100 + i, Api.values()[i % 3]);
                check(comm, Collective.REDUCE, t, op, count, ranks - 1, 200 + i, Api.values()[(i + 1) % 3]);
            }
        });
    }

    /** A table with a different radix per size: the engine must fold each call in its own radix's order. */
    @Test
    void everyCallUsesTheRadixTheTableGivesItsSize() {
        Config cfg = DEFAULT.withSimulatedTopology(1, 2).withTuneOverride("allreduce,reduce:0-64:tree:radix=2#allreduce,reduce:64-16385:tree:radix=4");
        ThreadRanks.run(7, cfg, comm -> {
            assertEquals(2, comm.engine().treeRadix(Collective.ALLREDUCE, 8));
            assertEquals(4, comm.engine().treeRadix(Collective.ALLREDUCE, 800));
            long seed = 5000;
            for (int count : new int[] {1, 7, 8, 9, 100, 2000}) {
                for (Op op : new Op[] {Op.SUM, Op.PROD}) {
                    check(comm, Collective.ALLREDUCE, DataType.DOUBLE, op, count, 0, seed++, Api.ARRAYS);
                    check(comm, Collective.REDUCE, DataType.FLOAT, op, count, 6, seed++, Api.BUFFERS);
                }
            }
        });
    }

    @Test
    void severalMebibytesOnTwoSocketsAndTwoNodes() {
        Config cfg = DEFAULT.withSimulatedTopology(2, 2);
        ThreadRanks.run(4, cfg, comm -> {
            int count = 3 * 1024 * 1024 / 8 + 3;
            check(comm, Collective.ALLREDUCE, DataType.DOUBLE, Op.SUM, count, 0, 7, Api.ARRAYS);
            check(comm, Collective.ALLREDUCE, DataType.LONG, Op.BXOR, count, 0, 8, Api.BUFFERS);
            check(comm, Collective.REDUCE, DataType.FLOAT, Op.MAX, 2 * count, 3, 9, Api.ARRAYS);
            check(comm, Collective.ALLREDUCE, DataType.INT, Op.PROD, 2 * count, 0, 10, Api.IN_PLACE);
        });
    }

    @Test
    void severalMebibytesFromTheSharedBuffer() {
        Config cfg = DEFAULT.withSharedBytes(4 * 1024 * 1024).withSimulatedTopology(1, 2);
        ThreadRanks.run(3, cfg, comm -> {
            check(comm, Collective.ALLREDUCE, DataType.DOUBLE, Op.SUM, 3 * 1024 * 1024 / 8 + 1, 0, 11, Api.SHARED);
            check(comm, Collective.REDUCE, DataType.LONG, Op.MIN, 3 * 1024 * 1024 / 8 + 1, 2, 12, Api.SHARED);
        });
    }

    /** One collective on this rank, checked bit for bit; also checks that inputs are untouched. */
    static void check(Communicator comm, Collective kind, DataType t, Op op, int count, int root, long seed, Api api) {
        int me = comm.rank();
        int n = comm.size();
        long[] mine = new long[count];
        long[][] all = new long[n][count];
        for (int r = 0; r < n; r++) {
            for (int i = 0; i < count; i++) {
                all[r][i] = bits(t, op, seed, r, i);
            }
        }
        System.arraycopy(all[me], 0, mine, 0, count);
        long bytes = (long) count * t.size;
        IntraNodeAlgorithm alg = comm.engine().algorithm(kind, bytes);
        boolean tree = alg == IntraNodeAlgorithm.TREE || alg == IntraNodeAlgorithm.EXCHANGE; // the exchange folds in the tree's bracket; direct = tiled's order
        // Tree calls fold in the radix the table gives their size; the tiled path's only k-nomial
        // fold is between (simulated) nodes, whose radix is fixed when the communicator is built.
        int k = tree ? comm.engine().treeRadix(kind, bytes) : comm.engine().tuning().treeRadix();
        long[] expected = new long[count];
        long[] column = new long[n];
        for (int i = 0; i < count; i++) {
            for (int r = 0; r < n; r++) {
                column[r] = all[r][i];
            }
            expected[i] = Reference.expected(comm.topology(), tree, k, t, op, column);
        }
        boolean gets = kind == Collective.ALLREDUCE || me == root;
        String what = kind + " " + t + " " + op + " count " + count + " root " + root + " via " + api + " ("
                + alg + ") on rank " + me;
        long[] got;
        switch (api) {
            case ARRAYS: {
                Object send = toArray(t, mine);
                Object recv = gets ? toArray(t, new long[count]) : null;
                if (kind == Collective.ALLREDUCE) {
                    allreduceArrays(comm, t, send, recv, count, op);
                } else {
                    reduceArrays(comm, t, send, recv, count, op, root);
                }
                assertArrayBits(mine, fromArray(t, send), what + ": send buffer modified");
                got = gets ? fromArray(t, recv) : null;
                break;
            }
            case IN_PLACE: {
                Object buf = toArray(t, mine);
                if (kind == Collective.ALLREDUCE) {
                    allreduceInPlace(comm, t, buf, count, op);
                } else {
                    reduceInPlace(comm, t, buf, count, op, root);
                }
                got = fromArray(t, buf);
                if (!gets) {
                    assertArrayBits(mine, got, what + ": non-root in-place buffer modified");
                    got = null;
                }
                break;
            }
            case BUFFERS: {
                // offset 3 elements into each buffer
                ByteBuffer send = ByteBuffer.allocateDirect((count + 3) * t.size).order(ByteOrder.nativeOrder());
                ByteBuffer recv = gets ? ByteBuffer.allocateDirect((count + 5) * t.size).order(ByteOrder.nativeOrder()) : null;
                ByteBuffer nat = send.duplicate().order(ByteOrder.nativeOrder());
                for (int i = 0; i < count; i++) {
                    put(nat, t, i + 3, mine[i]);
                }
                if (kind == Collective.ALLREDUCE) {
                    comm.allreduce(send, 3, recv, 5, count, t, op);
                } else {
                    comm.reduce(send, 3, recv, 5, count, t, op, root);
                }
                long[] sent = new long[count];
                for (int i = 0; i < count; i++) {
                    sent[i] = get(nat, t, i + 3);
                }
                assertArrayBits(mine, sent, what + ": send buffer modified");
                got = null;
                if (gets) {
                    ByteBuffer rn = recv.duplicate().order(ByteOrder.nativeOrder());
                    got = new long[count];
                    for (int i = 0; i < count; i++) {
                        got[i] = get(rn, t, i + 5);
                    }
                }
                break;
            }
            case IN_PLACE_BUFFER: {
                // offset 2 elements into the buffer, a guard element after the data
                ByteBuffer buf = ByteBuffer.allocateDirect((count + 3) * t.size).order(ByteOrder.nativeOrder());
                for (int i = 0; i < count; i++) {
                    put(buf, t, i + 2, mine[i]);
                }
                put(buf, t, count + 2, 0x5A5A5A5AL);
                if (kind == Collective.ALLREDUCE) {
                    comm.allreduce(buf, 2, count, t, op);
                } else {
                    comm.reduce(buf, 2, count, t, op, root);
                }
                got = new long[count];
                for (int i = 0; i < count; i++) {
                    got[i] = get(buf, t, i + 2);
                }
                assertEquals(0x5A5A5A5AL, get(buf, t, count + 2), what + ": wrote past the in-place buffer's elements");
                if (!gets) {
                    assertArrayBits(mine, got, what + ": non-root in-place buffer modified");
                    got = null;
                }
                break;
            }
            default: {
                SharedBuffer sb = comm.sharedBuffer();
                if (bytes > sb.capacity()) {
                    return;
                }
                for (int i = 0; i < count; i++) {
                    put(sb.buffer(), t, i, mine[i]);
                }
                if (kind == Collective.ALLREDUCE) {
                    comm.allreduce(sb, count, t, op);
                } else {
                    comm.reduce(sb, count, t, op, root);
                }
                got = new long[count];
                for (int i = 0; i < count; i++) {
                    got[i] = get(sb.buffer(), t, i);
                }
                if (!gets) {
                    assertArrayBits(mine, got, what + ": non-root shared buffer modified");
                    got = null;
                }
            }
        }
        if (gets) {
            assertArrayBits(expected, got, what);
        }
    }

    static long bits(DataType t, Op op, long seed, int r, int i) {
        switch (t) {
            case INT: return (int) Reference.input(t, op, seed, r, i);
            case LONG: return Reference.inputLong(op, seed, r, i);
            case FLOAT: return Float.floatToRawIntBits((float) Reference.input(t, op, seed, r, i));
            default: return Double.doubleToRawLongBits(Reference.input(t, op, seed, r, i));
        }
    }

    static void assertArrayBits(long[] expected, long[] got, String what) {
        assertEquals(expected.length, got.length, what + ": length");
        for (int i = 0; i < expected.length; i++) {
            if (expected[i] != got[i]) {
                assertEquals(expected[i], got[i], what + ": element " + i + " differs (" + expected.length + " elements)");
            }
        }
    }

    static Object toArray(DataType t, long[] v) {
        switch (t) {
            case INT: {
                int[] a = new int[v.length];
                for (int i = 0; i < v.length; i++) {
                    a[i] = (int) v[i];
                }
                return a;
            }
            case LONG:
                return v.clone();
            case FLOAT: {
                float[] a = new float[v.length];
                for (int i = 0; i < v.length; i++) {
                    a[i] = Float.intBitsToFloat((int) v[i]);
                }
                return a;
            }
            default: {
                double[] a = new double[v.length];
                for (int i = 0; i < v.length; i++) {
                    a[i] = Double.longBitsToDouble(v[i]);
                }
                return a;
            }
        }
    }

    static long[] fromArray(DataType t, Object a) {
        switch (t) {
            case INT: {
                int[] x = (int[]) a;
                long[] v = new long[x.length];
                for (int i = 0; i < x.length; i++) {
                    v[i] = x[i];
                }
                return v;
            }
            case LONG:
                return ((long[]) a).clone();
            case FLOAT: {
                float[] x = (float[]) a;
                long[] v = new long[x.length];
                for (int i = 0; i < x.length; i++) {
                    v[i] = Float.floatToRawIntBits(x[i]);
                }
                return v;
            }
            default: {
                double[] x = (double[]) a;
                long[] v = new long[x.length];
                for (int i = 0; i < x.length; i++) {
                    v[i] = Double.doubleToRawLongBits(x[i]);
                }
                return v;
            }
        }
    }

    static void put(ByteBuffer b, DataType t, int i, long v) {
        switch (t) {
            case INT: b.putInt(i * 4, (int) v); break;
            case LONG: b.putLong(i * 8, v); break;
            case FLOAT: b.putInt(i * 4, (int) v); break;
            default: b.putLong(i * 8, v);
        }
    }

    static long get(ByteBuffer b, DataType t, int i) {
        return t.size == 4 ? b.getInt(i * 4) : b.getLong(i * 8);
    }

    static void allreduceArrays(Communicator c, DataType t, Object s, Object r, int n, Op op) {
        switch (t) {
            case INT: c.allreduce((int[]) s, 0, (int[]) r, 0, n, op); break;
            case LONG: c.allreduce((long[]) s, 0, (long[]) r, 0, n, op); break;
            case FLOAT: c.allreduce((float[]) s, 0, (float[]) r, 0, n, op); break;
            default: c.allreduce((double[]) s, 0, (double[]) r, 0, n, op);
        }
    }

    static void reduceArrays(Communicator c, DataType t, Object s, Object r, int n, Op op, int root) {
        switch (t) {
            case INT: c.reduce((int[]) s, 0, (int[]) r, 0, n, op, root); break;
            case LONG: c.reduce((long[]) s, 0, (long[]) r, 0, n, op, root); break;
            case FLOAT: c.reduce((float[]) s, 0, (float[]) r, 0, n, op, root); break;
            default: c.reduce((double[]) s, 0, (double[]) r, 0, n, op, root);
        }
    }

    static void allreduceInPlace(Communicator c, DataType t, Object b, int n, Op op) {
        switch (t) {
            case INT: c.allreduce((int[]) b, 0, n, op); break;
            case LONG: c.allreduce((long[]) b, 0, n, op); break;
            case FLOAT: c.allreduce((float[]) b, 0, n, op); break;
            default: c.allreduce((double[]) b, 0, n, op);
        }
    }

    static void reduceInPlace(Communicator c, DataType t, Object b, int n, Op op, int root) {
        switch (t) {
            case INT: c.reduce((int[]) b, 0, n, op, root); break;
            case LONG: c.reduce((long[]) b, 0, n, op, root); break;
            case FLOAT: c.reduce((float[]) b, 0, n, op, root); break;
            default: c.reduce((double[]) b, 0, n, op, root);
        }
    }
}
