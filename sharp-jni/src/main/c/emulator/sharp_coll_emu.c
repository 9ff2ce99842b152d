/*
 * sharp4j software emulator of NVIDIA's libsharp_coll (SHARP in-network aggregation).
 *
 * Implements the C ABI declared in ../include/sharp/api/sharp_coll.h (itself written from
 * /work/shared/reference/sharp-coll-abi.md) on machines without InfiniBand.  Every
 * collective really runs across the processes of the group, through the out-of-band (OOB)
 * callbacks the caller gave to sharp_coll_init: contributions are OOB-gathered to one
 * rank, reduced there in rank order, and OOB-broadcast back.  Results are therefore
 * deterministic and identical on every rank.
 *
 * Reduction semantics (what a Java test must reproduce bit for bit):
 *   - result = ((x[0] op x[1]) op x[2]) ... op x[P-1], x[r] the input of comm rank r.
 *   - integers: SUM/PROD wrap around (two's complement); MAX/MIN signed or unsigned as
 *     the type; LAND/LOR/LXOR give 1 or 0; BAND/BOR/BXOR are bitwise.
 *   - FLOAT/DOUBLE: SUM/PROD are one IEEE operation per step in that type; MAX/MIN take
 *     the incoming value when it compares greater (smaller), or when it is NaN and the
 *     accumulator is not (signed zeros compare equal: the earlier rank's zero stays).
 *   - FLOAT_SHORT (fp16) and BFLOAT16: each step is the correctly rounded (nearest-even)
 *     result of the operation on the two values, i.e. round16(float(a) op float(b)).
 *   - Logical and bitwise ops on FLOAT, DOUBLE, FLOAT_SHORT, BFLOAT16 are refused with
 *     SHARP_COLL_ENOT_SUPP (as MPI and the public SHARP test suite treat them).
 *   - PROD is refused with ENOT_SUPP (and absent from the caps) unless SHARP_EMU_ENABLE_PROD=1.
 *   - MAXLOC/MINLOC: each element is a packed pair {value of dtype; tag of tag_dtype}
 *     (no padding, element size = size(dtype) + size(tag_dtype)); the larger (smaller)
 *     value wins, ties keep the smaller tag; when the values are unordered (NaN) the
 *     accumulator is kept.  tag_dtype must be an integer type in caps.tag_dtypes.
 *
 * Operation semantics (byte lengths are taken from the buffer descriptors):
 *   - allreduce: spec->length elements; sbuf == rbuf is in place.  root, offset,
 *     tag_dtype (unless *LOC), stream_lock_batch_size and every reserved field are ignored.
 *   - reduce: like allreduce, the result is written only on spec->root; other ranks'
 *     rbuf_desc is not looked at.
 *   - reduce_scatter: the full vector has P blocks of B = rbuf_desc.buffer.length bytes.
 *     Each rank passes the same window of it: sbuf_desc.buffer.length bytes starting at
 *     byte spec->offset (offset 0 and P*B bytes = the whole vector).  Rank r receives
 *     the part of the reduced window that falls into block r, i.e. bytes
 *     [max(offset, r*B), min(offset + S, (r+1)*B)) of the reduced vector, written at the
 *     start of its rbuf (nothing if that part is empty).  spec->length is not used for
 *     the geometry (public callers disagree on its meaning).
 *   - allgather: each rank contributes sbuf_desc.buffer.length bytes; the full result is
 *     the P contributions in rank order; each rank receives rbuf_desc.buffer.length bytes
 *     of it starting at byte spec->offset.  spec->size is ignored (UCC leaves it unset),
 *     spec->dtype must be a valid datatype.
 *   - bcast: spec->size bytes from spec->root, in place in buf_desc.
 *   - barrier: the OOB barrier callback.
 *   - *_nb: the operation runs when posted (no progress thread); the handle completes when
 *     the injected latency has elapsed.  sharp_coll_req_wait returns the operation's
 *     status and releases the handle; sharp_coll_req_free releases it.
 *   - Only SHARP_DATA_BUFFER / SHARP_MEM_TYPE_HOST descriptors are implemented: IOV and
 *     CUDA give ENOT_SUPP, unknown values EINVAL.  mem_handle may be NULL or anything.
 *   - Argument errors are detected locally, before any communication: a rank that gets
 *     one returns at once, so the arguments must agree on all ranks (as with any
 *     collective library).  An OOB callback returning non-zero gives SHARP_COLL_EOOB.
 *   - sharp_coll_init and sharp_coll_comm_init agree on their result through the OOB
 *     callbacks (gather to rank 0, broadcast of the decision): every rank returns the
 *     same code, the one of the lowest rank that failed.
 *
 * ------------------------------------------------------------------------------------
 * Environment (read once by sharp_coll_init and kept in the context, so a process may
 * call setenv() before each sharp_coll_init; set them identically on all ranks unless a
 * rank filter is used):
 *
 *   SHARP_EMU_FAIL_INIT=<errcode>
 *       sharp_coll_init fails with <errcode> (e.g. -11 EJOB_CREATE, -8 ESESS_INIT,
 *       -9 EDEV) on every rank, even if only some ranks set it (the init agrees).
 *   SHARP_EMU_FAIL_COMM_INIT=<rule>[,<rule>...]
 *       sharp_coll_comm_init fails.  <rule> is <errcode> (every comm_init) or
 *       <sel>:<errcode>, <sel> counting the comm_init calls of this context from 1:
 *       N, N-M, N- (N and later) or * (all).  E.g. -18 (every one fails ELOCK_FAILED),
 *       1:-18 (the first fails, a retry succeeds), 2-:-20.  The comm_init agrees, so all
 *       ranks return the code.  No group is created and nothing else changes.
 *   SHARP_EMU_FAIL_OP=<rule>[,<rule>...]
 *       collective operations fail.  <rule> is <errcode> (all operations) or
 *       <sel>:<errcode>[:<rank>], <sel> as above counting the collective operations
 *       (barrier, allreduce, reduce, reduce_scatter, allgather, bcast; blocking or not)
 *       of this context from 1 - which is "of this process" with one context per
 *       process.  Every call on a valid communicator counts, including calls refused for
 *       bad arguments.  <rank> restricts the rule to that world rank.  The failing rank
 *       still takes part in the data exchange (so the other ranks neither block nor get
 *       out of step) but leaves its output buffers untouched and returns <errcode>
 *       (e.g. -20 ENO_RESOURCE, -1 ERROR, -2 ENOT_SUPP).  Later operations are unaffected.
 *   SHARP_EMU_FAIL_OP_PHASE=post|complete (default post)
 *       post: the call (blocking or _nb) returns the code and an _nb call gives no handle.
 *       complete: _nb calls return 0 and a handle whose sharp_coll_req_wait returns the
 *       code (sharp_coll_req_test reports it complete); blocking calls return the code.
 *   SHARP_EMU_MAX_PAYLOAD=<bytes>
 *       operations whose payload exceeds <bytes> are refused with SHARP_COLL_ENOT_SUPP
 *       before any communication, and sharp_coll_caps_query reports
 *       max_osts * user_data_per_ost == <bytes> (user_data_per_ost 1024 and
 *       max_osts = bytes/1024 when bytes is a non-zero multiple of 1024, otherwise
 *       max_osts 1 and user_data_per_ost = bytes).  Payload: allreduce/reduce
 *       length * element size, reduce_scatter the window, allgather the per-rank part,
 *       bcast size, barrier 0.  Unset: no limit.
 *   SHARP_EMU_LATENCY_US=<microseconds>
 *       fixed latency added to every operation that runs: blocking calls sleep it before
 *       returning, _nb handles complete that long after the post.
 *   SHARP_EMU_ENABLE_PROD=1
 *       implement SHARP_OP_PROD and report it in caps.support_mask.reduce_ops.
 *   SHARP_EMU_OOB_CHUNK=<bytes> (default 1048576)
 *       largest per-rank block passed to one OOB gather/bcast call; bigger operations are
 *       split (rounded down to whole elements, and at most 32 MiB / group size).
 *
 * The library's own variables that the emulator honours:
 *   SHARP_COLL_LOG_LEVEL (0..5, default 2): 1 OOB errors, 3 refused or injected
 *       operations, 4 init/comm_init details.  config.flags HIDE_ERRORS silences level 1.
 *   SHARP_COLL_ENABLE_SAT (default 1 here): 0 removes SHARP_FEATURE_SAT from the caps;
 *       reduce_scatter, allgather and SHARP_AGGREGATION_STREAMING then give ENOT_SUPP.
 *   SHARP_COLL_JOB_QUOTA_PAYLOAD_PER_OST (1024), SHARP_COLL_JOB_QUOTA_OSTS (167),
 *   SHARP_COLL_JOB_QUOTA_MAX_GROUPS (167), SHARP_COLL_OSTS_PER_GROUP (8): the caps
 *       resources.  At most max_groups communicators may be alive per context; one more
 *       sharp_coll_comm_init fails with SHARP_COLL_ENO_RESOURCE on every rank.
 * Any other SHARP_COLL_* variable is accepted and ignored.  A malformed value of any
 * variable above but SHARP_COLL_LOG_LEVEL makes sharp_coll_init fail with SHARP_COLL_EINVAL
 * (and a message on stderr unless SHARP_COLL_LOG_LEVEL=0).  An argument error is reported
 * in preference to an injected operation failure.
 */
#define _POSIX_C_SOURCE 200809L

#include <sharp/api/sharp_coll.h>

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <stdarg.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define EMU_API __attribute__((visibility("default")))

/* ------------------------------------------------------------------ ABI self-check */

_Static_assert(sizeof(struct sharp_coll_config) == 32, "sharp_coll_config");
_Static_assert(sizeof(struct sharp_coll_out_of_band_colls) == 24, "oob_colls");
_Static_assert(sizeof(struct sharp_coll_init_spec) == 120, "init_spec");
_Static_assert(offsetof(struct sharp_coll_init_spec, config) == 32, "init_spec.config");
_Static_assert(offsetof(struct sharp_coll_init_spec, oob_colls) == 64, "init_spec.oob_colls");
_Static_assert(offsetof(struct sharp_coll_init_spec, oob_ctx) == 96, "init_spec.oob_ctx");
_Static_assert(sizeof(struct sharp_coll_comm_init_spec) == 32, "comm_init_spec");
_Static_assert(sizeof(struct sharp_coll_caps) == 112, "caps");
_Static_assert(offsetof(struct sharp_coll_caps, support_mask.dtypes) == 24, "caps.dtypes");
_Static_assert(offsetof(struct sharp_coll_caps, resources.max_osts) == 88, "caps.max_osts");
_Static_assert(offsetof(struct sharp_coll_caps, resources.osts_per_group) == 104, "caps.opg");
_Static_assert(sizeof(struct sharp_coll_data_desc) == 40, "data_desc");
_Static_assert(offsetof(struct sharp_coll_data_desc, buffer.mem_handle) == 32, "desc.mem_handle");
_Static_assert(sizeof(struct sharp_data_iov) == 24, "data_iov");
_Static_assert(sizeof(struct sharp_coll_reduce_spec) == 136, "reduce_spec");
_Static_assert(offsetof(struct sharp_coll_reduce_spec, length) == 96, "reduce_spec.length");
_Static_assert(offsetof(struct sharp_coll_reduce_spec, offset) == 120, "reduce_spec.offset");
_Static_assert(sizeof(struct sharp_coll_bcast_spec) == 72, "bcast_spec");
_Static_assert(sizeof(struct sharp_coll_gather_spec) == 120, "gather_spec");
_Static_assert(sizeof(struct sharp_coll_reg_params) == 24, "reg_params");
_Static_assert(sizeof(enum sharp_datatype) == 4, "enum size");

/* ------------------------------------------------------------------ data symbol */

EMU_API const struct sharp_coll_config sharp_coll_default_config = {
    .ib_dev_list             = NULL,
    .user_progress_num_polls = 128,
    .coll_timeout            = -1,
    .flags                   = 0,
    .reserved                = {0, 0, 0},
};

/* ------------------------------------------------------------------ constants */

#define EMU_CTX_MAGIC  0x53484354u /* "SHCT" */
#define EMU_COMM_MAGIC 0x5348434du /* "SHCM" */
#define EMU_REQ_MAGIC  0x53485251u /* "SHRQ" */
#define EMU_MR_MAGIC   0x53484d52u /* "SHMR" */
#define EMU_DEAD_MAGIC 0xdeadbeefu
#define EMU_FINALIZED_MAGIC 0x53484644u /* "SHFD": finalized, communicators still alive */

