/*
 * What a two-rank Barrier, an Allreduce of up to 256 bytes and a back-to-back Reduce cost on this machine
 * with the protocol of sharp4j's flat exchange (ExchangeAlgorithm: every rank publishes, every rank reads
 * the other) in C, without the JVM and without any library around it, timed the way OSU's benchmarks time
 * it (a clock read before and after every call), and untimed. See the README, "Benchmarks" ("Where the
 * floor is"): the Barrier here is the floor of sharp4j's Barrier. The Allreduce is not a floor: on
 * 2026-12-07, slow phase, this model's 64-256 B took 0.48-0.53 us P50 where the Java port took 0.38-0.42
 * (0.47-0.51 after the fix below). Until 2026-12-07 a rank compared the peer's signature with its own read
 * back from its published line, which the peer may have fetched by then; ExchangeAlgorithm compares with the
 * value it holds, and so does this model since: its Barrier went from 0.35-0.43 us to 0.30-0.31 (slow phase).
 * The back-to-back Reduce in plain Java is osu-bench/bench/JavaReduceFloor.java.
 *
 *   gcc -O2 -o /tmp/shm-small-floor osu-bench/bench/shm-small-floor.c
 *   /tmp/shm-small-floor barrier 0; /tmp/shm-small-floor setbarrier 0; /tmp/shm-small-floor flags 0
 *   /tmp/shm-small-floor allreduce 64
 *   /tmp/shm-small-floor reduce 64; /tmp/shm-small-floor pingpong 0
 *
 * Two processes (fork), pinned to CPUs 0 and 1, over one shared mapping laid out as a ShmLevel of two
 * members: 32 sets, in each a 128-byte control block per rank (state at +0, signature at +8, status at
 * +16, data of up to 40 bytes inline at +24) and, for 41-256 bytes, an exchange area per rank at a stride
 * of 512 bytes. A call of sequence number s, set s mod 32: the reuse gate (the peer arrived at s - 31;
 * read only when not already known), the input into this rank's line or area, signature and status, the
 * state (release); then the peer's state (acquire, PAUSE between polls), its signature and status, its
 * data lines loaded together, and out = x0 + x1 (floats, member order). "setbarrier" is that without data,
 * sharp4j's Barrier until 2026-12-08; "barrier" is its Barrier since (ExchangeAlgorithm, "The Barrier's own
 * line"): it publishes on the set's line as before, then the first sequence number of its run of Barriers and
 * its sequence number on a line of its own (the same line every call), and polls the peer's such line instead
 * of the peer's line of the set. Slow phase, 2026-12-08, 3 rounds alternating (P50 timed; untimed, calls back
 * to back): barrier 0.276-0.286 us, 0.27-0.30; setbarrier 0.321-0.325, 0.25-0.27; flags 0.281-0.285,
 * 0.22-0.25. Two such lines per rank taken in turn (odd and even calls) 0.291-0.296 timed, 0.28-0.29 untimed.
 * As OSU's osu_allreduce, an untimed barrier follows every Allreduce. "reduce" is a Reduce rooted at rank
 * 0 with calls back to back (OSU's Java OSUReduce, the agent's mpiapps.OsuDirect): rank 1, the leaf,
 * publishes and goes (it runs up to 31 calls ahead, held by the reuse gate); the root publishes its state
 * only, waits for the leaf's and folds. "flags" is the least a barrier can do: one line per rank, the
 * same every call (a counter stored, the other's loaded), no sets, no signature. "pingpong" is one flag
 * each way per call (what the JMH benchmark FlagRoundTrip measures): the machine's phase.
 *
 * Prints, for 100,000 calls after 10,000 untimed ones: the P50, P99 and average of the per-call times
 * averaged over the two ranks (OMB's -z), then the same loop without the clock reads (total / calls).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "floor-common.h"

#define SETS 32
#define CTL 128
#define STRIDE 512
#define INLINE_BYTES 40
#define WARM 10000
#define CALLS 100000

static char *base;       /* the level: control blocks, then the exchange areas */
static int me, peer;
static uint64_t seq, known; /* this rank's last sequence number; the peer's arrival it last saw */
static float in[64], out[64];

static inline volatile uint64_t *ctl(int set, int m) {
    return (volatile uint64_t *)(base + (set * 2 + m) * CTL);
}

static inline char *area(int set, int m, int bytes) {
    return bytes <= INLINE_BYTES ? (char *)ctl(set, m) + 24 : base + SETS * 2 * CTL + (set * 2 + m) * STRIDE;
}

