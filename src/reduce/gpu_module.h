/*
 * The interface of the CUDA module (src/reduce/cuda/, built as cohort_cuda.so only when
 * configure found the toolkit). libcohort never links the CUDA runtime: it dlopens the module
 * the first time a call needs it (src/mem/gpu.c) and sees only this table, so a program built
 * on a machine with CUDA starts on one without a driver, and a build without CUDA has no CUDA
 * symbol at all. Plain C types only: no CUDA header is needed to include this.
 */
#ifndef COHORT_GPU_MODULE_H
#define COHORT_GPU_MODULE_H

#include <stddef.h>
#include <stdint.h>
#include "cohort.h"

#define COHORT_GPU_MODULE_ABI    4
#define COHORT_GPU_MODULE_SYMBOL "cohort_gpu_module"
#define COHORT_GPU_MODULE_FILE   "cohort_cuda.so"
/* cudaIpcMemHandle_t is 64 bytes; kept opaque here. */
#define COHORT_GPU_IPC_HANDLE_BYTES 64
/* The most buffers one reduce_multi call reads or writes: its pointers travel in the kernel's
 * parameters (1 KiB of them at 64), so a same-node group of more members does not use it. */
#define COHORT_GPU_MULTI_MAX 64

/* What a pointer is, as far as the module can tell. */
typedef enum {
    COHORT_GPU_PTR_HOST = 0,    /* pageable or pinned host memory, or unknown to CUDA */
    COHORT_GPU_PTR_DEVICE = 1,  /* cudaMalloc'ed */
    COHORT_GPU_PTR_MANAGED = 2, /* cudaMallocManaged: treated as device memory */
} cohort_gpu_ptr_kind_t;

/* Where an IPC handle points: the allocation's handle and the buffer's offset into it. The
 * id is new for every allocation a process makes (CU_POINTER_ATTRIBUTE_BUFFER_ID, never
 * reused), so a cache of opened handles keyed by (peer, id) cannot hand out a freed one; the
 * allocation's address in its owner (alloc_base) tells which cached ones a new allocation has
 * replaced (their ranges overlap: the old one was freed). */
typedef struct {
    uint8_t handle[COHORT_GPU_IPC_HANDLE_BYTES];
    uint64_t buffer_id;
    uint64_t alloc_base;
    size_t offset;
    size_t alloc_size;
    int device;
} cohort_gpu_ipc_t;

/*
 * Every call returns COHORT_OK or COHORT_ERR_CUDA; after an error, last_error() says what CUDA
 * said (per thread). Copies and reductions run on the module's own stream and return when their
 * result is in place: the caller's data is ready when a cohort call is made (DESIGN.md "CUDA
 * streams"), and nothing cohort writes is read before the call or request that wrote it ends.
 */
typedef struct cohort_gpu_module {
    uint32_t abi;
    const char *name;
    /* How many devices this process sees; 0 (with why) when none or no driver: never fails. */
    int (*open)(char *why, size_t whylen);
    /* The installed driver's version (cudaDriverGetVersion), 0 without one: a property of the
     * node, whatever devices this process is shown (CUDA_VISIBLE_DEVICES), and cheap (no CUDA
     * context). */
    int (*driver)(void);
    const char *(*last_error)(void);
    cohort_gpu_ptr_kind_t (*ptr_kind)(const void *ptr, int *device);
    /* Any direction (host or device on either side). */
    cohort_status_t (*copy)(void *dst, const void *src, size_t bytes);
    /* An asynchronous copy (any direction) on stream @a lane (COHORT_GPU_LANE_*), its end
     * polled: *ticket names it until copy_test or copy_finish says it is over (0: it already
     * is). Work on one lane runs in the order it was enqueued. @a ticket NULL: enqueued only,
     * its end told by a later ticket on the same lane (lane_mark). */
    cohort_status_t (*copy_start)(void *dst, const void *src, size_t bytes, int lane,
                                  uint64_t *ticket);
    /* A ticket, polled and used up as a copy's, for all the work enqueued on @a lane so far. */
    cohort_status_t (*lane_mark)(int lane, uint64_t *ticket);
    /* COHORT_OK: done (the ticket is used up), COHORT_INPROGRESS, or COHORT_ERR_CUDA (used up). */
    cohort_status_t (*copy_test)(uint64_t ticket);
    /* Waits for it; the ticket is used up. */
    cohort_status_t (*copy_finish)(uint64_t ticket);
    /* A ticket, polled and used up as a copy's, for the work enqueued on the caller's @a stream
     * (a cudaStream_t) so far (0: it is over already). */
    cohort_status_t (*stream_mark)(void *stream, uint64_t *ticket);
    /* Spend a stream mark's ticket without waiting (the stream's work may never end). */
    void (*mark_drop)(uint64_t ticket);
    /* dst = a op b on device memory, as cohort_reduce_local does on the host (bitwise). */
    cohort_status_t (*reduce)(void *dst, const void *a, const void *b, size_t count,
                              cohort_dtype_t dt, cohort_op_t op);
    /* Every dsts[d] = srcs[0] op srcs[1] op ... op srcs[nsrc-1], combined in that order as
     * nsrc-1 reduce calls would (bitwise the same), then AVG divided by @a nranks: the
     * same-node n-way reduction, which reads every input once and writes every output once.
     * A dst may alias a src exactly. ndst, nsrc <= COHORT_GPU_MULTI_MAX. */
    cohort_status_t (*reduce_multi)(void *const *dsts, int ndst, const void *const *srcs, int nsrc,
                                    size_t count, cohort_dtype_t dt, cohort_op_t op, int nranks);
    /* The same enqueued on @a lane and not waited for (its end told by lane_mark): work that
     * reads or writes another process's memory never waits inside a progress call. */
    cohort_status_t (*reduce_multi_start)(void *const *dsts, int ndst, const void *const *srcs,
                                          int nsrc, size_t count, cohort_dtype_t dt, cohort_op_t op,
                                          int nranks, int lane);
    /* COHORT_AVG's division, as cohort_reduce_finish. */
    cohort_status_t (*finish)(void *buf, size_t count, cohort_dtype_t dt, cohort_op_t op,
                              int nranks);
    /* Page-locked host memory, for staging. */
    cohort_status_t (*host_alloc)(void **ptr, size_t bytes);
    void (*host_free)(void *ptr);
    cohort_status_t (*device_alloc)(void **ptr, size_t bytes);
    void (*device_free)(void *ptr);
    /* Same-node IPC: describe a device buffer; map a peer's (returns the mapped base of the
     * whole allocation); unmap. can_access: whether device a can read and write device b's
     * memory (the same device, or peer access). */
    cohort_status_t (*ipc_get)(const void *ptr, cohort_gpu_ipc_t *ipc);
    cohort_status_t (*ipc_open)(const cohort_gpu_ipc_t *ipc, void **base);
    void (*ipc_close)(void *base);
    int (*can_access)(int device_a, int device_b);
} cohort_gpu_module_t;

/* The module's streams: its own (the calls that return when done), and one per direction of
 * the asynchronous copies, so that copies to the host and to the device overlap. */
#define COHORT_GPU_LANE_SYNC      0
#define COHORT_GPU_LANE_TO_HOST   1
#define COHORT_GPU_LANE_TO_DEVICE 2
#define COHORT_GPU_LANES          3

#endif
