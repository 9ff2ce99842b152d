/*
 * sharp4j: clean-room declaration of the libsharp_coll C ABI.
 *
 * Written from /work/shared/reference/sharp-coll-abi.md (offsets for x86_64 / LP64),
 * not copied from NVIDIA sources.  The project's software emulator
 * (../../../emulator/sharp_coll_emu.c) implements it; on a cluster the same Java
 * binding loads NVIDIA's libsharp_coll.so, whose header is
 * $HPCX_SHARP_DIR/include/sharp/api/sharp_coll.h.
 *
 * Names the reference does not spell out (the config flag constants, the
 * config_print_flags values and SHARP_MEM_TYPE_LAST) are this header's own choice and
 * are only visible to code that checks SHARP4J_EMU_HEADER.
 */
#ifndef SHARP4J_SHARP_COLL_H
#define SHARP4J_SHARP_COLL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Defined only by this clean-room header (absent from NVIDIA's). */
#define SHARP4J_EMU_HEADER 1

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- enums (4 bytes) */

enum sharp_datatype {
    SHARP_DTYPE_UNSIGNED       = 0,  /* uint32_t */
    SHARP_DTYPE_INT            = 1,  /* int32_t */
    SHARP_DTYPE_UNSIGNED_LONG  = 2,  /* uint64_t */
    SHARP_DTYPE_LONG           = 3,  /* int64_t */
    SHARP_DTYPE_FLOAT          = 4,  /* IEEE binary32 */
    SHARP_DTYPE_DOUBLE         = 5,  /* IEEE binary64 */
    SHARP_DTYPE_UNSIGNED_SHORT = 6,  /* uint16_t */
    SHARP_DTYPE_SHORT          = 7,  /* int16_t */
    SHARP_DTYPE_FLOAT_SHORT    = 8,  /* IEEE binary16 (fp16) */
    SHARP_DTYPE_BFLOAT16       = 9,  /* bfloat16 */
    SHARP_DTYPE_UINT8          = 10, /* uint8_t */
    SHARP_DTYPE_INT8           = 11, /* int8_t */
    SHARP_DTYPE_NULL           = 12
};

enum sharp_reduce_op {
    SHARP_OP_MAX    = 0,
    SHARP_OP_MIN    = 1,
    SHARP_OP_SUM    = 2,
    SHARP_OP_PROD   = 3,
    SHARP_OP_LAND   = 4,
    SHARP_OP_BAND   = 5,
    SHARP_OP_LOR    = 6,
    SHARP_OP_BOR    = 7,
    SHARP_OP_LXOR   = 8,
    SHARP_OP_BXOR   = 9,
    SHARP_OP_MAXLOC = 10,
    SHARP_OP_MINLOC = 11,
    SHARP_OP_NULL   = 12
};

enum sharp_error_no {
    SHARP_COLL_SUCCESS       = 0,
    SHARP_COLL_ERROR         = -1,
    SHARP_COLL_ENOT_SUPP     = -2,
    SHARP_COLL_ENOMEM        = -3,
    SHARP_COLL_EGROUP_ALLOC  = -4,
    SHARP_COLL_ECONN_TREE    = -5,
    SHARP_COLL_EGROUP_JOIN   = -6,
    SHARP_COLL_EQUOTA        = -7,
    SHARP_COLL_ESESS_INIT    = -8,
    SHARP_COLL_EDEV          = -9,
    SHARP_COLL_EINVAL        = -10,
    SHARP_COLL_EJOB_CREATE   = -11,
    SHARP_COLL_ETREE_INFO    = -12,
    SHARP_COLL_ENOTREE       = -13,
    SHARP_COLL_EGROUP_ID     = -14,
    SHARP_COLL_EOOB          = -15,
    SHARP_COLL_EGROUP_MCAST  = -16,
    SHARP_COLL_EGROUP_TRIM   = -17,
    SHARP_COLL_ELOCK_FAILED  = -18,
    SHARP_COLL_ELOCK_DENIED  = -19,
    SHARP_COLL_ENO_RESOURCE  = -20
};

/* Bits of sharp_coll_caps.support_mask.feature_mask. */
enum sharp_job_features {
    SHARP_FEATURE_LLT                = 1,
    SHARP_FEATURE_REPRODUCIBLE       = 2,
    SHARP_FEATURE_SAT                = 4,
    SHARP_FEATURE_SAT_EXCLUSIVE_LOCK = 8
};

enum sharp_aggregation_mode {
    SHARP_AGGREGATION_NONE      = 0,
    SHARP_AGGREGATION_DATAGRAM  = 1,
    SHARP_AGGREGATION_STREAMING = 2
};

/* Current numbering (old headers had STREAM = 1, IOV = 2).  Only BUFFER is implemented. */
enum sharp_data_buffer_type {
    SHARP_DATA_BUFFER = 0,
    SHARP_DATA_IOV    = 1
};