static inline uint64_t await(volatile uint64_t *state, uint64_t target) {
    uint64_t v;
    while ((v = __atomic_load_n(state, __ATOMIC_ACQUIRE)) < target) {
        __builtin_ia32_pause();
    }
    return v;
}

/* One call of the exchange: bytes 0 is a barrier; reduce: a Reduce rooted at rank 0. */
static void exchange(int bytes, int reduce) {
    uint64_t s = ++seq;
    int set = (int)(s & (SETS - 1));
    if (s >= SETS && known < s - SETS + 1) { /* reuse gate */
        known = await(ctl((int)((s - SETS + 1) & (SETS - 1)), peer), s - SETS + 1);
    }
    volatile uint64_t *c = ctl(set, me);
    if (bytes > 0 && !(reduce && me == 0)) { /* a Reduce's root publishes no data: nobody reads it */
        memcpy(area(set, me, bytes), in, bytes);
    }
    const uint64_t sig = 0x5157 + bytes;
    c[1] = sig;            /* signature */
    c[2] = 0;              /* status */
    __atomic_store_n(&c[0], s, __ATOMIC_RELEASE);
    if (reduce && me == 1) {
        return; /* the leaf publishes and goes */
    }
    volatile uint64_t *p = ctl(set, peer);
    await(&p[0], s);
    /* against this call's signature in a register, as ExchangeAlgorithm compares it: not c[1] read back
     * from this rank's line, which the peer may have fetched by then (the read-back then costs a transfer) */
    if (p[1] != sig || p[2] != 0) {
        fprintf(stderr, "mismatch at %lu\n", (unsigned long)s);
        _exit(1);
    }
    if (bytes > 0) {
        const float *x = (const float *)area(set, peer, bytes);
        const float *a = me == 0 ? in : x, *b = me == 0 ? x : in;
        for (int i = 0; i < bytes / 4; i++) {
            out[i] = a[i] + b[i];
        }
    }
}

/* The Barrier's own line: one per rank after the exchange areas; +0 its latest Barrier's sequence number,
 * +8 the first of the run of Barriers that ends there. */
static inline volatile uint64_t *barline(int m) {
    return (volatile uint64_t *)(base + SETS * 2 * (CTL + STRIDE) + m * CTL);
}

static uint64_t last_barrier, barrier_run;

static void barrier(void) {
    uint64_t s = ++seq;
    int set = (int)(s & (SETS - 1));
    if (s >= SETS && known < s - SETS + 1) { /* reuse gate */
        known = await(ctl((int)((s - SETS + 1) & (SETS - 1)), peer), s - SETS + 1);
    }
    volatile uint64_t *c = ctl(set, me);
    const uint64_t sig = 0x5157;
    c[1] = sig;
    c[2] = 0;
    __atomic_store_n(&c[0], s, __ATOMIC_RELEASE);
    if (last_barrier + 1 != s) barrier_run = s;
    last_barrier = s;
    volatile uint64_t *b = barline(me);
    b[1] = barrier_run;
    __atomic_store_n(&b[0], s, __ATOMIC_RELEASE);
    volatile uint64_t *p = barline(peer);
    await(&p[0], s);
    if (p[1] > s) { /* the peer's run began after s: its call s was not a Barrier (ExchangeAlgorithm reads the set's line) */
        fprintf(stderr, "mismatch at %lu\n", (unsigned long)s);
        _exit(1);
    }
    if (known < s) known = s; /* the peer's line of set s is visible with its word */
}

static void flags(void) {
    uint64_t s = ++seq;
    __atomic_store_n(ctl(0, me), s, __ATOMIC_RELEASE);
    await(ctl(0, peer), s);
}

static void pingpong(void) {
    uint64_t s = ++seq;
    volatile uint64_t *mine = ctl(0, me), *theirs = ctl(0, peer);
    if (me == 0) {
        __atomic_store_n(mine, s, __ATOMIC_RELEASE);
        await(theirs, s);
    } else {
        await(theirs, s);
        __atomic_store_n(mine, s, __ATOMIC_RELEASE);
    }
}

