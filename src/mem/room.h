/*
 * Memory's own part of a context: the CUDA module and its pools, the host scratch cache, and
 * the little memory reads of the rest of the context (its log settings, three settings, what
 * UCX said of CUDA memory) or counts for it (CUDA IPC mappings opened and reused). Memory sits
 * below the engine, so it never looks into a context; the engine keeps this part for it and
 * reads or fills the fields marked so.
 *
 * How memory reaches it: the context (struct cohort_context, core/context.h) holds it as its
 * FIRST member, named mem. In C a pointer to a struct, converted, points to its first member
 * (C11 6.7.2.1), so memory's functions keep taking the public cohort_context_t * and convert
 * it here, knowing nothing else of the context. core/context.c checks with a static assert
 * that the member stays at offset 0: moved anywhere else, every memory call would read the
 * wrong bytes.
 */
#ifndef COHORT_MEM_ROOM_H
#define COHORT_MEM_ROOM_H

#include <stdint.h>
#include "cohort.h"
#include "base/log.h"
#include "mem/gpu.h"
#include "mem/scratch.h"

typedef struct {
    cohort_gpu_t gpu;               /* the CUDA module, loaded when a call first needs it */
    cohort_scratch_cache_t scratch; /* collective algorithms' host scratch (scratch.c) */
    /* Filled by the engine when it makes the context (core/context.c), read here: */
    const cohort_log_cfg_t *log; /* the context's log settings (its level; its rank once known) */
    const char *plugin_path;     /* COHORT_PLUGIN_PATH: where the CUDA module is looked for first */
    int cuda_off;       /* COHORT_CUDA=off: every buffer is host memory, CUDA never loaded */
    int cuda_ipc_cache; /* COHORT_CUDA_IPC_CACHE: unused peers' mappings kept */
    int ucx_mem_cuda;   /* UCX takes CUDA memory (core/ucx.c asks): no staging needed */
    /* Counted here, read by the engine's cohort_stats: */
    uint64_t stat_ipc_opens;  /* peers' allocations mapped through CUDA IPC (cohort_ipc_map) */
    uint64_t stat_ipc_reuses; /* mappings the IPC cache already held */
} cohort_mem_room_t;

/* The memory part of @a ctx (its first member: see above). */
static inline cohort_mem_room_t *cohort_mem_room(cohort_context_t *ctx)
{
    return (cohort_mem_room_t *)(void *)ctx;
}

/* The log settings memory writes @a ctx's lines with (base/log.h's cohort_log). */
static inline const cohort_log_cfg_t *cohort_mem_log(cohort_context_t *ctx)
{
    return cohort_mem_room(ctx)->log;
}

#endif