enum sharp_data_memory_type {
    SHARP_MEM_TYPE_HOST = 0,
    SHARP_MEM_TYPE_CUDA = 1,
    SHARP_MEM_TYPE_LAST = 2  /* sentinel; not in the reference */
};

/* Bits of sharp_coll_config.flags (constant names are this header's choice). */
enum sharp_coll_config_flags {
    SHARP_COLL_HIDE_ERRORS                       = 1,
    SHARP_COLL_DISABLE_LAZY_GROUP_RESOURCE_ALLOC = 2
};

/* Flags of sharp_coll_print_config (values are this header's choice; the reference
 * names only the type). */
enum config_print_flags {
    SHARP_CONFIG_PRINT_CONFIG = 1,
    SHARP_CONFIG_PRINT_HEADER = 2,
    SHARP_CONFIG_PRINT_DOC    = 4,
    SHARP_CONFIG_PRINT_HIDDEN = 8
};

/* ---------------------------------------------------------------- structures */

/* 32 bytes */
struct sharp_coll_config {
    const char *ib_dev_list;            /* 0 */
    int         user_progress_num_polls; /* 8 */
    int         coll_timeout;           /* 12, ms, -1 = infinite */
    uint32_t    flags;                  /* 16, enum sharp_coll_config_flags bits */
    int         reserved[3];            /* 20 */
};

/* 24 bytes; every callback returns 0 or a negative value. */
struct sharp_coll_out_of_band_colls {
    /* In place, len bytes, from root to everyone. */
    int (*bcast)(void *context, void *buf, int len, int root);  /* 0 */
    int (*barrier)(void *context);                              /* 8 */
    /* len bytes from each rank, concatenated in rank order into rbuf at root. */
    int (*gather)(void *context, int root, void *sbuf, void *rbuf, int len); /* 16 */
};

/* 120 bytes; callers zero it first. */
struct sharp_coll_init_spec {
    uint64_t job_id;                      /* 0: same on all ranks */
    int      world_rank;                  /* 8 */
    int      world_size;                  /* 12 */
    int    (*progress_func)(void);        /* 16: may be NULL */
    int      group_channel_idx;           /* 24 (+4 pad) */
    struct sharp_coll_config config;      /* 32 */
    struct sharp_coll_out_of_band_colls oob_colls; /* 64 */
    int      world_local_rank;            /* 88 */
    int      enable_thread_support;       /* 92 */
    void    *oob_ctx;                     /* 96 */
    int      reserved[4];                 /* 104 */
};

/* 32 bytes */
struct sharp_coll_comm_init_spec {
    int             rank;               /* 0 */
    int             size;               /* 4 */
    void           *oob_ctx;            /* 8 */
    const uint32_t *group_world_ranks;  /* 16: callers pass NULL */
    int             reserved[2];        /* 24 */
};

/* 112 bytes */
struct sharp_coll_caps {
    int      sharp_pkt_version;         /* 0 (+4 pad) */
    uint64_t reserved[2];               /* 8 */
    struct {
        uint64_t dtypes;                /* 24: bit (1 << enum sharp_datatype) */
        uint64_t tag_dtypes;            /* 32 */
        uint64_t reduce_ops;            /* 40: bit (1 << enum sharp_reduce_op) */
        uint64_t feature_mask;          /* 48: enum sharp_job_features bits */
        uint64_t reserved[4];           /* 56 */
    } support_mask;
    struct {
        int max_osts;                   /* 88 */
        int user_data_per_ost;          /* 92 */
        int max_groups;                 /* 96 */
        int max_group_channels;         /* 100 */
        int osts_per_group;             /* 104 (+4 pad) */
    } resources;
};

/* 24 bytes */
struct sharp_data_iov {
    void  *ptr;         /* 0 */
    size_t length;      /* 8 */
    void  *mem_handle;  /* 16 */
};

/* 40 bytes */
struct sharp_coll_data_desc {
    enum sharp_data_buffer_type type;       /* 0 */
    enum sharp_data_memory_type mem_type;   /* 4 */
    int reserved[2];                        /* 8 */
    union {                                 /* 16, 24 bytes */
        struct {
            void  *ptr;                     /* 16 */
            size_t length;                  /* 24: bytes */
            void  *mem_handle;              /* 32: may be NULL */
        } buffer;
        struct {
            unsigned               count;   /* 16 */
            struct sharp_data_iov *vector;  /* 24 */
        } iov;
    };
};

/* 136 bytes */
struct sharp_coll_reduce_spec {
    int                         root;        /* 0 (+4 pad): reduce only */
    struct sharp_coll_data_desc sbuf_desc;   /* 8 */
    struct sharp_coll_data_desc rbuf_desc;   /* 48 */
    enum sharp_datatype         dtype;       /* 88 (+4 pad) */
    size_t                      length;      /* 96: ELEMENTS */
    enum sharp_reduce_op        op;          /* 104 */
    enum sharp_datatype         tag_dtype;   /* 108: MINLOC/MAXLOC only */
    enum sharp_aggregation_mode aggr_mode;   /* 112 */
    int                         stream_lock_batch_size; /* 116 */
    size_t                      offset;      /* 120: reduce-scatter */
    int                         reserved[2]; /* 128 */
};