#define EMU_MAX_RULES        32
#define EMU_DEFAULT_CHUNK    (1u << 20)
#define EMU_GATHER_BUDGET    (32u << 20)
#define EMU_MAX_CHUNK        (1u << 30)

enum { LOG_ERROR = 1, LOG_WARN = 2, LOG_INFO = 3, LOG_DEBUG = 4 };
enum { PHASE_POST = 0, PHASE_COMPLETE = 1 };

static const size_t dtype_size[SHARP_DTYPE_NULL] = {4, 4, 8, 8, 4, 8, 2, 2, 2, 2, 1, 1};

#define BIT(x) (UINT64_C(1) << (x))
#define ALL_DTYPES   (BIT(SHARP_DTYPE_NULL) - 1)
#define FLOAT_DTYPES (BIT(SHARP_DTYPE_FLOAT) | BIT(SHARP_DTYPE_DOUBLE) | \
                      BIT(SHARP_DTYPE_FLOAT_SHORT) | BIT(SHARP_DTYPE_BFLOAT16))
/* Tags are indices: the 16-, 32- and 64-bit integer types. */
#define TAG_DTYPES   (BIT(SHARP_DTYPE_UNSIGNED) | BIT(SHARP_DTYPE_INT) | \
                      BIT(SHARP_DTYPE_UNSIGNED_LONG) | BIT(SHARP_DTYPE_LONG) | \
                      BIT(SHARP_DTYPE_UNSIGNED_SHORT) | BIT(SHARP_DTYPE_SHORT))
#define ALL_OPS      (BIT(SHARP_OP_NULL) - 1)
#define ARITH_OPS    (BIT(SHARP_OP_MAX) | BIT(SHARP_OP_MIN) | BIT(SHARP_OP_SUM) | \
                      BIT(SHARP_OP_PROD) | BIT(SHARP_OP_MAXLOC) | BIT(SHARP_OP_MINLOC))

/* ------------------------------------------------------------------ types */

struct fail_rule {
    unsigned long first, last; /* inclusive call numbers, counted from 1 */
    int           code;
    int           rank;        /* world rank, or -1 for any */
};

struct fail_list {
    int              n;
    struct fail_rule r[EMU_MAX_RULES];
};

struct emu_settings {
    int              log_level;
    int              fail_init;
    struct fail_list fail_comm_init;
    struct fail_list fail_op;
    int              fail_phase;
    size_t           max_payload; /* SIZE_MAX: not set (the caps' payload applies) */
    size_t           payload_cap; /* what one operation may carry per rank: max_osts * user_data_per_ost */
    unsigned long    latency_us;
    unsigned long    level_us;    /* SHARP_EMU_LEVEL_US: per aggregation-tree level */
    unsigned long    radix;       /* SHARP_EMU_RADIX: the aggregation tree's radix */
    unsigned long    gbps;        /* SHARP_EMU_GBPS: link bandwidth in Gbit/s for the per-byte term, 0 none */
    int              enable_prod;
    int              enable_sat;
    size_t           oob_chunk;
    int              max_osts;
    int              user_data_per_ost;
    int              max_groups;
    int              osts_per_group;
};

struct sharp_coll_context {
    uint32_t                            magic;
    uint64_t                            job_id;
    int                                 world_rank;
    int                                 world_size;
    int                                 world_local_rank;
    int                                 group_channel_idx;
    int                                 thread_support;
    int                                 (*progress_func)(void);
    struct sharp_coll_out_of_band_colls oob;
    void                               *oob_ctx;
    struct sharp_coll_config            config;
    struct emu_settings                 cfg;
    atomic_ulong                        op_count;
    atomic_ulong                        comm_init_count;
    atomic_int                          live_comms; /* for the group quota */
    atomic_int                          refs;       /* 1 until finalize, + 1 per communicator */
    atomic_ulong                        next_group_id;
    atomic_ulong                        stat_ops;
    atomic_ulong                        stat_bytes;
    atomic_ulong                        stat_failed;
    atomic_ulong                        stat_regs;
    struct emu_req                     *outstanding; /* switch requests not yet freed (progress drives them) */
};

/* An element as the reduction kernels see it. */
struct elem_desc {
    int    dtype;
    int    op;
    int    tag_dtype; /* *LOC only */
    size_t vsize;     /* value size */
    size_t size;      /* value + tag */
};

struct sharp_coll_comm {
    uint32_t                   magic;
    struct sharp_coll_context *ctx;
    int                        rank;
    int                        size;
    void                      *oob_ctx;
    uint64_t                   group_id;
    uint8_t                   *sw;       /* the switch: shared memory of the communicator (see "switch") */
    size_t                     sw_size;
    size_t                     sw_cap;   /* bytes of one rank's contribution area */
    uint64_t                   next_seq; /* this rank's next operation number on this communicator */
};

struct emu_req {
    uint32_t                magic;
    int                     status;
    uint64_t                deadline_ns; /* OOB-run operations (bcast, allgather): complete at this time */
    int                     done;
    /* switch operations */
    struct sharp_coll_comm *comm;        /* NULL for OOB-run operations */
    uint64_t                seq;
    int                     kind;
    void                   *rbuf;
    size_t                  bytes;
    struct elem_desc        ed;
    int                     root;
    int                     inject;      /* injected completion failure, 0 none */
    uint64_t                post_ns;
    struct emu_req         *next;        /* in the context's outstanding list */
};

struct emu_mr {
    uint32_t magic;
    void    *buf;
    size_t   size;
};


/* ------------------------------------------------------------------ logging, time */

