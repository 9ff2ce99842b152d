package org.sharp4j.fallback.ucx;

import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;

/**
 * UCP's tag receive called directly, for a message that already waits in UCX's unexpected queue:
 * jucx 1.15 cannot receive such a message safely on UCX before 1.17.
 *
 * <h2>The bug this avoids</h2>
 * jucx passes a completion callback to {@code ucp_tag_recv_nbx}; the callback releases jucx's
 * request object ({@code DeleteGlobalRef}). UCX before 1.17 calls that callback from inside {@code
 * ucp_tag_recv_nbx} when the receive matches an unexpected eager message of several fragments that
 * has fully arrived, and then returns the released request, on which jucx calls {@code
 * setNativeId} through the deleted reference: a {@link NullPointerException} out of {@code
 * recvTaggedNonBlockingNative}, or, if another thread took the reference's slot meanwhile, a call
 * on some other object (openucx/ucx PR #9802, merged April 2024, first released in 1.17). Which
 * messages travel as multi-fragment eager depends on the transport and the configuration: over TCP
 * with {@code RNDV_THRESH=1m} a 64 KiB message does (and crashed one in four host-path runs on the
 * network-namespace rig); on InfiniBand, UCX's own thresholds send messages of about 8-17 KiB so.
 * Every jucx receive (by tag, by probed message, into an IOV) goes through the same UCX code.
 *
 * <h2>The receive here</h2>
 * {@code ucp_tag_recv_nbx} with no callback (only {@code UCP_OP_ATTR_FIELD_RECV_INFO}): a message
 * received at once returns {@code UCS_OK}; otherwise a request
 * comes back, which the caller polls with {@code ucp_request_check_status}, reads the length of with
 * {@code ucp_tag_recv_request_test}, and releases with {@code ucp_request_free}. Without a callback
 * UCX never releases the request itself, in any version. Bound by JNA's direct mapping (primitive
 * arguments, no per-call conversion): JNA is already the project's binding to {@code libsharp_coll},
 * and a JNI library would need UCX's headers at build time (Debian's {@code libucx0} has none). The
 * transport uses this only for messages its probe found waiting; receives posted before their
 * message arrives go through jucx, which completes them from {@code ucp_worker_progress}, where the
 * callback is safe.
 *
 * <h2>Layout</h2>
 * {@code ucp_request_param_t} (ucp.h, unchanged in its leading fields since UCX 1.9; later versions
 * only append): {@code op_attr_mask} u32 at 0, {@code flags} u32 at 4, {@code request} at 8, {@code
 * cb} at 16, {@code datatype} at 24, {@code user_data} at 32, {@code reply_buffer} at 40, {@code
 * memory_type} at 48, {@code recv_info} at 56, {@code memh} at 64; UCX reads a field only if its
 * bit is in the mask. {@code ucp_tag_recv_info_t}: {@code sender_tag} at 0, {@code length} at 8.
 * {@code ucs_status_t} is a packed enum, one signed byte (read as an int, the upper bytes of the
 * return register are garbage: a truncation, -9, read as 247).
 *
 * <h2>Who may touch what</h2>
 * One instance per transport, used by the transport's single driving thread only (the worker is
 * {@code UCS_THREAD_MODE_SINGLE}); {@link #close} frees the native area once the worker is gone.
 */
final class UcpTagRecv {
    /** Null when libucp's functions are bound, else why not (the transport then refuses to start). */
    static final String ERROR = bind();

    private static final int FIELD_RECV_INFO = 1 << 7;
    private static final int PARAM_BYTES = 128; // the 72 bytes of 1.13's struct, with room to spare
    private static final int INFO_OFFSET = PARAM_BYTES;
    /** UCS_ERR_LAST: status pointers at or above -100 (unsigned) are errors; 0 is UCS_OK. */
    private static final long ERR_LAST = -100;
    static final int INPROGRESS = 1;

    private static String bind() {
        try {
            Native.register(UcpTagRecv.class, NativeLibrary.getInstance("libucp.so.0"));
            return null;
        } catch (UnsatisfiedLinkError | NoClassDefFoundError | IllegalArgumentException e) {
            return "cannot bind libucp.so.0's tag receive through JNA: " + e;
        }
    }

    private static native long ucp_tag_recv_nbx(long worker, long buffer, long count, long tag, long tagMask, long param);

    private static native byte ucp_request_check_status(long request); // ucs_status_t is a packed (1-byte) enum

    private static native byte ucp_tag_recv_request_test(long request, long info);

    private static native void ucp_request_free(long request);

    private static native void ucp_request_cancel(long worker, long request);

    private final long worker;
    /** The request parameters, then the receive info; malloc'd, freed by {@link #close}. */
    private long area;
    /** {@link #area}'s view, made once (no allocation per receive). */
    private final Pointer mem;

    UcpTagRecv(long worker) {
        this.worker = worker;
        this.area = Native.malloc(PARAM_BYTES + 16);
        if (area == 0) {
            throw new OutOfMemoryError("UCX transport: 144 bytes of native memory");
        }
        this.mem = new Pointer(area);
        mem.setMemory(0, PARAM_BYTES + 16, (byte) 0);
        mem.setInt(0, FIELD_RECV_INFO);
        mem.setLong(56, area + INFO_OFFSET);
    }

    /**
     * Posts the receive. Returns a UCP request (a pointer, &gt; 0) still in progress, or -1 if the
     * message was received at once (its length is the probe's: UCX up to 1.15 leaves the info area
     * unset then); throws {@link Status} with UCX's status if UCX refused or failed it at once.
     */
    long post(long buffer, long count, long tag, long tagMask) {
        long r = ucp_tag_recv_nbx(worker, buffer, count, tag, tagMask, area);
        if (r == 0) {
            return -1;
        }
        if (Long.compareUnsigned(r, ERR_LAST) >= 0) {
            throw new Status((int) r);
        }
        return r;
    }

    /** {@link #INPROGRESS}, {@code UCS_OK} (0), or UCX's error status. */
    static int status(long request) {
        return ucp_request_check_status(request);
    }

    /** The received length of a completed request (the info area is reused). */
    long length(long request) {
        ucp_tag_recv_request_test(request, area + INFO_OFFSET);
        return mem.getLong(INFO_OFFSET + 8);
    }

    /** Releases a request: at once if complete, else UCX releases it when it completes. */
    static void free(long request) {
        ucp_request_free(request);
    }

    /** Cancels a receive still in progress (it completes with UCS_ERR_CANCELED if UCX can). */
    void cancel(long request) {
        ucp_request_cancel(worker, request);
    }

    /** Frees the native area; after the worker is destroyed. */
    void close() {
        if (area != 0) {
            Native.free(area);
            area = 0;
        }
    }

    /** UCX's status for a receive it refused or failed when posted. */
    static final class Status extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final int status;

        Status(int status) {
            super(null, null, false, false);
            this.status = status;
        }
    }
}