/* 72 bytes */
struct sharp_coll_bcast_spec {
    int                         root;        /* 0 (+4 pad) */
    struct sharp_coll_data_desc buf_desc;    /* 8 */
    size_t                      size;        /* 48: bytes */
    int                         reserved[4]; /* 56 */
};

/* 120 bytes */
struct sharp_coll_gather_spec {
    struct sharp_coll_data_desc sbuf_desc;   /* 0 */
    struct sharp_coll_data_desc rbuf_desc;   /* 40 */
    enum sharp_datatype         dtype;       /* 80 (+4 pad) */
    size_t                      size;        /* 88 */
    size_t                      offset;      /* 96 */
    int                         reserved[4]; /* 104 */
};

/* 24 bytes */
struct sharp_coll_reg_params {
    uint64_t field_mask;     /* 0 */
    int      dmabuf_fd;      /* 8 (+4 pad) */
    size_t   dmabuf_offset;  /* 16 */
};

/* Opaque handles. */
struct sharp_coll_context;
struct sharp_coll_comm;

/* ---------------------------------------------------------------- data symbol */

/* Callers copy it into sharp_coll_init_spec.config and then override fields. */
extern const struct sharp_coll_config sharp_coll_default_config;

/* ---------------------------------------------------------------- functions
 * All return 0 on success or a negative enum sharp_error_no, unless noted. */

int sharp_coll_init(struct sharp_coll_init_spec *sharp_coll_spec,
                    struct sharp_coll_context **sharp_coll_context);
int sharp_coll_finalize(struct sharp_coll_context *context);
int sharp_coll_caps_query(struct sharp_coll_context *context, struct sharp_coll_caps *sharp_caps);
int sharp_coll_progress(struct sharp_coll_context *context);

int sharp_coll_comm_init(struct sharp_coll_context *context,
                         struct sharp_coll_comm_init_spec *spec,
                         struct sharp_coll_comm **sharp_coll_comm);
int sharp_coll_comm_destroy(struct sharp_coll_comm *comm);

int sharp_coll_do_barrier(struct sharp_coll_comm *comm);
int sharp_coll_do_barrier_nb(struct sharp_coll_comm *comm, void **handle);

int sharp_coll_do_allreduce(struct sharp_coll_comm *comm, struct sharp_coll_reduce_spec *spec);
int sharp_coll_do_allreduce_nb(struct sharp_coll_comm *comm, struct sharp_coll_reduce_spec *spec,
                               void **handle);

/* spec->root is used. */
int sharp_coll_do_reduce(struct sharp_coll_comm *comm, struct sharp_coll_reduce_spec *spec);
int sharp_coll_do_reduce_nb(struct sharp_coll_comm *comm, struct sharp_coll_reduce_spec *spec,
                            void **handle);

/* spec->offset is used; SHARP >= 3.5. */
int sharp_coll_do_reduce_scatter(struct sharp_coll_comm *comm, struct sharp_coll_reduce_spec *spec);
int sharp_coll_do_reduce_scatter_nb(struct sharp_coll_comm *comm,
                                    struct sharp_coll_reduce_spec *spec, void **handle);

/* SHARP >= 3.5. */
int sharp_coll_do_allgather(struct sharp_coll_comm *comm, struct sharp_coll_gather_spec *spec);
int sharp_coll_do_allgather_nb(struct sharp_coll_comm *comm, struct sharp_coll_gather_spec *spec,
                               void **handle);

int sharp_coll_do_bcast(struct sharp_coll_comm *comm, struct sharp_coll_bcast_spec *spec);
int sharp_coll_do_bcast_nb(struct sharp_coll_comm *comm, struct sharp_coll_bcast_spec *spec,
                           void **handle);

/* Returns non-zero when the request is complete, 0 otherwise (not an error code). */
int sharp_coll_req_test(void *handle);
/* Waits for completion and releases the handle. */
int sharp_coll_req_wait(void *handle);
/* Releases a completed handle. */
int sharp_coll_req_free(void *handle);

int sharp_coll_reg_mr(struct sharp_coll_context *context, void *buf, size_t size, void **mr);
/* Newer libraries only. */
int sharp_coll_reg_mr_v2(struct sharp_coll_context *context, void *buf, size_t size,
                         const struct sharp_coll_reg_params *params, void **mr);
int sharp_coll_dereg_mr(struct sharp_coll_context *context, void *mr);

const char *sharp_coll_strerror(int error);

int sharp_coll_dump_stats(struct sharp_coll_context *context);

/* Newer signature; older libraries take only (FILE *, enum config_print_flags). */
int sharp_coll_print_config(FILE *stream, enum config_print_flags print_flags,
                            const char *exec_name);

#ifdef __cplusplus
}
#endif

#endif /* SHARP4J_SHARP_COLL_H */
