/*
 * emu_test: end-to-end test of the libsharp_coll emulator.
 *
 * For P = 1..5 it forks P processes that share an anonymous MAP_SHARED region; the OOB
 * callbacks given to sharp_coll_init (bcast / barrier / gather) work through that region
 * and a process-shared pthread barrier.  Each process then checks, against its own
 * reference implementation (typed C arithmetic, _Float16 for fp16, a separate bf16
 * rounding), allreduce for every datatype x operation x size, in place, non-blocking
 * variants, reduce, barrier, bcast, reduce_scatter, allgather, a sub-communicator,
 * registration, strerror, exported symbols, and every injected failure
 * (SHARP_EMU_* variables, set with setenv before sharp_coll_init) including that later
 * operations still work.  The last line is "N passed, N failed"; the exit status is
 * non-zero on any failure.  Nothing is created in /dev/shm.
 */
#define _GNU_SOURCE

#include <sharp/api/sharp_coll.h>

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_P      5
#define OOB_CAP    (64 * 1024) /* per-rank bytes of one OOB call */
#define TEST_CHUNK "8192"      /* SHARP_EMU_OOB_CHUNK used by default here */
#define CHILD_TIMEOUT_S 300

/* ------------------------------------------------------------------ shared state */

struct group_sh {
    pthread_barrier_t bar;
    int               size;
    unsigned char     data[MAX_P * OOB_CAP];
};

struct shared {
    struct group_sh world;
    struct group_sh sub; /* even world ranks */
    volatile int    arrive[MAX_P];
    long            passed[MAX_P];
    long            failed[MAX_P];
};

struct oob {
    struct group_sh *g;
    int              rank;
    int              size;
};

static struct shared *SH;
static int            RANK, P;
static struct oob     WORLD, SUB;
static long           n_pass, n_fail;
static int            oob_fail_in = -1; /* the call that many OOB calls from now returns -1 */
static const char    *phase = "";
static uint32_t       init_flags;       /* sharp_coll_config.flags for do_init */
static int            init_timeout_ms = -1; /* sharp_coll_config.coll_timeout for do_init */
static long           oob_calls;        /* OOB callbacks this process served: operations must make none */

static void check(int ok, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void check(int ok, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    if (ok) {
        n_pass++;
        return;
    }
    n_fail++;
    if (n_fail <= 40) {
        fprintf(stderr, "FAIL [P=%d rank %d, %s] %s:%d: ", P, RANK, phase, file, line);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
    }
}

#define CHECK(cond, ...) check(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
/* Evaluates `call` once. */
#define CHECK_RC(call, want, what)                                                              \
    do {                                                                                        \
        int rc_ = (call), want_ = (want);                                                       \
        CHECK(rc_ == want_, "%s returned %d (%s), expected %d", what, rc_, sharp_coll_strerror(rc_), \
              want_);                                                                           \
    } while (0)

/* ------------------------------------------------------------------ OOB callbacks */

static int oob_step(void)
{
    oob_calls++;
    if (oob_fail_in < 0) {
        return 0;
    }
    return oob_fail_in-- == 0 ? -1 : 0;
}

static void gbar(struct group_sh *g)
{
    pthread_barrier_wait(&g->bar);
}

static int oob_barrier(void *ctx)
{
    struct oob *o = ctx;
    gbar(o->g);
    return oob_step();
}

static int oob_bcast(void *ctx, void *buf, int len, int root)
{
    struct oob *o = ctx;
    if (len < 0 || len > OOB_CAP * MAX_P || root < 0 || root >= o->size) {
        fprintf(stderr, "oob_bcast: bad len %d or root %d\n", len, root);
        abort();
    }
    if (o->rank == root) {
        memcpy(o->g->data, buf, (size_t)len);
    }
    gbar(o->g);
    if (o->rank != root) {
        memcpy(buf, o->g->data, (size_t)len);
    }
    gbar(o->g);
    return oob_step();
}

static int oob_gather(void *ctx, int root, void *sbuf, void *rbuf, int len)
{
    struct oob *o = ctx;
    int         r;
    if (len < 0 || len > OOB_CAP || root < 0 || root >= o->size) {
        fprintf(stderr, "oob_gather: bad len %d or root %d\n", len, root);
        abort();
    }
    memcpy(o->g->data + (size_t)o->rank * OOB_CAP, sbuf, (size_t)len);
    gbar(o->g);
    if (o->rank == root) {
        for (r = 0; r < o->size; r++) {
            memcpy((unsigned char *)rbuf + (size_t)r * (size_t)len, o->g->data + (size_t)r * OOB_CAP,
                   (size_t)len);
        }
    }
    gbar(o->g);
    return oob_step();
}

/* ------------------------------------------------------------------ helpers */

static const size_t DSIZE[SHARP_DTYPE_NULL] = {4, 4, 8, 8, 4, 8, 2, 2, 2, 2, 1, 1};
static const char *const DNAME[SHARP_DTYPE_NULL] = {
    "UNSIGNED", "INT", "UNSIGNED_LONG", "LONG", "FLOAT", "DOUBLE", "UNSIGNED_SHORT", "SHORT",
    "FLOAT_SHORT", "BFLOAT16", "UINT8", "INT8"};
static const char *const ONAME[SHARP_OP_NULL] = {"MAX", "MIN", "SUM", "PROD", "LAND", "BAND",
                                                 "LOR", "BOR", "LXOR", "BXOR", "MAXLOC", "MINLOC"};

static int is_fp(int dt)
{
    return dt == SHARP_DTYPE_FLOAT || dt == SHARP_DTYPE_DOUBLE || dt == SHARP_DTYPE_FLOAT_SHORT ||
           dt == SHARP_DTYPE_BFLOAT16;
}

static int is_loc(int op)
{
    return op == SHARP_OP_MAXLOC || op == SHARP_OP_MINLOC;
}

static int fp_allows(int op)
{
    return op == SHARP_OP_MAX || op == SHARP_OP_MIN || op == SHARP_OP_SUM || op == SHARP_OP_PROD ||
           is_loc(op);
}

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* bfloat16 rounding written differently from the emulator: pick the nearer neighbour. */
static uint16_t ref_bf16(float f)
{
    uint32_t x, lo, hi;
    float    flo, fhi;
    double   dlo, dhi;
    memcpy(&x, &f, 4);
    lo = x & 0xffff0000u;
    hi = lo + 0x10000u;
    memcpy(&flo, &lo, 4);
    memcpy(&fhi, &hi, 4);
    dlo = fabs((double)f - (double)flo);
    dhi = fabs((double)fhi - (double)f);
    if (dlo < dhi || (dlo == dhi && !((lo >> 16) & 1u))) {
        return (uint16_t)(lo >> 16);
    }
    return (uint16_t)(hi >> 16);
}

static float bf16_f(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float    f;
    memcpy(&f, &x, 4);
    return f;
}

/* Value of element i of rank `rank` for the given seed. */
static void gen_val(unsigned char *p, int dt, uint64_t h, int op)
{
    int      small = is_loc(op);
    int      prod  = op == SHARP_OP_PROD;
    uint64_t v     = ((h & 3) == 0) ? 0 : (h >> 8); /* integers: zeros for the logical ops */
    double   d;
    if (small) {
        v = h % 4;
    }
    if (is_fp(dt)) {
        if (small) {
            d = (double)(h % 4) - 1.5;
        } else if (prod) {
            /* +-[2^-4, 2): fp16 products reach the subnormal range */
            d = ((h >> 12) & 1 ? -1.0 : 1.0) * (1.0 + (double)((h >> 16) % 1024) / 1024.0) *
                ldexp(1.0, -(int)((h >> 40) % 5));
        } else if (dt == SHARP_DTYPE_FLOAT_SHORT) { /* 2^-30 .. 2^10: subnormals included */
            d = ldexp((double)((int64_t)((h >> 16) % 4096) - 2048), (int)((h >> 40) % 30) - 30);
        } else {
            d = ldexp((double)((int64_t)((h >> 11) % (1ull << 40)) - (int64_t)(1ull << 39)),
                      (int)((h >> 3) % 40) - 50);
        }
    } else {
        d = 0;
    }
    switch (dt) {
    case SHARP_DTYPE_FLOAT: { float f = (float)d; memcpy(p, &f, 4); break; }
    case SHARP_DTYPE_DOUBLE: memcpy(p, &d, 8); break;
    case SHARP_DTYPE_FLOAT_SHORT: { _Float16 f = (_Float16)(float)d; memcpy(p, &f, 2); break; }
    case SHARP_DTYPE_BFLOAT16: { uint16_t b = ref_bf16((float)d); memcpy(p, &b, 2); break; }
    default: memcpy(p, &v, DSIZE[dt]); break; /* little endian: low bytes */
    }
}

static size_t esize(int dt, int tdt)
{
    return DSIZE[dt] + (tdt >= 0 ? DSIZE[tdt] : 0);
}

static void gen(void *buf, size_t count, int dt, int op, int tdt, int rank, uint64_t seed)
{
    unsigned char *p  = buf;
    size_t         es = esize(dt, tdt), i;
    for (i = 0; i < count; i++) {
        uint64_t h = mix(seed ^ mix(((uint64_t)rank << 32) ^ i));
        gen_val(p + i * es, dt, h, op);
        if (tdt >= 0) {
            uint64_t t = (h >> 24) % 7 + (uint64_t)rank;
            memcpy(p + i * es + DSIZE[dt], &t, DSIZE[tdt]);
        }
    }
}

/* -1 / 0 / 1 comparison of two values of type dt (no NaNs). */
static int ref_cmp(const unsigned char *a, const unsigned char *b, int dt)
{
#define CMPT(T) { T x, y; memcpy(&x, a, sizeof x); memcpy(&y, b, sizeof y); return x < y ? -1 : (x > y ? 1 : 0); }
    switch (dt) {
    case SHARP_DTYPE_UNSIGNED: CMPT(uint32_t)
    case SHARP_DTYPE_INT: CMPT(int32_t)
    case SHARP_DTYPE_UNSIGNED_LONG: CMPT(uint64_t)
    case SHARP_DTYPE_LONG: CMPT(int64_t)
    case SHARP_DTYPE_FLOAT: CMPT(float)
    case SHARP_DTYPE_DOUBLE: CMPT(double)
    case SHARP_DTYPE_UNSIGNED_SHORT: CMPT(uint16_t)
    case SHARP_DTYPE_SHORT: CMPT(int16_t)
    case SHARP_DTYPE_FLOAT_SHORT: CMPT(_Float16)
    case SHARP_DTYPE_UINT8: CMPT(uint8_t)
    case SHARP_DTYPE_INT8: CMPT(int8_t)
    default: {
        uint16_t x, y;
        memcpy(&x, a, 2);
        memcpy(&y, b, 2);
        return bf16_f(x) < bf16_f(y) ? -1 : (bf16_f(x) > bf16_f(y) ? 1 : 0);
    }
    }
#undef CMPT
}

#define INT_REF(T, UT)                                                            \
    {                                                                             \
        T x, y, r;                                                                \
        memcpy(&x, acc, sizeof x);                                                \
        memcpy(&y, in, sizeof y);                                                 \
        switch (op) {                                                             \
        case SHARP_OP_MAX: r = y > x ? y : x; break;                              \
        case SHARP_OP_MIN: r = y < x ? y : x; break;                              \
        case SHARP_OP_SUM: r = (T)(UT)((uint64_t)(UT)x + (uint64_t)(UT)y); break; \
        case SHARP_OP_PROD: r = (T)(UT)((uint64_t)(UT)x * (uint64_t)(UT)y); break;\
        case SHARP_OP_LAND: r = (T)(x && y); break;                               \
        case SHARP_OP_LOR: r = (T)(x || y); break;                                \
        case SHARP_OP_LXOR: r = (T)(!x != !y); break;                             \
        case SHARP_OP_BAND: r = (T)(x & y); break;                                \
        case SHARP_OP_BOR: r = (T)(x | y); break;                                 \
        default: r = (T)(x ^ y); break;                                           \
        }                                                                         \
        memcpy(acc, &r, sizeof r);                                                \
        return;                                                                   \
    }

#define FP_REF(T)                                                    \
    {                                                                \
        T x, y, r;                                                   \
        memcpy(&x, acc, sizeof x);                                   \
        memcpy(&y, in, sizeof y);                                    \
        switch (op) {                                                \
        case SHARP_OP_MAX: r = y > x ? y : x; break;                 \
        case SHARP_OP_MIN: r = y < x ? y : x; break;                 \
        case SHARP_OP_SUM: r = x + y; break;                         \
        default: r = x * y; break;                                   \
        }                                                            \
        memcpy(acc, &r, sizeof r);                                   \
        return;                                                      \
    }

static void ref_elem(unsigned char *acc, const unsigned char *in, int dt, int op, int tdt)
{
    if (is_loc(op)) {
        int c = ref_cmp(in, acc, dt);
        if ((op == SHARP_OP_MAXLOC && c > 0) || (op == SHARP_OP_MINLOC && c < 0)) {
            memcpy(acc, in, esize(dt, tdt));
        } else if (c == 0 && ref_cmp(in + DSIZE[dt], acc + DSIZE[dt], tdt) < 0) {
            memcpy(acc + DSIZE[dt], in + DSIZE[dt], DSIZE[tdt]);
        }
        return;
    }
    switch (dt) {
    case SHARP_DTYPE_UNSIGNED: INT_REF(uint32_t, uint32_t)
    case SHARP_DTYPE_INT: INT_REF(int32_t, uint32_t)
    case SHARP_DTYPE_UNSIGNED_LONG: INT_REF(uint64_t, uint64_t)
    case SHARP_DTYPE_LONG: INT_REF(int64_t, uint64_t)
    case SHARP_DTYPE_UNSIGNED_SHORT: INT_REF(uint16_t, uint16_t)
    case SHARP_DTYPE_SHORT: INT_REF(int16_t, uint16_t)
    case SHARP_DTYPE_UINT8: INT_REF(uint8_t, uint8_t)
    case SHARP_DTYPE_INT8: INT_REF(int8_t, uint8_t)
    case SHARP_DTYPE_FLOAT: FP_REF(float)
    case SHARP_DTYPE_DOUBLE: FP_REF(double)
    case SHARP_DTYPE_FLOAT_SHORT: FP_REF(_Float16)
    default: { /* bfloat16 */
        uint16_t xa, ya, r;
        float    x, y;
        memcpy(&xa, acc, 2);
        memcpy(&ya, in, 2);
        x = bf16_f(xa);
        y = bf16_f(ya);
        switch (op) {
        case SHARP_OP_MAX: r = y > x ? ya : xa; break;
        case SHARP_OP_MIN: r = y < x ? ya : xa; break;
        case SHARP_OP_SUM: r = ref_bf16(x + y); break;
        default: r = ref_bf16(x * y); break;
        }
        memcpy(acc, &r, 2);
        return;
    }
    }
}

/* Expected reduction over `nranks` ranks (rank order fold) of gen(..., seed). */
static void expected(void *out, size_t count, int dt, int op, int tdt, int nranks, uint64_t seed)
{
    size_t         es  = esize(dt, tdt), i;
    unsigned char *tmp = malloc(count * es + 1);
    int            r;
    gen(out, count, dt, op, tdt, 0, seed);
    for (r = 1; r < nranks; r++) {
        gen(tmp, count, dt, op, tdt, r, seed);
        for (i = 0; i < count; i++) {
            ref_elem((unsigned char *)out + i * es, tmp + i * es, dt, op, tdt);
        }
    }
    free(tmp);
}

static void set_desc(struct sharp_coll_data_desc *d, void *ptr, size_t len)
{
    d->type              = SHARP_DATA_BUFFER;
    d->mem_type          = SHARP_MEM_TYPE_HOST;
    d->buffer.ptr        = ptr;
    d->buffer.length     = len;
    d->buffer.mem_handle = NULL;
}

/* Like UCC: the spec is not zeroed, only the fields a caller sets are written. */
static void rspec(struct sharp_coll_reduce_spec *s, void *sb, void *rb, size_t count, int dt, int op,
                  int tdt)
{
    size_t bytes = count * esize(dt, tdt);
    memset(s, 0xA5, sizeof(*s));
    set_desc(&s->sbuf_desc, sb, bytes);
    set_desc(&s->rbuf_desc, rb, bytes);
    s->dtype     = (enum sharp_datatype)dt;
    s->length    = count;
    s->op        = (enum sharp_reduce_op)op;
    s->aggr_mode = SHARP_AGGREGATION_NONE;
    if (tdt >= 0) {
        s->tag_dtype = (enum sharp_datatype)tdt;
    }
}

static int wait_req(void *h, int use_wait, struct sharp_coll_context *ctx)
{
    if (use_wait) {
        return sharp_coll_req_wait(h);
    }
    while (!sharp_coll_req_test(h)) {
        sharp_coll_progress(ctx);
    }
    return sharp_coll_req_free(h);
}

/* ------------------------------------------------------------------ init helpers */

static void clear_env(void)
{
    static const char *const vars[] = {
        "SHARP_EMU_FAIL_INIT", "SHARP_EMU_FAIL_COMM_INIT", "SHARP_EMU_FAIL_OP",
        "SHARP_EMU_FAIL_OP_PHASE", "SHARP_EMU_MAX_PAYLOAD", "SHARP_EMU_LATENCY_US", "SHARP_EMU_LEVEL_US",
        "SHARP_EMU_RADIX", "SHARP_EMU_GBPS", "SHARP_EMU_ENABLE_PROD", "SHARP_COLL_ENABLE_SAT", "SHARP_COLL_JOB_QUOTA_PAYLOAD_PER_OST",
        "SHARP_COLL_JOB_QUOTA_OSTS", "SHARP_COLL_JOB_QUOTA_MAX_GROUPS", "SHARP_COLL_OSTS_PER_GROUP"};
    size_t i;
    for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        unsetenv(vars[i]);
    }
    setenv("SHARP_EMU_OOB_CHUNK", TEST_CHUNK, 1);
    setenv("SHARP_COLL_LOG_LEVEL", "1", 1);
}

