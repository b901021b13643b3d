/* Scratch buffers for collective algorithms, kept for reuse by the context. */
#ifndef COHORT_SCRATCH_H
#define COHORT_SCRATCH_H

#include <stddef.h>
#include "cohort.h"

#define COHORT_SCRATCH_SLOTS 4

/* A cache of the last few buffers of one allocator: the context's host scratch (malloc), and
 * the CUDA module's page-locked staging buffers (gpu.c), which cost far more to make. */
typedef struct {
    void *buf[COHORT_SCRATCH_SLOTS];
    size_t size[COHORT_SCRATCH_SLOTS];
    /* NULL: posix_memalign and free. Otherwise raw blocks of at least @a bytes (64-byte
     * aligned), or NULL when memory ran out. */
    void *(*alloc)(void *arg, size_t bytes);
    void (*release)(void *arg, void *raw);
    void *arg;
} cohort_scratch_cache_t;

/* A buffer of at least @a bytes (64-byte aligned), or NULL when memory ran out (logged).
 * Give it back with cohort_scratch_put. */
void *cohort_scratch_get(cohort_context_t *ctx, size_t bytes);
/* Return a buffer from cohort_scratch_get (NULL is ignored). */
void cohort_scratch_put(cohort_context_t *ctx, void *buf);
void cohort_scratch_cleanup(cohort_context_t *ctx);

/* The same over any cache: NULL (not logged) when memory ran out. */
void *cohort_scratch_cache_get(cohort_scratch_cache_t *c, size_t bytes);
void cohort_scratch_cache_put(cohort_scratch_cache_t *c, void *buf);
void cohort_scratch_cache_cleanup(cohort_scratch_cache_t *c);

#endif
