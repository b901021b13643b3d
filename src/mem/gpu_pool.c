/*
 * The GPU memory pools of a context: page-locked staging buffers (a scratch cache over the
 * module's allocator), the few kept device scratch buffers, and the page-locked bounces of
 * transfers staged one by one. Making any of them (cudaMalloc, cudaHostAlloc) costs far more
 * than the copies they serve, so each is lent and given back.
 */
#include <stdint.h>
#include "mem/gpu.h"
#include "mem/room.h"

void *cohort_gpu_pinned_get(cohort_context_t *ctx, size_t bytes)
{
    cohort_gpu_t *gpu = &cohort_mem_room(ctx)->gpu;
    void *buf = cohort_scratch_cache_get(&gpu->pinned, bytes);

    if (buf == NULL) {
        cohort_log(cohort_mem_log(ctx), COHORT_LOG_ERROR,
                   "could not allocate %zu bytes of page-locked staging memory: %s", bytes,
                   gpu->mod->last_error());
    }
    return buf;
}

void cohort_gpu_pinned_put(cohort_context_t *ctx, void *buf)
{
    cohort_scratch_cache_put(&cohort_mem_room(ctx)->gpu.pinned, buf);
}

static cohort_status_t cohort_gpu_pool_alloc(cohort_context_t *ctx, cohort_gpu_pool_t *p,
                                             void **buf, size_t bytes)
{
    const cohort_gpu_module_t *mod = cohort_mem_room(ctx)->gpu.mod;

    *buf = NULL;
    return p->device ? mod->device_alloc(buf, bytes) : mod->host_alloc(buf, bytes);
}

static void cohort_gpu_pool_free(cohort_context_t *ctx, cohort_gpu_pool_t *p, void *buf)
{
    if (buf == NULL) {
        return;
    }
    const cohort_gpu_module_t *mod = cohort_mem_room(ctx)->gpu.mod;

    if (p->device) {
        mod->device_free(buf);
    } else {
        mod->host_free(buf);
    }
}

/* The smallest free kept buffer that is big enough; else a free slot, (re)made at @a bytes;
 * else, every slot lent, one of its own (freed when given back). */
static void *cohort_gpu_pool_get(cohort_context_t *ctx, cohort_gpu_pool_t *p, size_t bytes,
                                 const char *what)
{
    cohort_gpu_slot_t *best = NULL;
    void *buf = NULL;

    for (int i = 0; i < p->n; i++) {
        cohort_gpu_slot_t *sl = &p->slot[i];
        if (!sl->busy && sl->buf != NULL && sl->size >= bytes &&
            (best == NULL || sl->size < best->size)) {
            best = sl;
        }
    }
    for (int i = 0; best == NULL && i < p->n; i++) {
        cohort_gpu_slot_t *sl = &p->slot[i];
        if (!sl->busy) {
            cohort_gpu_pool_free(ctx, p, sl->buf);
            sl->buf = NULL;
            if (cohort_gpu_pool_alloc(ctx, p, &sl->buf, bytes) != COHORT_OK) {
                sl->buf = NULL;
                goto fail;
            }
            sl->size = bytes;
            best = sl;
        }
    }
    if (best != NULL) {
        best->busy = 1;
        return best->buf;
    }
    if (cohort_gpu_pool_alloc(ctx, p, &buf, bytes) == COHORT_OK) {
        return buf;
    }
fail:
    cohort_log(cohort_mem_log(ctx), COHORT_LOG_ERROR, "could not allocate %zu bytes of %s: %s",
               bytes, what, cohort_mem_room(ctx)->gpu.mod->last_error());
    return NULL;
}

static void cohort_gpu_pool_put(cohort_context_t *ctx, cohort_gpu_pool_t *p, void *buf)
{
    if (buf == NULL) {
        return;
    }
    for (int i = 0; i < p->n; i++) {
        if (p->slot[i].buf == buf) {
            p->slot[i].busy = 0;
            return;
        }
    }
    cohort_gpu_pool_free(ctx, p, buf);
}

static void cohort_gpu_pool_cleanup(cohort_context_t *ctx, cohort_gpu_pool_t *p)
{
    for (int i = 0; i < p->n; i++) {
        cohort_gpu_pool_free(ctx, p, p->slot[i].buf);
        p->slot[i].buf = NULL;
    }
}

void *cohort_gpu_scratch_get(cohort_context_t *ctx, size_t bytes)
{
    return cohort_gpu_pool_get(ctx, &cohort_mem_room(ctx)->gpu.scratch, bytes, "device scratch");
}

void cohort_gpu_scratch_put(cohort_context_t *ctx, void *buf)
{
    cohort_gpu_pool_put(ctx, &cohort_mem_room(ctx)->gpu.scratch, buf);
}

void *cohort_gpu_bounce_get(cohort_context_t *ctx, size_t bytes)
{
    size_t cap = 64u << 10;

    /* sizes rounded up to powers of two, so that a ring's segments of one call, and the
     * next call's, reuse the same few buffers */
    while (cap < bytes && cap <= SIZE_MAX / 2) {
        cap *= 2;
    }
    return cohort_gpu_pool_get(ctx, &cohort_mem_room(ctx)->gpu.bounce, cap >= bytes ? cap : bytes,
                               "page-locked bounce memory");
}

void cohort_gpu_bounce_put(cohort_context_t *ctx, void *buf)
{
    cohort_gpu_pool_put(ctx, &cohort_mem_room(ctx)->gpu.bounce, buf);
}

cohort_status_t cohort_gpu_bounce_fill(cohort_context_t *ctx, const void *src, size_t bytes,
                                       uint64_t *ticket, void **bounce)
{
    void *b = cohort_gpu_bounce_get(ctx, bytes);
    cohort_status_t status;

    if (b == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    status = ticket != NULL
                 ? cohort_gpu_copy_start(ctx, b, src, bytes, COHORT_GPU_LANE_TO_HOST, ticket)
                 : cohort_gpu_copy(ctx, b, src, bytes);
    if (status != COHORT_OK) {
        cohort_gpu_bounce_put(ctx, b);
        return status;
    }
    *bounce = b;
    return COHORT_OK;
}

void cohort_gpu_cleanup(cohort_context_t *ctx)
{
    cohort_gpu_t *gpu = &cohort_mem_room(ctx)->gpu;

    if (gpu->state == COHORT_GPU_READY) {
        cohort_scratch_cache_cleanup(&gpu->pinned);
        cohort_ipc_cache_cleanup(ctx);
        cohort_gpu_pool_cleanup(ctx, &gpu->scratch);
        cohort_gpu_pool_cleanup(ctx, &gpu->bounce);
    }
}