static int do_init(struct sharp_coll_context **ctx)
{
    struct sharp_coll_init_spec spec;
    uint64_t                    job = 0;

    memset(&spec, 0, sizeof(spec));
    if (RANK == 0) {
        job = mix((uint64_t)getpid() ^ now_us());
    }
    oob_bcast(&WORLD, &job, sizeof(job), 0);
    spec.job_id            = job;
    spec.world_rank        = RANK;
    spec.world_size        = P;
    spec.world_local_rank  = RANK;
    spec.group_channel_idx = 0;
    spec.config            = sharp_coll_default_config;
    spec.config.ib_dev_list = "mlx5_0:1";
    spec.config.flags       = init_flags;
    spec.config.coll_timeout = init_timeout_ms;
    spec.oob_colls.bcast   = oob_bcast;
    spec.oob_colls.barrier = oob_barrier;
    spec.oob_colls.gather  = oob_gather;
    spec.oob_ctx           = &WORLD;
    spec.enable_thread_support = 0;
    return sharp_coll_init(&spec, ctx);
}

static int do_comm(struct sharp_coll_context *ctx, struct oob *o, struct sharp_coll_comm **comm)
{
    struct sharp_coll_comm_init_spec spec;
    memset(&spec, 0x5A, sizeof(spec)); /* reserved garbage */
    spec.rank              = o->rank;
    spec.size              = o->size;
    spec.oob_ctx           = o;
    spec.group_world_ranks = NULL;
    return sharp_coll_comm_init(ctx, &spec, comm);
}

/* Init + world comm; both must succeed. */
static int setup(struct sharp_coll_context **ctx, struct sharp_coll_comm **comm)
{
    int rc = do_init(ctx);
    CHECK_RC(rc, 0, "sharp_coll_init");
    if (rc != 0) {
        return -1;
    }
    rc = do_comm(*ctx, &WORLD, comm);
    CHECK_RC(rc, 0, "sharp_coll_comm_init");
    if (rc != 0) {
        sharp_coll_finalize(*ctx);
        return -1;
    }
    return 0;
}

static void teardown(struct sharp_coll_context *ctx, struct sharp_coll_comm *comm)
{
    CHECK_RC(sharp_coll_comm_destroy(comm), 0, "comm_destroy");
    CHECK_RC(sharp_coll_finalize(ctx), 0, "finalize");
}

/* ------------------------------------------------------------------ one allreduce check */

enum { MODE_BLOCKING, MODE_NB_TEST, MODE_NB_WAIT };

/* Runs one allreduce of `count` elements on comm (of `nranks` ranks, this one `crank`) and
 * checks the return code and, on success, the result and the untouched source. */
