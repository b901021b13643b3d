/* The reduction kernel's launcher (kernels.cu), called by the module (module.c). */
#ifndef COHORT_CUDA_KERNELS_H
#define COHORT_CUDA_KERNELS_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include "cohort.h"
#include "reduce/gpu_module.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Every dsts[d] = srcs[0] op ... op srcs[nsrc-1], in that order, then (AVG) divided by
 * @a nranks, on stream @a s; at most COHORT_GPU_MULTI_MAX of each; cudaErrorInvalidValue for
 * an unknown (dtype, op) pair. */
cudaError_t cohort_cuda_reduce_multi_launch(void *const *dsts, int ndst, const void *const *srcs,
                                            int nsrc, size_t count, cohort_dtype_t dt,
                                            cohort_op_t op, int nranks, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