static void emu_log(const struct sharp_coll_context *ctx, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void emu_log(const struct sharp_coll_context *ctx, int level, const char *fmt, ...)
{
    va_list ap;
    if (ctx->cfg.log_level < level) {
        return;
    }
    if (level == LOG_ERROR && (ctx->config.flags & SHARP_COLL_HIDE_ERRORS)) {
        return;
    }
    fprintf(stderr, "[sharp_emu rank %d] ", ctx->world_rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t deadline_ns)
{
    for (;;) {
        uint64_t now = now_ns();
        struct timespec ts;
        if (now >= deadline_ns) {
            return;
        }
        ts.tv_sec  = (time_t)((deadline_ns - now) / 1000000000u);
        ts.tv_nsec = (long)((deadline_ns - now) % 1000000000u);
        nanosleep(&ts, NULL); /* EINTR: loop */
    }
}

/* ------------------------------------------------------------------ environment */

static int parse_long(const char *s, long *out)
{
    char *end;
    long  v;
    while (*s == ' ' || *s == '\t') {
        s++;
    }
    if (*s == '\0') {
        return -1;
    }
    errno = 0;
    v     = strtol(s, &end, 0);
    if (errno != 0 || end == s) {
        return -1;
    }
    while (*end == ' ' || *end == '\t') {
        end++;
    }
    if (*end != '\0') {
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_ulong(const char *s, unsigned long *out)
{
    long v;
    if (parse_long(s, &v) != 0 || v < 0) {
        return -1;
    }
    *out = (unsigned long)v;
    return 0;
}

static int parse_code(const char *s, int *out)
{
    long v;
    if (parse_long(s, &v) != 0 || v == 0 || v < INT_MIN || v > INT_MAX) {
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* <sel>: N | N-M | N- | * */
static int parse_sel(const char *s, unsigned long *first, unsigned long *last)
{
    char        buf[64];
    char       *dash;
    while (*s == ' ') {
        s++;
    }
    if (strcmp(s, "*") == 0) {
        *first = 1;
        *last  = ULONG_MAX;
        return 0;
    }
    if (strlen(s) >= sizeof(buf)) {
        return -1;
    }
    strcpy(buf, s);
    dash = strchr(buf, '-');
    if (dash == NULL) {
        if (parse_ulong(buf, first) != 0 || *first == 0) {
            return -1;
        }
        *last = *first;
        return 0;
    }
    *dash = '\0';
    if (parse_ulong(buf, first) != 0 || *first == 0) {
        return -1;
    }
    if (dash[1] == '\0') {
        *last = ULONG_MAX;
        return 0;
    }
    if (parse_ulong(dash + 1, last) != 0 || *last < *first) {
        return -1;
    }
    return 0;
}

/* <rule>[,<rule>...], <rule> = <errcode> | <sel>:<errcode>[:<rank>] */
static int parse_rules(const char *name, const char *value, int allow_rank, struct fail_list *list,
                       int log_level)
{
    char *copy, *item, *save = NULL;
    int   rc = 0;

    list->n = 0;
    if (value == NULL || value[0] == '\0') {
        return 0;
    }
    copy = strdup(value);
    if (copy == NULL) {
        return -1;
    }
    for (item = strtok_r(copy, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
        struct fail_rule r = {1, ULONG_MAX, 0, -1};
        char            *f1 = item, *f2, *f3 = NULL;
        f2 = strchr(f1, ':');
        if (f2 != NULL) {
            *f2++ = '\0';
            f3    = strchr(f2, ':');
            if (f3 != NULL) {
                *f3++ = '\0';
            }
        }
        if (list->n == EMU_MAX_RULES) {
            rc = -1;
        } else if (f2 == NULL) {
            rc = parse_code(f1, &r.code);
        } else {
            long rank = -1;
            rc = parse_sel(f1, &r.first, &r.last);
            if (rc == 0) {
                rc = parse_code(f2, &r.code);
            }
            if (rc == 0 && f3 != NULL) {
                rc = (!allow_rank || parse_long(f3, &rank) != 0 || rank < 0 || rank > INT_MAX) ? -1 : 0;
                r.rank = (int)rank;
            }
        }
        if (rc != 0) {
            if (log_level >= LOG_ERROR) {
                fprintf(stderr, "[sharp_emu] malformed %s=\"%s\" (item \"%s\")\n", name, value, item);
            }
            break;
        }
        list->r[list->n++] = r;
    }
    free(copy);
    return rc;
}

static int rule_code(const struct fail_list *list, unsigned long n, int world_rank)
{
    int i;
    for (i = 0; i < list->n; i++) {
        const struct fail_rule *r = &list->r[i];
        if (n >= r->first && n <= r->last && (r->rank < 0 || r->rank == world_rank)) {
            return r->code;
        }
    }
    return 0;
}

static void bad_env(int log_level, const char *name, const char *value)
{
    if (log_level >= LOG_ERROR) {
        fprintf(stderr, "[sharp_emu] malformed %s=\"%s\"\n", name, value);
    }
}

static int env_int(const char *name, long def, long min, long max, long *out, int log_level)
{
    const char *v = getenv(name);
    if (v == NULL || v[0] == '\0') {
        *out = def;
        return 0;
    }
    if (parse_long(v, out) != 0 || *out < min || *out > max) {
        bad_env(log_level, name, v);
        return -1;
    }
    return 0;
}

/* Returns 0 or SHARP_COLL_EINVAL. */
static int read_settings(struct emu_settings *s)
{
    const char *v;
    long        l;
    int         bad = 0;

    memset(s, 0, sizeof(*s));
    /* The library's own log level: an unparsable value is ignored, as a library would. */
    s->log_level = LOG_WARN;
    v            = getenv("SHARP_COLL_LOG_LEVEL");
    if (v != NULL && parse_long(v, &l) == 0) {
        s->log_level = (int)(l < 0 ? 0 : (l > 5 ? 5 : l));
    }

    v = getenv("SHARP_EMU_FAIL_INIT");
    if (v != NULL && v[0] != '\0' && parse_code(v, &s->fail_init) != 0) {
        bad_env(s->log_level, "SHARP_EMU_FAIL_INIT", v);
        bad = 1;
    }
    bad |= parse_rules("SHARP_EMU_FAIL_COMM_INIT", getenv("SHARP_EMU_FAIL_COMM_INIT"), 0,
                       &s->fail_comm_init, s->log_level) != 0;
    bad |= parse_rules("SHARP_EMU_FAIL_OP", getenv("SHARP_EMU_FAIL_OP"), 1, &s->fail_op, s->log_level) != 0;

    v = getenv("SHARP_EMU_FAIL_OP_PHASE");
    if (v == NULL || v[0] == '\0' || strcmp(v, "post") == 0) {
        s->fail_phase = PHASE_POST;
    } else if (strcmp(v, "complete") == 0) {
        s->fail_phase = PHASE_COMPLETE;
    } else {
        bad_env(s->log_level, "SHARP_EMU_FAIL_OP_PHASE", v);
        bad = 1;
    }

    s->max_payload = SIZE_MAX;
    v              = getenv("SHARP_EMU_MAX_PAYLOAD");
    if (v != NULL && v[0] != '\0') {
        unsigned long p;
        if (parse_ulong(v, &p) != 0 || p > (unsigned long)INT_MAX * 1024ul) {
            bad_env(s->log_level, "SHARP_EMU_MAX_PAYLOAD", v);
            bad = 1;
        } else {
            s->max_payload = p;
        }
    }
    bad |= env_int("SHARP_EMU_LATENCY_US", 0, 0, 3600L * 1000000L, &l, s->log_level) != 0;
    s->latency_us = (unsigned long)l;
    bad |= env_int("SHARP_EMU_LEVEL_US", 0, 0, 3600L * 1000000L, &l, s->log_level) != 0;
    s->level_us = (unsigned long)l;
    bad |= env_int("SHARP_EMU_RADIX", 32, 2, 1 << 16, &l, s->log_level) != 0;
    s->radix = (unsigned long)l;
    bad |= env_int("SHARP_EMU_GBPS", 0, 0, 1 << 20, &l, s->log_level) != 0;
    s->gbps = (unsigned long)l;
    bad |= env_int("SHARP_EMU_ENABLE_PROD", 0, 0, 1, &l, s->log_level) != 0;
    s->enable_prod = (int)l;
    bad |= env_int("SHARP_EMU_OOB_CHUNK", EMU_DEFAULT_CHUNK, 1, EMU_MAX_CHUNK, &l, s->log_level) != 0;
    s->oob_chunk = (size_t)l;

    bad |= env_int("SHARP_COLL_ENABLE_SAT", 1, 0, 1, &l, s->log_level) != 0;
    s->enable_sat = (int)l;
    bad |= env_int("SHARP_COLL_JOB_QUOTA_PAYLOAD_PER_OST", 1024, 1, INT_MAX, &l, s->log_level) != 0;
    s->user_data_per_ost = (int)l;
    bad |= env_int("SHARP_COLL_JOB_QUOTA_OSTS", 167, 1, INT_MAX, &l, s->log_level) != 0;
    s->max_osts = (int)l;
    bad |= env_int("SHARP_COLL_JOB_QUOTA_MAX_GROUPS", 167, 1, INT_MAX, &l, s->log_level) != 0;
    s->max_groups = (int)l;
    bad |= env_int("SHARP_COLL_OSTS_PER_GROUP", 8, 1, INT_MAX, &l, s->log_level) != 0;
    s->osts_per_group = (int)l;

    if (s->max_payload != SIZE_MAX) {
        if (s->max_payload != 0 && s->max_payload % 1024 == 0) {
            s->user_data_per_ost = 1024;
            s->max_osts          = (int)(s->max_payload / 1024);
        } else {
            s->user_data_per_ost = (int)s->max_payload;
            s->max_osts          = 1;
        }
    }
    s->payload_cap = (size_t)s->max_osts * (size_t)s->user_data_per_ost;
    return bad ? SHARP_COLL_EINVAL : 0;
}

/* ------------------------------------------------------------------ OOB helpers */

/* Decision round: every rank contributes a code and two values that must match; rank 0
 * picks the first non-zero code in rank order (EINVAL on a mismatch) and a value, and
 * broadcasts both.  Returns the agreed code; *value_out gets rank 0's value. */
struct agree_in {
    int32_t  code;
    int32_t  pad;
    uint64_t a, b;
};
struct agree_out {
    int32_t  code;
    int32_t  pad;
    uint64_t value;
};

static int oob_agree(const struct sharp_coll_context *ctx, void *oob_ctx, int rank, int size,
                     int my_code, uint64_t a, uint64_t b, uint64_t root_value, uint64_t *value_out)
{
    struct agree_in  mine = {my_code, 0, a, b};
    struct agree_in *all;
    struct agree_out dec  = {my_code, 0, root_value};
    int              r;

    if (size == 1) {
        *value_out = root_value;
        return my_code;
    }
    all = calloc((size_t)size, sizeof(*all));
    if (all == NULL) {
        return SHARP_COLL_ENOMEM; /* the others block: nothing better to do */
    }
    if (ctx->oob.gather(oob_ctx, 0, &mine, all, (int)sizeof(mine)) != 0) {
        free(all);
        emu_log(ctx, LOG_ERROR, "OOB gather failed");
        return SHARP_COLL_EOOB;
    }
    if (rank == 0) {
        dec.code = 0;
        for (r = 0; r < size && dec.code == 0; r++) {
            dec.code = all[r].code;
        }
        for (r = 0; r < size && dec.code == 0; r++) {
            if (all[r].a != all[0].a || all[r].b != all[0].b) {
                dec.code = SHARP_COLL_EINVAL;
            }
        }
    }
    free(all);
    if (ctx->oob.bcast(oob_ctx, &dec, (int)sizeof(dec), 0) != 0) {
        emu_log(ctx, LOG_ERROR, "OOB bcast failed");
        return SHARP_COLL_EOOB;
    }
    *value_out = dec.value;
    return dec.code;
}

/* ------------------------------------------------------------------ context */

EMU_API int sharp_coll_init(struct sharp_coll_init_spec *spec, struct sharp_coll_context **ctx_out)
{
    struct sharp_coll_context *ctx;
    int                        code;
    uint64_t                   dummy;

    if (spec == NULL || ctx_out == NULL) {
        return SHARP_COLL_EINVAL;
    }
    *ctx_out = NULL;
    if (spec->world_size < 1 || spec->world_rank < 0 || spec->world_rank >= spec->world_size ||
        spec->group_channel_idx < 0) {
        return SHARP_COLL_EINVAL;
    }
    if (spec->world_size > 1 &&
        (spec->oob_colls.bcast == NULL || spec->oob_colls.barrier == NULL ||
         spec->oob_colls.gather == NULL)) {
        return SHARP_COLL_EINVAL;
    }
    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        return SHARP_COLL_ENOMEM;
    }
    ctx->magic             = EMU_CTX_MAGIC;
    ctx->job_id            = spec->job_id;
    ctx->world_rank        = spec->world_rank;
    ctx->world_size        = spec->world_size;
    ctx->world_local_rank  = spec->world_local_rank;
    ctx->group_channel_idx = spec->group_channel_idx;
    ctx->thread_support    = spec->enable_thread_support;
    ctx->progress_func     = spec->progress_func;
    ctx->oob               = spec->oob_colls;
    ctx->oob_ctx           = spec->oob_ctx;
    ctx->config            = spec->config;
    ctx->config.ib_dev_list = NULL; /* not owned; not needed after init */
    atomic_init(&ctx->op_count, 0);
    atomic_init(&ctx->comm_init_count, 0);
    atomic_init(&ctx->live_comms, 0);
    atomic_init(&ctx->refs, 1);
    atomic_init(&ctx->next_group_id, 1);
    atomic_init(&ctx->stat_ops, 0);
    atomic_init(&ctx->stat_bytes, 0);
    atomic_init(&ctx->stat_failed, 0);
    atomic_init(&ctx->stat_regs, 0);

    code = read_settings(&ctx->cfg);
    if (code == 0) {
        code = ctx->cfg.fail_init;
    }
    code = oob_agree(ctx, ctx->oob_ctx, ctx->world_rank, ctx->world_size, code, ctx->job_id,
                     (uint64_t)ctx->world_size, 0, &dummy);
    if (code != 0) {
        emu_log(ctx, LOG_INFO, "sharp_coll_init fails: %d (%s)", code, sharp_coll_strerror(code));
        ctx->magic = EMU_DEAD_MAGIC;
        free(ctx);
        return code;
    }
    emu_log(ctx, LOG_DEBUG, "init job_id=%llu world %d/%d local_rank %d channel %d",
            (unsigned long long)ctx->job_id, ctx->world_rank, ctx->world_size,
            ctx->world_local_rank, ctx->group_channel_idx);
    *ctx_out = ctx;
    return SHARP_COLL_SUCCESS;
}

static int ctx_ok(const struct sharp_coll_context *ctx)
{
    return ctx != NULL && ctx->magic == EMU_CTX_MAGIC;
}

/* A context finalized before its communicators stays allocated (unusable) until the last
 * of them is destroyed, so a late sharp_coll_comm_destroy does not touch freed memory. */
static void ctx_unref(struct sharp_coll_context *ctx)
{
    if (atomic_fetch_sub(&ctx->refs, 1) == 1) {
        ctx->magic = EMU_DEAD_MAGIC;
        free(ctx);
    }
}

EMU_API int sharp_coll_finalize(struct sharp_coll_context *ctx)
{
    if (!ctx_ok(ctx)) {
        return SHARP_COLL_EINVAL;
    }
    if (atomic_load(&ctx->live_comms) != 0) {
        emu_log(ctx, LOG_WARN, "finalize with %d communicator(s) alive",
                atomic_load(&ctx->live_comms));
    }
    ctx->magic = EMU_FINALIZED_MAGIC;
    ctx_unref(ctx);
    return SHARP_COLL_SUCCESS;
}

EMU_API int sharp_coll_caps_query(struct sharp_coll_context *ctx, struct sharp_coll_caps *caps)
{
    if (!ctx_ok(ctx) || caps == NULL) {
        return SHARP_COLL_EINVAL;
    }
    memset(caps, 0, sizeof(*caps));
    caps->sharp_pkt_version         = 1; /* >= 1: MINLOC/MAXLOC tags use tag_dtype */
    caps->support_mask.dtypes       = ALL_DTYPES;
    caps->support_mask.tag_dtypes   = TAG_DTYPES;
    caps->support_mask.reduce_ops   = ALL_OPS & ~(ctx->cfg.enable_prod ? 0 : BIT(SHARP_OP_PROD));
    caps->support_mask.feature_mask = SHARP_FEATURE_LLT | (ctx->cfg.enable_sat ? SHARP_FEATURE_SAT : 0);
    caps->resources.max_osts           = ctx->cfg.max_osts;
    caps->resources.user_data_per_ost  = ctx->cfg.user_data_per_ost;
    caps->resources.max_groups         = ctx->cfg.max_groups;
    caps->resources.max_group_channels = 2;
    caps->resources.osts_per_group     = ctx->cfg.osts_per_group;
    return SHARP_COLL_SUCCESS;
}

static int sw_test(struct emu_req *req);

EMU_API int sharp_coll_progress(struct sharp_coll_context *ctx)
{
    struct emu_req *req;
    if (!ctx_ok(ctx)) {
        return SHARP_COLL_EINVAL;
    }
    for (req = ctx->outstanding; req != NULL; req = req->next) {
        sw_test(req);
    }
    return SHARP_COLL_SUCCESS;
}

/* ------------------------------------------------------------------ the switch: memory
 *
 * Operations (allreduce, reduce, barrier, reduce_scatter) never use the OOB callbacks: like a
 * switch, they meet in memory every rank of the communicator maps (all emulated ranks live on one
 * host). comm_init has rank 0 create a file in SHARP_EMU_SHM_DIR (default /dev/shm), mode 0600,
 * named sharp_emu-<pid of rank 0>-<job id>-<group id>; every rank maps it; rank 0 unlinks it before
 * comm_init returns (an OOB agreement orders these steps), so nothing is left even after kill -9.
 *
 *   [0, 4096)        head: magic, size, per-rank capacity, slots
 *   slot[i]          128 B per slot (SW_SLOTS of them): seq (operation number in the slot),
 *                    arrived, released, failed (the status every rank gets: poisoned), t_last (ns of
 *                    the last arrival)
 *   contrib[i][r]    SW_CHDR-byte header (the operation's signature) + cap bytes of data, per slot
 *                    and rank
 *
 * Operation n of the communicator (every rank numbers its operation calls the same way, also
 * refused and failed ones) uses slot n mod SW_SLOTS. A rank waits until the slot holds n, writes
 * its signature and data, then counts itself arrived (seq_cst). When all have arrived and the
 * modelled latency has passed since the last arrival, each rank folds the contributions itself,
 * ((x0 op x1) op x2) ... in rank order (identical bits everywhere, no rank computes for another,
 * so a stopped rank cannot hold the others up once it has contributed), and counts itself
 * released; the last to release recycles the slot for operation n + SW_SLOTS. A rank that does
 * not contribute (failed at post, refused) releases at once, as does one that abandons its request
 * (req_free before completion; its contribution stays). A rank whose operation is not complete at
 * coll_timeout poisons it: every rank still waiting for it completes with SHARP_COLL_ERROR (nobody
 * can complete it anyway). Signatures that differ between ranks
 * complete with SHARP_COLL_EINVAL on every rank. Memory: SW_SLOTS x ranks x (cap + 64) bytes of
 * address space, of which only the pages operations touch use memory.
 */

#define SW_MAGIC  0x53575443u /* "SWTC" */
#define SW_SLOTS  16u
#define SW_HEAD   4096u
#define SW_SLOT   128u
#define SW_CHDR   64u

struct sw_head {
    uint32_t magic;
    int32_t  size;
    uint64_t cap;
    uint32_t slots;
};

struct sw_slot {
    _Atomic uint64_t seq;
    _Atomic uint32_t arrived;
    _Atomic uint32_t released;
    _Atomic int32_t  failed;
    uint32_t         pad;
    _Atomic uint64_t t_last;
};

struct sw_chdr {
    int32_t  kind, dtype, op, tag;
    uint64_t length; /* bytes */
    int32_t  root;
    int32_t  pad;
};

static size_t sw_contrib_base(void)
{
    return (SW_HEAD + SW_SLOTS * SW_SLOT + 4095u) & ~(size_t)4095u;
}

static size_t sw_total(int size, size_t cap)
{
    return sw_contrib_base() + (size_t)SW_SLOTS * (size_t)size * (SW_CHDR + cap);
}

static void sw_name(char *out, size_t n, uint64_t pid0, uint64_t job_id, uint64_t group_id)
{
    const char *dir = getenv("SHARP_EMU_SHM_DIR");
    snprintf(out, n, "%s/sharp_emu-%llu-%llx-%llu", dir != NULL && dir[0] != '\0' ? dir : "/dev/shm",
             (unsigned long long)pid0, (unsigned long long)job_id, (unsigned long long)group_id);
}

static int sw_map(struct sharp_coll_comm *comm, const char *name, int create)
{
    size_t cap   = (comm->ctx->cfg.payload_cap + 63u) & ~(size_t)63u;
    size_t total = sw_total(comm->size, cap);
    int    fd    = open(name, create ? (O_RDWR | O_CREAT | O_EXCL) : O_RDWR, 0600);
    void  *m;
    if (fd < 0) {
        emu_log(comm->ctx, LOG_ERROR, "cannot %s %s: %s", create ? "create" : "open", name, strerror(errno));
        return SHARP_COLL_ENOMEM;
    }
    if (create && ftruncate(fd, (off_t)total) != 0) {
        emu_log(comm->ctx, LOG_ERROR, "cannot size %s to %zu bytes: %s", name, total, strerror(errno));
        close(fd);
        unlink(name);
        return SHARP_COLL_ENOMEM;
    }
    m = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        emu_log(comm->ctx, LOG_ERROR, "cannot map %s: %s", name, strerror(errno));
        if (create) {
            unlink(name);
        }
        return SHARP_COLL_ENOMEM;
    }
    comm->sw      = m;
    comm->sw_size = total;
    comm->sw_cap  = cap;
    if (create) {
        struct sw_head *h = m;
        uint32_t        i;
        h->size  = comm->size;
        h->cap   = cap;
        h->slots = SW_SLOTS;
        for (i = 0; i < SW_SLOTS; i++) {
            struct sw_slot *sl = (struct sw_slot *)((uint8_t *)m + SW_HEAD + i * SW_SLOT);
            atomic_store(&sl->seq, i);
        }
        atomic_thread_fence(memory_order_release);
        h->magic = SW_MAGIC;
    } else {
        struct sw_head *h = m;
        if (h->magic != SW_MAGIC || h->size != comm->size || h->cap != cap) {
            emu_log(comm->ctx, LOG_ERROR, "%s does not match this rank (size %d, capacity %zu)", name, comm->size, cap);
            munmap(m, total);
            comm->sw = NULL;
            return SHARP_COLL_EINVAL;
        }
    }
    return 0;
}

/* Collective over the communicator (OOB): rank 0 creates, all map, rank 0 unlinks. */
static int sw_setup(struct sharp_coll_comm *comm)
{
    struct sharp_coll_context *ctx = comm->ctx;
    char                       name[512];
    uint64_t                   pid0 = (uint64_t)getpid(), dummy;
    int                        code = 0;

    sw_name(name, sizeof(name), pid0, ctx->job_id, comm->group_id);
    if (comm->rank == 0) {
        code = sw_map(comm, name, 1);
    }
    code = oob_agree(ctx, comm->oob_ctx, comm->rank, comm->size, code, 0, 0, pid0, &pid0);
    if (code == 0 && comm->rank != 0) {
        sw_name(name, sizeof(name), pid0, ctx->job_id, comm->group_id);
        code = sw_map(comm, name, 0);
    }
    code = oob_agree(ctx, comm->oob_ctx, comm->rank, comm->size, code, 0, 0, 0, &dummy);
    if (comm->rank == 0) {
        unlink(name); /* every rank has mapped it (or failed): from here nothing can leak */
    }
    if (code != 0 && comm->sw != NULL) {
        munmap(comm->sw, comm->sw_size);
        comm->sw = NULL;
    }
    return code;
}

/* ------------------------------------------------------------------ communicator */

EMU_API int sharp_coll_comm_init(struct sharp_coll_context *ctx, struct sharp_coll_comm_init_spec *spec,
                                 struct sharp_coll_comm **comm_out)
{
    struct sharp_coll_comm *comm;
    unsigned long           n;
    int                     code, live;
    uint64_t                group_id;

    if (!ctx_ok(ctx) || spec == NULL || comm_out == NULL) {
        return SHARP_COLL_EINVAL;
    }
    *comm_out = NULL;
    if (spec->size < 1 || spec->rank < 0 || spec->rank >= spec->size ||
        spec->size > ctx->world_size) {
        return SHARP_COLL_EINVAL;
    }
    n    = atomic_fetch_add(&ctx->comm_init_count, 1) + 1;
    live = atomic_fetch_add(&ctx->live_comms, 1) + 1; /* reserve the group slot */
    code = rule_code(&ctx->cfg.fail_comm_init, n, ctx->world_rank);
    if (code == 0 && live > ctx->cfg.max_groups) {
        code = SHARP_COLL_ENO_RESOURCE;
    }
    code = oob_agree(ctx, spec->oob_ctx, spec->rank, spec->size, code, (uint64_t)spec->size, 0,
                     atomic_fetch_add(&ctx->next_group_id, 1), &group_id);
    if (code == 0) {
        comm = calloc(1, sizeof(*comm));
        if (comm == NULL) {
            code = SHARP_COLL_ENOMEM;
        }
    }
    if (code != 0) {
        atomic_fetch_sub(&ctx->live_comms, 1);
        emu_log(ctx, LOG_INFO, "sharp_coll_comm_init #%lu fails: %d (%s)", n, code,
                sharp_coll_strerror(code));
        return code;
    }
    comm->magic    = EMU_COMM_MAGIC;
    comm->ctx      = ctx;
    comm->rank     = spec->rank;
    comm->size     = spec->size;
    comm->oob_ctx  = spec->oob_ctx;
    comm->group_id = group_id;
    code           = sw_setup(comm);
    if (code != 0) {
        atomic_fetch_sub(&ctx->live_comms, 1);
        comm->magic = EMU_DEAD_MAGIC;
        free(comm);
        emu_log(ctx, LOG_INFO, "sharp_coll_comm_init #%lu fails setting up the switch: %d (%s)", n, code,
                sharp_coll_strerror(code));
        return code;
    }
    atomic_fetch_add(&ctx->refs, 1);
    emu_log(ctx, LOG_DEBUG, "comm_init #%lu group %llu rank %d/%d", n,
            (unsigned long long)group_id, comm->rank, comm->size);
    *comm_out = comm;
    return SHARP_COLL_SUCCESS;
}

static int comm_ok(const struct sharp_coll_comm *comm)
{
    return comm != NULL && comm->magic == EMU_COMM_MAGIC && ctx_ok(comm->ctx);
}

static void sw_abandon_all(struct sharp_coll_comm *comm);

EMU_API int sharp_coll_comm_destroy(struct sharp_coll_comm *comm)
{
    if (comm == NULL || comm->magic != EMU_COMM_MAGIC) { /* its context may be finalized */
        return SHARP_COLL_EINVAL;
    }
    sw_abandon_all(comm); /* requests still out: poisoned for the others, unusable here */
    if (comm->sw != NULL) {
        munmap(comm->sw, comm->sw_size);
        comm->sw = NULL;
    }
    atomic_fetch_sub(&comm->ctx->live_comms, 1);
    ctx_unref(comm->ctx);
    comm->magic = EMU_DEAD_MAGIC;
    free(comm);
    return SHARP_COLL_SUCCESS;
}

/* ------------------------------------------------------------------ fp16 / bf16 */

static float bits_to_f32(uint32_t x)
{
    float f;
    memcpy(&f, &x, sizeof(f));
    return f;
}

static uint32_t f32_to_bits(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof(x));
    return x;
}

static float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e    = (h >> 10) & 0x1fu;
    uint32_t m    = h & 0x3ffu;
    uint32_t x;
    if (e == 0x1fu) {
        x = sign | 0x7f800000u | (m << 13);
    } else if (e != 0) {
        x = sign | ((e + 112u) << 23) | (m << 13);
    } else if (m == 0) {
        x = sign;
    } else {
        e = 113;
        while (!(m & 0x400u)) {
            m <<= 1;
            e--;
        }
        x = sign | (e << 23) | ((m & 0x3ffu) << 13);
    }
    return bits_to_f32(x);
}

/* Round to nearest, ties to even; NaNs stay (quiet) NaNs. */
static uint16_t f32_to_f16(float f)
{
    uint32_t x    = f32_to_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t a    = x & 0x7fffffffu;
    uint32_t h, rem, halfway, shift, m;

    if (a > 0x7f800000u) {
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    }
    if (a >= 0x477ff000u) { /* >= 65520: rounds to infinity */
        return (uint16_t)(sign | 0x7c00u);
    }
    if (a >= 0x38800000u) { /* normal binary16 */
        uint32_t r = a - 0x38000000u;
        h          = r >> 13;
        rem        = r & 0x1fffu;
        if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) {
            h++;
        }
        return (uint16_t)(sign | h);
    }
    if (a <= 0x33000000u) { /* <= 2^-25: rounds to zero */
        return (uint16_t)sign;
    }
    shift   = 126u - (a >> 23); /* 14 .. 24 */
    m       = (a & 0x7fffffu) | 0x800000u;
    h       = m >> shift;
    rem     = m & ((1u << shift) - 1u);
    halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (h & 1u))) {
        h++;
    }
    return (uint16_t)(sign | h);
}

