/*
 * sharp4j: cost of one blocking sharp_coll_do_allreduce called from C, for comparison with the
 * same call through the Java binding (src/test/java/org/sharp4j/sharp/SharpCallBench.java runs
 * both in one run).
 *
 *   bench_allreduce [iterations] [bytes...]     default 200000 iterations of 8, 64 and 1024 bytes
 *
 * One process, a SHARP world of one rank (no OOB callbacks are involved), a registered buffer, an
 * Allreduce of INT SUM from one buffer into another.  Like a real caller (and like the binding),
 * every iteration writes the varying fields of the reduce spec before the call.
 * Prints one line per size: "bytes <B> ns_per_call <t>".
 */
#define _POSIX_C_SOURCE 200809L

#include <sharp/api/sharp_coll.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    long                             iters = argc > 1 ? atol(argv[1]) : 200000;
    size_t                           sizes[16];
    int                              nsizes = 0, i, rc;
    struct sharp_coll_init_spec      is;
    struct sharp_coll_comm_init_spec cs;
    struct sharp_coll_context       *ctx  = NULL;
    struct sharp_coll_comm          *comm = NULL;
    void                            *mr   = NULL;
    unsigned char                   *mem;
    const size_t                     cap = 1 << 16;

    for (i = 2; i < argc && nsizes < 16; i++) {
        sizes[nsizes++] = (size_t)atol(argv[i]);
    }
    if (nsizes == 0) {
        sizes[0] = 8;
        sizes[1] = 64;
        sizes[2] = 1024;
        nsizes   = 3;
    }
    if (iters < 1) {
        iters = 1;
    }

    memset(&is, 0, sizeof(is));
    is.job_id     = 42;
    is.world_rank = 0;
    is.world_size = 1;
    is.config     = sharp_coll_default_config;
    rc            = sharp_coll_init(&is, &ctx);
    if (rc != 0) {
        fprintf(stderr, "sharp_coll_init: %d %s\n", rc, sharp_coll_strerror(rc));
        return 1;
    }
    memset(&cs, 0, sizeof(cs));
    cs.rank = 0;
    cs.size = 1;
    rc      = sharp_coll_comm_init(ctx, &cs, &comm);
    if (rc != 0) {
        fprintf(stderr, "sharp_coll_comm_init: %d %s\n", rc, sharp_coll_strerror(rc));
        return 1;
    }
    mem = calloc(1, 2 * cap);
    if (mem == NULL || sharp_coll_reg_mr(ctx, mem, 2 * cap, &mr) != 0) {
        fprintf(stderr, "buffer/registration failed\n");
        return 1;
    }
    for (i = 0; i < nsizes; i++) {
        size_t                        bytes = sizes[i] > cap ? cap : sizes[i];
        struct sharp_coll_reduce_spec spec;
        long                          k, warm = iters / 10 + 1;
        double                        t0, t1;

        memset(&spec, 0, sizeof(spec));
        spec.sbuf_desc.type     = SHARP_DATA_BUFFER;
        spec.sbuf_desc.mem_type = SHARP_MEM_TYPE_HOST;
        spec.rbuf_desc.type     = SHARP_DATA_BUFFER;
        spec.rbuf_desc.mem_type = SHARP_MEM_TYPE_HOST;
        spec.aggr_mode          = SHARP_AGGREGATION_NONE;
        for (k = -warm, t0 = 0; k < iters; k++) {
            if (k == 0) {
                t0 = now_ns();
            }
            spec.sbuf_desc.buffer.ptr        = mem;
            spec.sbuf_desc.buffer.length     = bytes;
            spec.sbuf_desc.buffer.mem_handle = mr;
            spec.rbuf_desc.buffer.ptr        = mem + cap;
            spec.rbuf_desc.buffer.length     = bytes;
            spec.rbuf_desc.buffer.mem_handle = mr;
            spec.dtype                       = SHARP_DTYPE_INT;
            spec.length                      = bytes / 4;
            spec.op                          = SHARP_OP_SUM;
            rc                               = sharp_coll_do_allreduce(comm, &spec);
            if (rc != 0) {
                fprintf(stderr, "sharp_coll_do_allreduce: %d %s\n", rc, sharp_coll_strerror(rc));
                return 1;
            }
        }
        t1 = now_ns();
        printf("bytes %zu ns_per_call %.2f\n", bytes, (t1 - t0) / (double)iters);
    }
    sharp_coll_dereg_mr(ctx, mr);
    sharp_coll_comm_destroy(comm);
    sharp_coll_finalize(ctx);
    free(mem);
    return 0;
}