static void one_allreduce(struct sharp_coll_context *ctx, struct sharp_coll_comm *comm, int crank,
                          int nranks, int dt, int op, int tdt, size_t count, int mode, int inplace,
                          int want_rc, uint64_t seed)
{
    size_t                        es = esize(dt, tdt), bytes = count * es;
    unsigned char                *sb = malloc(bytes + 1), *rb = malloc(bytes + 1);
    unsigned char                *ex = malloc(bytes + 1), *orig = malloc(bytes + 1);
    struct sharp_coll_reduce_spec spec;
    void                         *h = NULL;
    int                           rc;

    gen(sb, count, dt, op, tdt, crank, seed);
    memcpy(orig, sb, bytes);
    memset(rb, 0xEE, bytes);
    if (inplace) {
        memcpy(rb, sb, bytes);
    }
    rspec(&spec, inplace ? rb : sb, rb, count, dt, op, tdt);
    if (mode == MODE_BLOCKING) {
        rc = sharp_coll_do_allreduce(comm, &spec);
    } else {
        rc = sharp_coll_do_allreduce_nb(comm, &spec, &h);
        if (rc == 0) {
            CHECK(h != NULL, "allreduce_nb gave no handle");
            rc = wait_req(h, mode == MODE_NB_WAIT, ctx);
        }
    }
    CHECK(rc == want_rc, "allreduce %s/%s tag %s count %zu mode %d inplace %d: rc %d, expected %d",
          DNAME[dt], ONAME[op], tdt >= 0 ? DNAME[tdt] : "-", count, mode, inplace, rc, want_rc);
    if (rc == 0 && want_rc == 0) {
        expected(ex, count, dt, op, tdt, nranks, seed);
        CHECK(memcmp(rb, ex, bytes) == 0, "allreduce %s/%s tag %s count %zu mode %d inplace %d: wrong result",
              DNAME[dt], ONAME[op], tdt >= 0 ? DNAME[tdt] : "-", count, mode, inplace);
        if (!inplace) {
            CHECK(memcmp(sb, orig, bytes) == 0, "allreduce modified its source");
        }
    }
    free(sb);
    free(rb);
    free(ex);
    free(orig);
}

static const size_t COUNTS[] = {0, 1, 3, 17, 100, 512};
#define NCOUNTS (sizeof(COUNTS) / sizeof(COUNTS[0]))

static void allreduce_matrix(struct sharp_coll_context *ctx, struct sharp_coll_comm *comm, int prod_on)
{
    static const int tags[] = {SHARP_DTYPE_INT, SHARP_DTYPE_UNSIGNED_LONG, SHARP_DTYPE_SHORT};
    int              dt, op, t, iter = 0;
    size_t           c;

    for (dt = 0; dt < SHARP_DTYPE_NULL; dt++) {
        for (op = 0; op < SHARP_OP_NULL; op++) {
            int ntags = is_loc(op) ? 3 : 1;
            for (t = 0; t < ntags; t++) {
                int tdt  = is_loc(op) ? tags[t] : -1;
                int want = 0;
                if (op == SHARP_OP_PROD && !prod_on) {
                    want = SHARP_COLL_ENOT_SUPP;
                }
                if (is_fp(dt) && !fp_allows(op)) {
                    want = SHARP_COLL_ENOT_SUPP;
                }
                for (c = 0; c < NCOUNTS; c++, iter++) {
                    uint64_t seed = mix(((uint64_t)dt << 40) ^ ((uint64_t)op << 32) ^
                                        ((uint64_t)t << 24) ^ c ^ ((uint64_t)prod_on << 50));
                    one_allreduce(ctx, comm, RANK, P, dt, op, tdt, COUNTS[c], iter % 3, iter % 5 == 4,
                                  want, seed);
                }
            }
        }
    }
}

/* ------------------------------------------------------------------ test sections */

static void test_caps(struct sharp_coll_context *ctx)
{
    struct sharp_coll_caps caps;
    memset(&caps, 0xCC, sizeof(caps));
    CHECK_RC(sharp_coll_caps_query(ctx, &caps), 0, "caps_query");
    CHECK(caps.sharp_pkt_version >= 1, "pkt version %d", caps.sharp_pkt_version);
    CHECK(caps.support_mask.dtypes == 0xfff, "dtypes mask %#llx", (unsigned long long)caps.support_mask.dtypes);
    CHECK(caps.support_mask.reduce_ops == (0xfffu & ~(1u << SHARP_OP_PROD)), "ops mask %#llx",
          (unsigned long long)caps.support_mask.reduce_ops);
    CHECK(caps.support_mask.tag_dtypes & (1u << SHARP_DTYPE_INT), "tag dtypes %#llx",
          (unsigned long long)caps.support_mask.tag_dtypes);
    CHECK(caps.support_mask.feature_mask == (SHARP_FEATURE_LLT | SHARP_FEATURE_SAT), "features %#llx",
          (unsigned long long)caps.support_mask.feature_mask);
    CHECK(caps.resources.max_osts == 167 && caps.resources.user_data_per_ost == 1024 &&
              caps.resources.max_groups == 167 && caps.resources.osts_per_group == 8 &&
              caps.resources.max_group_channels >= 1,
          "resources %d %d %d %d %d", caps.resources.max_osts, caps.resources.user_data_per_ost,
          caps.resources.max_groups, caps.resources.max_group_channels, caps.resources.osts_per_group);
    CHECK(caps.reserved[0] == 0 && caps.support_mask.reserved[0] == 0, "reserved not zeroed");
    CHECK_RC(sharp_coll_caps_query(ctx, NULL), SHARP_COLL_EINVAL, "caps_query(NULL)");
}

static void test_reduce(struct sharp_coll_context *ctx, struct sharp_coll_comm *comm)
{
    static const int dts[] = {SHARP_DTYPE_INT, SHARP_DTYPE_DOUBLE, SHARP_DTYPE_FLOAT_SHORT, SHARP_DTYPE_UINT8};
    int              root, i, nb;
    for (root = 0; root < P; root++) {
        for (i = 0; i < 4; i++) {
            for (nb = 0; nb < 2; nb++) {
                int                           dt = dts[i], op = (i == 3) ? SHARP_OP_BXOR : SHARP_OP_SUM;
                size_t                        count = 37, bytes = count * DSIZE[dt];
                unsigned char                *sb = malloc(bytes), *rb = malloc(bytes), *ex = malloc(bytes);
                struct sharp_coll_reduce_spec s;
                uint64_t                      seed = mix(0x7777u + (unsigned)(root * 8 + i * 2 + nb));
                void                         *h    = NULL;
                int                           rc;
                gen(sb, count, dt, op, -1, RANK, seed);
                memset(rb, 0xEE, bytes);
                rspec(&s, sb, rb, count, dt, op, -1);
                s.root = root;
                if (RANK != root && nb) {
                    memset(&s.rbuf_desc, 0xA5, sizeof(s.rbuf_desc)); /* ignored on non-roots */
                }
                if (nb) {
                    rc = sharp_coll_do_reduce_nb(comm, &s, &h);
                    if (rc == 0) {
                        rc = wait_req(h, root & 1, ctx);
                    }
                } else {
                    rc = sharp_coll_do_reduce(comm, &s);
                }
                CHECK_RC(rc, 0, "reduce");
                if (RANK == root) {
                    expected(ex, count, dt, op, -1, P, seed);
                    CHECK(memcmp(rb, ex, bytes) == 0, "reduce root %d dtype %s nb %d: wrong result", root,
                          DNAME[dt], nb);
                } else {
                    memset(ex, 0xEE, bytes);
                    CHECK(memcmp(rb, ex, bytes) == 0, "reduce wrote a non-root buffer");
                }
                free(sb);
                free(rb);
                free(ex);
            }
        }
    }
}

static void test_barrier(struct sharp_coll_context *ctx, struct sharp_coll_comm *comm)
{
    int iter, r;
    for (iter = 1; iter <= 6; iter++) {
        void *h = NULL;
        int   rc;
        usleep((useconds_t)(1000 * ((RANK + iter) % P)));
        SH->arrive[RANK] = iter;
        __sync_synchronize();
        if (iter & 1) {
            rc = sharp_coll_do_barrier(comm);
        } else {
            rc = sharp_coll_do_barrier_nb(comm, &h);
            if (rc == 0) {
                rc = wait_req(h, iter % 4 == 0, ctx);
            }
        }
        CHECK_RC(rc, 0, "barrier");
        __sync_synchronize();
        for (r = 0; r < P; r++) {
            CHECK(SH->arrive[r] >= iter, "barrier %d: rank %d had not arrived", iter, r);
        }
        /* no one may run ahead into the next round's writes before all have checked */
        CHECK_RC(sharp_coll_do_barrier(comm), 0, "barrier");
    }
}

static void test_bcast(struct sharp_coll_context *ctx, struct sharp_coll_comm *comm)
{
    static const size_t sizes[] = {0, 1, 100, 5000, 20000};
    int                 root, nb;
    size_t              si, i;
    for (root = 0; root < P; root++) {
        for (si = 0; si < 5; si++) {
            for (nb = 0; nb < 2; nb++) {
                size_t                       n   = sizes[si];
                unsigned char               *buf = malloc(n + 1), *ex = malloc(n + 1);
                struct sharp_coll_bcast_spec s;
                void                        *h = NULL;
                int                          rc;
                for (i = 0; i < n; i++) {
                    ex[i] = (unsigned char)mix(i * 31 + (size_t)root + si);
                }
                if (RANK == root) {
                    memcpy(buf, ex, n);
                } else {
                    memset(buf, 0xEE, n);
                }
                memset(&s, 0xA5, sizeof(s));
                s.root = root;
                set_desc(&s.buf_desc, buf, n);
                s.size = n;
                if (nb) {
                    rc = sharp_coll_do_bcast_nb(comm, &s, &h);
                    if (rc == 0) {
                        rc = wait_req(h, 0, ctx);
                    }
                } else {
                    rc = sharp_coll_do_bcast(comm, &s);
                }
                CHECK_RC(rc, 0, "bcast");
                CHECK(memcmp(buf, ex, n) == 0, "bcast root %d size %zu: wrong data", root, n);
                free(buf);
                free(ex);
            }
        }
    }
}