static float bf16_to_f32(uint16_t h)
{
    return bits_to_f32((uint32_t)h << 16);
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t x = f32_to_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) {
        return (uint16_t)((x >> 16) | 0x40u);
    }
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

/* ------------------------------------------------------------------ reduction kernels */

static int is_float_dtype(int dt)
{
    return (FLOAT_DTYPES & BIT(dt)) != 0;
}

static int is_signed_int(int dt)
{
    return dt == SHARP_DTYPE_INT || dt == SHARP_DTYPE_LONG || dt == SHARP_DTYPE_SHORT ||
           dt == SHARP_DTYPE_INT8;
}

static uint64_t ld_u(const uint8_t *p, size_t sz)
{
    uint8_t  u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    switch (sz) {
    case 1: memcpy(&u8, p, 1); return u8;
    case 2: memcpy(&u16, p, 2); return u16;
    case 4: memcpy(&u32, p, 4); return u32;
    default: memcpy(&u64, p, 8); return u64;
    }
}

static int64_t ld_s(const uint8_t *p, size_t sz)
{
    int8_t  s8;
    int16_t s16;
    int32_t s32;
    int64_t s64;
    switch (sz) {
    case 1: memcpy(&s8, p, 1); return s8;
    case 2: memcpy(&s16, p, 2); return s16;
    case 4: memcpy(&s32, p, 4); return s32;
    default: memcpy(&s64, p, 8); return s64;
    }
}

