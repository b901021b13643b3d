/*
 * The bound a collective's bus bandwidth is measured against: what one thread gets from a
 * plain copy of one buffer, libc's memcpy on host memory or cudaMemcpy device to device, in
 * the processes of the benchmark, with every rank copying at the same moment so that the copies
 * share the memory system as the collectives' do.
 */
#include <stdlib.h>
#include <string.h>
#include "sweep.h"

/* The two buffers and, for device memory, the two events that time a copy on the GPU. */
typedef struct {
    const bench_cudart_t *cu;
    void *src, *dst;
    void *ev[2];
} bench_copier_t;

/* Called through a volatile pointer so that the compiler can neither drop a copy whose result
 * nobody reads nor inline it: what is timed is libc's memcpy, as UCX's shared memory uses it. */
static void *(*volatile bench_memcpy_fn)(void *, const void *, size_t) = memcpy;

static int bench_copier_init(bench_copier_t *c, size_t bytes)
{
    const bench_cudart_t *cu = c->cu;

    if (cu == NULL) {
        c->src = malloc(bytes);
        c->dst = malloc(bytes);
        if (c->src == NULL || c->dst == NULL) {
            return -1;
        }
        /* Touch every page of both, so that no page fault is timed. */
        memset(c->src, 1, bytes);
        memset(c->dst, 0, bytes);
        return 0;
    }
    if (cu->malloc_device(&c->src, bytes) != 0 || cu->malloc_device(&c->dst, bytes) != 0 ||
        cu->event_create(&c->ev[0]) != 0 || cu->event_create(&c->ev[1]) != 0) {
        return -1;
    }
    return cu->memset_device(c->src, 1, bytes) != 0 || cu->memset_device(c->dst, 0, bytes) != 0 ||
                   cu->synchronize() != 0
               ? -1
               : 0;
}

static void bench_copier_fini(bench_copier_t *c)
{
    if (c->cu == NULL) {
        free(c->src);
        free(c->dst);
        return;
    }
    for (int i = 0; i < 2; i++) {
        if (c->ev[i] != NULL) {
            c->cu->event_destroy(c->ev[i]);
        }
    }
    if (c->src != NULL) {
        c->cu->free_device(c->src);
    }
    if (c->dst != NULL) {
        c->cu->free_device(c->dst);
    }
}

/* One copy's time in seconds; 0 when it could not be timed. A device-to-device cudaMemcpy
 * returns before the copy ends: events on the GPU time it. */
static double bench_copier_time(bench_copier_t *c, size_t bytes)
{
    const bench_cudart_t *cu = c->cu;
    double t0;
    float ms = 0;

    if (cu == NULL) {
        t0 = bench_now();
        bench_memcpy_fn(c->dst, c->src, bytes);
        return bench_now() - t0;
    }
    if (cu->event_record(c->ev[0], NULL) != 0 ||
        cu->memcpy_any(c->dst, c->src, bytes, BENCH_CUDA_MEMCPY_DEFAULT) != 0 ||
        cu->event_record(c->ev[1], NULL) != 0 || cu->event_synchronize(c->ev[1]) != 0 ||
        cu->event_elapsed(&ms, c->ev[0], c->ev[1]) != 0) {
        return 0;
    }
    return ms * 1e-3;
}

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

int bench_memcpy_bound(const bench_bound_spec_t *spec, double *gbs)
{
    bench_copier_t c = {.cu = spec->cu};
    double *t = calloc((size_t)spec->reps, sizeof(*t)), dt;
    int ok, rc = 0;

    ok = t != NULL && spec->reps > 0 && bench_copier_init(&c, spec->bytes) == 0;
    /* The first copy warms caches and TLBs and is not counted. Every rank syncs as often as
     * the others, copying or not, or a rank without buffers would leave the rest waiting. */
    for (int i = 0; i <= spec->reps && rc == 0; i++) {
        rc = spec->sync(spec->arg);
        if (rc == 0 && ok) {
            dt = bench_copier_time(&c, spec->bytes);
            ok = dt > 0;
            if (i > 0) {
                t[i - 1] = dt;
            }
        }
    }
    *gbs = 0;
    if (rc == 0 && ok) {
        qsort(t, (size_t)spec->reps, sizeof(*t), bench_cmp_double);
        *gbs = (double)spec->bytes / t[spec->reps / 2] / 1e9;
    }
    bench_copier_fini(&c);
    free(t);
    return rc;
}