/* reduce_scatter over P blocks of `bcount` INT elements, window [woff, woff + wlen) (elements). */
static void one_reduce_scatter(struct sharp_coll_context *ctx, struct sharp_coll_comm *comm, size_t bcount,
                               size_t woff, size_t wlen, int inplace, int nb)
{
    int                           dt = SHARP_DTYPE_INT, op = SHARP_OP_SUM, rc;
    size_t                        es = 4, B = bcount * es, full = (size_t)P * bcount;
    size_t                        lo, hi;
    unsigned char                *in = malloc(full * es + 1), *ex = malloc(full * es + 1);
    unsigned char                *rb = malloc(full * es + 1), *canary = malloc(full * es + 1);
    struct sharp_coll_reduce_spec s;
    uint64_t                      seed = mix(0x5c5c + bcount * 1000 + woff * 10 + wlen);
    void                         *h    = NULL;

    gen(in, full, dt, op, -1, RANK, seed);
    expected(ex, full, dt, op, -1, P, seed);
    memset(rb, 0xEE, full * es);
    memset(canary, 0xEE, full * es);
    memset(&s, 0xA5, sizeof(s));
    if (inplace) { /* UCC style: the whole vector in the destination, own block at its start */
        memcpy(rb, in + woff * es, wlen * es);
        set_desc(&s.sbuf_desc, rb, wlen * es);
    } else {
        set_desc(&s.sbuf_desc, in + woff * es, wlen * es);
    }
    set_desc(&s.rbuf_desc, rb, B);
    s.dtype     = SHARP_DTYPE_INT;
    s.op        = SHARP_OP_SUM;
    s.length    = bcount;
    s.aggr_mode = SHARP_AGGREGATION_NONE;
    s.offset    = woff * es;
    if (nb) {
        rc = sharp_coll_do_reduce_scatter_nb(comm, &s, &h);
        if (rc == 0) {
            rc = wait_req(h, 1, ctx);
        }
    } else {
        rc = sharp_coll_do_reduce_scatter(comm, &s);
    }
    CHECK_RC(rc, 0, "reduce_scatter");
    lo = woff > (size_t)RANK * bcount ? woff : (size_t)RANK * bcount;
    hi = woff + wlen < (size_t)(RANK + 1) * bcount ? woff + wlen : (size_t)(RANK + 1) * bcount;
    if (lo < hi) {
        CHECK(memcmp(rb, ex + lo * es, (hi - lo) * es) == 0,
              "reduce_scatter block %zu window %zu+%zu inplace %d: wrong result", bcount, woff, wlen, inplace);
        if (!inplace) {
            CHECK(memcmp(rb + (hi - lo) * es, canary, B - (hi - lo) * es) == 0,
                  "reduce_scatter wrote beyond its part");
        }
    } else if (!inplace) {
        CHECK(memcmp(rb, canary, B) == 0, "reduce_scatter wrote although its part is empty");
    }
    free(in);
    free(ex);
    free(rb);
    free(canary);
}

static void test_reduce_scatter(struct sharp_coll_context *ctx, struct sharp_coll_comm *comm)
{
    size_t full;
    one_reduce_scatter(ctx, comm, 1, 0, (size_t)P, 0, 0);
    one_reduce_scatter(ctx, comm, 100, 0, (size_t)P * 100, 0, 1);
    one_reduce_scatter(ctx, comm, 100, 0, (size_t)P * 100, 1, 0);
    one_reduce_scatter(ctx, comm, 3000, 0, (size_t)P * 3000, 0, 0); /* several OOB chunks */
    /* partial windows (NCCL / pipelined style) */
    full = (size_t)P * 64;
    one_reduce_scatter(ctx, comm, 64, 32, full - 32 > 64 ? 64 : full - 32, 0, 0);
    one_reduce_scatter(ctx, comm, 64, 0, 16, 0, 1);
    one_reduce_scatter(ctx, comm, 64, full - 10, 10, 0, 0);
    one_reduce_scatter(ctx, comm, 64, 0, 0, 0, 0);
}

static void one_allgather(struct sharp_coll_context *ctx, struct sharp_coll_comm *comm, size_t S, size_t off,
                          size_t W, int inplace, int nb)
{
    size_t                        full = (size_t)P * S, i;
    unsigned char                *sb = malloc(S + 1), *rb = malloc(full + 1), *ex = malloc(full + 1);
    struct sharp_coll_gather_spec g;
    void                         *h = NULL;
    int                           r, rc;

    for (r = 0; r < P; r++) {
        for (i = 0; i < S; i++) {
            ex[(size_t)r * S + i] = (unsigned char)mix((uint64_t)r * 1000003u + i + S);
        }
    }
    memcpy(sb, ex + (size_t)RANK * S, S);
    memset(rb, 0xEE, full);
    memset(&g, 0xA5, sizeof(g)); /* g.size left as garbage, as UCC does */
    if (inplace) {
        memcpy(rb + (size_t)RANK * S, sb, S);
        set_desc(&g.sbuf_desc, rb + (size_t)RANK * S, S);
    } else {
        set_desc(&g.sbuf_desc, sb, S);
    }
    set_desc(&g.rbuf_desc, rb, W);
    g.dtype  = SHARP_DTYPE_INT8;
    g.offset = off;
    if (nb) {
        rc = sharp_coll_do_allgather_nb(comm, &g, &h);
        if (rc == 0) {
            rc = wait_req(h, 0, ctx);
        }
    } else {
        rc = sharp_coll_do_allgather(comm, &g);
    }
    CHECK_RC(rc, 0, "allgather");
    CHECK(memcmp(rb, ex + off, W) == 0, "allgather S %zu window %zu+%zu inplace %d: wrong result", S, off, W,
          inplace);
    free(sb);
    free(rb);
    free(ex);
}

static void test_allgather(struct sharp_coll_context *ctx, struct sharp_coll_comm *comm)
{
    one_allgather(ctx, comm, 1, 0, (size_t)P, 0, 0);
    one_allgather(ctx, comm, 333, 0, (size_t)P * 333, 0, 1);
    one_allgather(ctx, comm, 333, 0, (size_t)P * 333, 1, 0);
    one_allgather(ctx, comm, 20000, 0, (size_t)P * 20000, 0, 0); /* several OOB chunks */
    one_allgather(ctx, comm, 100, 50, (size_t)P * 100 - 60, 0, 0);
    one_allgather(ctx, comm, 100, 0, 0, 0, 0);
    one_allgather(ctx, comm, 0, 0, 0, 0, 1);
}

static void test_nb_outstanding(struct sharp_coll_context *ctx, struct sharp_coll_comm *comm)
{
    enum { N = 4 };
    size_t                        count = 50, bytes = count * 8;
    unsigned char                *sb[N], *rb[N], *ex = malloc(bytes);
    struct sharp_coll_reduce_spec s[N];
    void                         *h[N];
    int                           i, rc;
    for (i = 0; i < N; i++) {
        sb[i] = malloc(bytes);
        rb[i] = malloc(bytes);
        gen(sb[i], count, SHARP_DTYPE_LONG, SHARP_OP_SUM, -1, RANK, 900u + (unsigned)i);
        rspec(&s[i], sb[i], rb[i], count, SHARP_DTYPE_LONG, SHARP_OP_SUM, -1);
        rc = sharp_coll_do_allreduce_nb(comm, &s[i], &h[i]);
        CHECK_RC(rc, 0, "allreduce_nb (outstanding)");
    }
    for (i = N - 1; i >= 0; i--) { /* complete in reverse order */
        CHECK_RC(wait_req(h[i], i & 1, ctx), 0, "wait (outstanding)");
        expected(ex, count, SHARP_DTYPE_LONG, SHARP_OP_SUM, -1, P, 900u + (unsigned)i);
        CHECK(memcmp(rb[i], ex, bytes) == 0, "outstanding request %d: wrong result", i);
        free(sb[i]);
        free(rb[i]);
    }
    free(ex);
}

static void test_sub_comm(struct sharp_coll_context *ctx, struct sharp_coll_comm *world)
{
    struct sharp_coll_comm *sub = NULL;
    if (RANK % 2 == 0) {
        int rc = do_comm(ctx, &SUB, &sub);
        CHECK_RC(rc, 0, "sub comm_init");
        if (rc == 0) {
            one_allreduce(ctx, sub, SUB.rank, SUB.size, SHARP_DTYPE_FLOAT, SHARP_OP_SUM, -1, 300,
                          MODE_BLOCKING, 0, 0, 4242);
            one_allreduce(ctx, sub, SUB.rank, SUB.size, SHARP_DTYPE_SHORT, SHARP_OP_MINLOC,
                          SHARP_DTYPE_INT, 64, MODE_NB_TEST, 0, 0, 4243);
            CHECK_RC(sharp_coll_do_barrier(sub), 0, "sub barrier");
            CHECK_RC(sharp_coll_comm_destroy(sub), 0, "sub comm_destroy");
        }
    }
    CHECK_RC(sharp_coll_do_barrier(world), 0, "world barrier after sub");
}

