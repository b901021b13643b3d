/*
 * The CUDA module as the engine and the layers above see it: loaded the first time a call
 * needs to know where a buffer lives (never at init), and absent — every buffer is host memory
 * — when the library was built without CUDA, COHORT_CUDA=off, the module does not load, or
 * there is no driver or device. Nothing here names a CUDA type.
 */
#ifndef COHORT_MEM_GPU_H
#define COHORT_MEM_GPU_H

#include "mem/ipc_cache.h"
#include "mem/scratch.h"
#include "reduce/gpu_module.h"

/* Where a buffer lives (cohort_gpu_mem_type). A transfer's is host unless its request may
 * carry device memory (then looked at per transfer, proto/xfer_stage.c). */
typedef enum { COHORT_MEM_HOST = 0, COHORT_MEM_CUDA = 1 } cohort_mem_type_t;

#define COHORT_GPU_DEV_SCRATCH 4
#define COHORT_GPU_BOUNCE      32

/* Buffers kept for reuse, each lent to one user at a time: making them (cudaMalloc,
 * cudaHostAlloc) costs far more than the copies they serve. */
typedef struct {
    void *buf;
    size_t size;
    int busy;
} cohort_gpu_slot_t;

typedef struct {
    cohort_gpu_slot_t *slot;
    int n;
    int device; /* device memory; else page-locked host memory */
} cohort_gpu_pool_t;

typedef enum { COHORT_GPU_UNTRIED = 0, COHORT_GPU_READY, COHORT_GPU_NONE } cohort_gpu_state_t;

typedef struct {
    cohort_gpu_state_t state;
    const cohort_gpu_module_t *mod; /* READY only */
    int ndevices;
    int driver;    /* a CUDA driver is installed (devices shown here or not) */
    char why[192]; /* NONE: why (module not built / not found / no device) */
    /* UNTRIED: the loader's count of objects loaded when that was last seen (taken at init,
     * cohort_gpu_mem_type looks again only once it grew), and whether one of them was CUDA's
     * (the module is then loaded by the first call that asks where a buffer lives). */
    unsigned long long dl_adds;
    int dl_cuda;
    cohort_scratch_cache_t pinned; /* page-locked staging buffers */
    cohort_ipc_cache_t ipc;        /* peers' allocations mapped through CUDA IPC */
    int ipc_warned;                /* mappings that failed (the first one is a warning) */
    /* Device scratch (CUDA IPC's stand-in for host buffers, whose handle and the peers'
     * mappings of it then stay valid from call to call; algorithms on device buffers), and
     * the page-locked bounce buffers of transfers staged one by one (proto/xfer_stage.c). */
    cohort_gpu_pool_t scratch, bounce;
    cohort_gpu_slot_t scratch_slots[COHORT_GPU_DEV_SCRATCH], bounce_slots[COHORT_GPU_BOUNCE];
} cohort_gpu_t;

/* The module when a device is there (loads it on first use), else NULL. */
const cohort_gpu_module_t *cohort_gpu_get(cohort_context_t *ctx);
/* At init: the loader's objects looked at once, by name, so that the first call that asks
 * where a buffer lives (cohort_gpu_mem_type) reads only the count of them: a training job's
 * process holds 80 or more (MPI's components among them), whose names cost each rank about
 * 20 us of its first collective (cohort_bench setup at 16 ranks). Loads nothing. */
void cohort_gpu_scan_loaded(cohort_context_t *ctx);
/* Whether this node has a CUDA driver (the module loaded and cudaDriverGetVersion said so),
 * whether or not this process is shown a device: the same answer on every rank of a node. */
int cohort_gpu_driver(cohort_context_t *ctx);
/* Where @a ptr lives: COHORT_MEM_CUDA for device and managed memory. Cheap when there is no
 * device (one test after the first call), and while the process has no CUDA library loaded
 * (no buffer can be device memory then): the module is not loaded for it. */
