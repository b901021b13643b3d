/*
 * Reduction kernels for every (dtype, op) pair, and AVG's division. The element operations
 * are elem.h's, the very functions the host loops use, so the device result is the host result
 * bit for bit (built with -fmad=false: no contraction into fused multiply-adds, which the host
 * does not do either).
 */
#include "reduce/cuda/kernels.h"
#include "reduce/elem.h"

namespace
{

/* One thread per element, grid-stride: dst may alias a or b exactly (each element is read
 * before it is written by the same thread). */
template <typename T, T (*F)(T, T)>
__global__ void reduce_kernel(T *dst, const T *a, const T *b, size_t n)
{
    size_t stride = (size_t)blockDim.x * gridDim.x;

    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        dst[i] = F(a[i], b[i]);
    }
}

template <typename T, typename N, T (*F)(T, N)>
__global__ void finish_kernel(T *buf, N nranks, size_t n)
{
    size_t stride = (size_t)blockDim.x * gridDim.x;

    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        buf[i] = F(buf[i], nranks);
    }
}

/* 256 threads and at most 4096 blocks: enough resident warps to saturate memory bandwidth on
 * current parts; a larger vector loops (grid stride) instead of launching more blocks. */
const unsigned threads = 256;

unsigned blocks_for(size_t n)
{
    size_t b = (n + threads - 1) / threads;

    return (unsigned)(b > 4096 ? 4096 : b);
}

template <typename T, T (*F)(T, T)>
cudaError_t launch(void *dst, const void *a, const void *b, size_t n, cudaStream_t s)
{
    reduce_kernel<T, F><<<blocks_for(n), threads, 0, s>>>((T *)dst, (const T *)a, (const T *)b, n);
    return cudaGetLastError();
}

template <typename T, T (*SUM)(T, T), T (*PROD)(T, T), T (*MIN)(T, T), T (*MAX)(T, T)>
cudaError_t launch_op(void *dst, const void *a, const void *b, size_t n, cohort_op_t op,
                      cudaStream_t s)
{
    switch (op) {
    case COHORT_SUM:
    case COHORT_AVG:
        return launch<T, SUM>(dst, a, b, n, s);
    case COHORT_PROD:
        return launch<T, PROD>(dst, a, b, n, s);
    case COHORT_MIN:
        return launch<T, MIN>(dst, a, b, n, s);
    case COHORT_MAX:
        return launch<T, MAX>(dst, a, b, n, s);
    }
    return cudaErrorInvalidValue;
}

#define COHORT_CUDA_OPS(_type, _sfx) _type, sum_##_sfx, prod_##_sfx, min_##_sfx, max_##_sfx

template <typename T, typename N, T (*F)(T, N)>
cudaError_t launch_finish(void *buf, N nranks, size_t n, cudaStream_t s)
{
    finish_kernel<T, N, F><<<blocks_for(n), threads, 0, s>>>((T *)buf, nranks, n);
    return cudaGetLastError();
}

} // namespace

extern "C" cudaError_t cohort_cuda_reduce_launch(void *dst, const void *a, const void *b, size_t n,
                                                 cohort_dtype_t dt, cohort_op_t op, cudaStream_t s)
{
    if (n == 0) {
        return cudaSuccess;
    }
    switch (dt) {
    case COHORT_INT8:
        return launch_op<COHORT_CUDA_OPS(int8_t, i8)>(dst, a, b, n, op, s);
    case COHORT_UINT8:
        return launch_op<COHORT_CUDA_OPS(uint8_t, u8)>(dst, a, b, n, op, s);
    case COHORT_INT32:
        return launch_op<COHORT_CUDA_OPS(int32_t, i32)>(dst, a, b, n, op, s);
    case COHORT_UINT32:
        return launch_op<COHORT_CUDA_OPS(uint32_t, u32)>(dst, a, b, n, op, s);
    case COHORT_INT64:
        return launch_op<COHORT_CUDA_OPS(int64_t, i64)>(dst, a, b, n, op, s);
    case COHORT_UINT64:
        return launch_op<COHORT_CUDA_OPS(uint64_t, u64)>(dst, a, b, n, op, s);
    case COHORT_FLOAT16:
        return launch_op<COHORT_CUDA_OPS(uint16_t, f16)>(dst, a, b, n, op, s);
    case COHORT_BFLOAT16:
        return launch_op<COHORT_CUDA_OPS(uint16_t, bf16)>(dst, a, b, n, op, s);
    case COHORT_FLOAT32:
        return launch_op<COHORT_CUDA_OPS(float, f32)>(dst, a, b, n, op, s);
    case COHORT_FLOAT64:
        return launch_op<COHORT_CUDA_OPS(double, f64)>(dst, a, b, n, op, s);
    }
    return cudaErrorInvalidValue;
}

extern "C" cudaError_t cohort_cuda_finish_launch(void *buf, size_t n, cohort_dtype_t dt, int nranks,
                                                 cudaStream_t s)
{
    if (n == 0) {
        return cudaSuccess;
    }
    /* (float)nranks is exact up to 2^24 ranks, as on the host. */
    switch (dt) {
    case COHORT_FLOAT16:
        return launch_finish<uint16_t, float, div_f16>(buf, (float)nranks, n, s);
    case COHORT_BFLOAT16:
        return launch_finish<uint16_t, float, div_bf16>(buf, (float)nranks, n, s);
    case COHORT_FLOAT32:
        return launch_finish<float, float, div_f32>(buf, (float)nranks, n, s);
    case COHORT_FLOAT64:
        return launch_finish<double, double, div_f64>(buf, (double)nranks, n, s);
    default:
        return cudaSuccess; /* integers: AVG is rejected before a kernel is asked for */
    }
}