static void test_misc(struct sharp_coll_context *ctx, struct sharp_coll_comm *comm)
{
    static const char *const funcs[] = {
        "sharp_coll_init", "sharp_coll_finalize", "sharp_coll_caps_query", "sharp_coll_progress",
        "sharp_coll_comm_init", "sharp_coll_comm_destroy", "sharp_coll_do_barrier",
        "sharp_coll_do_barrier_nb", "sharp_coll_do_allreduce", "sharp_coll_do_allreduce_nb",
        "sharp_coll_do_reduce", "sharp_coll_do_reduce_nb", "sharp_coll_do_reduce_scatter",
        "sharp_coll_do_reduce_scatter_nb", "sharp_coll_do_allgather", "sharp_coll_do_allgather_nb",
        "sharp_coll_do_bcast", "sharp_coll_do_bcast_nb", "sharp_coll_req_test", "sharp_coll_req_wait",
        "sharp_coll_req_free", "sharp_coll_reg_mr", "sharp_coll_reg_mr_v2", "sharp_coll_dereg_mr",
        "sharp_coll_strerror", "sharp_coll_dump_stats", "sharp_coll_print_config",
        "sharp_coll_default_config"};
    const struct sharp_coll_config *cfg;
    struct sharp_coll_reg_params    params;
    struct sharp_coll_reduce_spec   s;
    unsigned char                   buf[64];
    void                           *mr = NULL, *mr2 = NULL, *mr3 = NULL, *h = (void *)0x1;
    size_t                          i;
    int                             e, rc;
    FILE                           *f;
    char                            line[256];
    int                             seen = 0;

    for (i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++) {
        CHECK(dlsym(RTLD_DEFAULT, funcs[i]) != NULL, "symbol %s not exported", funcs[i]);
    }
    cfg = dlsym(RTLD_DEFAULT, "sharp_coll_default_config");
    CHECK(cfg == &sharp_coll_default_config && cfg->coll_timeout == -1 && cfg->flags == 0 &&
              cfg->user_progress_num_polls > 0,
          "sharp_coll_default_config contents");

    /* registration */
    CHECK_RC(sharp_coll_reg_mr(ctx, buf, sizeof(buf), &mr), 0, "reg_mr");
    CHECK(mr != NULL, "reg_mr gave no handle");
    CHECK_RC(sharp_coll_reg_mr_v2(ctx, buf, sizeof(buf), NULL, &mr2), 0, "reg_mr_v2(NULL params)");
    memset(&params, 0, sizeof(params));
    params.field_mask = 3;
    params.dmabuf_fd  = -1;
    CHECK_RC(sharp_coll_reg_mr_v2(ctx, buf, sizeof(buf), &params, &mr3), 0, "reg_mr_v2");
    /* a registered handle in the descriptors */
    for (i = 0; i < 16; i++) {
        buf[i] = (unsigned char)(RANK + (int)i);
    }
    rspec(&s, buf, buf + 16, 16, SHARP_DTYPE_UINT8, SHARP_OP_MAX, -1);
    s.sbuf_desc.buffer.mem_handle = mr;
    s.rbuf_desc.buffer.mem_handle = mr;
    CHECK_RC(sharp_coll_do_allreduce(comm, &s), 0, "allreduce with mem_handle");
    CHECK(buf[16] == (unsigned char)(P - 1) && buf[31] == (unsigned char)(P - 1 + 15), "allreduce with mem_handle: result");
    CHECK_RC(sharp_coll_dereg_mr(ctx, mr), 0, "dereg_mr");
    CHECK_RC(sharp_coll_dereg_mr(ctx, mr2), 0, "dereg_mr v2");
    CHECK_RC(sharp_coll_dereg_mr(ctx, mr3), 0, "dereg_mr v2 params");
    CHECK_RC(sharp_coll_dereg_mr(ctx, NULL), SHARP_COLL_EINVAL, "dereg_mr(NULL)");

    /* strerror */
    for (e = 0; e >= -20; e--) {
        const char *t = sharp_coll_strerror(e);
        CHECK(t != NULL && t[0] != '\0' && strcmp(t, "Unknown error") != 0, "strerror(%d)", e);
    }
    CHECK(strcmp(sharp_coll_strerror(SHARP_COLL_EJOB_CREATE), "Cannot create SHARP job") == 0, "strerror(-11)");
    CHECK(strcmp(sharp_coll_strerror(SHARP_COLL_ELOCK_FAILED), "Streaming Tree lock failed") == 0,
          "strerror(-18)");
    CHECK(sharp_coll_strerror(-12345) != NULL, "strerror(unknown)");

    /* print_config, progress */
    f = tmpfile();
    if (f != NULL) {
        CHECK_RC(sharp_coll_print_config(f, SHARP_CONFIG_PRINT_CONFIG | SHARP_CONFIG_PRINT_HEADER, "emu_test"),
                 0, "print_config");
        rewind(f);
        while (fgets(line, sizeof(line), f) != NULL) {
            seen |= strncmp(line, "SHARP_EMU_FAIL_OP=", 18) == 0;
        }
        fclose(f);
        CHECK(seen, "print_config lists SHARP_EMU_FAIL_OP");
    }
    CHECK_RC(sharp_coll_progress(ctx), 0, "progress");

    /* argument errors (identical on every rank: nothing is exchanged) */
    CHECK_RC(sharp_coll_do_allreduce(comm, NULL), SHARP_COLL_EINVAL, "allreduce(NULL spec)");
    CHECK_RC(sharp_coll_do_allreduce(NULL, &s), SHARP_COLL_EINVAL, "allreduce(NULL comm)");
    CHECK_RC(sharp_coll_do_allreduce_nb(comm, &s, NULL), SHARP_COLL_EINVAL, "allreduce_nb(NULL handle)");
    rspec(&s, buf, buf + 16, 16, SHARP_DTYPE_UINT8, SHARP_OP_MAX, -1);
    s.sbuf_desc.type = SHARP_DATA_IOV;
    CHECK_RC(sharp_coll_do_allreduce(comm, &s), SHARP_COLL_ENOT_SUPP, "allreduce(IOV)");
    rspec(&s, buf, buf + 16, 16, SHARP_DTYPE_UINT8, SHARP_OP_MAX, -1);
    s.rbuf_desc.mem_type = SHARP_MEM_TYPE_CUDA;
    CHECK_RC(sharp_coll_do_allreduce(comm, &s), SHARP_COLL_ENOT_SUPP, "allreduce(CUDA)");
    rspec(&s, buf, buf + 16, 16, SHARP_DTYPE_UINT8, SHARP_OP_MAX, -1);
    s.dtype = (enum sharp_datatype)99;
    CHECK_RC(sharp_coll_do_allreduce(comm, &s), SHARP_COLL_EINVAL, "allreduce(dtype 99)");
    rspec(&s, buf, buf + 16, 16, SHARP_DTYPE_UINT8, SHARP_OP_NULL, -1);
    CHECK_RC(sharp_coll_do_allreduce(comm, &s), SHARP_COLL_EINVAL, "allreduce(SHARP_OP_NULL)");
    rspec(&s, buf, buf + 16, 16, SHARP_DTYPE_UINT8, SHARP_OP_MAX, -1);
    s.rbuf_desc.buffer.length = 15;
    CHECK_RC(sharp_coll_do_allreduce(comm, &s), SHARP_COLL_EINVAL, "allreduce(short rbuf)");
    rspec(&s, buf, buf + 16, 4, SHARP_DTYPE_INT, SHARP_OP_MINLOC, SHARP_DTYPE_FLOAT);
    CHECK_RC(sharp_coll_do_allreduce(comm, &s), SHARP_COLL_ENOT_SUPP, "allreduce(MINLOC, float tag)");
    rspec(&s, buf, buf + 16, 16, SHARP_DTYPE_UINT8, SHARP_OP_MAX, -1);
    s.root = P;
    CHECK_RC(sharp_coll_do_reduce(comm, &s), SHARP_COLL_EINVAL, "reduce(root out of range)");
    rspec(&s, buf, buf + 16, 16, SHARP_DTYPE_UINT8, SHARP_OP_MAX, -1);
    s.aggr_mode = (enum sharp_aggregation_mode)7;
    CHECK_RC(sharp_coll_do_allreduce(comm, &s), SHARP_COLL_EINVAL, "allreduce(aggr_mode 7)");
    rspec(&s, buf, buf + 16, 16, SHARP_DTYPE_UINT8, SHARP_OP_MAX, -1);
    s.aggr_mode = SHARP_AGGREGATION_STREAMING;
    CHECK_RC(sharp_coll_do_allreduce(comm, &s), 0, "allreduce(STREAMING)");
    h  = (void *)0x1;
    rc = sharp_coll_do_barrier_nb(NULL, &h);
    CHECK(rc == SHARP_COLL_EINVAL, "barrier_nb(NULL comm) rc %d", rc);
    CHECK_RC(sharp_coll_req_wait(NULL), SHARP_COLL_EINVAL, "req_wait(NULL)");
    CHECK_RC(sharp_coll_req_free(NULL), SHARP_COLL_EINVAL, "req_free(NULL)");

    /* NaN semantics of MAX (documented): a NaN from any rank wins over numbers */
    if (P >= 2) {
        float x = RANK == 1 ? NAN : (float)RANK, y = 0;
        rspec(&s, &x, &y, 1, SHARP_DTYPE_FLOAT, SHARP_OP_MAX, -1);
        CHECK_RC(sharp_coll_do_allreduce(comm, &s), 0, "allreduce MAX with NaN");
        CHECK(isnan(y), "MAX with a NaN gave %g", (double)y);
    }
}

/* A fresh context with only the given variables set on top of the defaults. */
static void test_chunked(void)
{
    struct sharp_coll_context *ctx;
    struct sharp_coll_comm    *comm;
    phase = "chunked";
    setenv("SHARP_EMU_OOB_CHUNK", "100", 1);
    if (setup(&ctx, &comm) == 0) {
        one_allreduce(ctx, comm, RANK, P, SHARP_DTYPE_DOUBLE, SHARP_OP_SUM, -1, 512, MODE_BLOCKING, 0, 0, 11);
        one_allreduce(ctx, comm, RANK, P, SHARP_DTYPE_BFLOAT16, SHARP_OP_MAX, -1, 333, MODE_NB_TEST, 1, 0, 12);
        one_allreduce(ctx, comm, RANK, P, SHARP_DTYPE_DOUBLE, SHARP_OP_MAXLOC, SHARP_DTYPE_LONG, 200,
                      MODE_NB_WAIT, 0, 0, 13);
        one_allreduce(ctx, comm, RANK, P, SHARP_DTYPE_UINT8, SHARP_OP_BOR, -1, 4096, MODE_BLOCKING, 0, 0, 14);
        test_bcast(ctx, comm);
        one_allgather(ctx, comm, 333, 0, (size_t)P * 333, 0, 0);
        one_reduce_scatter(ctx, comm, 100, 0, (size_t)P * 100, 0, 0);
        teardown(ctx, comm);
    }
    setenv("SHARP_EMU_OOB_CHUNK", TEST_CHUNK, 1);
}

static void test_fail_init(void)
{
    struct sharp_coll_context *ctx = (void *)0x1;
    struct sharp_coll_comm    *comm;
    int                        rc;

    phase = "fail_init";
    setenv("SHARP_EMU_FAIL_INIT", "-11", 1);
    rc = do_init(&ctx);
    CHECK_RC(rc, SHARP_COLL_EJOB_CREATE, "init with SHARP_EMU_FAIL_INIT=-11");
    CHECK(ctx == NULL, "failed init left a context");
    unsetenv("SHARP_EMU_FAIL_INIT");

    if (RANK == P - 1) { /* one rank only: every rank must fail alike */
        setenv("SHARP_EMU_FAIL_INIT", "-8", 1);
    }
    CHECK_RC(do_init(&ctx), SHARP_COLL_ESESS_INIT, "init with SHARP_EMU_FAIL_INIT=-8 on the last rank");
    unsetenv("SHARP_EMU_FAIL_INIT");

    setenv("SHARP_EMU_FAIL_OP", "3:oops", 1); /* malformed: EINVAL (message silenced) */
    setenv("SHARP_COLL_LOG_LEVEL", "0", 1);
    CHECK_RC(do_init(&ctx), SHARP_COLL_EINVAL, "init with malformed SHARP_EMU_FAIL_OP");
    unsetenv("SHARP_EMU_FAIL_OP");
    setenv("SHARP_EMU_LATENCY_US", "-5", 1);
    CHECK_RC(do_init(&ctx), SHARP_COLL_EINVAL, "init with malformed SHARP_EMU_LATENCY_US");
    unsetenv("SHARP_EMU_LATENCY_US");
    setenv("SHARP_COLL_LOG_LEVEL", "1", 1);

    /* afterwards everything works */
    if (setup(&ctx, &comm) == 0) {
        one_allreduce(ctx, comm, RANK, P, SHARP_DTYPE_INT, SHARP_OP_SUM, -1, 64, MODE_BLOCKING, 0, 0, 21);
        teardown(ctx, comm);
    }

    /* finalize before comm_destroy: the communicator refuses work, its destroy still works */
    if (setup(&ctx, &comm) == 0) {
        CHECK_RC(sharp_coll_finalize(ctx), 0, "finalize with a communicator alive");
        CHECK_RC(sharp_coll_do_barrier(comm), SHARP_COLL_EINVAL, "barrier after finalize");
        CHECK_RC(sharp_coll_comm_destroy(comm), 0, "comm_destroy after finalize");
    }

    /* world_size 1 needs no OOB callbacks */
    if (P == 1) {
        struct sharp_coll_init_spec spec;
        memset(&spec, 0, sizeof(spec));
        spec.config     = sharp_coll_default_config;
        spec.world_rank = 0;
        spec.world_size = 1;
        rc              = sharp_coll_init(&spec, &ctx);
        CHECK_RC(rc, 0, "init without OOB callbacks, world_size 1");
        if (rc == 0) {
            struct sharp_coll_comm_init_spec cs;
            memset(&cs, 0, sizeof(cs));
            cs.rank = 0;
            cs.size = 1;
            rc      = sharp_coll_comm_init(ctx, &cs, &comm);
            CHECK_RC(rc, 0, "comm_init size 1");
            if (rc == 0) {
                one_allreduce(ctx, comm, 0, 1, SHARP_DTYPE_FLOAT, SHARP_OP_SUM, -1, 10, MODE_NB_TEST, 0, 0, 22);
                CHECK_RC(sharp_coll_do_barrier(comm), 0, "barrier size 1");
                CHECK_RC(sharp_coll_comm_destroy(comm), 0, "comm_destroy");
            }
            CHECK_RC(sharp_coll_finalize(ctx), 0, "finalize");
        }
        spec.world_size = 2;
        spec.world_rank = 0;
        CHECK_RC(sharp_coll_init(&spec, &ctx), SHARP_COLL_EINVAL, "init world_size 2 without OOB");
    }
}

