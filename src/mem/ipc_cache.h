/*
 * Peers' device allocations mapped through CUDA IPC, kept between calls: opening a handle
 * (cudaIpcOpenMemHandle) costs tens of microseconds to milliseconds, far more than a same-node
 * collective's own work at small sizes, and a training job passes the same buffers (the same
 * allocator segments) again and again.
 *
 * An entry is keyed by (peer, the allocation's buffer id): ids are never reused within a
 * process, so a hit is always the allocation the peer is passing now. A peer's new allocation
 * whose range overlaps a cached one means the old one was freed: that mapping is closed then
 * (the address range is being reused). Entries in use by a running request are counted and
 * never closed under it; of the others the least recently used go past COHORT_CUDA_IPC_CACHE.
 *
 * As with UCX's cache (on by default there), a peer that frees an allocation others keep mapped
 * does so before they close it, which CUDA calls undefined; the driver keeps the memory until
 * the last mapping goes. COHORT_CUDA_IPC_CACHE=0 opens and closes per call instead.
 */
#ifndef COHORT_MEM_IPC_CACHE_H
#define COHORT_MEM_IPC_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include "reduce/gpu_module.h"

typedef struct {
    int peer;  /* world rank of the allocation's owner */
    int refs;  /* running requests using the mapping */
    int stale; /* a newer allocation of the peer overlaps it: closed when refs reach 0 */
    uint64_t buffer_id, alloc_base, alloc_size; /* in the owner */
    void *base;                                 /* the mapping here */
    uint64_t used;                              /* the cache's clock at the last use */
} cohort_ipc_map_t;

typedef struct {
    cohort_ipc_map_t *maps;
    int n, cap;
    uint64_t clock;
} cohort_ipc_cache_t;

/* The base, mapped here, of the allocation @a ipc describes, owned by world rank @a peer:
 * from the cache or opened now. COHORT_ERR_CUDA (not logged) when the handle cannot be opened,
 * COHORT_ERR_NO_MEMORY. Each success is paired with one cohort_ipc_unmap. */
cohort_status_t cohort_ipc_map(cohort_context_t *ctx, int peer, const cohort_gpu_ipc_t *ipc,
                               void **base);
/* The request that mapped @a base is done with it. */
void cohort_ipc_unmap(cohort_context_t *ctx, void *base);
/* Close every mapping (context destruction). */
void cohort_ipc_cache_cleanup(cohort_context_t *ctx);

#endif
