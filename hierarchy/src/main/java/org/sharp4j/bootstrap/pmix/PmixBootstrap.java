package org.sharp4j.bootstrap.pmix;

import com.sun.jna.Library;
import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.sharp4j.Sharp4jException;
import org.sharp4j.bootstrap.Bootstrap;

/**
 * Ranks started by a PMIx-enabled launcher (Open MPI's {@code mpirun}, Slurm's {@code srun
 * --mpi=pmix}, PRRTE...) find each other through the system's {@code libpmix}, called with JNA: no
 * MPI Java bindings. Identity from {@code PMIx_Init}; job and local sizes and the host name from
 * {@code PMIx_Get}; the allgather is {@code PMIx_Put} (global scope, a byte object under the key
 * {@code sharp4j.agN}, N a per-call generation so repeated allgathers never read an older value),
 * {@code PMIx_Commit}, {@code PMIx_Fence} over the whole namespace with {@code PMIX_COLLECT_DATA},
 * then one {@code PMIx_Get} per rank.
 *
 * <p>JNA ({@code net.java.dev.jna:jna}) is a (required) dependency of sharp4j-hierarchy for this
 * class. The library is looked for under the name in {@code sharp4j.pmix.library} (if set), then
 * {@link #LIBRARY_NAMES}.
 *
 * <p>The C structures are laid out by hand for PMIx 4.x on LP64 Linux (x86_64, aarch64); offsets
 * checked against {@code pmix_common.h} of PMIx 4.2 by {@code PmixAbiTest} (a C program, when gcc
 * and the headers are present):
 * <pre>
 * pmix_proc_t        260 B: char nspace[256] @0, uint32 rank @256
 * pmix_value_t        32 B: uint16 type @0, union data @8 (24 B; byte object: char *bytes @8, size_t size @16)
 * pmix_info_t        552 B: char key[512] @0, uint32 flags @512, pmix_value_t value @520
 * pmix_byte_object_t  16 B: char *bytes @0, size_t size @8
 * pmix_scope_t uint8, pmix_status_t int32, pmix_data_type_t uint16
 * </pre>
 */
public final class PmixBootstrap implements Bootstrap {
    /** Names tried, in order, after {@code sharp4j.pmix.library}. */
    public static final List<String> LIBRARY_NAMES = List.of("libpmix.so.2", "pmix",
            "/usr/lib/x86_64-linux-gnu/libpmix.so.2", "/usr/lib/aarch64-linux-gnu/libpmix.so.2",
            "/usr/lib64/libpmix.so.2", "/usr/lib/libpmix.so.2", "/usr/local/lib/libpmix.so.2",
            "/usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so");
    public static final String LIBRARY_PROPERTY = "sharp4j.pmix.library";

    // ---- ABI of PMIx 4.x, LP64 (see the class comment; PmixAbiTest checks them) ----
    static final int NSPACE_LEN = 256;          // PMIX_MAX_NSLEN + 1
    static final int KEY_LEN = 512;             // PMIX_MAX_KEYLEN + 1
    static final int PROC_SIZE = 260;
    static final int PROC_RANK_OFFSET = 256;
    static final int VALUE_SIZE = 32;
    static final int VALUE_DATA_OFFSET = 8;
    static final int INFO_SIZE = 552;
    static final int INFO_FLAGS_OFFSET = 512;
    static final int INFO_VALUE_OFFSET = 520;
    static final int BYTE_OBJECT_SIZE = 16;

    static final int PMIX_SUCCESS = 0;
    static final byte PMIX_GLOBAL = 3;
    static final int RANK_WILDCARD = 0xFFFFFFFE; // UINT32_MAX - 1
    // pmix_data_type_t
    static final int T_BOOL = 1, T_BYTE = 2, T_STRING = 3, T_SIZE = 4, T_PID = 5, T_INT = 6, T_INT8 = 7,
            T_INT16 = 8, T_INT32 = 9, T_INT64 = 10, T_UINT = 11, T_UINT8 = 12, T_UINT16 = 13, T_UINT32 = 14,
            T_UINT64 = 15, T_BYTE_OBJECT = 27, T_PROC_RANK = 40;
    static final String KEY_JOB_SIZE = "pmix.job.size";
    static final String KEY_LOCAL_RANK = "pmix.lrank";
    static final String KEY_LOCAL_SIZE = "pmix.local.size";
    static final String KEY_HOSTNAME = "pmix.hname";
    static final String KEY_NODEID = "pmix.nodeid";
    static final String KEY_COLLECT_DATA = "pmix.collect";