static void test_fail_comm_init(void)
{
    struct sharp_coll_context *ctx;
    struct sharp_coll_comm    *comm = NULL, *c2 = NULL, *c3 = NULL;
    int                        rc;

    phase = "fail_comm_init";
    setenv("SHARP_EMU_FAIL_COMM_INIT", "-18", 1);
    rc = do_init(&ctx);
    CHECK_RC(rc, 0, "init");
    if (rc == 0) {
        CHECK_RC(do_comm(ctx, &WORLD, &comm), SHARP_COLL_ELOCK_FAILED, "comm_init with FAIL_COMM_INIT=-18");
        CHECK(comm == NULL, "failed comm_init left a communicator");
        CHECK_RC(do_comm(ctx, &WORLD, &comm), SHARP_COLL_ELOCK_FAILED, "comm_init retry (still failing)");
        CHECK_RC(sharp_coll_finalize(ctx), 0, "finalize");
    }

    setenv("SHARP_EMU_FAIL_COMM_INIT", "1:-18,2:-20,3:-4", 1);
    rc = do_init(&ctx);
    CHECK_RC(rc, 0, "init");
    if (rc == 0) {
        CHECK_RC(do_comm(ctx, &WORLD, &comm), SHARP_COLL_ELOCK_FAILED, "comm_init #1");
        CHECK_RC(do_comm(ctx, &WORLD, &comm), SHARP_COLL_ENO_RESOURCE, "comm_init #2");
        CHECK_RC(do_comm(ctx, &WORLD, &comm), SHARP_COLL_EGROUP_ALLOC, "comm_init #3");
        rc = do_comm(ctx, &WORLD, &comm);
        CHECK_RC(rc, 0, "comm_init #4 (retry succeeds)");
        if (rc == 0) {
            one_allreduce(ctx, comm, RANK, P, SHARP_DTYPE_LONG, SHARP_OP_MAX, -1, 100, MODE_BLOCKING, 0, 0, 31);
            CHECK_RC(sharp_coll_comm_destroy(comm), 0, "comm_destroy");
        }
        CHECK_RC(sharp_coll_finalize(ctx), 0, "finalize");
    }
    unsetenv("SHARP_EMU_FAIL_COMM_INIT");

    /* the failure of one rank is everybody's */
    if (RANK == 0) {
        setenv("SHARP_EMU_FAIL_COMM_INIT", "1:-20", 1);
    }
    rc = do_init(&ctx);
    CHECK_RC(rc, 0, "init");
    if (rc == 0) {
        CHECK_RC(do_comm(ctx, &WORLD, &comm), SHARP_COLL_ENO_RESOURCE, "comm_init failing on rank 0 only");
        rc = do_comm(ctx, &WORLD, &comm);
        CHECK_RC(rc, 0, "comm_init retry");
        if (rc == 0) {
            CHECK_RC(sharp_coll_comm_destroy(comm), 0, "comm_destroy");
        }
        CHECK_RC(sharp_coll_finalize(ctx), 0, "finalize");
    }
    unsetenv("SHARP_EMU_FAIL_COMM_INIT");

    /* group quota */
    setenv("SHARP_COLL_JOB_QUOTA_MAX_GROUPS", "2", 1);
    rc = do_init(&ctx);
    CHECK_RC(rc, 0, "init");
    if (rc == 0) {
        struct sharp_coll_caps caps;
        CHECK_RC(sharp_coll_caps_query(ctx, &caps), 0, "caps");
        CHECK(caps.resources.max_groups == 2, "max_groups %d", caps.resources.max_groups);
        CHECK_RC(do_comm(ctx, &WORLD, &comm), 0, "comm 1 of 2");
        CHECK_RC(do_comm(ctx, &WORLD, &c2), 0, "comm 2 of 2");
        CHECK_RC(do_comm(ctx, &WORLD, &c3), SHARP_COLL_ENO_RESOURCE, "comm 3 of 2");
        CHECK_RC(sharp_coll_comm_destroy(c2), 0, "comm_destroy");
        rc = do_comm(ctx, &WORLD, &c3);
        CHECK_RC(rc, 0, "comm after a destroy");
        one_allreduce(ctx, comm, RANK, P, SHARP_DTYPE_INT, SHARP_OP_SUM, -1, 10, MODE_BLOCKING, 0, 0, 32);
        if (rc == 0) {
            one_allreduce(ctx, c3, RANK, P, SHARP_DTYPE_INT, SHARP_OP_SUM, -1, 10, MODE_BLOCKING, 0, 0, 33);
            CHECK_RC(sharp_coll_comm_destroy(c3), 0, "comm_destroy");
        }
        CHECK_RC(sharp_coll_comm_destroy(comm), 0, "comm_destroy");
        CHECK_RC(sharp_coll_finalize(ctx), 0, "finalize");
    }
    unsetenv("SHARP_COLL_JOB_QUOTA_MAX_GROUPS");
}

/* Allreduce of 32 ints expecting rc (local) and, if it fails, rbuf untouched. */
static void op_expect(struct sharp_coll_context *ctx, struct sharp_coll_comm *comm, int want, int nb, uint64_t seed)
{
    size_t                        count = 32, bytes = count * 4;
    int                           sb[32], rb[32], ex[32], canary[32];
    struct sharp_coll_reduce_spec s;
    void                         *h = (void *)0x1;
    int                           rc;

    gen(sb, count, SHARP_DTYPE_INT, SHARP_OP_SUM, -1, RANK, seed);
    memset(rb, 0xEE, bytes);
    memset(canary, 0xEE, bytes);
    rspec(&s, sb, rb, count, SHARP_DTYPE_INT, SHARP_OP_SUM, -1);
    if (nb) {
        rc = sharp_coll_do_allreduce_nb(comm, &s, &h);
        if (rc == 0) {
            rc = wait_req(h, 1, ctx);
        } else {
            CHECK(h == NULL, "failed allreduce_nb left a handle");
        }
    } else {
        rc = sharp_coll_do_allreduce(comm, &s);
    }
    CHECK(rc == want, "allreduce (seed %llu) rc %d, expected %d", (unsigned long long)seed, rc, want);
    if (rc == 0) {
        expected(ex, count, SHARP_DTYPE_INT, SHARP_OP_SUM, -1, P, seed);
        CHECK(memcmp(rb, ex, bytes) == 0, "allreduce (seed %llu): wrong result", (unsigned long long)seed);
    } else {
        CHECK(memcmp(rb, canary, bytes) == 0, "failed allreduce wrote its output");
    }
}

