/*
 * The few CUDA runtime calls the benchmark (and the GPU tests) need to make device buffers of
 * their own, loaded with dlopen: the tools link nothing but libcohort, and a machine without
 * CUDA runs them as before. The runtime's enums are plain ints here (cudaMemcpyDefault = 4,
 * cudaMemAttachGlobal = 1).
 */
#ifndef COHORT_BENCH_CUDART_H
#define COHORT_BENCH_CUDART_H

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>

typedef struct {
    void *dl;
    int (*get_device_count)(int *count);
    int (*set_device)(int device);
    int (*malloc_device)(void **ptr, size_t bytes);
    int (*malloc_managed)(void **ptr, size_t bytes, unsigned flags);
    int (*free_device)(void *ptr);
    int (*memcpy_any)(void *dst, const void *src, size_t bytes, int kind);
    int (*memset_device)(void *ptr, int value, size_t bytes);
    int (*synchronize)(void);
    int (*event_create)(void **event);
    int (*event_record)(void *event, void *stream);
    int (*event_synchronize)(void *event);
    int (*event_elapsed)(float *ms, void *start, void *end);
    int (*event_destroy)(void *event);
    int (*stream_create)(void **stream);
    int (*stream_destroy)(void *stream);
    int (*stream_synchronize)(void *stream);
    int (*memcpy_async)(void *dst, const void *src, size_t bytes, int kind, void *stream);
    const char *(*error_string)(int error);
} bench_cudart_t;

#define BENCH_CUDA_MEMCPY_DEFAULT 4

/* 0 with every entry point resolved and at least one device; -1 with why in @a why. */
static inline int bench_cudart_load(bench_cudart_t *c, char *why, size_t whylen)
{
    static const char *const names[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12",
                                        "/usr/local/cuda/lib64/libcudart.so", NULL};
    int n = 0, e;

    for (int i = 0; names[i] != NULL && c->dl == NULL; i++) {
        c->dl = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    }
    if (c->dl == NULL) {
        snprintf(why, whylen, "no CUDA device (libcudart not found)");
        return -1;
    }
#define BENCH_CUDART_SYM(field, name)                                                              \
    if ((*(void **)&c->field = dlsym(c->dl, name)) == NULL) {                                      \
        snprintf(why, whylen, "no CUDA device (libcudart has no %s)", name);                       \
        return -1;                                                                                 \
    }
    BENCH_CUDART_SYM(get_device_count, "cudaGetDeviceCount")
    BENCH_CUDART_SYM(set_device, "cudaSetDevice")
    BENCH_CUDART_SYM(malloc_device, "cudaMalloc")
    BENCH_CUDART_SYM(malloc_managed, "cudaMallocManaged")
    BENCH_CUDART_SYM(free_device, "cudaFree")
    BENCH_CUDART_SYM(memcpy_any, "cudaMemcpy")
    BENCH_CUDART_SYM(memset_device, "cudaMemset")
    BENCH_CUDART_SYM(synchronize, "cudaDeviceSynchronize")
    BENCH_CUDART_SYM(event_create, "cudaEventCreate")
    BENCH_CUDART_SYM(event_record, "cudaEventRecord")
    BENCH_CUDART_SYM(event_synchronize, "cudaEventSynchronize")
    BENCH_CUDART_SYM(event_elapsed, "cudaEventElapsedTime")
    BENCH_CUDART_SYM(event_destroy, "cudaEventDestroy")
    BENCH_CUDART_SYM(stream_create, "cudaStreamCreate")
    BENCH_CUDART_SYM(stream_destroy, "cudaStreamDestroy")
    BENCH_CUDART_SYM(stream_synchronize, "cudaStreamSynchronize")
    BENCH_CUDART_SYM(memcpy_async, "cudaMemcpyAsync")
    BENCH_CUDART_SYM(error_string, "cudaGetErrorString")
#undef BENCH_CUDART_SYM
    e = c->get_device_count(&n);
    if (e != 0 || n == 0) {
        snprintf(why, whylen, "no CUDA device (%s)", e != 0 ? c->error_string(e) : "none visible");
        return -1;
    }
    return 0;
}

#endif
