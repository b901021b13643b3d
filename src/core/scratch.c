/*
 * Fresh large allocations are expensive: glibc serves them with mmap and returns them with
 * munmap, so every collective would page-fault its scratch in again (measured here: a fresh
 * 32 MiB buffer costs ~10x a reused one). The context keeps the last few buffers instead.
 */
#include <stdint.h>
#include <stdlib.h>
#include "core/context.h"
#include "core/log.h"
#include "core/scratch.h"

/* Each buffer carries its capacity just before the address handed out. */
#define COHORT_SCRATCH_HEADER 64

static size_t cohort_scratch_capacity(const void *buf)
{
    return *(const size_t *)((const char *)buf - COHORT_SCRATCH_HEADER);
}

void *cohort_scratch_get(cohort_context_t *ctx, size_t bytes)
{
    cohort_scratch_cache_t *c = &ctx->scratch;
    int best = -1;
    char *raw;

    for (int i = 0; i < COHORT_SCRATCH_SLOTS; i++) {
        if (c->buf[i] != NULL && c->size[i] >= bytes && (best < 0 || c->size[i] < c->size[best])) {
            best = i;
        }
    }
    if (best >= 0) {
        void *buf = c->buf[best];
        c->buf[best] = NULL;
        return buf;
    }
    if (bytes > SIZE_MAX - COHORT_SCRATCH_HEADER ||
        posix_memalign((void **)&raw, 64, bytes + COHORT_SCRATCH_HEADER) != 0) {
        cohort_error(ctx, "out of memory allocating %zu bytes of collective scratch", bytes);
        return NULL;
    }
    *(size_t *)raw = bytes;
    return raw + COHORT_SCRATCH_HEADER;
}

void cohort_scratch_put(cohort_context_t *ctx, void *buf)
{
    cohort_scratch_cache_t *c = &ctx->scratch;
    int slot = 0;

    if (buf == NULL) {
        return;
    }
    /* Keep the largest buffers: an empty slot, else the smallest one if this is bigger. */
    for (int i = 0; i < COHORT_SCRATCH_SLOTS; i++) {
        if (c->buf[i] == NULL) {
            slot = i;
            break;
        }
        if (c->size[i] < c->size[slot]) {
            slot = i;
        }
    }
    if (c->buf[slot] != NULL) {
        void *evict = cohort_scratch_capacity(buf) > c->size[slot] ? c->buf[slot] : buf;
        if (evict == buf) {
            free((char *)buf - COHORT_SCRATCH_HEADER);
            return;
        }
        free((char *)evict - COHORT_SCRATCH_HEADER);
    }
    c->buf[slot] = buf;
    c->size[slot] = cohort_scratch_capacity(buf);
}

void cohort_scratch_cleanup(cohort_context_t *ctx)
{
    for (int i = 0; i < COHORT_SCRATCH_SLOTS; i++) {
        if (ctx->scratch.buf[i] != NULL) {
            free((char *)ctx->scratch.buf[i] - COHORT_SCRATCH_HEADER);
            ctx->scratch.buf[i] = NULL;
        }
    }
}
