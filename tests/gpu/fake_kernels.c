/*
 * The reduction "kernel" of the CUDA module (kernels.h) as host loops, for the fake runtime
 * (fake_cudart.c), which runs no device code: linked with src/reduce/cuda/module.c into the
 * test-only module tests/gpu/fake-kernels/cohort_cuda.so, so that the paths that reduce on the
 * device (CUDA IPC, algorithms running on device buffers) run in CI without a GPU. A launch is
 * queued on its stream (cudaLaunchHostFunc, which the fake runtime runs when the stream gets there,
 * as a device runs a kernel), so a caller that waits for a kernel touching another process's memory
 * is caught as a synchronous copy of it would be (FAKE_CUDA_SYNC_OPENED_FAIL). Run, each
 * operand is copied out of fake device memory with cudaMemcpy (the only way in: that memory
 * faults on host access), combined with the host's own loops (src/reduce/host.c: the results
 * the real kernels must match bit for bit, tests/unit/check_reduce_cuda), and copied back.
 */
#include <stdlib.h>
#include <string.h>
#include "base/dtype.h"
#include "reduce/cuda/kernels.h"
#include "reduce/reduce.h"

/* A kernel reads and writes device memory only: host memory handed to one is cohort's bug,
 * which a real GPU reports as an illegal address. */
static int fake_on_device(const void *p)
{
    struct cudaPointerAttributes attr;

    return cudaPointerGetAttributes(&attr, p) == cudaSuccess &&
           (attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged);
}

static void *fake_in(const void *dev, size_t bytes)
{
    void *h = malloc(bytes > 0 ? bytes : 1);

    if (h != NULL && cudaMemcpy(h, dev, bytes, cudaMemcpyDefault) != cudaSuccess) {
        free(h);
        return NULL;
    }
    return h;
}

/* One launch's arguments, kept until its stream runs it. */
typedef struct {
    void *dsts[COHORT_GPU_MULTI_MAX];
    const void *srcs[COHORT_GPU_MULTI_MAX];
    int ndst, nsrc, nranks;
    size_t count;
    cohort_dtype_t dt;
    cohort_op_t op;
} fake_launch_t;

/* The kernel's body, as its stream runs it; a failed copy is the stream's error (the fake
 * runtime keeps the first). */
static void fake_reduce_run(void *arg)
{
    fake_launch_t *l = arg;
    size_t bytes = l->count * cohort_dtype_size(l->dt);
    void *acc = fake_in(l->srcs[0], bytes);

    /* every source is read before any destination is written, as the kernel does */
    for (int j = 1; j < l->nsrc && acc != NULL; j++) {
        void *b = fake_in(l->srcs[j], bytes);
        if (b == NULL) {
            free(acc);
            acc = NULL;
            break;
        }
        cohort_reduce_local(acc, acc, b, l->count, l->dt, l->op);
        free(b);
    }
    if (acc != NULL) {
        if (l->op == COHORT_AVG) {
            cohort_reduce_finish(acc, l->count, l->dt, l->op, l->nranks);
        }
        for (int d = 0; d < l->ndst; d++) {
            if (cudaMemcpy(l->dsts[d], acc, bytes, cudaMemcpyDefault) != cudaSuccess) {
                break;
            }
        }
        free(acc);
    }
    free(l);
}

cudaError_t cohort_cuda_reduce_multi_launch(void *const *dsts, int ndst, const void *const *srcs,
                                            int nsrc, size_t count, cohort_dtype_t dt,
                                            cohort_op_t op, int nranks, cudaStream_t s)
{
    fake_launch_t *l;
    cudaError_t e;

    if (ndst < 1 || nsrc < 1 || ndst > COHORT_GPU_MULTI_MAX || nsrc > COHORT_GPU_MULTI_MAX ||
        cohort_reduce_check(dt, op) != COHORT_OK) {
        return cudaErrorInvalidValue;
    }
    if (count == 0) {
        return cudaSuccess;
    }
    for (int j = 0; j < nsrc; j++) {
        if (!fake_on_device(srcs[j])) {
            return cudaErrorIllegalAddress;
        }
    }
    for (int d = 0; d < ndst; d++) {
        if (!fake_on_device(dsts[d])) {
            return cudaErrorIllegalAddress;
        }
    }
    l = calloc(1, sizeof(*l));
    if (l == NULL) {
        return cudaErrorMemoryAllocation;
    }
    memcpy(l->dsts, dsts, (size_t)ndst * sizeof(*dsts));
    memcpy(l->srcs, srcs, (size_t)nsrc * sizeof(*srcs));
    l->ndst = ndst;
    l->nsrc = nsrc;
    l->count = count;
    l->dt = dt;
    l->op = op;
    l->nranks = nranks;
    e = cudaLaunchHostFunc(s, fake_reduce_run, l);
    if (e != cudaSuccess) {
        free(l);
    }
    return e;
}