static void test_fail_op(void)
{
    struct sharp_coll_context *ctx;
    struct sharp_coll_comm    *comm;

    phase = "fail_op";
    /* the 3rd operation fails with ENO_RESOURCE, the others are untouched */
    setenv("SHARP_EMU_FAIL_OP", "3:-20", 1);
    if (setup(&ctx, &comm) == 0) {
        CHECK_RC(sharp_coll_do_barrier(comm), 0, "op 1 (barrier)");
        op_expect(ctx, comm, 0, 0, 41);                      /* op 2 */
        op_expect(ctx, comm, SHARP_COLL_ENO_RESOURCE, 0, 42); /* op 3 */
        op_expect(ctx, comm, 0, 1, 43);                      /* op 4 */
        op_expect(ctx, comm, 0, 0, 44);                      /* op 5 */
        teardown(ctx, comm);
    }

    /* ranges, lists, non-blocking at post */
    setenv("SHARP_EMU_FAIL_OP", "2-3:-1,5-:-2", 1);
    if (setup(&ctx, &comm) == 0) {
        void *h = (void *)0x1;
        op_expect(ctx, comm, 0, 0, 51);
        op_expect(ctx, comm, SHARP_COLL_ERROR, 1, 52);
        CHECK_RC(sharp_coll_do_barrier_nb(comm, &h), SHARP_COLL_ERROR, "op 3 (barrier_nb)");
        CHECK(h == NULL, "failed barrier_nb left a handle");
        op_expect(ctx, comm, 0, 1, 54);
        op_expect(ctx, comm, SHARP_COLL_ENOT_SUPP, 0, 55);
        op_expect(ctx, comm, SHARP_COLL_ENOT_SUPP, 1, 56);
        teardown(ctx, comm);
    }

    /* one rank fails at post: it does not contribute, so (as on a switch) the others cannot
     * complete: they get SHARP_COLL_ERROR at coll_timeout; everyone stays in step afterwards */
    if (P > 1) {
        setenv("SHARP_EMU_FAIL_OP", "2:-1:1", 1);
        init_timeout_ms = 300;
        init_flags      = SHARP_COLL_HIDE_ERRORS;
        if (setup(&ctx, &comm) == 0) {
            uint64_t t0;
            op_expect(ctx, comm, 0, 0, 61);
            gbar(&SH->world);
            t0 = now_us();
            op_expect(ctx, comm, SHARP_COLL_ERROR, RANK & 1, 62);
            /* The first rank to reach coll_timeout poisons the operation for all, so a rank that
             * started late (2 cores, a loaded CI machine) sees the error before its own 300 ms:
             * the bound is half of it, which still tells the timeout from an immediate error. */
            CHECK(RANK == 1 || now_us() - t0 >= 150000, "rank %d got the error long before coll_timeout", RANK);
            gbar(&SH->world); /* the failing rank ran ahead; with a 300 ms coll_timeout it would time out next */
            op_expect(ctx, comm, 0, 1, 63);
            CHECK_RC(sharp_coll_do_barrier(comm), 0, "barrier");
            op_expect(ctx, comm, 0, 0, 64);
            teardown(ctx, comm);
        }
        init_timeout_ms = -1;
        init_flags      = 0;
        /* one rank fails at completion: it contributed, the others succeed */
        setenv("SHARP_EMU_FAIL_OP", "2:-20:1", 1);
        setenv("SHARP_EMU_FAIL_OP_PHASE", "complete", 1);
        if (setup(&ctx, &comm) == 0) {
            op_expect(ctx, comm, 0, 1, 65);
            op_expect(ctx, comm, RANK == 1 ? SHARP_COLL_ENO_RESOURCE : 0, 0, 66);
            op_expect(ctx, comm, 0, 1, 67);
            teardown(ctx, comm);
        }
        unsetenv("SHARP_EMU_FAIL_OP_PHASE");
    }

    /* failure reported at completion */
    setenv("SHARP_EMU_FAIL_OP", "1:-20", 1);
    setenv("SHARP_EMU_FAIL_OP_PHASE", "complete", 1);
    if (setup(&ctx, &comm) == 0) {
        void *h = NULL;
        int   rb[4] = {7, 7, 7, 7}, sb[4] = {1, 2, 3, 4};
        struct sharp_coll_reduce_spec s;
        int   rc;
        rspec(&s, sb, rb, 4, SHARP_DTYPE_INT, SHARP_OP_SUM, -1);
        rc = sharp_coll_do_allreduce_nb(comm, &s, &h);
        CHECK_RC(rc, 0, "allreduce_nb with failure at completion");
        if (rc == 0) {
            while (!sharp_coll_req_test(h)) { /* complete once every rank contributed */
            }
            CHECK_RC(sharp_coll_req_wait(h), SHARP_COLL_ENO_RESOURCE, "req_wait");
        }
        CHECK(rb[0] == 7 && rb[3] == 7, "failed allreduce_nb wrote its output");
        op_expect(ctx, comm, 0, 1, 71);
        op_expect(ctx, comm, 0, 0, 72);
        teardown(ctx, comm);
    }
    unsetenv("SHARP_EMU_FAIL_OP_PHASE");

    /* every operation */
    setenv("SHARP_EMU_FAIL_OP", "-2", 1);
    if (setup(&ctx, &comm) == 0) {
        op_expect(ctx, comm, SHARP_COLL_ENOT_SUPP, 0, 81);
        CHECK_RC(sharp_coll_do_barrier(comm), SHARP_COLL_ENOT_SUPP, "barrier with FAIL_OP=-2");
        teardown(ctx, comm);
    }
    unsetenv("SHARP_EMU_FAIL_OP");

    /* an OOB callback failing on every rank during comm_init gives EOOB; the next comm_init works */
    phase = "oob_failure";
    init_flags = SHARP_COLL_HIDE_ERRORS; /* the emulator would log the OOB error */
    if (P > 1 && do_init(&ctx) == 0) {
        oob_fail_in = 0;
        CHECK_RC(do_comm(ctx, &WORLD, &comm), SHARP_COLL_EOOB, "comm_init with a failing OOB gather");
        oob_fail_in = -1;
        if (do_comm(ctx, &WORLD, &comm) == 0) {
            op_expect(ctx, comm, 0, 0, 92);
            CHECK_RC(sharp_coll_comm_destroy(comm), 0, "comm_destroy");
        }
        CHECK_RC(sharp_coll_finalize(ctx), 0, "finalize");
    }
    init_flags = 0;
}

static void test_payload(void)
{
    struct sharp_coll_context *ctx;
    struct sharp_coll_comm    *comm;
    struct sharp_coll_caps     caps;

    phase = "max_payload";
    setenv("SHARP_EMU_MAX_PAYLOAD", "64", 1);
    if (setup(&ctx, &comm) == 0) {
        CHECK_RC(sharp_coll_caps_query(ctx, &caps), 0, "caps");
        CHECK((long)caps.resources.max_osts * caps.resources.user_data_per_ost == 64,
              "caps payload %d x %d", caps.resources.max_osts, caps.resources.user_data_per_ost);
        one_allreduce(ctx, comm, RANK, P, SHARP_DTYPE_INT, SHARP_OP_SUM, -1, 16, MODE_BLOCKING, 0, 0, 101);
        one_allreduce(ctx, comm, RANK, P, SHARP_DTYPE_INT, SHARP_OP_SUM, -1, 17, MODE_BLOCKING, 0,
                      SHARP_COLL_ENOT_SUPP, 102);
        one_allreduce(ctx, comm, RANK, P, SHARP_DTYPE_INT, SHARP_OP_SUM, -1, 17, MODE_NB_TEST, 0,
                      SHARP_COLL_ENOT_SUPP, 103);
        one_allreduce(ctx, comm, RANK, P, SHARP_DTYPE_DOUBLE, SHARP_OP_SUM, -1, 8, MODE_NB_TEST, 0, 0, 104);
        CHECK_RC(sharp_coll_do_barrier(comm), 0, "barrier under a payload limit");
        teardown(ctx, comm);
    }
    setenv("SHARP_EMU_MAX_PAYLOAD", "4096", 1);
    if (setup(&ctx, &comm) == 0) {
        CHECK_RC(sharp_coll_caps_query(ctx, &caps), 0, "caps");
        CHECK(caps.resources.max_osts == 4 && caps.resources.user_data_per_ost == 1024, "caps payload %d x %d",
              caps.resources.max_osts, caps.resources.user_data_per_ost);
        teardown(ctx, comm);
    }
    unsetenv("SHARP_EMU_MAX_PAYLOAD");
}

static void test_latency(void)
{
    struct sharp_coll_context *ctx;
    struct sharp_coll_comm    *comm;

    phase = "latency";
    setenv("SHARP_EMU_LATENCY_US", "20000", 1);
    if (setup(&ctx, &comm) == 0) {
        uint64_t                      t0 = now_us(), t1;
        int                           sb[8] = {1, 2, 3, 4, 5, 6, 7, 8}, rb[8];
        struct sharp_coll_reduce_spec s;
        void                         *h = NULL;
        int                           rc;
        CHECK_RC(sharp_coll_do_barrier(comm), 0, "barrier");
        t1 = now_us();
        CHECK(t1 - t0 >= 20000, "blocking barrier took %llu us", (unsigned long long)(t1 - t0));
        rspec(&s, sb, rb, 8, SHARP_DTYPE_INT, SHARP_OP_SUM, -1);
        t0 = now_us();
        rc = sharp_coll_do_allreduce_nb(comm, &s, &h);
        CHECK_RC(rc, 0, "allreduce_nb");
        if (rc == 0) {
            CHECK(sharp_coll_req_test(h) == 0 || now_us() - t0 >= 20000, "request complete before the latency");
            CHECK_RC(sharp_coll_req_wait(h), 0, "req_wait");
            CHECK(now_us() - t0 >= 20000, "req_wait returned before the latency");
            CHECK(rb[0] == P && rb[7] == 8 * P, "allreduce with latency: result");
        }
        teardown(ctx, comm);
    }
    unsetenv("SHARP_EMU_LATENCY_US");
}

/* PROD of 16-bit floats whose exact results are ties in the subnormal range. */
static void test_half_ties(struct sharp_coll_comm *comm)
{
    static const int              dts[2] = {SHARP_DTYPE_FLOAT_SHORT, SHARP_DTYPE_BFLOAT16};
    static const uint16_t         half[2] = {0x3800, 0x3f00}, quarter[2] = {0x3400, 0x3e80}, one[2] = {0x3c00, 0x3f80};
    uint16_t                      v[MAX_P][64], ex[64], rb[64];
    struct sharp_coll_reduce_spec s;
    int                           t, r, i;
    for (t = 0; t < 2; t++) {
        for (r = 0; r < P; r++) {
            for (i = 0; i < 64; i++) {
                v[r][i] = r == 0 ? (uint16_t)(i + 1) /* (i+1) * smallest subnormal */
                                 : r == 1 ? (i & 1 ? quarter[t] : half[t]) : one[t];
            }
        }
        memcpy(ex, v[0], sizeof(ex));
        for (r = 1; r < P; r++) {
            for (i = 0; i < 64; i++) {
                ref_elem((unsigned char *)&ex[i], (unsigned char *)&v[r][i], dts[t], SHARP_OP_PROD, -1);
            }
        }
        rspec(&s, v[RANK], rb, 64, dts[t], SHARP_OP_PROD, -1);
        CHECK_RC(sharp_coll_do_allreduce(comm, &s), 0, "allreduce PROD subnormal ties");
        CHECK(memcmp(rb, ex, sizeof(ex)) == 0, "PROD %s subnormal ties: wrong result", DNAME[dts[t]]);
    }
}

static void test_sat_prod(void)
{
    struct sharp_coll_context    *ctx;
    struct sharp_coll_comm       *comm;
    struct sharp_coll_caps        caps;
    struct sharp_coll_reduce_spec s;
    struct sharp_coll_gather_spec g;
    int                           buf[64];

    phase = "sat_off";
    setenv("SHARP_COLL_ENABLE_SAT", "0", 1);
    if (setup(&ctx, &comm) == 0) {
        CHECK_RC(sharp_coll_caps_query(ctx, &caps), 0, "caps");
        CHECK(!(caps.support_mask.feature_mask & SHARP_FEATURE_SAT), "SAT still reported");
        memset(&s, 0, sizeof(s));
        set_desc(&s.sbuf_desc, buf, (size_t)P * 4);
        set_desc(&s.rbuf_desc, buf, 4);
        s.dtype = SHARP_DTYPE_INT;
        s.op    = SHARP_OP_SUM;
        s.length = 1;
        CHECK_RC(sharp_coll_do_reduce_scatter(comm, &s), SHARP_COLL_ENOT_SUPP, "reduce_scatter without SAT");
        memset(&g, 0, sizeof(g));
        set_desc(&g.sbuf_desc, buf, 4);
        set_desc(&g.rbuf_desc, buf + 8, (size_t)P * 4);
        CHECK_RC(sharp_coll_do_allgather(comm, &g), SHARP_COLL_ENOT_SUPP, "allgather without SAT");
        one_allreduce(ctx, comm, RANK, P, SHARP_DTYPE_INT, SHARP_OP_SUM, -1, 10, MODE_BLOCKING, 0, 0, 111);
        teardown(ctx, comm);
    }
    unsetenv("SHARP_COLL_ENABLE_SAT");

    phase = "prod";
    setenv("SHARP_EMU_ENABLE_PROD", "1", 1);
    if (setup(&ctx, &comm) == 0) {
        int dt;
        CHECK_RC(sharp_coll_caps_query(ctx, &caps), 0, "caps");
        CHECK(caps.support_mask.reduce_ops & (1u << SHARP_OP_PROD), "PROD not reported");
        for (dt = 0; dt < SHARP_DTYPE_NULL; dt++) {
            one_allreduce(ctx, comm, RANK, P, dt, SHARP_OP_PROD, -1, 100, dt % 3, 0, 0, 120u + (unsigned)dt);
        }
        test_half_ties(comm);
        teardown(ctx, comm);
    }
    unsetenv("SHARP_EMU_ENABLE_PROD");
}

