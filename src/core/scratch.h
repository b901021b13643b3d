/* Scratch buffers for collective algorithms, kept for reuse by the context. */
#ifndef COHORT_SCRATCH_H
#define COHORT_SCRATCH_H

#include <stddef.h>
#include "cohort.h"

#define COHORT_SCRATCH_SLOTS 4

typedef struct {
    void *buf[COHORT_SCRATCH_SLOTS];
    size_t size[COHORT_SCRATCH_SLOTS];
} cohort_scratch_cache_t;

/* A buffer of at least @a bytes (64-byte aligned), or NULL when memory ran out (logged).
 * Give it back with cohort_scratch_put. */
void *cohort_scratch_get(cohort_context_t *ctx, size_t bytes);
/* Return a buffer from cohort_scratch_get (NULL is ignored). */
void cohort_scratch_put(cohort_context_t *ctx, void *buf);
void cohort_scratch_cleanup(cohort_context_t *ctx);

#endif
