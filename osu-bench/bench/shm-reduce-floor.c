/*
 * What a two-rank Reduce of N bytes costs on this machine with the protocol of sharp4j's direct Reduce
 * (DirectReduceAlgorithm) and with Open MPI's single copy, in C, without the JVM: the floor the Java code
 * can reach, and the bar it is measured against (see the README, "Benchmarks": the Intel VM's Reduce at
 * 16-512 KiB).
 *
 *   gcc -O3 -march=native -o /tmp/shm-reduce-floor osu-bench/bench/shm-reduce-floor.c
 *   for m in 0 1 2 3 4; do /tmp/shm-reduce-floor 65536 $m; done; /tmp/shm-reduce-floor 65536 3 65536
 *
 * Two processes (fork), pinned to CPUs 0 (the root) and 1. Per call, the non-root waits until the root has
 * finished the previous call (its slot is free), then publishes its input of N floats in pieces (16 KiB, or
 * the third argument's bytes) with a release store of "call << 20 | pieces done"; the root waits for each
 * piece (acquire) and folds out = mine + piece. Modes, how the piece reaches the root:
 *   0  the non-root copies it into shared memory (memcpy); the root reads the lines there
 *   1  as 0, and the root flushes the lines it read (clflushopt), so the next copy finds them in no cache
 *   2  the non-root copies with non-temporal stores (SSE2), as sharp4j's streaming stores do
 *   3  the non-root publishes only; the root reads its input by process_vm_readv (CMA), as Open MPI does
 *   4  no pieces: each rank reads half of the other's input by CMA and folds it with its own half; the
 *      non-root writes its half of the result into the root's output by process_vm_writev
 * Prints the root's mean time per call over the second half of 3000 calls. Modes 3 and 4 need ptrace
 * access between the two processes (Yama's ptrace_scope 0, or root).
 */
#define _GNU_SOURCE
#include <immintrin.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "floor-common.h"

#define CALLS 3000