/* Operations never call the OOB callbacks (the switch), whatever their kind and mode. */
static void test_no_oob(struct sharp_coll_context *ctx, struct sharp_coll_comm *comm)
{
    long before = oob_calls;
    int  i;
    for (i = 0; i < 3; i++) {
        one_allreduce(ctx, comm, RANK, P, SHARP_DTYPE_DOUBLE, SHARP_OP_SUM, -1, 100, MODE_BLOCKING, 0, 0, 700u + i);
        one_allreduce(ctx, comm, RANK, P, SHARP_DTYPE_INT, SHARP_OP_MAX, -1, 7, MODE_NB_TEST, i & 1, 0, 710u + i);
        one_allreduce(ctx, comm, RANK, P, SHARP_DTYPE_LONG, SHARP_OP_BXOR, -1, 3, MODE_NB_WAIT, 0, 0, 720u + i);
        CHECK_RC(sharp_coll_do_barrier(comm), 0, "barrier");
    }
    test_reduce(ctx, comm);
    one_reduce_scatter(ctx, comm, 40, 0, (size_t)P * 40, 0, 0);
    CHECK(oob_calls == before, "operations made %ld OOB calls", oob_calls - before);
}

/* Arguments that differ between ranks: EINVAL on every rank (the switch compares), then in step. */
static void test_mismatch(struct sharp_coll_context *ctx, struct sharp_coll_comm *comm)
{
    if (P > 1) {
        long                          sb[8] = {1, 2, 3, 4, 5, 6, 7, 8}, rb[8];
        struct sharp_coll_reduce_spec s;
        rspec(&s, sb, rb, RANK == P - 1 ? 5 : 4, SHARP_DTYPE_LONG, SHARP_OP_SUM, -1);
        CHECK_RC(sharp_coll_do_allreduce(comm, &s), SHARP_COLL_EINVAL, "allreduce with different lengths");
        rspec(&s, sb, rb, 4, SHARP_DTYPE_LONG, RANK == 0 ? SHARP_OP_MAX : SHARP_OP_SUM, -1);
        CHECK_RC(sharp_coll_do_allreduce(comm, &s), SHARP_COLL_EINVAL, "allreduce with different ops");
        if (RANK == 0) {
            CHECK_RC(sharp_coll_do_barrier(comm), SHARP_COLL_EINVAL, "barrier against an allreduce");
        } else {
            CHECK_RC(sharp_coll_do_allreduce(comm, &s), SHARP_COLL_EINVAL, "allreduce against a barrier");
        }
    }
    op_expect(ctx, comm, 0, 1, 730);
}

/* req_free before completion abandons the request: rank 1 contributed, so the others still complete the
 * operation once the late rank 0 contributes; later operations work (the slots are recycled). */
static void test_abandon(struct sharp_coll_context *ctx, struct sharp_coll_comm *comm)
{
    int                           sb[4] = {1, 1, 1, 1}, rb[4];
    struct sharp_coll_reduce_spec s;
    void                         *h = NULL;
    int                           rc;
    rspec(&s, sb, rb, 4, SHARP_DTYPE_INT, SHARP_OP_SUM, -1);
    if (P > 1) {
        /* rank 0 posts late: the others' operation cannot be complete when rank 1 abandons it */
        if (RANK != 0) {
            rc = sharp_coll_do_allreduce_nb(comm, &s, &h);
            CHECK_RC(rc, 0, "allreduce_nb");
            if (RANK == 1 && rc == 0) {
                CHECK(sharp_coll_req_test(h) == 0, "complete without rank 0");
                CHECK_RC(sharp_coll_req_free(h), 0, "req_free of an incomplete request");
                h = NULL;
            }
        }
        gbar(&SH->world);
        if (RANK == 0) {
            rc = sharp_coll_do_allreduce_nb(comm, &s, &h);
            CHECK_RC(rc, 0, "allreduce_nb (late)");
        }
        if (h != NULL) {
            CHECK_RC(sharp_coll_req_wait(h), 0, "an operation another rank abandoned after contributing");
            CHECK(rb[0] == P && rb[3] == P, "its result");
        }
    }
    for (rc = 0; rc < 20; rc++) { /* more than the switch's slots: they are all recycled */
        op_expect(ctx, comm, 0, rc & 1, 740u + (unsigned)rc);
    }
}

/* The latency model: base + levels x per-level (radix 2 over P ranks). */
static void test_latency_model(void)
{
    struct sharp_coll_context *ctx;
    struct sharp_coll_comm    *comm;
    int                        levels = 0, n = 1;
    phase = "latency model";
    while (n < P) {
        n *= 2;
        levels++;
    }
    setenv("SHARP_EMU_LATENCY_US", "3000", 1);
    setenv("SHARP_EMU_LEVEL_US", "4000", 1);
    setenv("SHARP_EMU_RADIX", "2", 1);
    if (setup(&ctx, &comm) == 0) {
        uint64_t t0 = now_us(), took;
        op_expect(ctx, comm, 0, 1, 750);
        took = now_us() - t0;
        CHECK(took >= 3000u + 4000u * (uint64_t)levels, "allreduce took %llu us, model %d us", (unsigned long long)took,
              3000 + 4000 * levels);
        teardown(ctx, comm);
    }
    unsetenv("SHARP_EMU_LATENCY_US");
    unsetenv("SHARP_EMU_LEVEL_US");
    unsetenv("SHARP_EMU_RADIX");
}

static void test_main(void)
{
    struct sharp_coll_context *ctx;
    struct sharp_coll_comm    *comm;

    phase = "basic";
    if (setup(&ctx, &comm) == 0) {
        test_caps(ctx);
        phase = "allreduce matrix";
        allreduce_matrix(ctx, comm, 0);
        phase = "outstanding nb";
        test_nb_outstanding(ctx, comm);
        phase = "reduce";
        test_reduce(ctx, comm);
        phase = "barrier";
        test_barrier(ctx, comm);
        phase = "bcast";
        test_bcast(ctx, comm);
        phase = "reduce_scatter";
        test_reduce_scatter(ctx, comm);
        phase = "allgather";
        test_allgather(ctx, comm);
        phase = "sub comm";
        test_sub_comm(ctx, comm);
        phase = "misc";
        test_misc(ctx, comm);
        phase = "no OOB in operations";
        test_no_oob(ctx, comm);
        phase = "mismatch";
        test_mismatch(ctx, comm);
        phase = "abandon";
        test_abandon(ctx, comm);
        if (P == 1) {
            CHECK_RC(sharp_coll_dump_stats(ctx), 0, "dump_stats");
        }
        teardown(ctx, comm);
    }
    test_chunked();
    test_fail_init();
    test_fail_comm_init();
    test_fail_op();
    test_payload();
    test_latency();
    test_latency_model();
    test_sat_prod();
}

/* ------------------------------------------------------------------ driver */

static void init_group(struct group_sh *g, int size)
{
    pthread_barrierattr_t a;
    pthread_barrierattr_init(&a);
    pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(&g->bar, &a, (unsigned)size);
    pthread_barrierattr_destroy(&a);
    g->size = size;
}

static int run_p(int np, long *pass, long *fail)
{
    pid_t pids[MAX_P];
    int   r, bad = 0;

    SH = mmap(NULL, sizeof(*SH), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (SH == MAP_FAILED) {
        perror("mmap");
        return -1;
    }
    memset(SH, 0, sizeof(*SH));
    init_group(&SH->world, np);
    init_group(&SH->sub, (np + 1) / 2);
    fflush(stdout);
    fflush(stderr);
    for (r = 0; r < np; r++) {
        pids[r] = fork();
        if (pids[r] < 0) {
            perror("fork");
            exit(2);
        }
        if (pids[r] == 0) {
            alarm(CHILD_TIMEOUT_S);
            RANK  = r;
            P     = np;
            WORLD = (struct oob){&SH->world, r, np};
            SUB   = (struct oob){&SH->sub, r / 2, (np + 1) / 2};
            clear_env();
            test_main();
            SH->passed[r] = n_pass;
            SH->failed[r] = n_fail;
            fflush(stdout);
            fflush(stderr);
            _exit(0);
        }
    }
    for (r = 0; r < np; r++) {
        int st = 0;
        if (waitpid(pids[r], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "FAIL [P=%d rank %d] process ended abnormally (%s %d)\n", np, r,
                    WIFSIGNALED(st) ? "signal" : "status", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
            bad++;
        }
        *pass += SH->passed[r];
        *fail += SH->failed[r];
    }
    *fail += bad;
    pthread_barrier_destroy(&SH->world.bar);
    pthread_barrier_destroy(&SH->sub.bar);
    munmap(SH, sizeof(*SH));
    return 0;
}

int main(int argc, char **argv)
{
    long total_pass = 0, total_fail = 0;
    int  np, lo = 1, hi = MAX_P;

    if (argc > 1) { /* optional: emu_test <P> runs one team size */
        lo = hi = atoi(argv[1]);
        if (lo < 1 || lo > MAX_P) {
            fprintf(stderr, "usage: %s [1..%d]\n", argv[0], MAX_P);
            return 2;
        }
    }
    for (np = lo; np <= hi; np++) {
        long     pass = 0, fail = 0;
        uint64_t t0   = now_us();
        if (run_p(np, &pass, &fail) != 0) {
            return 2;
        }
        printf("P=%d: %ld passed, %ld failed (%.2f s)\n", np, pass, fail, (double)(now_us() - t0) / 1e6);
        fflush(stdout);
        total_pass += pass;
        total_fail += fail;
    }
    printf("%ld passed, %ld failed\n", total_pass, total_fail);
    return total_fail == 0 ? 0 : 1;
}
