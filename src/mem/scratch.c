/*
 * Fresh large allocations are expensive: glibc serves them with mmap and returns them with
 * munmap, so every collective would page-fault its scratch in again (measured here: a fresh
 * 32 MiB buffer costs ~10x a reused one). The context keeps the last few buffers instead.
 */
#include <stdint.h>
#include <stdlib.h>
#include "mem/room.h"
#include "mem/scratch.h"

/* Each buffer carries its capacity just before the address handed out. */
#define COHORT_SCRATCH_HEADER 64

static size_t cohort_scratch_capacity(const void *buf)
{
    return *(const size_t *)((const char *)buf - COHORT_SCRATCH_HEADER);
}

static void *cohort_scratch_raw_alloc(const cohort_scratch_cache_t *c, size_t bytes)
{
    void *raw = NULL;

    if (c->alloc != NULL) {
        return c->alloc(c->arg, bytes);
    }
    return posix_memalign(&raw, 64, bytes) == 0 ? raw : NULL;
}

static void cohort_scratch_raw_free(const cohort_scratch_cache_t *c, void *buf)
{
    char *raw = (char *)buf - COHORT_SCRATCH_HEADER;

    if (c->release != NULL) {
        c->release(c->arg, raw);
    } else {
        free(raw);
    }
}

void *cohort_scratch_cache_get(cohort_scratch_cache_t *c, size_t bytes)
{
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
        (raw = cohort_scratch_raw_alloc(c, bytes + COHORT_SCRATCH_HEADER)) == NULL) {
        return NULL;
    }
    *(size_t *)raw = bytes;
    return raw + COHORT_SCRATCH_HEADER;
}

void *cohort_scratch_get(cohort_context_t *ctx, size_t bytes)
{
    void *buf = cohort_scratch_cache_get(&cohort_mem_room(ctx)->scratch, bytes);

    if (buf == NULL) {
        cohort_log(cohort_mem_log(ctx), COHORT_LOG_ERROR,
                   "out of memory allocating %zu bytes of collective scratch", bytes);
    }
    return buf;
}

void cohort_scratch_cache_put(cohort_scratch_cache_t *c, void *buf)
{
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
        int keep_new = cohort_scratch_capacity(buf) > c->size[slot];
        cohort_scratch_raw_free(c, keep_new ? c->buf[slot] : buf);
        if (!keep_new) {
            return;
        }
    }
    c->buf[slot] = buf;
    c->size[slot] = cohort_scratch_capacity(buf);
}

void cohort_scratch_put(cohort_context_t *ctx, void *buf)
{
    cohort_scratch_cache_put(&cohort_mem_room(ctx)->scratch, buf);
}

void cohort_scratch_cache_cleanup(cohort_scratch_cache_t *c)
{
    for (int i = 0; i < COHORT_SCRATCH_SLOTS; i++) {
        if (c->buf[i] != NULL) {
            cohort_scratch_raw_free(c, c->buf[i]);
            c->buf[i] = NULL;
        }
    }
}

void cohort_scratch_cleanup(cohort_context_t *ctx)
{
    cohort_scratch_cache_cleanup(&cohort_mem_room(ctx)->scratch);
}
