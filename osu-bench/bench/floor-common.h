/* What the C floor models (shm-reduce-floor.c, shm-small-floor.c) share: the clock OSU times with, and pinning. */
#ifndef SHARP4J_FLOOR_COMMON_H
#define SHARP4J_FLOOR_COMMON_H
#include <sched.h>
#include <time.h>

static inline double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static inline void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    sched_setaffinity(0, sizeof s, &s);
}
#endif