    /** The PMIx client calls used (pmix.h); size_t is passed as long (LP64 only). */
    interface PmixLibrary extends Library {
        int PMIx_Init(Pointer proc, Pointer info, long ninfo);

        int PMIx_Finalize(Pointer info, long ninfo);

        int PMIx_Put(byte scope, String key, Pointer val);

        int PMIx_Commit();

        int PMIx_Fence(Pointer procs, long nprocs, Pointer info, long ninfo);

        int PMIx_Get(Pointer proc, String key, Pointer info, long ninfo, PointerByReference val);

        void PMIx_Value_destruct(Pointer val);

        String PMIx_Error_string(int status);

        String PMIx_Get_version();
    }

    private static volatile Object loaded; // PmixLibrary, or the String reason why not

    private final PmixLibrary lib;
    private final String nspace;
    private final int rank;
    private final int size;
    private final int localRank;
    private final int localSize;
    private final String hostname;
    private final String jobId;
    private final Memory self;      // pmix_proc_t {nspace, rank}
    private final Memory wildcard;  // pmix_proc_t {nspace, PMIX_RANK_WILDCARD}
    private final Memory collect;   // pmix_info_t {PMIX_COLLECT_DATA, bool true}
    private long generation;
    private boolean closed;

    /** Joins the job: PMIx_Init and the job-level gets. Throws Sharp4jException if anything fails. */
    public PmixBootstrap() {
        this.lib = library();
        self = new Memory(PROC_SIZE);
        self.clear();
        check(lib.PMIx_Init(self, null, 0), "PMIx_Init (is this process started by a PMIx launcher such as mpirun or srun --mpi=pmix?"
                + " PMIX_NAMESPACE=" + System.getenv("PMIX_NAMESPACE") + ")");
        try {
            nspace = self.getString(0, StandardCharsets.US_ASCII.name());
            rank = self.getInt(PROC_RANK_OFFSET);
            wildcard = proc(nspace, RANK_WILDCARD);
            collect = new Memory(INFO_SIZE);
            collect.clear();
            writeKey(collect, 0, KEY_COLLECT_DATA);
            collect.setShort(INFO_VALUE_OFFSET, (short) T_BOOL);
            collect.setByte(INFO_VALUE_OFFSET + VALUE_DATA_OFFSET, (byte) 1);
            size = (int) getLong(wildcard, KEY_JOB_SIZE, -1);
            if (size <= 0 || rank < 0 || rank >= size) {
                throw new Sharp4jException("PMIx: bad identity: rank " + rank + " of job size " + size + " in namespace " + nspace);
            }
            localRank = (int) getLong(self, KEY_LOCAL_RANK, -1);
            localSize = (int) getLong(wildcard, KEY_LOCAL_SIZE, -1);
            String h = getString(self, KEY_HOSTNAME);
            if (h == null) {
                long node = getLong(self, KEY_NODEID, -1);
                h = node < 0 ? null : "pmix-node-" + node;
            }
            hostname = h;
            jobId = sanitize(nspace);
        } catch (RuntimeException e) {
            lib.PMIx_Finalize(null, 0);
            throw e;
        }
    }

    /** Whether the environment says a PMIx server started this process (PMIX_RANK and PMIX_NAMESPACE). */
    public static boolean environmentPresent(Map<String, String> env) {
        return env.get("PMIX_RANK") != null && env.get("PMIX_NAMESPACE") != null;
    }

    /** Null if JNA and libpmix load, else why not (naming the places looked at). Loads at most once. */
    public static String libraryProblem() {
        Object l = load();
        return l instanceof String ? (String) l : null;
    }

    private static PmixLibrary library() {
        Object l = load();
        if (l instanceof String) {
            throw new Sharp4jException((String) l);
        }
        return (PmixLibrary) l;
    }

