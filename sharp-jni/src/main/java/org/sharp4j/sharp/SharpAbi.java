package org.sharp4j.sharp;

import com.sun.jna.Callback;
import com.sun.jna.Pointer;
import com.sun.jna.Structure;
import com.sun.jna.Structure.FieldOrder;
import com.sun.jna.Union;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The libsharp_coll C ABI ({@code sharp/api/sharp_coll.h}) byte for byte, as JNA structures and
 * constants. Offsets are those of x86_64 / LP64 given in {@code shared/reference/sharp-coll-abi.md};
 * {@link #layout()} computes every structure size and field offset from the JNA classes under the
 * C names {@code abi_dump} prints, and {@link #check()} compares them with {@link #EXPECTED} when
 * the library is loaded.
 *
 * <p>The structures are used on the setup path (init, caps, comm init, the default config). The
 * hot path writes a {@code sharp_coll_reduce_spec} into preallocated native memory at the offsets
 * taken from {@link ReduceSpec} (see {@link SharpTeam}), so the layout it relies on is the checked one.
 */
public final class SharpAbi {
    private SharpAbi() {
    }

    // ---------------------------------------------------------------- enum sharp_datatype
    public static final int DTYPE_UNSIGNED = 0;
    public static final int DTYPE_INT = 1;
    public static final int DTYPE_UNSIGNED_LONG = 2;
    public static final int DTYPE_LONG = 3;
    public static final int DTYPE_FLOAT = 4;
    public static final int DTYPE_DOUBLE = 5;
    public static final int DTYPE_UNSIGNED_SHORT = 6;
    public static final int DTYPE_SHORT = 7;
    public static final int DTYPE_FLOAT_SHORT = 8;
    public static final int DTYPE_BFLOAT16 = 9;
    public static final int DTYPE_UINT8 = 10;
    public static final int DTYPE_INT8 = 11;
    public static final int DTYPE_NULL = 12;

    // ---------------------------------------------------------------- enum sharp_reduce_op
    public static final int OP_MAX = 0;
    public static final int OP_MIN = 1;
    public static final int OP_SUM = 2;
    public static final int OP_PROD = 3;
    public static final int OP_LAND = 4;
    public static final int OP_BAND = 5;
    public static final int OP_LOR = 6;
    public static final int OP_BOR = 7;
    public static final int OP_LXOR = 8;
    public static final int OP_BXOR = 9;
    public static final int OP_MAXLOC = 10;
    public static final int OP_MINLOC = 11;
    public static final int OP_NULL = 12;

    // ---------------------------------------------------------------- enum sharp_error_no
    public static final int SUCCESS = 0;
    public static final int ERROR = -1;
    public static final int ENOT_SUPP = -2;
    public static final int ENOMEM = -3;
    public static final int EGROUP_ALLOC = -4;
    public static final int ECONN_TREE = -5;
    public static final int EGROUP_JOIN = -6;
    public static final int EQUOTA = -7;
    public static final int ESESS_INIT = -8;
    public static final int EDEV = -9;
    public static final int EINVAL = -10;
    public static final int EJOB_CREATE = -11;
    public static final int ETREE_INFO = -12;
    public static final int ENOTREE = -13;
    public static final int EGROUP_ID = -14;
    public static final int EOOB = -15;
    public static final int EGROUP_MCAST = -16;
    public static final int EGROUP_TRIM = -17;
    public static final int ELOCK_FAILED = -18;
    public static final int ELOCK_DENIED = -19;
    public static final int ENO_RESOURCE = -20;

    // ---------------------------------------------------------------- other enums
    public static final int FEATURE_LLT = 1;
    public static final int FEATURE_REPRODUCIBLE = 2;
    public static final int FEATURE_SAT = 4;
    public static final int FEATURE_SAT_EXCLUSIVE_LOCK = 8;
    public static final int AGGREGATION_NONE = 0;
    public static final int AGGREGATION_DATAGRAM = 1;
    public static final int AGGREGATION_STREAMING = 2;
    public static final int DATA_BUFFER = 0;
    public static final int DATA_IOV = 1;
    public static final int MEM_TYPE_HOST = 0;
    public static final int MEM_TYPE_CUDA = 1;
    public static final int COLL_HIDE_ERRORS = 1;
    public static final int COLL_DISABLE_LAZY_GROUP_RESOURCE_ALLOC = 2;

    /** Element sizes by {@code sharp_datatype}. */
    static final int[] DTYPE_SIZE = {4, 4, 8, 8, 4, 8, 2, 2, 2, 2, 1, 1};

    /** The enum constants the binding relies on, as {@code "enum.NAME" -> value} (checked against abi_dump in tests). */
    public static Map<String, Integer> constants() {
        Map<String, Integer> m = new LinkedHashMap<>();
        String[] dt = {"UNSIGNED", "INT", "UNSIGNED_LONG", "LONG", "FLOAT", "DOUBLE", "UNSIGNED_SHORT", "SHORT",
            "FLOAT_SHORT", "BFLOAT16", "UINT8", "INT8", "NULL"};
        for (int i = 0; i < dt.length; i++) {
            m.put("sharp_datatype.SHARP_DTYPE_" + dt[i], i);
        }
        String[] ops = {"MAX", "MIN", "SUM", "PROD", "LAND", "BAND", "LOR", "BOR", "LXOR", "BXOR", "MAXLOC", "MINLOC", "NULL"};
        for (int i = 0; i < ops.length; i++) {
            m.put("sharp_reduce_op.SHARP_OP_" + ops[i], i);
        }
        String[] err = {"SUCCESS", "ERROR", "ENOT_SUPP", "ENOMEM", "EGROUP_ALLOC", "ECONN_TREE", "EGROUP_JOIN", "EQUOTA",
            "ESESS_INIT", "EDEV", "EINVAL", "EJOB_CREATE", "ETREE_INFO", "ENOTREE", "EGROUP_ID", "EOOB", "EGROUP_MCAST",
            "EGROUP_TRIM", "ELOCK_FAILED", "ELOCK_DENIED", "ENO_RESOURCE"};
        for (int i = 0; i < err.length; i++) {
            m.put("sharp_error_no.SHARP_COLL_" + err[i], -i);
        }
        m.put("sharp_job_features.SHARP_FEATURE_LLT", FEATURE_LLT);
        m.put("sharp_job_features.SHARP_FEATURE_REPRODUCIBLE", FEATURE_REPRODUCIBLE);
        m.put("sharp_job_features.SHARP_FEATURE_SAT", FEATURE_SAT);
        m.put("sharp_job_features.SHARP_FEATURE_SAT_EXCLUSIVE_LOCK", FEATURE_SAT_EXCLUSIVE_LOCK);
        m.put("sharp_aggregation_mode.SHARP_AGGREGATION_NONE", AGGREGATION_NONE);
        m.put("sharp_aggregation_mode.SHARP_AGGREGATION_DATAGRAM", AGGREGATION_DATAGRAM);
        m.put("sharp_aggregation_mode.SHARP_AGGREGATION_STREAMING", AGGREGATION_STREAMING);
        m.put("sharp_data_buffer_type.SHARP_DATA_BUFFER", DATA_BUFFER);
        m.put("sharp_data_buffer_type.SHARP_DATA_IOV", DATA_IOV);
        m.put("sharp_data_memory_type.SHARP_MEM_TYPE_HOST", MEM_TYPE_HOST);
        m.put("sharp_data_memory_type.SHARP_MEM_TYPE_CUDA", MEM_TYPE_CUDA);
        m.put("sharp_coll_config_flags.SHARP_COLL_HIDE_ERRORS", COLL_HIDE_ERRORS);
        m.put("sharp_coll_config_flags.SHARP_COLL_DISABLE_LAZY_GROUP_RESOURCE_ALLOC", COLL_DISABLE_LAZY_GROUP_RESOURCE_ALLOC);
        return m;
    }

    // ================================================================ structures

    /** Exposes {@link Structure#fieldOffset} for the layout check. */
    public abstract static class AbiStruct extends Structure {
        protected AbiStruct() {
        }

        protected AbiStruct(Pointer p) {
            super(p);
        }

        public int offsetOf(String field) {
            return fieldOffset(field);
        }
    }

    /** {@code struct sharp_coll_config}, 32 bytes. */
    @FieldOrder({"ib_dev_list", "user_progress_num_polls", "coll_timeout", "flags", "reserved"})
    public static class CollConfig extends AbiStruct {
        public Pointer ib_dev_list;
        public int user_progress_num_polls;
        public int coll_timeout;
        public int flags;
        public int[] reserved = new int[3];

        public CollConfig() {
        }

        public CollConfig(Pointer p) {
            super(p);
        }
    }

    /** {@code int (*bcast)(void *ctx, void *buf, int len, int root)}: in place, bytes. */
    public interface OobBcast extends Callback {
        int invoke(long ctx, long buf, int len, int root);
    }

    /** {@code int (*barrier)(void *ctx)}. */
    public interface OobBarrier extends Callback {
        int invoke(long ctx);
    }

    /** {@code int (*gather)(void *ctx, int root, void *sbuf, void *rbuf, int len)}: len bytes from each rank, rank order at root. */
    public interface OobGather extends Callback {
        int invoke(long ctx, int root, long sbuf, long rbuf, int len);
    }

    /** {@code struct sharp_coll_out_of_band_colls}, 24 bytes. */
    @FieldOrder({"bcast", "barrier", "gather"})
    public static class OobColls extends AbiStruct {
        public OobBcast bcast;
        public OobBarrier barrier;
        public OobGather gather;
    }

    /** {@code struct sharp_coll_init_spec}, 120 bytes. */
    @FieldOrder({"job_id", "world_rank", "world_size", "progress_func", "group_channel_idx", "config", "oob_colls",
        "world_local_rank", "enable_thread_support", "oob_ctx", "reserved"})
    public static class InitSpec extends AbiStruct {
        public long job_id;
        public int world_rank;
        public int world_size;
        public Pointer progress_func;
        public int group_channel_idx;
        public CollConfig config;
        public OobColls oob_colls;
        public int world_local_rank;
        public int enable_thread_support;
        public Pointer oob_ctx;
        public int[] reserved = new int[4];
    }

    /** {@code struct sharp_coll_comm_init_spec}, 32 bytes. */
    @FieldOrder({"rank", "size", "oob_ctx", "group_world_ranks", "reserved"})
    public static class CommInitSpec extends AbiStruct {
        public int rank;
        public int size;
        public Pointer oob_ctx;
        public Pointer group_world_ranks;
        public int[] reserved = new int[2];
    }

    /** {@code sharp_coll_caps.support_mask}. */
    @FieldOrder({"dtypes", "tag_dtypes", "reduce_ops", "feature_mask", "reserved"})
    public static class SupportMask extends AbiStruct {
        public long dtypes;
        public long tag_dtypes;
        public long reduce_ops;
        public long feature_mask;
        public long[] reserved = new long[4];
    }

    /** {@code sharp_coll_caps.resources}. */
    @FieldOrder({"max_osts", "user_data_per_ost", "max_groups", "max_group_channels", "osts_per_group"})
    public static class Resources extends AbiStruct {
        public int max_osts;
        public int user_data_per_ost;
        public int max_groups;
        public int max_group_channels;
        public int osts_per_group;
    }

    /** {@code struct sharp_coll_caps}, 112 bytes. */
    @FieldOrder({"sharp_pkt_version", "reserved", "support_mask", "resources"})
    public static class Caps extends AbiStruct {
        public int sharp_pkt_version;
        public long[] reserved = new long[2];
        public SupportMask support_mask;
        public Resources resources;
    }

    /** {@code struct sharp_data_iov}, 24 bytes. */
    @FieldOrder({"ptr", "length", "mem_handle"})
    public static class DataIov extends AbiStruct {
        public Pointer ptr;
        public long length;
        public Pointer mem_handle;
    }

    /** The {@code buffer} member of the descriptor's union. */
    @FieldOrder({"ptr", "length", "mem_handle"})
    public static class BufferPart extends AbiStruct {
        public Pointer ptr;
        public long length;
        public Pointer mem_handle;
    }

    /** The {@code iov} member of the descriptor's union. */
    @FieldOrder({"count", "vector"})
    public static class IovPart extends AbiStruct {
        public int count;
        public Pointer vector;
    }

    /** The anonymous union of {@code struct sharp_coll_data_desc} (24 bytes). */
    public static class DescUnion extends Union {
        public BufferPart buffer;
        public IovPart iov;

        public int offsetOf(String field) {
            return fieldOffset(field);
        }
    }

    /** {@code struct sharp_coll_data_desc}, 40 bytes. The union is the JNA field {@code u} (anonymous in C). */
    @FieldOrder({"type", "mem_type", "reserved", "u"})
    public static class DataDesc extends AbiStruct {
        public int type;
        public int mem_type;
        public int[] reserved = new int[2];
        public DescUnion u;
    }

    /** {@code struct sharp_coll_reduce_spec}, 136 bytes. */
    @FieldOrder({"root", "sbuf_desc", "rbuf_desc", "dtype", "length", "op", "tag_dtype", "aggr_mode",
        "stream_lock_batch_size", "offset", "reserved"})
    public static class ReduceSpec extends AbiStruct {
        public int root;
        public DataDesc sbuf_desc;
        public DataDesc rbuf_desc;
        public int dtype;
        public long length;
        public int op;
        public int tag_dtype;
        public int aggr_mode;
        public int stream_lock_batch_size;
        public long offset;
        public int[] reserved = new int[2];
    }

    /** {@code struct sharp_coll_bcast_spec}, 72 bytes. */
    @FieldOrder({"root", "buf_desc", "size", "reserved"})
    public static class BcastSpec extends AbiStruct {
        public int root;
        public DataDesc buf_desc;
        public long size;
        public int[] reserved = new int[4];
    }

    /** {@code struct sharp_coll_gather_spec}, 120 bytes. */
    @FieldOrder({"sbuf_desc", "rbuf_desc", "dtype", "size", "offset", "reserved"})
    public static class GatherSpec extends AbiStruct {
        public DataDesc sbuf_desc;
        public DataDesc rbuf_desc;
        public int dtype;
        public long size;
        public long offset;
        public int[] reserved = new int[4];
    }

    /** {@code struct sharp_coll_reg_params}, 24 bytes (reg_mr_v2, newer libraries). */
    @FieldOrder({"field_mask", "dmabuf_fd", "dmabuf_offset"})
    public static class RegParams extends AbiStruct {
        public long field_mask;
        public int dmabuf_fd;
        public long dmabuf_offset;
    }

    // ================================================================ layout

    /**
     * Every structure size and field offset as JNA lays them out, keyed like abi_dump's lines:
     * {@code "struct X size"} and {@code "field X.f offset"} (nested members with their outer path,
     * offsets from the outermost structure; the anonymous union's members appear directly).
     */
    public static Map<String, Integer> layout() {
        Map<String, Integer> m = new LinkedHashMap<>();
        CollConfig cfg = new CollConfig();
        struct(m, "sharp_coll_config", cfg, "ib_dev_list", "user_progress_num_polls", "coll_timeout", "flags", "reserved");
        struct(m, "sharp_coll_out_of_band_colls", new OobColls(), "bcast", "barrier", "gather");
        struct(m, "sharp_coll_init_spec", new InitSpec(), "job_id", "world_rank", "world_size", "progress_func",
                "group_channel_idx", "config", "oob_colls", "world_local_rank", "enable_thread_support", "oob_ctx", "reserved");
        struct(m, "sharp_coll_comm_init_spec", new CommInitSpec(), "rank", "size", "oob_ctx", "group_world_ranks", "reserved");
        Caps caps = new Caps();
        struct(m, "sharp_coll_caps", caps, "sharp_pkt_version", "reserved", "support_mask");
        int sm = caps.offsetOf("support_mask");
        nested(m, "sharp_coll_caps.support_mask", sm, new SupportMask(), "dtypes", "tag_dtypes", "reduce_ops", "feature_mask",
                "reserved");
        m.put("field sharp_coll_caps.resources offset", caps.offsetOf("resources"));
        nested(m, "sharp_coll_caps.resources", caps.offsetOf("resources"), new Resources(), "max_osts", "user_data_per_ost",
                "max_groups", "max_group_channels", "osts_per_group");
        struct(m, "sharp_data_iov", new DataIov(), "ptr", "length", "mem_handle");
        DataDesc d = new DataDesc();
        struct(m, "sharp_coll_data_desc", d, "type", "mem_type", "reserved");
        DescUnion u = new DescUnion();
        int uo = d.offsetOf("u");
        m.put("field sharp_coll_data_desc.buffer offset", uo + u.offsetOf("buffer"));
        nested(m, "sharp_coll_data_desc.buffer", uo + u.offsetOf("buffer"), new BufferPart(), "ptr", "length", "mem_handle");
        m.put("field sharp_coll_data_desc.iov offset", uo + u.offsetOf("iov"));
        nested(m, "sharp_coll_data_desc.iov", uo + u.offsetOf("iov"), new IovPart(), "count", "vector");
        struct(m, "sharp_coll_reduce_spec", new ReduceSpec(), "root", "sbuf_desc", "rbuf_desc", "dtype", "length", "op",
                "tag_dtype", "aggr_mode", "stream_lock_batch_size", "offset", "reserved");
        struct(m, "sharp_coll_bcast_spec", new BcastSpec(), "root", "buf_desc", "size", "reserved");
        struct(m, "sharp_coll_gather_spec", new GatherSpec(), "sbuf_desc", "rbuf_desc", "dtype", "size", "offset", "reserved");
        struct(m, "sharp_coll_reg_params", new RegParams(), "field_mask", "dmabuf_fd", "dmabuf_offset");
        return m;
    }

    private static void struct(Map<String, Integer> m, String name, AbiStruct s, String... fields) {
        m.put("struct " + name + " size", s.size());
        for (String f : fields) {
            m.put("field " + name + "." + f + " offset", s.offsetOf(f));
        }
    }

    private static void nested(Map<String, Integer> m, String path, int base, AbiStruct s, String... fields) {
        for (String f : fields) {
            m.put("field " + path + "." + f + " offset", base + s.offsetOf(f));
        }
    }

    /** The layout of the reference (x86_64 / LP64), in {@link #layout()}'s keys. */
    public static final Map<String, Integer> EXPECTED = expected();

    private static Map<String, Integer> expected() {
        Object[][] t = {
            {"struct sharp_coll_config size", 32},
            {"field sharp_coll_config.ib_dev_list offset", 0}, {"field sharp_coll_config.user_progress_num_polls offset", 8},
            {"field sharp_coll_config.coll_timeout offset", 12}, {"field sharp_coll_config.flags offset", 16},
            {"field sharp_coll_config.reserved offset", 20},
            {"struct sharp_coll_out_of_band_colls size", 24},
            {"field sharp_coll_out_of_band_colls.bcast offset", 0}, {"field sharp_coll_out_of_band_colls.barrier offset", 8},
            {"field sharp_coll_out_of_band_colls.gather offset", 16},
            {"struct sharp_coll_init_spec size", 120},
            {"field sharp_coll_init_spec.job_id offset", 0}, {"field sharp_coll_init_spec.world_rank offset", 8},
            {"field sharp_coll_init_spec.world_size offset", 12}, {"field sharp_coll_init_spec.progress_func offset", 16},
            {"field sharp_coll_init_spec.group_channel_idx offset", 24}, {"field sharp_coll_init_spec.config offset", 32},
            {"field sharp_coll_init_spec.oob_colls offset", 64}, {"field sharp_coll_init_spec.world_local_rank offset", 88},
            {"field sharp_coll_init_spec.enable_thread_support offset", 92}, {"field sharp_coll_init_spec.oob_ctx offset", 96},
            {"field sharp_coll_init_spec.reserved offset", 104},
            {"struct sharp_coll_comm_init_spec size", 32},
            {"field sharp_coll_comm_init_spec.rank offset", 0}, {"field sharp_coll_comm_init_spec.size offset", 4},
            {"field sharp_coll_comm_init_spec.oob_ctx offset", 8}, {"field sharp_coll_comm_init_spec.group_world_ranks offset", 16},
            {"field sharp_coll_comm_init_spec.reserved offset", 24},
            {"struct sharp_coll_caps size", 112},
            {"field sharp_coll_caps.sharp_pkt_version offset", 0}, {"field sharp_coll_caps.reserved offset", 8},
            {"field sharp_coll_caps.support_mask offset", 24},
            {"field sharp_coll_caps.support_mask.dtypes offset", 24}, {"field sharp_coll_caps.support_mask.tag_dtypes offset", 32},
            {"field sharp_coll_caps.support_mask.reduce_ops offset", 40},
            {"field sharp_coll_caps.support_mask.feature_mask offset", 48},
            {"field sharp_coll_caps.support_mask.reserved offset", 56},
            {"field sharp_coll_caps.resources offset", 88},
            {"field sharp_coll_caps.resources.max_osts offset", 88}, {"field sharp_coll_caps.resources.user_data_per_ost offset", 92},
            {"field sharp_coll_caps.resources.max_groups offset", 96},
            {"field sharp_coll_caps.resources.max_group_channels offset", 100},
            {"field sharp_coll_caps.resources.osts_per_group offset", 104},
            {"struct sharp_data_iov size", 24},
            {"field sharp_data_iov.ptr offset", 0}, {"field sharp_data_iov.length offset", 8},
            {"field sharp_data_iov.mem_handle offset", 16},
            {"struct sharp_coll_data_desc size", 40},
            {"field sharp_coll_data_desc.type offset", 0}, {"field sharp_coll_data_desc.mem_type offset", 4},
            {"field sharp_coll_data_desc.reserved offset", 8},
            {"field sharp_coll_data_desc.buffer offset", 16}, {"field sharp_coll_data_desc.buffer.ptr offset", 16},
            {"field sharp_coll_data_desc.buffer.length offset", 24}, {"field sharp_coll_data_desc.buffer.mem_handle offset", 32},
            {"field sharp_coll_data_desc.iov offset", 16}, {"field sharp_coll_data_desc.iov.count offset", 16},
            {"field sharp_coll_data_desc.iov.vector offset", 24},
            {"struct sharp_coll_reduce_spec size", 136},
            {"field sharp_coll_reduce_spec.root offset", 0}, {"field sharp_coll_reduce_spec.sbuf_desc offset", 8},
            {"field sharp_coll_reduce_spec.rbuf_desc offset", 48}, {"field sharp_coll_reduce_spec.dtype offset", 88},
            {"field sharp_coll_reduce_spec.length offset", 96}, {"field sharp_coll_reduce_spec.op offset", 104},
            {"field sharp_coll_reduce_spec.tag_dtype offset", 108}, {"field sharp_coll_reduce_spec.aggr_mode offset", 112},
            {"field sharp_coll_reduce_spec.stream_lock_batch_size offset", 116},
            {"field sharp_coll_reduce_spec.offset offset", 120}, {"field sharp_coll_reduce_spec.reserved offset", 128},
            {"struct sharp_coll_bcast_spec size", 72},
            {"field sharp_coll_bcast_spec.root offset", 0}, {"field sharp_coll_bcast_spec.buf_desc offset", 8},
            {"field sharp_coll_bcast_spec.size offset", 48}, {"field sharp_coll_bcast_spec.reserved offset", 56},
            {"struct sharp_coll_gather_spec size", 120},
            {"field sharp_coll_gather_spec.sbuf_desc offset", 0}, {"field sharp_coll_gather_spec.rbuf_desc offset", 40},
            {"field sharp_coll_gather_spec.dtype offset", 80}, {"field sharp_coll_gather_spec.size offset", 88},
            {"field sharp_coll_gather_spec.offset offset", 96}, {"field sharp_coll_gather_spec.reserved offset", 104},
            {"struct sharp_coll_reg_params size", 24},
            {"field sharp_coll_reg_params.field_mask offset", 0}, {"field sharp_coll_reg_params.dmabuf_fd offset", 8},
            {"field sharp_coll_reg_params.dmabuf_offset offset", 16},
        };
        Map<String, Integer> m = new LinkedHashMap<>();
        for (Object[] e : t) {
            m.put((String) e[0], (Integer) e[1]);
        }
        return java.util.Collections.unmodifiableMap(m);
    }

    /** Null when JNA lays every structure out as the reference says, else the differences. */
    public static String check() {
        if (com.sun.jna.Native.POINTER_SIZE != 8 || com.sun.jna.Native.SIZE_T_SIZE != 8) {
            return "the binding assumes an LP64 platform (8-byte pointers and size_t), this one has "
                    + com.sun.jna.Native.POINTER_SIZE + "-byte pointers";
        }
        Map<String, Integer> got = layout();
        StringBuilder b = new StringBuilder();
        for (Map.Entry<String, Integer> e : EXPECTED.entrySet()) {
            Integer g = got.get(e.getKey());
            if (!e.getValue().equals(g)) {
                b.append(b.length() == 0 ? "" : "; ").append(e.getKey()).append(' ').append(g).append(" (expected ")
                        .append(e.getValue()).append(')');
            }
        }
        return b.length() == 0 ? null : "ABI layout differs from sharp_coll.h: " + b;
    }
}
