/*
 * sharp4j's native reduction kernels: dst[i] = a[i] op b[i] for the four element types and the
 * nine ops, called through JNI by org.sharp4j.coll.NativeKernels for direct buffers from 2 KiB.
 *
 * Why native: C2 (JDK 17 and 25) vectorises element-wise loops over Java arrays only, not over
 * raw addresses, byte-buffer VarHandles or MemorySegments, so the Java kernels either run
 * scalar (0.3-0.5 ns per element) or stage blocks through L1-resident arrays (three extra
 * copies per block, 2.5-3x a plain copy). gcc vectorises these loops in place: one pass over
 * the operands, at the memory's bandwidth (about 1.5x a plain copy for dst = a op b, which
 * moves three streams where a copy moves two).
 *
 * Bits: every kernel computes exactly what Reductions' Java forms compute, element by element
 * in the same operand order (a is the left operand):
 *  - INT/LONG SUM and PROD wrap (two's complement), done in unsigned arithmetic because signed
 *    overflow is undefined in C;
 *  - LAND/LOR give 1 or 0, non-zero being true;
 *  - FLOAT/DOUBLE SUM/PROD are single IEEE operations in the element's own precision (SSE/AVX:
 *    no x87 extended precision; -ffp-contract=off so that nothing is fused);
 *  - FLOAT/DOUBLE MIN/MAX follow java.lang.Math.min/max: a NaN operand wins (a first), and
 *    -0.0 is below +0.0.
 * Denormals are kept (no flush-to-zero: the library never changes MXCSR).
 *
 * Aliasing (the Java caller's contract): dst may be a, or b, at the same address; dst2 is null,
 * or a or b at the same address, or disjoint from the rest. Each block of BLOCK bytes is read
 * whole before it is written, and dst2's copy of a block is written after the block's fold.
 *
 * Built by the Makefile next to this file (the hierarchy module's build, when gcc and the JDK's
 * jni.h are there); loaded from the jar by NativeKernels, which falls back to the Java kernels
 * when it is absent or cannot load.
 */
#define _GNU_SOURCE /* process_vm_readv, process_vm_writev */
#include <emmintrin.h> /* the streaming copy's SSE2 non-temporal stores */
#include <jni.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>
#include <sys/prctl.h>
#include <sys/syscall.h> /* SYS_membarrier */
#include <unistd.h>
#include <sys/uio.h>

/* Element types and ops, in the order of org.sharp4j.DataType and org.sharp4j.Op:
 * NativeKernels checks this string against the enums before it uses the library. */
static const char ENUMS[] = "INT,LONG,FLOAT,DOUBLE;SUM,PROD,MIN,MAX,BAND,BOR,BXOR,LAND,LOR";
enum { T_INT, T_LONG, T_FLOAT, T_DOUBLE };
enum { O_SUM, O_PROD, O_MIN, O_MAX, O_BAND, O_BOR, O_BXOR, O_LAND, O_LOR };

/* Bytes per block for the two-destination copy and the k-input fold: a block of the accumulator
 * stays in L1 while every input's block is folded into it. */
#define BLOCK 4096

#define CLONES __attribute__((target_clones("avx2", "default")))

/* Math.min/max for one element type, exactly as java.lang.Math writes them. */
#define JMINMAX(T, NAME, BITS, UT)                                                   \
    static inline T NAME##min(T a, T b) {                                            \
        UT bb; memcpy(&bb, &b, sizeof bb);                                           \
        if (a != a) return a;                                                        \
        if (a == 0 && b == 0 && bb == ((UT)1 << (BITS - 1))) return b;               \
        return a <= b ? a : b;                                                       \
    }                                                                                \
    static inline T NAME##max(T a, T b) {                                            \
        UT ab; memcpy(&ab, &a, sizeof ab);                                           \
        if (a != a) return a;                                                        \
        if (a == 0 && b == 0 && ab == ((UT)1 << (BITS - 1))) return b;               \
        return a >= b ? a : b;                                                       \
    }
JMINMAX(float, jf, 32, uint32_t)
JMINMAX(double, jd, 64, uint64_t)

/* One kernel in its three aliasing forms: d = x op y with nothing shared (restrict, so gcc
 * vectorises without runtime checks), d = d op y (in place on the left operand), and the
 * general form (d is y). */