int main(int argc, char **argv) {
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: %s BYTES MODE [PIECE] (0 copy, 1 copy+flush, 2 non-temporal copy, 3 CMA, 4 split CMA)\n", argv[0]);
        return 2;
    }
    size_t n = strtoul(argv[1], NULL, 0) & ~(size_t)127;
    int mode = atoi(argv[2]);
    size_t piece = argc == 4 ? strtoul(argv[3], NULL, 0) & ~(size_t)63 : 16384;
    if (n == 0 || n > (32u << 20) || mode < 0 || mode > 4 || piece == 0) {
        fprintf(stderr, "BYTES 128..32 MiB, MODE 0..4, PIECE a multiple of 64\n");
        return 2;
    }
    /* words: [0] the non-root's progress, [1] the root's last finished call, [2] the non-root's input address,
       mode 4: [3] the root's input address, [4] its output address, [5] the root's call started, [6] the non-root's done */
    volatile uint64_t *ctl = mmap(NULL, 65536 + n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (ctl == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    char *slot = (char *)ctl + 65536;
    int pieces = (int)((n + piece - 1) / piece);
    pid_t root = getpid();
    pid_t child = fork();
    if (child == 0) {
        pin(1);
        float *in = aligned_alloc(64, n);
        for (size_t i = 0; i < n / 4; i++) in[i] = (float)i;
        ctl[2] = (uint64_t)(uintptr_t)in;
        if (mode == 4) {
            size_t h = n / 2;
            float *theirs = aligned_alloc(64, h), *res = aligned_alloc(64, h);
            while (__atomic_load_n(&ctl[4], __ATOMIC_ACQUIRE) == 0) {
            }
            for (uint64_t c = 1; c <= CALLS; c++) {
                while (__atomic_load_n(&ctl[5], __ATOMIC_ACQUIRE) < c) {
                }
                struct iovec l = {theirs, h}, r = {(char *)(uintptr_t)ctl[3] + h, h};
                if (process_vm_readv(root, &l, 1, &r, 1, 0) != (ssize_t)h) {
                    perror("process_vm_readv");
                    _exit(1);
                }
                for (size_t i = 0; i < h / 4; i++) res[i] = theirs[i] + in[h / 4 + i]; /* x0 op x1: the root's first */
                struct iovec lw = {res, h}, rw = {(char *)(uintptr_t)ctl[4] + h, h};
                if (process_vm_writev(root, &lw, 1, &rw, 1, 0) != (ssize_t)h) {
                    perror("process_vm_writev");
                    _exit(1);
                }
                __atomic_store_n(&ctl[6], c, __ATOMIC_RELEASE);
            }
            _exit(0);
        }
        for (uint64_t c = 1; c <= CALLS; c++) {
            while (__atomic_load_n(&ctl[1], __ATOMIC_ACQUIRE) < c - 1) {
            }
            if (mode == 3) {
                __atomic_store_n(&ctl[0], (c << 20) | 0xFFFFF, __ATOMIC_RELEASE);
                continue;
            }
            for (int p = 0; p < pieces; p++) {
                size_t off = (size_t)p * piece, len = n - off < piece ? n - off : piece;
                if (mode == 2) {
                    for (size_t o = 0; o < len; o += 16) {
                        _mm_stream_si128((__m128i *)(slot + off + o), _mm_loadu_si128((const __m128i *)((const char *)in + off + o)));
                    }
                    _mm_sfence();
                } else {
                    memcpy(slot + off, (const char *)in + off, len);
                }
                __atomic_store_n(&ctl[0], (c << 20) | (uint64_t)(p + 1), __ATOMIC_RELEASE);
            }
        }
        _exit(0);
    }
    pin(0);
    float *mine = aligned_alloc(64, n), *out = aligned_alloc(64, n), *tmp = aligned_alloc(64, piece > n ? piece : n);
    for (size_t i = 0; i < n / 4; i++) mine[i] = 1.0f;
    double total = 0;
    if (mode == 4) {
        ctl[3] = (uint64_t)(uintptr_t)mine;
        __atomic_store_n(&ctl[4], (uint64_t)(uintptr_t)out, __ATOMIC_RELEASE);
        while (__atomic_load_n(&ctl[2], __ATOMIC_ACQUIRE) == 0) {
        }
    }
    for (uint64_t c = 1; c <= CALLS && mode == 4; c++) {
        double t0 = now_ns();
        size_t h = n / 2;
        __atomic_store_n(&ctl[5], c, __ATOMIC_RELEASE);
        struct iovec l = {tmp, h}, r = {(void *)(uintptr_t)ctl[2], h};
        if (process_vm_readv(child, &l, 1, &r, 1, 0) != (ssize_t)h) {
            perror("process_vm_readv");
            kill(child, SIGKILL);
            return 1;
        }
        for (size_t i = 0; i < h / 4; i++) out[i] = mine[i] + tmp[i];
        while (__atomic_load_n(&ctl[6], __ATOMIC_ACQUIRE) < c) {
        }
        if (c > CALLS / 2) total += now_ns() - t0;
    }
    for (uint64_t c = 1; c <= CALLS && mode != 4; c++) {
        double t0 = now_ns();
        for (int p = 0; p < pieces; p++) {
            size_t off = (size_t)p * piece, len = n - off < piece ? n - off : piece;
            while (__atomic_load_n(&ctl[0], __ATOMIC_ACQUIRE) < ((c << 20) | (uint64_t)(p + 1))) {
            }
            const float *src = (const float *)(slot + off);
            if (mode == 3) {
                struct iovec l = {tmp, len}, r = {(char *)(uintptr_t)ctl[2] + off, len};
                if (process_vm_readv(child, &l, 1, &r, 1, 0) != (ssize_t)len) {
                    perror("process_vm_readv");
                    kill(child, SIGKILL);
                    return 1;
                }
                src = tmp;
            }
            for (size_t i = 0; i < len / 4; i++) out[off / 4 + i] = mine[off / 4 + i] + src[i];
            if (mode == 1) {
                for (size_t o = 0; o < len; o += 64) _mm_clflushopt((void *)(slot + off + o));
            }
        }
        __atomic_store_n(&ctl[1], c, __ATOMIC_RELEASE);
        if (c > CALLS / 2) total += now_ns() - t0;
    }
    waitpid(child, NULL, 0);
    static const char *names[] = {"copy, read", "copy, read, flush", "non-temporal copy, read", "CMA read", "split CMA"};
    printf("%zu B, %s, pieces of %zu B: %.2f us per call at the root (checksum %g)\n", n, names[mode], mode == 4 ? n / 2 : piece,
            total / (CALLS / 2) / 1e3, out[n / 4 - 1]);
    return 0;
}