static void st_u(uint8_t *p, size_t sz, uint64_t v)
{
    uint8_t  u8  = (uint8_t)v;
    uint16_t u16 = (uint16_t)v;
    uint32_t u32 = (uint32_t)v;
    switch (sz) {
    case 1: memcpy(p, &u8, 1); break;
    case 2: memcpy(p, &u16, 2); break;
    case 4: memcpy(p, &u32, 4); break;
    default: memcpy(p, &v, 8); break;
    }
}

/* Value of a floating element as double (exact for all four formats). */
static double ld_fp(const uint8_t *p, int dt)
{
    float  f;
    double d;
    switch (dt) {
    case SHARP_DTYPE_FLOAT: memcpy(&f, p, 4); return f;
    case SHARP_DTYPE_DOUBLE: memcpy(&d, p, 8); return d;
    case SHARP_DTYPE_FLOAT_SHORT: return f16_to_f32((uint16_t)ld_u(p, 2));
    default: return bf16_to_f32((uint16_t)ld_u(p, 2));
    }
}

/* -1, 0, 1, or 2 when unordered (a NaN is involved). */
static int cmp_vals(const uint8_t *a, const uint8_t *b, int dt)
{
    size_t sz = dtype_size[dt];
    if (is_float_dtype(dt)) {
        double x = ld_fp(a, dt), y = ld_fp(b, dt);
        if (x < y) {
            return -1;
        }
        if (x > y) {
            return 1;
        }
        return x == y ? 0 : 2;
    }
    if (is_signed_int(dt)) {
        int64_t x = ld_s(a, sz), y = ld_s(b, sz);
        return x < y ? -1 : (x > y ? 1 : 0);
    } else {
        uint64_t x = ld_u(a, sz), y = ld_u(b, sz);
        return x < y ? -1 : (x > y ? 1 : 0);
    }
}

static int is_nan_val(const uint8_t *p, int dt)
{
    double x;
    if (!is_float_dtype(dt)) {
        return 0;
    }
    x = ld_fp(p, dt);
    return x != x;
}

/* acc = acc op in for one arithmetic (SUM/PROD) element of a floating type. */
static void fp_arith(uint8_t *acc, const uint8_t *in, int dt, int op)
{
    if (dt == SHARP_DTYPE_FLOAT) {
        float a, b;
        memcpy(&a, acc, 4);
        memcpy(&b, in, 4);
        a = (op == SHARP_OP_SUM) ? a + b : a * b;
        memcpy(acc, &a, 4);
    } else if (dt == SHARP_DTYPE_DOUBLE) {
        double a, b;
        memcpy(&a, acc, 8);
        memcpy(&b, in, 8);
        a = (op == SHARP_OP_SUM) ? a + b : a * b;
        memcpy(acc, &a, 8);
    } else {
        /* Both operands are exact in float; the float result rounded once more to 16 bits is
         * the correctly rounded 16-bit result (24 >= 2 * 11 + 2). */
        float a = (float)ld_fp(acc, dt), b = (float)ld_fp(in, dt);
        float r = (op == SHARP_OP_SUM) ? a + b : a * b;
        st_u(acc, 2, dt == SHARP_DTYPE_FLOAT_SHORT ? f32_to_f16(r) : f32_to_bf16(r));
    }
}

static void int_op(uint8_t *acc, const uint8_t *in, size_t sz, int op)
{
    uint64_t a = ld_u(acc, sz), b = ld_u(in, sz), r;
    switch (op) {
    case SHARP_OP_SUM: r = a + b; break;
    case SHARP_OP_PROD: r = a * b; break;
    case SHARP_OP_LAND: r = (a != 0) && (b != 0); break;
    case SHARP_OP_LOR: r = (a != 0) || (b != 0); break;
    case SHARP_OP_LXOR: r = (a != 0) != (b != 0); break;
    case SHARP_OP_BAND: r = a & b; break;
    case SHARP_OP_BOR: r = a | b; break;
    default: r = a ^ b; break; /* BXOR */
    }
    st_u(acc, sz, r);
}

/*
 * Typed loops for the common cases: the same operation per element as the generic path below
 * (integer SUM wraps; a floating MAX/MIN takes the incoming value when it is greater/smaller, or
 * when it is NaN and the accumulator is not), written so that the compiler vectorises them: a
 * switch folds at line rate, and an emulator that folds byte by byte would charge the host CPU what
 * the network does for free. Only for element-aligned buffers; 1 when done.
 */
#define FOLD(T, EXPR)                                                                                   \
    do {                                                                                                \
        T       *a_ = (T *)(void *)acc;                                                                 \
        const T *b_ = (const T *)(const void *)in;                                                      \
        if (((uintptr_t)acc | (uintptr_t)in) % sizeof(T) != 0) {                                        \
            return 0;                                                                                   \
        }                                                                                               \
        for (i = 0; i < n; i++) {                                                                       \
            T x = a_[i], y = b_[i];                                                                     \
            a_[i] = (EXPR);                                                                             \
        }                                                                                               \
        return 1;                                                                                       \
    } while (0)

#define FOLD_INT(T)                                                                                     \
    switch (op) {                                                                                       \
    case SHARP_OP_MAX: FOLD(T, y > x ? y : x);                                                          \
    case SHARP_OP_MIN: FOLD(T, y < x ? y : x);                                                          \
    case SHARP_OP_BAND: FOLD(T, x & y);                                                                 \
    case SHARP_OP_BOR: FOLD(T, x | y);                                                                  \
    case SHARP_OP_BXOR: FOLD(T, x ^ y);                                                                 \
    case SHARP_OP_LAND: FOLD(T, (T)((x != 0) && (y != 0)));                                             \
    case SHARP_OP_LOR: FOLD(T, (T)((x != 0) || (y != 0)));                                              \
    case SHARP_OP_LXOR: FOLD(T, (T)((x != 0) != (y != 0)));                                             \
    default: return 0;                                                                                  \
    }

#define FOLD_FP(T)                                                                                      \
    switch (op) {                                                                                       \
    case SHARP_OP_SUM: FOLD(T, x + y);                                                                  \
    case SHARP_OP_MAX: FOLD(T, (y > x || (y != y && x == x)) ? y : x);                                  \
    case SHARP_OP_MIN: FOLD(T, (y < x || (y != y && x == x)) ? y : x);                                  \
    default: return 0;                                                                                  \
    }

static int combine_fast(uint8_t *acc, const uint8_t *in, size_t n, int dt, int op)
{
    size_t i;
    switch (dt) {
    case SHARP_DTYPE_UNSIGNED:
        if (op == SHARP_OP_SUM) {
            FOLD(uint32_t, x + y);
        }
        FOLD_INT(uint32_t)
    case SHARP_DTYPE_INT:
        if (op == SHARP_OP_SUM) { /* wraps: add as unsigned */
            FOLD(int32_t, (int32_t)((uint32_t)x + (uint32_t)y));
        }
        FOLD_INT(int32_t)
    case SHARP_DTYPE_UNSIGNED_LONG:
        if (op == SHARP_OP_SUM) {
            FOLD(uint64_t, x + y);
        }
        FOLD_INT(uint64_t)
    case SHARP_DTYPE_LONG:
        if (op == SHARP_OP_SUM) {
            FOLD(int64_t, (int64_t)((uint64_t)x + (uint64_t)y));
        }
        FOLD_INT(int64_t)
    case SHARP_DTYPE_FLOAT:
        FOLD_FP(float)
    case SHARP_DTYPE_DOUBLE:
        FOLD_FP(double)
    default:
        return 0;
    }
}

/* acc[i] = acc[i] op in[i] for n elements. */
static void combine(uint8_t *acc, const uint8_t *in, size_t n, const struct elem_desc *ed)
{
    size_t i;
    int    dt = ed->dtype, op = ed->op;

    if (ed->size == ed->vsize && combine_fast(acc, in, n, dt, op)) {
        return;
    }
    for (i = 0; i < n; i++, acc += ed->size, in += ed->size) {
        int c;
        switch (op) {
        case SHARP_OP_MAX:
        case SHARP_OP_MIN:
            c = cmp_vals(in, acc, dt);
            if ((op == SHARP_OP_MAX && c == 1) || (op == SHARP_OP_MIN && c == -1) ||
                (c == 2 && is_nan_val(in, dt) && !is_nan_val(acc, dt))) {
                memcpy(acc, in, ed->vsize);
            }
            break;
        case SHARP_OP_MAXLOC:
        case SHARP_OP_MINLOC:
            c = cmp_vals(in, acc, dt);
            if ((op == SHARP_OP_MAXLOC && c == 1) || (op == SHARP_OP_MINLOC && c == -1)) {
                memcpy(acc, in, ed->size);
            } else if (c == 0 && cmp_vals(in + ed->vsize, acc + ed->vsize, ed->tag_dtype) == -1) {
                memcpy(acc + ed->vsize, in + ed->vsize, ed->size - ed->vsize);
            }
            break;
        default:
            if (is_float_dtype(dt)) {
                fp_arith(acc, in, dt, op);
            } else {
                int_op(acc, in, ed->vsize, op);
            }
            break;
        }
    }
}

/* ------------------------------------------------------------------ operation engine */

struct op_ctx {
    struct sharp_coll_comm    *comm;
    struct sharp_coll_context *ctx;
    unsigned long              n;      /* operation number */
    int                        inject; /* injected code, 0 if none */
};

/* Counts the operation and looks up an injected failure. */
static void op_begin(struct sharp_coll_comm *comm, struct op_ctx *oc)
{
    oc->comm   = comm;
    oc->ctx    = comm->ctx;
    oc->n      = atomic_fetch_add(&oc->ctx->op_count, 1) + 1;
    oc->inject = rule_code(&oc->ctx->cfg.fail_op, oc->n, oc->ctx->world_rank);
}

static int op_refuse(const struct op_ctx *oc, const char *what, int code, const char *why)
{
    emu_log(oc->ctx, LOG_INFO, "%s (op #%lu) refused: %d (%s): %s", what, oc->n, code,
            sharp_coll_strerror(code), why);
    atomic_fetch_add(&oc->ctx->stat_failed, 1);
    return code;
}

/* ------------------------------------------------------------------ the switch: operations */

enum { SW_ALLREDUCE = 0, SW_REDUCE = 1, SW_REDUCE_SCATTER = 2, SW_BARRIER = 3 };

static struct sw_slot *sw_slot_of(const struct sharp_coll_comm *comm, uint64_t seq)
{
    return (struct sw_slot *)(comm->sw + SW_HEAD + (size_t)(seq % SW_SLOTS) * SW_SLOT);
}

static uint8_t *sw_contrib(const struct sharp_coll_comm *comm, uint64_t seq, int r)
{
    return comm->sw + sw_contrib_base() +
           ((size_t)(seq % SW_SLOTS) * (size_t)comm->size + (size_t)r) * (SW_CHDR + comm->sw_cap);
}

/* The modelled time from the last arrival to completion: base + levels x per-level + bytes / bandwidth. */
static uint64_t sw_model_ns(const struct sharp_coll_context *ctx, int size, size_t bytes)
{
    uint64_t levels = 0, n = 1, ns;
    while (n < (uint64_t)size) {
        n *= ctx->cfg.radix;
        levels++;
    }
    ns = (uint64_t)ctx->cfg.latency_us * 1000u + levels * (uint64_t)ctx->cfg.level_us * 1000u;
    if (ctx->cfg.gbps > 0) {
        ns += (uint64_t)bytes * 8u / ctx->cfg.gbps; /* bits / (Gbit/s) = ns */
    }
    return ns;
}

static uint64_t sw_timeout_ns(const struct sharp_coll_context *ctx)
{
    return ctx->config.coll_timeout > 0 ? (uint64_t)ctx->config.coll_timeout * 1000000u : 0;
}

/* Backs off while waiting: spin a little, then yield, then sleep 20 us at a time. */
static void sw_pause(unsigned long *spins)
{
    if (++*spins < 64) {
        return;
    }
    if (*spins < 4096) {
        sched_yield();
        return;
    }
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
}

/* Takes this rank's next operation number and waits until its slot is free for it. */
static int sw_enter(struct sharp_coll_comm *comm, uint64_t *seq_out)
{
    uint64_t        seq   = comm->next_seq++;
    struct sw_slot *sl    = sw_slot_of(comm, seq);
    uint64_t        limit = sw_timeout_ns(comm->ctx), t0 = 0;
    unsigned long   spins = 0;
    *seq_out              = seq;
    while (atomic_load_explicit(&sl->seq, memory_order_acquire) != seq) {
        if (limit != 0) {
            if (t0 == 0) {
                t0 = now_ns();
            } else if (now_ns() - t0 > limit) {
                emu_log(comm->ctx, LOG_ERROR, "operation %llu: its slot is still held by operation %llu after coll_timeout",
                        (unsigned long long)seq, (unsigned long long)atomic_load(&sl->seq));
                return SHARP_COLL_ERROR;
            }
        }
        sw_pause(&spins);
    }
    return 0;
}