#define KERNEL(NAME, T, EXPR)                                                          \
    CLONES static void NAME##_3(T *restrict d, const T *restrict x, const T *restrict y, long n) { \
        for (long i = 0; i < n; i++) { T a = x[i], b = y[i]; d[i] = (EXPR); }         \
    }                                                                                  \
    CLONES static void NAME##_2(T *restrict d, const T *restrict y, long n) {          \
        for (long i = 0; i < n; i++) { T a = d[i], b = y[i]; d[i] = (EXPR); }         \
    }                                                                                  \
    static void NAME##_g(T *d, const T *x, const T *y, long n) {                       \
        for (long i = 0; i < n; i++) { T a = x[i], b = y[i]; d[i] = (EXPR); }         \
    }                                                                                  \
    CLONES static void NAME##_4(T *restrict d, T *restrict d2, const T *restrict x, const T *restrict y, long n) { \
        for (long i = 0; i < n; i++) { T a = x[i], b = y[i]; T r = (EXPR); d[i] = r; d2[i] = r; } \
    }                                                                                  \
    CLONES static void NAME##_3t(T *restrict d, T *restrict d2, const T *restrict y, long n) { \
        for (long i = 0; i < n; i++) { T a = d[i], b = y[i]; T r = (EXPR); d[i] = r; d2[i] = r; } \
    }                                                                                  \
    static void NAME##_two(void *d, void *d2, const void *x, const void *y, long n) {  \
        if (d == x) NAME##_3t((T *)d, (T *)d2, (const T *)y, n);                       \
        else NAME##_4((T *)d, (T *)d2, (const T *)x, (const T *)y, n);                 \
    }                                                                                  \
    static void NAME(void *d, const void *x, const void *y, long n) {                  \
        if (d == x) NAME##_2((T *)d, (const T *)y, n);                                 \
        else if (d == y) NAME##_g((T *)d, (const T *)x, (const T *)y, n);              \
        else NAME##_3((T *)d, (const T *)x, (const T *)y, n);                          \
    }