    private static synchronized Object load() {
        if (loaded != null) {
            return loaded;
        }
        List<String> names = new ArrayList<>();
        String prop = System.getProperty(LIBRARY_PROPERTY);
        if (prop != null && !prop.isBlank()) {
            names.add(prop.trim());
        }
        names.addAll(LIBRARY_NAMES);
        List<String> failures = new ArrayList<>();
        try {
            if (Native.POINTER_SIZE != 8 || Native.SIZE_T_SIZE != 8 || Native.LONG_SIZE != 8) {
                return loaded = "PMIx bootstrap: only LP64 platforms are supported (pointer " + Native.POINTER_SIZE
                        + " B, size_t " + Native.SIZE_T_SIZE + " B)";
            }
            // RTLD_GLOBAL: libpmix's plugins (dlopen'ed by it) resolve their symbols against it.
            Map<String, Object> opts = Map.of(Library.OPTION_OPEN_FLAGS, 0x00001 | 0x00100); // RTLD_LAZY | RTLD_GLOBAL
            for (String n : names) {
                try {
                    PmixLibrary l = Native.load(n, PmixLibrary.class, opts);
                    l.PMIx_Get_version(); // resolves a symbol: fails here if this is not libpmix
                    return loaded = l;
                } catch (UnsatisfiedLinkError e) {
                    failures.add(n + " (" + firstLine(e.getMessage()) + ")");
                }
            }
        } catch (LinkageError e) { // NoClassDefFoundError: JNA is an optional dependency
            return loaded = "PMIx bootstrap needs JNA (net.java.dev.jna:jna) on the class path: " + e;
        }
        return loaded = "libpmix not found; looked for " + String.join(", ", failures)
                + "; set -D" + LIBRARY_PROPERTY + "=/path/to/libpmix.so.2";
    }

    private static String firstLine(String s) {
        if (s == null) {
            return "";
        }
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }

    /** The namespace made usable in file names: [A-Za-z0-9._-] kept, the rest '_', long ones shortened with a hash. */
    static String sanitize(String ns) {
        StringBuilder sb = new StringBuilder("pmix-");
        for (char c : ns.toCharArray()) {
            sb.append(c < 128 && (Character.isLetterOrDigit(c) || c == '.' || c == '-') ? c : '_');
        }
        String s = sb.toString();
        if (s.length() > 64) {
            s = s.substring(0, 48) + "-" + Integer.toHexString(ns.hashCode());
        }
        return s;
    }

    /** The PMIx version string of the loaded library. */
    public String libraryVersion() {
        return lib.PMIx_Get_version();
    }

    private static Memory proc(String ns, int rank) {
        Memory m = new Memory(PROC_SIZE);
        m.clear();
        byte[] b = ns.getBytes(StandardCharsets.US_ASCII);
        m.write(0, b, 0, Math.min(b.length, NSPACE_LEN - 1));
        m.setInt(PROC_RANK_OFFSET, rank);
        return m;
    }

    private static void writeKey(Memory m, long off, String key) {
        byte[] b = key.getBytes(StandardCharsets.US_ASCII);
        m.write(off, b, 0, Math.min(b.length, KEY_LEN - 1));
    }

    private void check(int status, String what) {
        if (status != PMIX_SUCCESS) {
            String s;
            try {
                s = lib.PMIx_Error_string(status);
            } catch (RuntimeException | Error e) {
                s = "?";
            }
            throw new Sharp4jException("PMIx: " + what + " failed: " + s + " (" + status + ")"
                    + (nspaceOrNull() == null ? "" : " [rank " + rank + " of " + nspaceOrNull() + "]"));
        }
    }

    private String nspaceOrNull() {
        return nspace;
    }

    /** PMIx_Get, or null when the key is not there (any error). The caller releases the value with {@link #release}. */
    private Pointer get(Pointer proc, String key) {
        PointerByReference ref = new PointerByReference();
        int st = lib.PMIx_Get(proc, key, null, 0, ref);
        return st == PMIX_SUCCESS ? ref.getValue() : null;
    }

    private void release(Pointer val) {
        if (val != null) {
            lib.PMIx_Value_destruct(val);
            Native.free(Pointer.nativeValue(val));
        }
    }