static void sw_release(struct sharp_coll_comm *comm, uint64_t seq)
{
    struct sw_slot *sl = sw_slot_of(comm, seq);
    if (atomic_fetch_add(&sl->released, 1) + 1 == (uint32_t)comm->size) {
        atomic_store(&sl->arrived, 0);
        atomic_store(&sl->failed, 0);
        atomic_store(&sl->t_last, 0);
        atomic_store(&sl->released, 0);
        atomic_store_explicit(&sl->seq, seq + SW_SLOTS, memory_order_release);
    }
}

/* An operation this rank takes part in without contributing (refused, failed at post). */
static void sw_skip(struct sharp_coll_comm *comm)
{
    uint64_t seq;
    if (sw_enter(comm, &seq) == 0) {
        sw_release(comm, seq);
    }
}

static void sw_poison(struct sharp_coll_comm *comm, uint64_t seq, int status)
{
    int32_t zero = 0;
    atomic_compare_exchange_strong(&sw_slot_of(comm, seq)->failed, &zero, status);
}

/* Contributes: signature and data, then the arrival (the last arrival time first). */
static int sw_post(struct sharp_coll_comm *comm, int kind, const void *sbuf, size_t bytes, const struct elem_desc *ed,
                   int root, uint64_t *seq_out)
{
    struct sw_slot *sl;
    struct sw_chdr *h;
    uint64_t        seq, now, last;
    int             rc = sw_enter(comm, &seq);
    if (rc != 0) {
        return rc;
    }
    sl        = sw_slot_of(comm, seq);
    h         = (struct sw_chdr *)sw_contrib(comm, seq, comm->rank);
    h->kind   = kind;
    h->dtype  = ed->dtype;
    h->op     = ed->op;
    h->tag    = ed->tag_dtype;
    h->length = bytes;
    h->root   = root;
    if (bytes > 0) {
        memcpy((uint8_t *)h + SW_CHDR, sbuf, bytes);
    }
    now  = now_ns();
    last = atomic_load(&sl->t_last);
    while (last < now && !atomic_compare_exchange_weak(&sl->t_last, &last, now)) {
    }
    atomic_fetch_add(&sl->arrived, 1);
    *seq_out = seq;
    return 0;
}

static void req_unlink(struct emu_req *req)
{
    struct emu_req **pp;
    if (req->comm == NULL) {
        return;
    }
    for (pp = &req->comm->ctx->outstanding; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == req) {
            *pp = req->next;
            break;
        }
    }
}

static void sw_complete(struct emu_req *req, int status)
{
    req->status = status;
    req->done   = 1;
    sw_release(req->comm, req->seq);
    if (status != 0) {
        atomic_fetch_add(&req->comm->ctx->stat_failed, 1);
    }
}

/* Polls a switch operation; folds the contributions once all arrived and the model allows. */
static int sw_test(struct emu_req *req)
{
    struct sharp_coll_comm *comm;
    struct sw_slot         *sl;
    int                     f, r;
    if (req->done) {
        return 1;
    }
    comm = req->comm;
    sl   = sw_slot_of(comm, req->seq);
    f    = atomic_load(&sl->failed);
    if (f != 0) {
        sw_complete(req, f);
        return 1;
    }
    if (atomic_load(&sl->arrived) == (uint32_t)comm->size) {
        const struct sw_chdr *h0 = (const struct sw_chdr *)sw_contrib(comm, req->seq, 0);
        if (now_ns() < atomic_load(&sl->t_last) + sw_model_ns(comm->ctx, comm->size, req->bytes)) {
            return 0;
        }
        for (r = 1; r < comm->size; r++) {
            const struct sw_chdr *h = (const struct sw_chdr *)sw_contrib(comm, req->seq, r);
            if (h->kind != h0->kind || h->dtype != h0->dtype || h->op != h0->op || h->tag != h0->tag ||
                h->length != h0->length || h->root != h0->root) {
                emu_log(comm->ctx, LOG_INFO, "operation %llu: rank %d called it with other arguments than rank 0",
                        (unsigned long long)req->seq, r);
                sw_complete(req, SHARP_COLL_EINVAL);
                return 1;
            }
        }
        if (req->inject != 0) {
            emu_log(comm->ctx, LOG_INFO, "operation %llu: injected failure %d at completion", (unsigned long long)req->seq,
                    req->inject);
            sw_complete(req, req->inject);
            return 1;
        }
        if (req->bytes > 0 && req->rbuf != NULL) {
            uint8_t *out = req->rbuf;
            memcpy(out, (const uint8_t *)h0 + SW_CHDR, req->bytes);
            for (r = 1; r < comm->size; r++) {
                combine(out, sw_contrib(comm, req->seq, r) + SW_CHDR, req->bytes / req->ed.size, &req->ed);
            }
        }
        sw_complete(req, 0);
        return 1;
    }
    if (sw_timeout_ns(comm->ctx) != 0 && now_ns() - req->post_ns > sw_timeout_ns(comm->ctx)) {
        emu_log(comm->ctx, LOG_ERROR, "operation %llu: not complete after coll_timeout %d ms (%u of %d ranks arrived)",
                (unsigned long long)req->seq, comm->ctx->config.coll_timeout, atomic_load(&sl->arrived), comm->size);
        sw_poison(comm, req->seq, SHARP_COLL_ERROR);
        sw_complete(req, SHARP_COLL_ERROR);
        return 1;
    }
    return 0;
}

/*
 * Abandons a request (req_free before completion): this rank stops waiting and releases its part
 * of the slot. Its contribution (if it made one) stays: the others complete normally once everyone
 * contributed, as a switch would; if someone never contributes, none of them complete.
 */
static void sw_abandon(struct emu_req *req)
{
    if (!req->done) {
        sw_complete(req, SHARP_COLL_ERROR);
    }
}

static void sw_abandon_all(struct sharp_coll_comm *comm)
{
    struct emu_req **pp = &comm->ctx->outstanding;
    while (*pp != NULL) {
        struct emu_req *req = *pp;
        if (req->comm == comm) {
            sw_abandon(req);
            *pp       = req->next;
            req->comm = NULL; /* the handle stays valid for req_wait/req_free, completed with its status */
            req->deadline_ns = 0;
        } else {
            pp = &req->next;
        }
    }
}

/*
 * One switch operation: injection at post (no contribution), posting, then either a handle
 * (linked for sharp_coll_progress) or, blocking, polling to completion. rbuf: where this rank
 * wants the result (NULL: none).
 */
static int sw_run(struct op_ctx *oc, const char *what, int kind, const void *sbuf, void *rbuf, size_t bytes,
                  const struct elem_desc *ed, int root, void **handle_out)
{
    struct sharp_coll_comm    *comm = oc->comm;
    struct sharp_coll_context *ctx  = oc->ctx;
    struct emu_req            *req;
    unsigned long              spins = 0;
    int                        rc, status;

    atomic_fetch_add(&ctx->stat_ops, 1);
    atomic_fetch_add(&ctx->stat_bytes, bytes);
    if (oc->inject != 0 && ctx->cfg.fail_phase == PHASE_POST) {
        emu_log(ctx, LOG_INFO, "%s (op #%lu): injected failure %d (%s) at post: no contribution", what, oc->n,
                oc->inject, sharp_coll_strerror(oc->inject));
        atomic_fetch_add(&ctx->stat_failed, 1);
        sw_skip(comm);
        return oc->inject;
    }
    req = calloc(1, sizeof(*req));
    if (req == NULL) {
        sw_skip(comm);
        return SHARP_COLL_ENOMEM;
    }
    req->magic   = EMU_REQ_MAGIC;
    req->comm    = comm;
    req->kind    = kind;
    req->rbuf    = rbuf;
    req->bytes   = bytes;
    req->ed      = *ed;
    req->root    = root;
    req->inject  = oc->inject;
    req->post_ns = now_ns();
    rc           = sw_post(comm, kind, sbuf, bytes, ed, root, &req->seq);
    if (rc != 0) {
        free(req);
        return rc;
    }
    if (handle_out != NULL) {
        req->next        = ctx->outstanding;
        ctx->outstanding = req;
        *handle_out      = req;
        return SHARP_COLL_SUCCESS;
    }
    while (!sw_test(req)) {
        sw_pause(&spins);
    }
    status     = req->status;
    req->magic = EMU_DEAD_MAGIC;
    free(req);
    return status;
}

/* A refused switch operation: it still takes its number (and releases its slot at once). */
static int sw_refuse(struct op_ctx *oc, const char *what, int code, const char *why)
{
    sw_skip(oc->comm);
    return op_refuse(oc, what, code, why);
}

/* Ends an operation that already ran to completion: a completed handle when one is wanted. */
static int op_done(const struct op_ctx *oc, int status, void **handle_out)
{
    struct emu_req *req;
    (void)oc;
    if (handle_out == NULL || (status != 0 && oc->ctx->cfg.fail_phase == PHASE_POST)) {
        return status;
    }
    req = calloc(1, sizeof(*req));
    if (req == NULL) {
        return SHARP_COLL_ENOMEM;
    }
    req->magic  = EMU_REQ_MAGIC;
    req->status = status;
    req->done   = 1;
    *handle_out = req;
    return SHARP_COLL_SUCCESS;
}

/* After the exchange: applies the injected failure and the latency, creates the handle. */
static int op_finish(const struct op_ctx *oc, const char *what, int exec_rc, size_t bytes,
                     void **handle_out)
{
    struct sharp_coll_context *ctx      = oc->ctx;
    uint64_t                   deadline = now_ns() + (uint64_t)ctx->cfg.latency_us * 1000u;
    int                        status   = exec_rc;
    struct emu_req            *req;

    atomic_fetch_add(&ctx->stat_ops, 1);
    atomic_fetch_add(&ctx->stat_bytes, bytes);
    if (status == 0 && oc->inject != 0) {
        emu_log(ctx, LOG_INFO, "%s (op #%lu): injected failure %d (%s)", what, oc->n, oc->inject,
                sharp_coll_strerror(oc->inject));
        status = oc->inject;
    }
    if (status != 0) {
        atomic_fetch_add(&ctx->stat_failed, 1);
    }
    if (handle_out == NULL || (status != 0 && (exec_rc != 0 || ctx->cfg.fail_phase == PHASE_POST))) {
        sleep_until(deadline);
        return status;
    }
    req = calloc(1, sizeof(*req)); /* comm NULL: an OOB-run operation, complete at deadline_ns */
    if (req == NULL) {
        return SHARP_COLL_ENOMEM;
    }
    req->magic       = EMU_REQ_MAGIC;
    req->status      = status;
    req->deadline_ns = deadline;
    *handle_out      = req;
    return SHARP_COLL_SUCCESS;
}

static size_t chunk_bytes(const struct sharp_coll_context *ctx, int size, size_t esize)
{
    size_t c     = ctx->cfg.oob_chunk;
    size_t limit = EMU_GATHER_BUDGET / (size_t)size;
    if (c > limit) {
        c = limit;
    }
    c -= c % esize;
    return c == 0 ? esize : c;
}

/* Checks a host buffer descriptor holding at least `need` bytes. */
static int check_desc(const struct sharp_coll_data_desc *d, size_t need, const char **why)
{
    if (d->type != SHARP_DATA_BUFFER) {
        *why = "only SHARP_DATA_BUFFER descriptors are implemented";
        return (d->type == SHARP_DATA_IOV || (int)d->type == 2) ? SHARP_COLL_ENOT_SUPP
                                                                : SHARP_COLL_EINVAL;
    }
    if (d->mem_type != SHARP_MEM_TYPE_HOST) {
        *why = "only host memory is implemented";
        return d->mem_type == SHARP_MEM_TYPE_CUDA ? SHARP_COLL_ENOT_SUPP : SHARP_COLL_EINVAL;
    }
    if (need > 0 && (d->buffer.ptr == NULL || d->buffer.length < need)) {
        *why = "buffer pointer NULL or buffer length too small";
        return SHARP_COLL_EINVAL;
    }
    return 0;
}

