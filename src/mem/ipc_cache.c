/* The cache of peers' device allocations mapped through CUDA IPC: see ipc_cache.h. */
#include <stdlib.h>
#include "mem/gpu.h"
#include "mem/ipc_cache.h"
#include "mem/room.h"

static void cohort_ipc_close(cohort_context_t *ctx, int i)
{
    cohort_gpu_t *gpu = &cohort_mem_room(ctx)->gpu;
    cohort_ipc_cache_t *c = &gpu->ipc;

    gpu->mod->ipc_close(c->maps[i].base);
    c->maps[i] = c->maps[--c->n];
}

/* Close unused mappings past the limit, the least recently used first, and unused stale ones. */
static void cohort_ipc_trim(cohort_context_t *ctx)
{
    cohort_mem_room_t *room = cohort_mem_room(ctx);
    cohort_ipc_cache_t *c = &room->gpu.ipc;
    int idle = 0;

    for (int i = c->n - 1; i >= 0; i--) {
        if (c->maps[i].refs == 0 && c->maps[i].stale) {
            cohort_ipc_close(ctx, i);
        }
    }
    for (int i = 0; i < c->n; i++) {
        idle += c->maps[i].refs == 0;
    }
    while (idle > room->cuda_ipc_cache) {
        int lru = -1;
        for (int i = 0; i < c->n; i++) {
            if (c->maps[i].refs == 0 && (lru < 0 || c->maps[i].used < c->maps[lru].used)) {
                lru = i;
            }
        }
        cohort_ipc_close(ctx, lru);
        idle--;
    }
}

cohort_status_t cohort_ipc_map(cohort_context_t *ctx, int peer, const cohort_gpu_ipc_t *ipc,
                               void **base)
{
    cohort_mem_room_t *room = cohort_mem_room(ctx);
    cohort_ipc_cache_t *c = &room->gpu.ipc;
    uint64_t lo = ipc->alloc_base, hi = ipc->alloc_base + ipc->alloc_size;
    cohort_ipc_map_t *m;

    for (int i = 0; i < c->n; i++) {
        m = &c->maps[i];
        if (m->peer != peer || m->stale) {
            continue;
        }
        if (m->buffer_id == ipc->buffer_id) {
            m->refs++;
            m->used = ++c->clock;
            room->stat_ipc_reuses++;
            *base = m->base;
            return COHORT_OK;
        }
        if (m->alloc_base < hi && lo < m->alloc_base + m->alloc_size) {
            m->stale = 1; /* the peer freed it: its range holds this new allocation */
        }
    }
    cohort_ipc_trim(ctx);
    if (c->n == c->cap) {
        int cap = c->cap > 0 ? 2 * c->cap : 16;
        cohort_ipc_map_t *maps = realloc(c->maps, (size_t)cap * sizeof(*maps));
        if (maps == NULL) {
            return COHORT_ERR_NO_MEMORY;
        }
        c->maps = maps;
        c->cap = cap;
    }
    if (room->gpu.mod->ipc_open(ipc, base) != COHORT_OK) {
        return COHORT_ERR_CUDA;
    }
    room->stat_ipc_opens++;
    c->maps[c->n++] = (cohort_ipc_map_t){.peer = peer,
                                         .refs = 1,
                                         .buffer_id = ipc->buffer_id,
                                         .alloc_base = ipc->alloc_base,
                                         .alloc_size = ipc->alloc_size,
                                         .base = *base,
                                         .used = ++c->clock};
    return COHORT_OK;
}

void cohort_ipc_unmap(cohort_context_t *ctx, void *base)
{
    cohort_ipc_cache_t *c = &cohort_mem_room(ctx)->gpu.ipc;

    for (int i = 0; i < c->n; i++) {
        if (c->maps[i].base == base && c->maps[i].refs > 0) {
            c->maps[i].refs--;
            cohort_ipc_trim(ctx);
            return;
        }
    }
}

void cohort_ipc_cache_cleanup(cohort_context_t *ctx)
{
    cohort_ipc_cache_t *c = &cohort_mem_room(ctx)->gpu.ipc;

    while (c->n > 0) {
        cohort_ipc_close(ctx, c->n - 1);
    }
    free(c->maps);
    c->maps = NULL;
    c->cap = 0;
}