cohort_mem_type_t cohort_gpu_mem_type(cohort_context_t *ctx, const void *ptr);
/* Copies in any direction, reductions on device memory; logged on failure (COHORT_ERR_CUDA). */
cohort_status_t cohort_gpu_copy(cohort_context_t *ctx, void *dst, const void *src, size_t bytes);
/* An asynchronous copy on @a lane (COHORT_GPU_LANE_TO_HOST or _TO_DEVICE): *ticket 0 when it
 * is over already; else poll it with cohort_gpu_copy_test (COHORT_OK once done, or
 * COHORT_INPROGRESS) or wait with cohort_gpu_copy_finish, which spend it (a request's poll of
 * one: cohort_gpu_ticket_poll, core/request.h). @a ticket NULL:
 * enqueued only, told by a later cohort_gpu_lane_mark. */
cohort_status_t cohort_gpu_copy_start(cohort_context_t *ctx, void *dst, const void *src,
                                      size_t bytes, int lane, uint64_t *ticket);
cohort_status_t cohort_gpu_copy_test(cohort_context_t *ctx, uint64_t ticket);
/* A ticket as a copy's, for the work enqueued on @a lane so far (copy_start with no ticket,
 * cohort_gpu_reduce_multi_start). */
cohort_status_t cohort_gpu_lane_mark(cohort_context_t *ctx, int lane, uint64_t *ticket);
/* A ticket as a copy's, for the work enqueued on the caller's CUDA @a stream so far. */
cohort_status_t cohort_gpu_stream_mark(cohort_context_t *ctx, void *stream, uint64_t *ticket);
void cohort_gpu_mark_drop(cohort_context_t *ctx, uint64_t ticket);
cohort_status_t cohort_gpu_copy_finish(cohort_context_t *ctx, uint64_t ticket);
cohort_status_t cohort_gpu_reduce(cohort_context_t *ctx, void *dst, const void *a, const void *b,
                                  size_t count, cohort_dtype_t dt, cohort_op_t op);
cohort_status_t cohort_gpu_reduce_multi(cohort_context_t *ctx, void *const *dsts, int ndst,
                                        const void *const *srcs, int nsrc, size_t count,
                                        cohort_dtype_t dt, cohort_op_t op, int nranks);
/* The same enqueued on @a lane, its end told by cohort_gpu_lane_mark. */
cohort_status_t cohort_gpu_reduce_multi_start(cohort_context_t *ctx, void *const *dsts, int ndst,
                                              const void *const *srcs, int nsrc, size_t count,
                                              cohort_dtype_t dt, cohort_op_t op, int nranks,
                                              int lane);
cohort_status_t cohort_gpu_finish(cohort_context_t *ctx, void *buf, size_t count, cohort_dtype_t dt,
                                  cohort_op_t op, int nranks);
/* A page-locked host buffer of at least @a bytes from the context's cache, or NULL (logged). */
void *cohort_gpu_pinned_get(cohort_context_t *ctx, size_t bytes);
void cohort_gpu_pinned_put(cohort_context_t *ctx, void *buf);
/* Device memory of at least @a bytes, from the context's few kept buffers when one is free, or
 * NULL (logged). Give it back with cohort_gpu_scratch_put. */
void *cohort_gpu_scratch_get(cohort_context_t *ctx, size_t bytes);
void cohort_gpu_scratch_put(cohort_context_t *ctx, void *buf);
/* A page-locked buffer of at least @a bytes for one transfer, or NULL (logged). */
void *cohort_gpu_bounce_get(cohort_context_t *ctx, size_t bytes);
void cohort_gpu_bounce_put(cohort_context_t *ctx, void *buf);
/* A bounce (*@a bounce) holding the @a bytes of device memory at @a src: copied asynchronously
 * with @a ticket (its ticket there, 0 when over already), at once without. On failure the bounce
 * goes back: COHORT_ERR_NO_MEMORY or COHORT_ERR_CUDA (logged). */
cohort_status_t cohort_gpu_bounce_fill(cohort_context_t *ctx, const void *src, size_t bytes,
                                       uint64_t *ticket, void **bounce);
/* At context destruction: the pinned cache, the IPC mappings, the device scratch. The module stays
 * loaded (see gpu.c). */
void cohort_gpu_cleanup(cohort_context_t *ctx);

#endif