static int check_payload(const struct sharp_coll_context *ctx, size_t bytes, const char **why)
{
    if (bytes > ctx->cfg.payload_cap) {
        *why = "payload above max_osts x user_data_per_ost (SHARP_EMU_MAX_PAYLOAD, SHARP_COLL_JOB_QUOTA_*)";
        return SHARP_COLL_ENOT_SUPP;
    }
    return 0;
}

/* Validates dtype/op/tag of a reduce spec and fills ed. */
static int check_reduce_types(const struct sharp_coll_context *ctx, const struct sharp_coll_reduce_spec *s,
                              struct elem_desc *ed, const char **why)
{
    int dt = (int)s->dtype, op = (int)s->op;

    if (dt < 0 || dt >= SHARP_DTYPE_NULL || op < 0 || op >= SHARP_OP_NULL) {
        *why = "datatype or operation out of range";
        return SHARP_COLL_EINVAL;
    }
    if (op == SHARP_OP_PROD && !ctx->cfg.enable_prod) {
        *why = "SHARP_OP_PROD is not offloaded";
        return SHARP_COLL_ENOT_SUPP;
    }
    if (is_float_dtype(dt) && !(ARITH_OPS & BIT(op))) {
        *why = "logical/bitwise operation on a floating datatype";
        return SHARP_COLL_ENOT_SUPP;
    }
    ed->dtype     = dt;
    ed->op        = op;
    ed->tag_dtype = SHARP_DTYPE_NULL;
    ed->vsize     = dtype_size[dt];
    ed->size      = ed->vsize;
    if (op == SHARP_OP_MAXLOC || op == SHARP_OP_MINLOC) {
        int tdt = (int)s->tag_dtype;
        if (tdt < 0 || tdt >= SHARP_DTYPE_NULL) {
            *why = "tag datatype out of range";
            return SHARP_COLL_EINVAL;
        }
        if (!(TAG_DTYPES & BIT(tdt))) {
            *why = "tag datatype not in caps.tag_dtypes";
            return SHARP_COLL_ENOT_SUPP;
        }
        ed->tag_dtype = tdt;
        ed->size += dtype_size[tdt];
    }
    switch ((int)s->aggr_mode) {
    case SHARP_AGGREGATION_NONE:
    case SHARP_AGGREGATION_DATAGRAM:
        break;
    case SHARP_AGGREGATION_STREAMING:
        if (!ctx->cfg.enable_sat) {
            *why = "streaming aggregation needs SAT";
            return SHARP_COLL_ENOT_SUPP;
        }
        break;
    default:
        *why = "aggregation mode out of range";
        return SHARP_COLL_EINVAL;
    }
    return 0;
}

enum { KIND_ALLREDUCE, KIND_REDUCE, KIND_REDUCE_SCATTER };

static const char *const kind_name[] = {"allreduce", "reduce", "reduce_scatter"};

static int reduce_family(struct sharp_coll_comm *comm, struct sharp_coll_reduce_spec *s, int kind,
                         void **handle_out)
{
    struct op_ctx    oc;
    struct elem_desc ed;
    const char      *why  = "";
    const char      *what = kind_name[kind];
    size_t           total = 0;
    int              rc;

    if (!comm_ok(comm)) {
        return SHARP_COLL_EINVAL;
    }
    if (handle_out != NULL) {
        *handle_out = NULL;
    }
    op_begin(comm, &oc);
    if (s == NULL) {
        return sw_refuse(&oc, what, SHARP_COLL_EINVAL, "NULL spec");
    }
    rc = check_reduce_types(comm->ctx, s, &ed, &why);
    if (rc != 0) {
        return sw_refuse(&oc, what, rc, why);
    }
    if (kind == KIND_REDUCE_SCATTER && !comm->ctx->cfg.enable_sat) {
        return sw_refuse(&oc, what, SHARP_COLL_ENOT_SUPP, "reduce_scatter needs SAT");
    }

    if (kind != KIND_REDUCE_SCATTER) {
        int root = kind == KIND_REDUCE ? s->root : 0;
        if (s->length > SIZE_MAX / ed.size) {
            return sw_refuse(&oc, what, SHARP_COLL_EINVAL, "length overflows");
        }
        total = s->length * ed.size;
        if (root < 0 || root >= comm->size) {
            return sw_refuse(&oc, what, SHARP_COLL_EINVAL, "root out of range");
        }
        rc = check_desc(&s->sbuf_desc, total, &why);
        if (rc == 0 && (kind == KIND_ALLREDUCE || comm->rank == root)) {
            rc = check_desc(&s->rbuf_desc, total, &why);
        }
        if (rc == 0) {
            rc = check_payload(comm->ctx, total, &why);
        }
        if (rc != 0) {
            return sw_refuse(&oc, what, rc, why);
        }
        return sw_run(&oc, what, kind == KIND_ALLREDUCE ? SW_ALLREDUCE : SW_REDUCE, s->sbuf_desc.buffer.ptr,
                      kind == KIND_ALLREDUCE || comm->rank == root ? s->rbuf_desc.buffer.ptr : NULL, total, &ed, root,
                      handle_out);
    }

    /* reduce_scatter: window [offset, offset + S) of P blocks of B bytes. */
    {
        size_t   B, S, off = s->offset, full, lo, hi;
        uint8_t *win = NULL;
        rc = check_desc(&s->sbuf_desc, 0, &why);
        if (rc == 0) {
            rc = check_desc(&s->rbuf_desc, 0, &why);
        }
        if (rc != 0) {
            return sw_refuse(&oc, what, rc, why);
        }
        B = s->rbuf_desc.buffer.length;
        S = s->sbuf_desc.buffer.length;
        if (B % ed.size != 0 || S % ed.size != 0 || off % ed.size != 0) {
            return sw_refuse(&oc, what, SHARP_COLL_EINVAL,
                             "block, window or offset not a whole number of elements");
        }
        if (B > SIZE_MAX / (size_t)comm->size) {
            return sw_refuse(&oc, what, SHARP_COLL_EINVAL, "block too large");
        }
        full = B * (size_t)comm->size;
        if (off > full || S > full - off) {
            return sw_refuse(&oc, what, SHARP_COLL_EINVAL, "window beyond the full vector");
        }
        if (S > 0 && (s->sbuf_desc.buffer.ptr == NULL || s->rbuf_desc.buffer.ptr == NULL)) {
            return sw_refuse(&oc, what, SHARP_COLL_EINVAL, "NULL buffer");
        }
        rc = check_payload(comm->ctx, S, &why);
        if (rc != 0) {
            return sw_refuse(&oc, what, rc, why);
        }
        if (S > 0) {
            win = malloc(S);
            if (win == NULL) {
                return sw_refuse(&oc, what, SHARP_COLL_ENOMEM, "out of memory");
            }
        }
        /* The whole window through the switch (blocking), then this rank's part of it. */
        rc = sw_run(&oc, what, SW_REDUCE_SCATTER, s->sbuf_desc.buffer.ptr, win, S, &ed, 0, NULL);
        lo = off > (size_t)comm->rank * B ? off : (size_t)comm->rank * B;
        hi = off + S < (size_t)(comm->rank + 1) * B ? off + S : (size_t)(comm->rank + 1) * B;
        if (rc == 0 && lo < hi) {
            memcpy(s->rbuf_desc.buffer.ptr, win + (lo - off), hi - lo);
        }
        free(win);
        return op_done(&oc, rc, handle_out);
    }
}

EMU_API int sharp_coll_do_allreduce(struct sharp_coll_comm *comm, struct sharp_coll_reduce_spec *spec)
{
    return reduce_family(comm, spec, KIND_ALLREDUCE, NULL);
}

EMU_API int sharp_coll_do_allreduce_nb(struct sharp_coll_comm *comm, struct sharp_coll_reduce_spec *spec,
                                       void **handle)
{
    return handle == NULL ? SHARP_COLL_EINVAL : reduce_family(comm, spec, KIND_ALLREDUCE, handle);
}

EMU_API int sharp_coll_do_reduce(struct sharp_coll_comm *comm, struct sharp_coll_reduce_spec *spec)
{
    return reduce_family(comm, spec, KIND_REDUCE, NULL);
}

EMU_API int sharp_coll_do_reduce_nb(struct sharp_coll_comm *comm, struct sharp_coll_reduce_spec *spec,
                                    void **handle)
{
    return handle == NULL ? SHARP_COLL_EINVAL : reduce_family(comm, spec, KIND_REDUCE, handle);
}

EMU_API int sharp_coll_do_reduce_scatter(struct sharp_coll_comm *comm, struct sharp_coll_reduce_spec *spec)
{
    return reduce_family(comm, spec, KIND_REDUCE_SCATTER, NULL);
}

EMU_API int sharp_coll_do_reduce_scatter_nb(struct sharp_coll_comm *comm,
                                            struct sharp_coll_reduce_spec *spec, void **handle)
{
    return handle == NULL ? SHARP_COLL_EINVAL : reduce_family(comm, spec, KIND_REDUCE_SCATTER, handle);
}

static int barrier_impl(struct sharp_coll_comm *comm, void **handle_out)
{
    struct op_ctx oc;
    int           rc = 0;

    if (!comm_ok(comm)) {
        return SHARP_COLL_EINVAL;
    }
    if (handle_out != NULL) {
        *handle_out = NULL;
    }
    op_begin(comm, &oc);
    (void)rc;
    {
        struct elem_desc none = {SHARP_DTYPE_NULL, SHARP_OP_NULL, SHARP_DTYPE_NULL, 1, 1};
        return sw_run(&oc, "barrier", SW_BARRIER, NULL, NULL, 0, &none, 0, handle_out);
    }
}

EMU_API int sharp_coll_do_barrier(struct sharp_coll_comm *comm)
{
    return barrier_impl(comm, NULL);
}

EMU_API int sharp_coll_do_barrier_nb(struct sharp_coll_comm *comm, void **handle)
{
    return handle == NULL ? SHARP_COLL_EINVAL : barrier_impl(comm, handle);
}

static int bcast_impl(struct sharp_coll_comm *comm, struct sharp_coll_bcast_spec *s, void **handle_out)
{
    struct op_ctx              oc;
    struct sharp_coll_context *ctx;
    const char                *why = "";
    uint8_t                   *buf, *tmp = NULL;
    size_t                     cb, off;
    int                        rc;

    if (!comm_ok(comm)) {
        return SHARP_COLL_EINVAL;
    }
    if (handle_out != NULL) {
        *handle_out = NULL;
    }
    ctx = comm->ctx;
    op_begin(comm, &oc);
    if (s == NULL) {
        return op_refuse(&oc, "bcast", SHARP_COLL_EINVAL, "NULL spec");
    }
    if (s->root < 0 || s->root >= comm->size) {
        return op_refuse(&oc, "bcast", SHARP_COLL_EINVAL, "root out of range");
    }
    rc = check_desc(&s->buf_desc, s->size, &why);
    if (rc == 0) {
        rc = check_payload(ctx, s->size, &why);
    }
    if (rc != 0) {
        return op_refuse(&oc, "bcast", rc, why);
    }
    buf = s->buf_desc.buffer.ptr;
    rc  = 0;
    if (comm->size > 1 && s->size > 0) {
        cb  = chunk_bytes(ctx, 1, 1);
        tmp = malloc(cb);
        if (tmp == NULL) {
            return op_refuse(&oc, "bcast", SHARP_COLL_ENOMEM, "out of memory");
        }
        for (off = 0; off < s->size; off += cb) {
            size_t len = s->size - off < cb ? s->size - off : cb;
            if (comm->rank == s->root) {
                memcpy(tmp, buf + off, len);
            }
            if (ctx->oob.bcast(comm->oob_ctx, tmp, (int)len, s->root) != 0) {
                emu_log(ctx, LOG_ERROR, "OOB bcast failed");
                rc = SHARP_COLL_EOOB;
                break;
            }
            if (oc.inject == 0 && comm->rank != s->root) {
                memcpy(buf + off, tmp, len);
            }
        }
        free(tmp);
    }
    return op_finish(&oc, "bcast", rc, s->size, handle_out);
}

EMU_API int sharp_coll_do_bcast(struct sharp_coll_comm *comm, struct sharp_coll_bcast_spec *spec)
{
    return bcast_impl(comm, spec, NULL);
}