    private long getLong(Pointer proc, String key, long dflt) {
        Pointer v = get(proc, key);
        if (v == null) {
            return dflt;
        }
        try {
            long d = VALUE_DATA_OFFSET;
            switch (v.getShort(0)) {
                case T_BOOL: case T_BYTE: case T_UINT8: return v.getByte(d) & 0xFF;
                case T_INT8: return v.getByte(d);
                case T_INT16: return v.getShort(d);
                case T_UINT16: return v.getShort(d) & 0xFFFF;
                case T_INT: case T_INT32: case T_PID: return v.getInt(d);
                case T_UINT: case T_UINT32: case T_PROC_RANK: return v.getInt(d) & 0xFFFFFFFFL;
                case T_SIZE: case T_INT64: case T_UINT64: return v.getLong(d);
                default: return dflt;
            }
        } finally {
            release(v);
        }
    }

    private String getString(Pointer proc, String key) {
        Pointer v = get(proc, key);
        if (v == null) {
            return null;
        }
        try {
            Pointer s = v.getShort(0) == T_STRING ? v.getPointer(VALUE_DATA_OFFSET) : null;
            return s == null ? null : s.getString(0, StandardCharsets.UTF_8.name());
        } finally {
            release(v);
        }
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return size;
    }

    /** Rank among this job's processes on this node (PMIX_LOCAL_RANK), -1 if the server did not say. */
    public int localRank() {
        return localRank;
    }

    /** This job's processes on this node (PMIX_LOCAL_SIZE), -1 if the server did not say. */
    public int localSize() {
        return localSize;
    }

    /** The host name PMIx gives for this process (PMIX_HOSTNAME, else "pmix-node-" + PMIX_NODEID), or null. */
    public String hostname() {
        return hostname;
    }

    /** The PMIx namespace of the job. */
    public String namespace() {
        return nspace;
    }

    @Override
    public String jobId() {
        return jobId;
    }

    @Override
    public synchronized byte[][] allgather(byte[] mine) {
        checkOpen();
        String key = "sharp4j.ag" + (generation++);
        // pmix_value_t {PMIX_BYTE_OBJECT, {bytes, size}}; PMIx_Put copies it.
        Memory data = new Memory(Math.max(1, mine.length));
        data.write(0, mine, 0, mine.length);
        Memory val = new Memory(VALUE_SIZE);
        val.clear();
        val.setShort(0, (short) T_BYTE_OBJECT);
        val.setPointer(VALUE_DATA_OFFSET, data);
        val.setLong(VALUE_DATA_OFFSET + 8, mine.length);
        check(lib.PMIx_Put(PMIX_GLOBAL, key, val), "PMIx_Put(" + key + ")");
        check(lib.PMIx_Commit(), "PMIx_Commit");
        check(lib.PMIx_Fence(wildcard, 1, collect, 1), "PMIx_Fence(" + key + ")");
        byte[][] all = new byte[size][];
        Memory peer = proc(nspace, 0);
        for (int r = 0; r < size; r++) {
            if (r == rank) {
                all[r] = mine.clone();
                continue;
            }
            peer.setInt(PROC_RANK_OFFSET, r);
            PointerByReference ref = new PointerByReference();
            check(lib.PMIx_Get(peer, key, null, 0, ref), "PMIx_Get(rank " + r + ", " + key + ")");
            Pointer v = ref.getValue();
            try {
                int type = v.getShort(0);
                if (type != T_BYTE_OBJECT) {
                    throw new Sharp4jException("PMIx: " + key + " of rank " + r + " has type " + type + ", not a byte object");
                }
                Pointer bytes = v.getPointer(VALUE_DATA_OFFSET);
                long n = v.getLong(VALUE_DATA_OFFSET + 8);
                if (n < 0 || n > Integer.MAX_VALUE - 8) {
                    throw new Sharp4jException("PMIx: " + key + " of rank " + r + " has a bad size " + n);
                }
                all[r] = n == 0 || bytes == null ? new byte[0] : bytes.getByteArray(0, (int) n);
            } finally {
                release(v);
            }
        }
        return all;
    }

    /** A PMIx_Fence over the namespace without data. */
    @Override
    public synchronized void barrier() {
        checkOpen();
        check(lib.PMIx_Fence(wildcard, 1, null, 0), "PMIx_Fence");
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("PMIx bootstrap closed");
        }
    }

    @Override
    public String name() {
        return "pmix";
    }

    /** PMIx_Finalize. Idempotent. */
    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            lib.PMIx_Finalize(null, 0);
        }
    }

    @Override
    public String toString() {
        return "pmix rank " + rank + " of " + size + " (namespace " + nspace + ", local rank " + localRank + " of "
                + localSize + " on " + hostname + ")";
    }
}
