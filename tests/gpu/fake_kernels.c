/*
 * The reduction "kernel" of the CUDA module (kernels.h) as host loops, for the fake runtime
 * (fake_cudart.c), which runs no device code: linked with src/reduce/cuda/module.c into the
 * test-only module tests/gpu/fake-kernels/cohort_cuda.so, so that the paths that reduce on the
 * device (CUDA IPC, algorithms running on device buffers) run in CI without a GPU. Each operand is
 * copied out of fake device memory with cudaMemcpy (the only way in: that memory faults on host
 * access), combined with the host's own loops (src/reduce/host.c: the results the real kernels must
 * match bit for bit, tests/unit/check_reduce_cuda), and copied back.
 */
#include <stdlib.h>
#include <string.h>
#include "core/dtype.h"
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

cudaError_t cohort_cuda_reduce_multi_launch(void *const *dsts, int ndst, const void *const *srcs,
                                            int nsrc, size_t count, cohort_dtype_t dt,
                                            cohort_op_t op, int nranks, cudaStream_t s)
{
    size_t bytes = count * cohort_dtype_size(dt);
    void *acc;
    cudaError_t e = cudaSuccess;

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
    acc = fake_in(srcs[0], bytes);
    /* every source is read before any destination is written, as the kernel does */
    for (int j = 1; j < nsrc && acc != NULL; j++) {
        void *b = fake_in(srcs[j], bytes);
        if (b == NULL) {
            free(acc);
            acc = NULL;
            break;
        }
        cohort_reduce_local(acc, acc, b, count, dt, op);
        free(b);
    }
    if (acc == NULL) {
        return cudaErrorMemoryAllocation;
    }
    if (op == COHORT_AVG) {
        cohort_reduce_finish(acc, count, dt, op, nranks);
    }
    for (int d = 0; d < ndst && e == cudaSuccess; d++) {
        e = cudaMemcpy(dsts[d], acc, bytes, cudaMemcpyDefault);
    }
    free(acc);
    return e;
}
