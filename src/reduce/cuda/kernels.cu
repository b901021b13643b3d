/*
 * The reduction kernel for every (dtype, op) pair, AVG's division included. The element operations
 * are elem.h's, the very functions the host loops use, so the device result is the host result
 * bit for bit (built with -fmad=false: no contraction into fused multiply-adds, which the host
 * does not do either).
 */
#include "reduce/cuda/kernels.h"
#include "reduce/elem.h"

namespace
{

/* The pointers of an n-way reduction, passed by value in the kernel's parameters. */
template <typename T> struct multi_ptrs {
    T *dst[COHORT_GPU_MULTI_MAX];
    const T *src[COHORT_GPU_MULTI_MAX];
};

/* The identity in place of AVG's division, for every op but AVG. */
template <typename T, typename N> __device__ T keep(T x, N)
{
    return x;
}

/* Element i of every source, combined left to right as successive pairwise reductions would
 * (the accumulator is a T between steps, as it is in memory there), then D (AVG's division or
 * keep), then written to every destination: each element of each input read once, of each
 * output written once. A destination may alias a source exactly: the thread reads element i of
 * every source before it writes element i anywhere. One thread per element, grid-stride. The
 * one kernel of the module: a pairwise reduction is two sources and one destination, AVG's
 * division alone is one source, itself, divided. */
template <typename T, typename N, T (*F)(T, T), T (*D)(T, N)>
__global__ void multi_kernel(multi_ptrs<T> p, int ndst, int nsrc, N nranks, size_t n)
{
    size_t stride = (size_t)blockDim.x * gridDim.x;

    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        T acc = p.src[0][i];
        for (int j = 1; j < nsrc; j++) {
            acc = F(acc, p.src[j][i]);
        }
        acc = D(acc, nranks);
        for (int d = 0; d < ndst; d++) {
            p.dst[d][i] = acc;
        }
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

#define COHORT_CUDA_OPS(_type, _sfx) _type, sum_##_sfx, prod_##_sfx, min_##_sfx, max_##_sfx

template <typename T, typename N, T (*F)(T, T), T (*D)(T, N)>
cudaError_t launch_multi(void *const *dsts, int ndst, const void *const *srcs, int nsrc, N nranks,
                         size_t n, cudaStream_t s)
{
    multi_ptrs<T> p;

    for (int d = 0; d < ndst; d++) {
        p.dst[d] = (T *)dsts[d];
    }
    for (int j = 0; j < nsrc; j++) {
        p.src[j] = (const T *)srcs[j];
    }
    multi_kernel<T, N, F, D><<<blocks_for(n), threads, 0, s>>>(p, ndst, nsrc, nranks, n);
    return cudaGetLastError();
}

/* One dtype's n-way reduction for @a op; AVG is SUM then DIV (float types only: an integer
 * AVG is rejected before a kernel is asked for, so DIV is keep for them). */
template <typename T, T (*SUM)(T, T), T (*PROD)(T, T), T (*MIN)(T, T), T (*MAX)(T, T), typename N,
          T (*DIV)(T, N)>
cudaError_t launch_multi_op(void *const *dsts, int ndst, const void *const *srcs, int nsrc,
                            N nranks, size_t n, cohort_op_t op, cudaStream_t s)
{
    switch (op) {
    case COHORT_SUM:
        return launch_multi<T, N, SUM, keep<T, N>>(dsts, ndst, srcs, nsrc, nranks, n, s);
    case COHORT_AVG:
        return launch_multi<T, N, SUM, DIV>(dsts, ndst, srcs, nsrc, nranks, n, s);
    case COHORT_PROD:
        return launch_multi<T, N, PROD, keep<T, N>>(dsts, ndst, srcs, nsrc, nranks, n, s);
    case COHORT_MIN:
        return launch_multi<T, N, MIN, keep<T, N>>(dsts, ndst, srcs, nsrc, nranks, n, s);
    case COHORT_MAX:
        return launch_multi<T, N, MAX, keep<T, N>>(dsts, ndst, srcs, nsrc, nranks, n, s);
    }
    return cudaErrorInvalidValue;
}

} // namespace

#define COHORT_CUDA_MULTI_INT(_type, _sfx)                                                         \
    launch_multi_op<COHORT_CUDA_OPS(_type, _sfx), int, keep<_type, int>>(dsts, ndst, srcs, nsrc,   \
                                                                         nranks, n, op, s)

extern "C" cudaError_t cohort_cuda_reduce_multi_launch(void *const *dsts, int ndst,
                                                       const void *const *srcs, int nsrc, size_t n,
                                                       cohort_dtype_t dt, cohort_op_t op,
                                                       int nranks, cudaStream_t s)
{
    if (n == 0) {
        return cudaSuccess;
    }
    if (ndst < 1 || nsrc < 1 || ndst > COHORT_GPU_MULTI_MAX || nsrc > COHORT_GPU_MULTI_MAX) {
        return cudaErrorInvalidValue;
    }
    switch (dt) {
    case COHORT_INT8:
        return COHORT_CUDA_MULTI_INT(int8_t, i8);
    case COHORT_UINT8:
        return COHORT_CUDA_MULTI_INT(uint8_t, u8);
    case COHORT_INT32:
        return COHORT_CUDA_MULTI_INT(int32_t, i32);
    case COHORT_UINT32:
        return COHORT_CUDA_MULTI_INT(uint32_t, u32);
    case COHORT_INT64:
        return COHORT_CUDA_MULTI_INT(int64_t, i64);
    case COHORT_UINT64:
        return COHORT_CUDA_MULTI_INT(uint64_t, u64);
    case COHORT_FLOAT16:
        return launch_multi_op<COHORT_CUDA_OPS(uint16_t, f16), float, div_f16>(
            dsts, ndst, srcs, nsrc, (float)nranks, n, op, s);
    case COHORT_BFLOAT16:
        return launch_multi_op<COHORT_CUDA_OPS(uint16_t, bf16), float, div_bf16>(
            dsts, ndst, srcs, nsrc, (float)nranks, n, op, s);
    case COHORT_FLOAT32:
        return launch_multi_op<COHORT_CUDA_OPS(float, f32), float, div_f32>(
            dsts, ndst, srcs, nsrc, (float)nranks, n, op, s);
    case COHORT_FLOAT64:
        return launch_multi_op<COHORT_CUDA_OPS(double, f64), double, div_f64>(
            dsts, ndst, srcs, nsrc, (double)nranks, n, op, s);
    }
    return cudaErrorInvalidValue;
}