static void call(int kind, int bytes) {
    if (kind == 2) {
        pingpong();
    } else if (kind == 4) {
        flags();
    } else if (kind == 0) {
        barrier();
    } else {
        exchange(kind == 5 ? 0 : bytes, kind == 3);
    }
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *a, int n) {
    qsort(a, n, sizeof(double), cmp);
    return a[n / 2];
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s barrier|setbarrier|flags|allreduce|reduce|pingpong BYTES (allreduce, reduce: 4..256, a multiple of 4)\n", argv[0]);
        return 2;
    }
    int kind = strcmp(argv[1], "barrier") == 0 ? 0 : strcmp(argv[1], "allreduce") == 0 ? 1 : strcmp(argv[1], "pingpong") == 0 ? 2
            : strcmp(argv[1], "reduce") == 0 ? 3 : strcmp(argv[1], "flags") == 0 ? 4 : strcmp(argv[1], "setbarrier") == 0 ? 5 : -1;
    int bytes = atoi(argv[2]);
    if (kind < 0 || ((kind == 1 || kind == 3) && (bytes < 4 || bytes > 256 || bytes % 4 != 0))) {
        fprintf(stderr, "barrier|setbarrier|flags|allreduce|reduce|pingpong; allreduce and reduce BYTES 4..256, a multiple of 4\n");
        return 2;
    }
    size_t level = SETS * 2 * (CTL + STRIDE) + 2 * CTL;
    size_t times = 2 * CALLS * sizeof(double);
    char *m = mmap(NULL, 4096 + level + times, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    volatile uint64_t *go = (volatile uint64_t *)m; /* [0] ranks started; [1], [2]: untimed ns per call of rank 0, 1 */
    base = m + 4096;
    double *t = (double *)(base + level); /* rank r's per-call times at t[r * CALLS] */
    memset(t, 0, times); /* no page faults inside the timed calls */
    for (int r = 0; r < 2; r++) {
        if (fork() == 0) {
            pin(r);
            me = r;
            peer = 1 - r;
            for (int i = 0; i < 64; i++) in[i] = (float)(i + 1) * (r + 1);
            __atomic_fetch_add(&go[0], 1, __ATOMIC_SEQ_CST);
            while (__atomic_load_n(&go[0], __ATOMIC_ACQUIRE) < 2) {
            }
            for (int i = 0; i < WARM; i++) {
                call(kind, bytes);
                if (kind == 1) barrier();
            }
            for (int i = 0; i < CALLS; i++) { /* timed as OSU: a clock read on each side of the call */
                double t0 = now_ns();
                call(kind, bytes);
                double t1 = now_ns();
                t[r * CALLS + i] = t1 - t0;
                if (kind == 1) barrier();
            }
            double t0 = now_ns();
            for (int i = 0; i < CALLS; i++) { /* untimed: the loop's total only */
                call(kind, bytes);
                if (kind == 1) barrier();
            }
            double untimed = (now_ns() - t0) / CALLS;
            memcpy((void *)&go[1 + r], &untimed, sizeof untimed);
            if ((kind == 1 || (kind == 3 && r == 0)) && out[0] != in[0] / (r + 1) * 3) { /* x0 + x1 = (i+1) + 2 (i+1) */
                fprintf(stderr, "wrong result on rank %d: %g\n", r, out[0]);
                _exit(1);
            }
            _exit(0);
        }
    }
    int status, bad = 0;
    for (int r = 0; r < 2; r++) {
        wait(&status);
        bad |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
    if (bad) return 1;
    double *mean = malloc(CALLS * sizeof(double)), sum = 0;
    for (int i = 0; i < CALLS; i++) {
        mean[i] = (t[i] + t[CALLS + i]) / 2;
        sum += mean[i];
    }
    qsort(mean, CALLS, sizeof(double), cmp);
    double u0, u1;
    memcpy(&u0, (void *)&go[1], sizeof u0);
    memcpy(&u1, (void *)&go[2], sizeof u1);
    printf("%-9s %4d B: timed per call P50 %.3f us P99 %.3f avg %.3f; untimed %.3f us per call (%s)\n", argv[1], kind == 1 || kind == 3 ? bytes : 0,
           mean[CALLS / 2] / 1e3, mean[CALLS * 99 / 100] / 1e3, sum / CALLS / 1e3, (u0 + u1) / 2 / 1e3,
           kind == 1 ? "with an untimed barrier after each call" : kind == 2 ? "a round trip" : "back to back");
    if (kind == 3) {
        printf("%-9s %4d B: the root's P50 %.3f us, the leaf's %.3f\n", argv[1], bytes, median(t, CALLS) / 1e3, median(t + CALLS, CALLS) / 1e3);
    }
    return 0;
}