EMU_API int sharp_coll_do_bcast_nb(struct sharp_coll_comm *comm, struct sharp_coll_bcast_spec *spec,
                                   void **handle)
{
    return handle == NULL ? SHARP_COLL_EINVAL : bcast_impl(comm, spec, handle);
}

static int allgather_impl(struct sharp_coll_comm *comm, struct sharp_coll_gather_spec *s,
                          void **handle_out)
{
    struct op_ctx              oc;
    struct sharp_coll_context *ctx;
    const char                *why = "";
    size_t                     S, W, off, full, cb, c;
    uint8_t                   *F = NULL, *all = NULL, *snd = NULL, *rbuf;
    int                        rc, P, r;

    if (!comm_ok(comm)) {
        return SHARP_COLL_EINVAL;
    }
    if (handle_out != NULL) {
        *handle_out = NULL;
    }
    ctx = comm->ctx;
    P   = comm->size;
    op_begin(comm, &oc);
    if (s == NULL) {
        return op_refuse(&oc, "allgather", SHARP_COLL_EINVAL, "NULL spec");
    }
    if (!ctx->cfg.enable_sat) {
        return op_refuse(&oc, "allgather", SHARP_COLL_ENOT_SUPP, "allgather needs SAT");
    }
    if ((int)s->dtype < 0 || (int)s->dtype >= SHARP_DTYPE_NULL) {
        return op_refuse(&oc, "allgather", SHARP_COLL_EINVAL, "datatype out of range");
    }
    rc = check_desc(&s->sbuf_desc, 0, &why);
    if (rc == 0) {
        rc = check_desc(&s->rbuf_desc, 0, &why);
    }
    if (rc != 0) {
        return op_refuse(&oc, "allgather", rc, why);
    }
    S   = s->sbuf_desc.buffer.length;
    W   = s->rbuf_desc.buffer.length;
    off = s->offset;
    if (S > SIZE_MAX / (size_t)P) {
        return op_refuse(&oc, "allgather", SHARP_COLL_EINVAL, "send length too large");
    }
    full = S * (size_t)P;
    if (off > full || W > full - off) {
        return op_refuse(&oc, "allgather", SHARP_COLL_EINVAL, "receive window beyond the result");
    }
    if ((S > 0 && s->sbuf_desc.buffer.ptr == NULL) || (W > 0 && s->rbuf_desc.buffer.ptr == NULL)) {
        return op_refuse(&oc, "allgather", SHARP_COLL_EINVAL, "NULL buffer");
    }
    rc = check_payload(ctx, S, &why);
    if (rc != 0) {
        return op_refuse(&oc, "allgather", rc, why);
    }
    rbuf = s->rbuf_desc.buffer.ptr;
    if (S == 0) {
        return op_finish(&oc, "allgather", 0, 0, handle_out);
    }
    if (P == 1) {
        if (oc.inject == 0 && W > 0) {
            memmove(rbuf, (uint8_t *)s->sbuf_desc.buffer.ptr + off, W);
        }
        return op_finish(&oc, "allgather", 0, S, handle_out);
    }
    cb  = chunk_bytes(ctx, P, 1);
    F   = malloc(full);
    all = malloc((size_t)P * cb);
    snd = malloc(cb);
    if (F == NULL || all == NULL || snd == NULL) {
        rc = SHARP_COLL_ENOMEM;
        goto out;
    }
    /* Gather everything to rank 0 (reads all of sbuf before rbuf is written: in place is safe). */
    for (c = 0; c < S; c += cb) {
        size_t len = S - c < cb ? S - c : cb;
        memcpy(snd, (uint8_t *)s->sbuf_desc.buffer.ptr + c, len);
        if (ctx->oob.gather(comm->oob_ctx, 0, snd, all, (int)len) != 0) {
            rc = SHARP_COLL_EOOB;
            goto out;
        }
        if (comm->rank == 0) {
            for (r = 0; r < P; r++) {
                memcpy(F + (size_t)r * S + c, all + (size_t)r * len, len);
            }
        }
    }
    /* Broadcast the window. */
    for (c = 0; c < W; c += cb) {
        size_t len = W - c < cb ? W - c : cb;
        if (ctx->oob.bcast(comm->oob_ctx, F + off + c, (int)len, 0) != 0) {
            rc = SHARP_COLL_EOOB;
            goto out;
        }
    }
    if (oc.inject == 0 && W > 0) {
        memcpy(rbuf, F + off, W);
    }
out:
    if (rc == SHARP_COLL_EOOB) {
        emu_log(ctx, LOG_ERROR, "OOB callback failed during allgather");
    }
    free(F);
    free(all);
    free(snd);
    return op_finish(&oc, "allgather", rc, S, handle_out);
}

EMU_API int sharp_coll_do_allgather(struct sharp_coll_comm *comm, struct sharp_coll_gather_spec *spec)
{
    return allgather_impl(comm, spec, NULL);
}

EMU_API int sharp_coll_do_allgather_nb(struct sharp_coll_comm *comm, struct sharp_coll_gather_spec *spec,
                                       void **handle)
{
    return handle == NULL ? SHARP_COLL_EINVAL : allgather_impl(comm, spec, handle);
}

/* ------------------------------------------------------------------ requests */

static struct emu_req *req_of(void *handle)
{
    struct emu_req *req = handle;
    return (req != NULL && req->magic == EMU_REQ_MAGIC) ? req : NULL;
}

EMU_API int sharp_coll_req_test(void *handle)
{
    struct emu_req *req = req_of(handle);
    /* An invalid handle is reported complete so that a test loop cannot spin forever. */
    if (req == NULL) {
        return 1;
    }
    if (req->comm != NULL) {
        return sw_test(req);
    }
    return req->done || now_ns() >= req->deadline_ns;
}

EMU_API int sharp_coll_req_wait(void *handle)
{
    struct emu_req *req = req_of(handle);
    unsigned long   spins = 0;
    int             status;
    if (req == NULL) {
        return SHARP_COLL_EINVAL;
    }
    if (req->comm != NULL) {
        while (!sw_test(req)) {
            sw_pause(&spins);
        }
        req_unlink(req);
    } else if (!req->done) {
        sleep_until(req->deadline_ns);
    }
    status     = req->status;
    req->magic = EMU_DEAD_MAGIC;
    free(req);
    return status;
}

EMU_API int sharp_coll_req_free(void *handle)
{
    struct emu_req *req = req_of(handle);
    if (req == NULL) {
        return SHARP_COLL_EINVAL;
    }
    if (req->comm != NULL) {
        sw_abandon(req); /* before completion: poisoned for the others, who complete with an error */
        req_unlink(req);
    }
    req->magic = EMU_DEAD_MAGIC;
    free(req);
    return SHARP_COLL_SUCCESS;
}

/* ------------------------------------------------------------------ memory registration */

static int reg_common(struct sharp_coll_context *ctx, void *buf, size_t size, void **mr_out)
{
    struct emu_mr *mr;
    if (!ctx_ok(ctx) || mr_out == NULL || (buf == NULL && size > 0)) {
        return SHARP_COLL_EINVAL;
    }
    mr = malloc(sizeof(*mr));
    if (mr == NULL) {
        return SHARP_COLL_ENOMEM;
    }
    mr->magic = EMU_MR_MAGIC;
    mr->buf   = buf;
    mr->size  = size;
    atomic_fetch_add(&ctx->stat_regs, 1);
    *mr_out = mr;
    return SHARP_COLL_SUCCESS;
}

EMU_API int sharp_coll_reg_mr(struct sharp_coll_context *ctx, void *buf, size_t size, void **mr)
{
    return reg_common(ctx, buf, size, mr);
}

EMU_API int sharp_coll_reg_mr_v2(struct sharp_coll_context *ctx, void *buf, size_t size,
                                 const struct sharp_coll_reg_params *params, void **mr)
{
    (void)params; /* dmabuf fields accepted and ignored; NULL allowed */
    return reg_common(ctx, buf, size, mr);
}

EMU_API int sharp_coll_dereg_mr(struct sharp_coll_context *ctx, void *mr_handle)
{
    struct emu_mr *mr = mr_handle;
    if (!ctx_ok(ctx) || mr == NULL || mr->magic != EMU_MR_MAGIC) {
        return SHARP_COLL_EINVAL;
    }
    mr->magic = EMU_DEAD_MAGIC;
    free(mr);
    return SHARP_COLL_SUCCESS;
}

/* ------------------------------------------------------------------ misc */

EMU_API const char *sharp_coll_strerror(int error)
{
    switch (error) {
    case SHARP_COLL_SUCCESS: return "Success";
    case SHARP_COLL_ERROR: return "Error";
    case SHARP_COLL_ENOT_SUPP: return "Operation not supported";
    case SHARP_COLL_ENOMEM: return "Cannot allocate memory";
    case SHARP_COLL_EGROUP_ALLOC: return "Cannot allocate SHARP group";
    case SHARP_COLL_ECONN_TREE: return "Cannot connect to SHARP tree";
    case SHARP_COLL_EGROUP_JOIN: return "Cannot join SHARP group";
    case SHARP_COLL_EQUOTA: return "SHARP resource quota exceeded";
    case SHARP_COLL_ESESS_INIT: return "Cannot initialize SHARP session";
    case SHARP_COLL_EDEV: return "SHARP device error (check ib_dev_list)";
    case SHARP_COLL_EINVAL: return "Invalid argument";
    case SHARP_COLL_EJOB_CREATE: return "Cannot create SHARP job";
    case SHARP_COLL_ETREE_INFO: return "Cannot get SHARP tree information";
    case SHARP_COLL_ENOTREE: return "No available SHARP tree";
    case SHARP_COLL_EGROUP_ID: return "Invalid SHARP group ID";
    case SHARP_COLL_EOOB: return "Out-of-band collective failed";
    case SHARP_COLL_EGROUP_MCAST: return "Cannot set up SHARP group multicast";
    case SHARP_COLL_EGROUP_TRIM: return "SHARP group trim failed";
    case SHARP_COLL_ELOCK_FAILED: return "Streaming Tree lock failed";
    case SHARP_COLL_ELOCK_DENIED: return "Streaming Tree lock denied";
    case SHARP_COLL_ENO_RESOURCE: return "No SHARP resources available";
    default: return "Unknown error";
    }
}

EMU_API int sharp_coll_dump_stats(struct sharp_coll_context *ctx)
{
    if (!ctx_ok(ctx)) {
        return SHARP_COLL_EINVAL;
    }
    fprintf(stderr,
            "[sharp_emu rank %d] stats: operations %lu, bytes %lu, failed %lu, registrations %lu, "
            "communicators alive %d\n",
            ctx->world_rank, atomic_load(&ctx->stat_ops), atomic_load(&ctx->stat_bytes),
            atomic_load(&ctx->stat_failed), atomic_load(&ctx->stat_regs),
            atomic_load(&ctx->live_comms));
    return SHARP_COLL_SUCCESS;
}

/* exec_name is never read: older callers pass only two arguments. */
EMU_API int sharp_coll_print_config(FILE *stream, enum config_print_flags print_flags,
                                    const char *exec_name)
{
    static const char *const vars[] = {
        "SHARP_COLL_LOG_LEVEL", "SHARP_COLL_ENABLE_SAT", "SHARP_COLL_JOB_QUOTA_PAYLOAD_PER_OST",
        "SHARP_COLL_JOB_QUOTA_OSTS", "SHARP_COLL_JOB_QUOTA_MAX_GROUPS", "SHARP_COLL_OSTS_PER_GROUP",
        "SHARP_EMU_FAIL_INIT", "SHARP_EMU_FAIL_COMM_INIT", "SHARP_EMU_FAIL_OP",
        "SHARP_EMU_FAIL_OP_PHASE", "SHARP_EMU_MAX_PAYLOAD", "SHARP_EMU_LATENCY_US",
        "SHARP_EMU_ENABLE_PROD", "SHARP_EMU_OOB_CHUNK", "SHARP_EMU_LEVEL_US", "SHARP_EMU_RADIX",
        "SHARP_EMU_GBPS", "SHARP_EMU_SHM_DIR"};
    size_t i;
    (void)exec_name;
    if (stream == NULL) {
        stream = stdout;
    }
    if (print_flags & SHARP_CONFIG_PRINT_HEADER) {
        fprintf(stream, "#\n# sharp4j libsharp_coll emulator configuration\n#\n");
    }
    for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        fprintf(stream, "%s=%s\n", vars[i], v != NULL ? v : "");
    }
    return SHARP_COLL_SUCCESS;
}
