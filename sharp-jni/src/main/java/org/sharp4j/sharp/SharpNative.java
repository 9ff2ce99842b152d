package org.sharp4j.sharp;

/**
 * The libsharp_coll functions the binding calls, as JNA direct-mapped natives (bound once per JVM
 * by {@link SharpLibrary#load} with {@code Native.register}). Every pointer travels as a
 * {@code long} address (LP64, checked at load): all-primitive signatures take JNA's fastest path.
 * Optional symbols (reduce_scatter, allgather, reg_mr_v2) are not here: {@link SharpLibrary}
 * looks them up lazily.
 */
final class SharpNative {
    private SharpNative() {
    }

    /** {@code int sharp_coll_init(struct sharp_coll_init_spec *, struct sharp_coll_context **)}. */
    static native int sharp_coll_init(long spec, long ctxOut);

    static native int sharp_coll_finalize(long ctx);

    static native int sharp_coll_caps_query(long ctx, long capsOut);

    static native int sharp_coll_comm_init(long ctx, long spec, long commOut);

    static native int sharp_coll_comm_destroy(long comm);

    static native int sharp_coll_do_barrier(long comm);

    static native int sharp_coll_do_allreduce(long comm, long spec);

    /** {@code handleOut}: address of a {@code void *} the library fills. */
    static native int sharp_coll_do_allreduce_nb(long comm, long spec, long handleOut);

    static native int sharp_coll_do_barrier_nb(long comm, long handleOut);

    /** Non-zero when complete (not an error code). */
    static native int sharp_coll_req_test(long handle);

    /** Waits, returns the operation's status and releases the handle. */
    static native int sharp_coll_req_wait(long handle);

    /** Releases a handle (before completion: the operation is abandoned). */
    static native int sharp_coll_req_free(long handle);

    static native int sharp_coll_progress(long ctx);

    /** {@code size} is a {@code size_t}. */
    static native int sharp_coll_reg_mr(long ctx, long buf, long size, long mrOut);

    static native int sharp_coll_dereg_mr(long ctx, long mr);

    /** Returns a {@code const char *}. */
    static native long sharp_coll_strerror(int error);
}