#define INTEGER_KERNELS(P, T, UT)                                   \
    KERNEL(P##_sum, T, (T)((UT)a + (UT)b))                          \
    KERNEL(P##_prod, T, (T)((UT)a * (UT)b))                         \
    KERNEL(P##_min, T, a <= b ? a : b)                              \
    KERNEL(P##_max, T, a >= b ? a : b)                              \
    KERNEL(P##_band, T, a & b)                                      \
    KERNEL(P##_bor, T, a | b)                                       \
    KERNEL(P##_bxor, T, a ^ b)                                      \
    KERNEL(P##_land, T, (T)((a != 0) & (b != 0)))                   \
    KERNEL(P##_lor, T, (T)((a != 0) | (b != 0)))
INTEGER_KERNELS(i32, int32_t, uint32_t)
INTEGER_KERNELS(i64, int64_t, uint64_t)

#define FP_KERNELS(P, T, M)                 \
    KERNEL(P##_sum, T, a + b)               \
    KERNEL(P##_prod, T, a * b)              \
    KERNEL(P##_min, T, M##min(a, b))        \
    KERNEL(P##_max, T, M##max(a, b))
FP_KERNELS(f32, float, jf)
FP_KERNELS(f64, double, jd)

typedef void (*kernel_fn)(void *, const void *, const void *, long);

/* [type][op]; NULL where the op is not defined for the type (Java rejects those first). */
static const kernel_fn KERNELS[4][9] = {
    {i32_sum, i32_prod, i32_min, i32_max, i32_band, i32_bor, i32_bxor, i32_land, i32_lor},
    {i64_sum, i64_prod, i64_min, i64_max, i64_band, i64_bor, i64_bxor, i64_land, i64_lor},
    {f32_sum, f32_prod, f32_min, f32_max, NULL, NULL, NULL, NULL, NULL},
    {f64_sum, f64_prod, f64_min, f64_max, NULL, NULL, NULL, NULL, NULL},
};
typedef void (*kernel2_fn)(void *, void *, const void *, const void *, long);

/* The same, writing each result to two destinations in one pass: d2 distinct from d, x and y;
 * d is x (in place) or distinct from x and y. */
static const kernel2_fn KERNELS2[4][9] = {
    {i32_sum_two, i32_prod_two, i32_min_two, i32_max_two, i32_band_two, i32_bor_two, i32_bxor_two, i32_land_two, i32_lor_two},
    {i64_sum_two, i64_prod_two, i64_min_two, i64_max_two, i64_band_two, i64_bor_two, i64_bxor_two, i64_land_two, i64_lor_two},
    {f32_sum_two, f32_prod_two, f32_min_two, f32_max_two, NULL, NULL, NULL, NULL, NULL},
    {f64_sum_two, f64_prod_two, f64_min_two, f64_max_two, NULL, NULL, NULL, NULL, NULL},
};
static const int SIZES[4] = {4, 8, 4, 8};

static kernel_fn lookup(JNIEnv *env, jint type, jint op) {
    if (type < 0 || type > 3 || op < 0 || op > 8 || KERNELS[type][op] == NULL) {
        jclass iae = (*env)->FindClass(env, "java/lang/IllegalArgumentException");
        if (iae != NULL) (*env)->ThrowNew(env, iae, "sharp4j native kernels: no kernel for this type and op");
        return NULL;
    }
    return KERNELS[type][op];
}

JNIEXPORT jstring JNICALL Java_org_sharp4j_coll_NativeKernels_enums(JNIEnv *env, jclass cls) {
    (void)cls;
    return (*env)->NewStringUTF(env, ENUMS);
}

/* dst = a op b over n elements, and the same bits into dst2 unless it is null. The Java caller
 * has checked that every buffer is direct and every range lies inside its buffer. */
JNIEXPORT void JNICALL Java_org_sharp4j_coll_NativeKernels_fold(JNIEnv *env, jclass cls, jint type, jint op,
        jobject dst, jlong dOff, jobject dst2, jlong d2Off, jobject a, jlong aOff, jobject b, jlong bOff, jint n) {
    (void)cls;
    kernel_fn k = lookup(env, type, op);
    if (k == NULL) return;
    char *d = (char *)(*env)->GetDirectBufferAddress(env, dst) + dOff;
    const char *x = (const char *)(*env)->GetDirectBufferAddress(env, a) + aOff;
    const char *y = (const char *)(*env)->GetDirectBufferAddress(env, b) + bOff;
    long size = SIZES[type];
    if (dst2 == NULL) {
        k(d, x, y, n);
        return;
    }
    char *d2 = (char *)(*env)->GetDirectBufferAddress(env, dst2) + d2Off;
    if (d2 != d && d2 != x && d2 != y && d != y) {
        /* One pass, both stores in the loop: a fold into d followed by a copy of each block to d2
         * measured 1.3-2x slower inside a 2-rank Allreduce (the tile owner's case), though not alone. */
        KERNELS2[type][op](d, d2, x, y, n);
        return;
    }
    long step = BLOCK / size;
    for (long i = 0; i < n; i += step) {
        long m = n - i < step ? n - i : step;
        k(d + i * size, x + i * size, y + i * size, m);
        if (d2 != d) memmove(d2 + i * size, d + i * size, (size_t)(m * size));
    }
}

/* dst = ((x[0] op x[1]) op x[2]) ... op x[k-1] over n elements, block by block (each block of
 * the accumulator stays in L1 while the inputs are folded into it), and into dst2 unless it is
 * null. dst may be x[0] or x[1]; dst2 may be any input at the same address. k >= 2. */
JNIEXPORT void JNICALL Java_org_sharp4j_coll_NativeKernels_foldAll(JNIEnv *env, jclass cls, jint type, jint op,
        jobject dst, jlong dOff, jobject dst2, jlong d2Off, jobjectArray xs, jintArray xOffs, jint k, jint n) {
    (void)cls;
    enum { MAX_K = 256 };
    kernel_fn fn = lookup(env, type, op);
    if (fn == NULL) return;
    if (k < 2 || k > MAX_K) {
        jclass iae = (*env)->FindClass(env, "java/lang/IllegalArgumentException");
        if (iae != NULL) (*env)->ThrowNew(env, iae, "sharp4j native kernels: a fold takes 2 to 256 inputs");
        return;
    }
    const char *x[MAX_K];
    jint off[MAX_K];
    (*env)->GetIntArrayRegion(env, xOffs, 0, k, off);
    if ((*env)->ExceptionCheck(env)) return;
    for (jint j = 0; j < k; j++) {
        jobject xj = (*env)->GetObjectArrayElement(env, xs, j);
        if (xj == NULL) return; /* an exception is pending, or Java passed a null it had checked */
        x[j] = (const char *)(*env)->GetDirectBufferAddress(env, xj) + off[j];
        (*env)->DeleteLocalRef(env, xj); /* the array keeps the buffer reachable */
    }
    char *d = (char *)(*env)->GetDirectBufferAddress(env, dst) + dOff;
    char *d2 = dst2 == NULL ? NULL : (char *)(*env)->GetDirectBufferAddress(env, dst2) + d2Off;
    /* the last input's step writes d2 in the same pass where d2 is none of the other operands */
    int twoAtLast = d2 != NULL && d2 != d;
    for (jint j = 0; j < k && twoAtLast; j++) {
        twoAtLast = d2 != x[j];
    }
    kernel2_fn fn2 = KERNELS2[type][op];
    long size = SIZES[type];
    long step = BLOCK / size;
    for (long i = 0; i < n; i += step) {
        long m = n - i < step ? n - i : step;
        long o = i * size;
        fn(d + o, x[0] + o, x[1] + o, m);
        for (jint j = 2; j < k - 1; j++) {
            fn(d + o, d + o, x[j] + o, m);
        }
        if (k > 2) {
            if (twoAtLast) fn2(d + o, d2 + o, d + o, x[k - 1] + o, m);
            else fn(d + o, d + o, x[k - 1] + o, m);
        }
        if (d2 != NULL && d2 != d && !(twoAtLast && k > 2)) memmove(d2 + o, d + o, (size_t)(m * size));
    }
}

/* A copy whose stores bypass this core's caches (non-temporal), for data that another core reads
 * next: the direct Reduce's non-root copying its input into its slot, which the root folds. With
 * ordinary stores the root reads lines that are modified in the copier's cache, a transfer per
 * line between the cores; on this project's VM that made 2-rank Reduce bistable, 60-70 us or
 * 160-280 us per MiB for seconds at a time (OSU port against Open MPI Java: 0.27-1.98), and with
 * these stores it measured 77-150 us and 0.45-0.81. The sfence makes every store globally visible
 * before the caller's next store (its release of the progress word). The unaligned head (to 16
 * bytes) and the tail under 64 bytes go by memcpy. */
JNIEXPORT void JNICALL Java_org_sharp4j_coll_NativeKernels_copyStreaming(JNIEnv *env, jclass cls, jobject dst, jlong dOff,
        jobject src, jlong sOff, jlong bytes) {
    (void)cls;
    char *d = (char *)(*env)->GetDirectBufferAddress(env, dst) + dOff;
    const char *s = (const char *)(*env)->GetDirectBufferAddress(env, src) + sOff;
    long head = (long)((16 - ((uintptr_t)d & 15)) & 15);
    if (head > bytes) head = (long)bytes;
    memcpy(d, s, (size_t)head);
    d += head;
    s += head;
    bytes -= head;
    long lines = (long)(bytes / 64);
    for (long i = 0; i < lines; i++) {
        const char *from = s + 64 * i;
        char *to = d + 64 * i;
        __m128i a = _mm_loadu_si128((const __m128i *)from);
        __m128i b = _mm_loadu_si128((const __m128i *)(from + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(from + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(from + 48));
        _mm_stream_si128((__m128i *)to, a);
        _mm_stream_si128((__m128i *)(to + 16), b);
        _mm_stream_si128((__m128i *)(to + 32), c);
        _mm_stream_si128((__m128i *)(to + 48), e);
    }
    memcpy(d + 64 * lines, s + 64 * lines, (size_t)(bytes - 64 * lines));
    _mm_sfence();
}

/* ---- Reading another process's memory (CMA: cross-memory attach) ----
 *
 * For the cma Reduce (org.sharp4j.coll.PeerReads): the root reads a member's input where it lies,
 * in the member's process, instead of the member copying it into shared memory first; one copy,
 * by the kernel, as Open MPI's shared-memory transport does (vader's single copy). The kernel
 * checks the reader's ptrace access to the peer (same user, and under Yama's ptrace_scope 1 the
 * peer must have named its readers: allowPeerReads). */

/* The address of a direct buffer's first byte, as a number another process can be told; 0 for null (HotSpot's
 * GetDirectBufferAddress reads the field of a null reference and crashes the JVM: seen once with a prototype). */
JNIEXPORT jlong JNICALL Java_org_sharp4j_coll_NativeKernels_address(JNIEnv *env, jclass cls, jobject buf) {
    (void)cls;
    return buf == NULL ? 0 : (jlong)(uintptr_t)(*env)->GetDirectBufferAddress(env, buf);
}

/* Copies bytes between local and address remote of process pid, into local (process_vm_readv) or,
 * write, into the peer (process_vm_writev); returns bytes, or -errno (ESRCH: no such process;
 * EPERM: no ptrace access; EFAULT: the range is not mapped there). A partial copy (the kernel stops
 * at an unmapped page) is continued from where it stopped, and ends in EFAULT there: the caller
 * never takes part of a range for the whole. */
static jlong peer_copy(jlong pid, char *local, jlong remote, jlong bytes, int write) {
    jlong done = 0;
    while (done < bytes) {
        struct iovec l = {local + done, (size_t)(bytes - done)};
        struct iovec r = {(void *)(uintptr_t)(remote + done), (size_t)(bytes - done)};
        ssize_t n = write ? process_vm_writev((pid_t)pid, &l, 1, &r, 1, 0) : process_vm_readv((pid_t)pid, &l, 1, &r, 1, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -(jlong)errno;
        }
        if (n == 0) return -(jlong)EFAULT;
        done += n;
    }
    return done;
}

/* Copies bytes at address remote of process pid into dst + dOff (peer_copy). */
JNIEXPORT jlong JNICALL Java_org_sharp4j_coll_NativeKernels_readPeer(JNIEnv *env, jclass cls, jlong pid, jlong remote,
        jobject dst, jlong dOff, jlong bytes) {
    (void)cls;
    return peer_copy(pid, (char *)(*env)->GetDirectBufferAddress(env, dst) + dOff, remote, bytes, 0);
}

/* Copies bytes from src + sOff to address remote of process pid (peer_copy): the split cma
 * algorithms write their slice of the result into the other ranks' outputs. */
JNIEXPORT jlong JNICALL Java_org_sharp4j_coll_NativeKernels_writePeer(JNIEnv *env, jclass cls, jlong pid, jlong remote,
        jobject src, jlong sOff, jlong bytes) {
    (void)cls;
    return peer_copy(pid, (char *)(*env)->GetDirectBufferAddress(env, src) + sOff, remote, bytes, 1);
}

/* prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY): under Yama's ptrace_scope 1 lets the other processes
 * of this user read this one's memory (Open MPI does the same for its single copy). 0, or -errno. */
JNIEXPORT jint JNICALL Java_org_sharp4j_coll_NativeKernels_allowPeerReads(JNIEnv *env, jclass cls) {
    (void)env;
    (void)cls;
#ifndef PR_SET_PTRACER
#define PR_SET_PTRACER 0x59616d61
#endif
#ifndef PR_SET_PTRACER_ANY
#define PR_SET_PTRACER_ANY ((unsigned long)-1)
#endif
    return prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0) == 0 ? 0 : -errno;
}

/* membarrier(cmd, 0, 0) (Linux 4.14+ for the private expedited commands): its result (the query's
 * mask of supported commands, or 0), or -errno. ProcessFence's barrier: its callers are rare paths
 * (a second thread's entry, a close), so a JNI call's tens of nanoseconds do not matter; JNI and not
 * JNA because this library is loaded anyway and JNA's load costs 100 ms and megabytes of garbage. */
JNIEXPORT jlong JNICALL Java_org_sharp4j_coll_NativeKernels_membarrier(JNIEnv *env, jclass cls, jint cmd) {
    (void)env;
    (void)cls;
#ifdef SYS_membarrier
    long r = syscall(SYS_membarrier, (int)cmd, 0u, 0);
    return r < 0 ? -(jlong)errno : (jlong)r;
#else
    (void)cmd;
    return -(jlong)ENOSYS;
#endif
}
