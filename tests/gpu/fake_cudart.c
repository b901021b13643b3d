/*
 * A stand-in for libcudart.so.13 with one fake device, so that the device paths of cohort (the
 * CUDA module's staging, memory-type detection, p2p and every collective) run in CI on a
 * machine without a GPU. "Device" memory is mapped PROT_NONE: any host access to it by cohort
 * faults, as it would on a real GPU; only this runtime's copies open it, for the copy. Kernels
 * cannot run here: a launch fails with cudaErrorNoKernelImageForDevice, so a device reduction
 * that should not happen on the staged path shows up as an error. IPC works between processes
 * of one user: device memory is a memfd, a handle names (pid, fd), and opening it maps
 * /proc/<pid>/fd/<fd> (so copies through IPC run here too; reductions need kernels, which
 * tests/gpu/fake_kernels.c provides as host loops). As in CUDA, buffer ids are never reused
 * and an allocation already mapped here cannot be opened again. An asynchronous copy is made
 * only when its stream is synchronized or an event recorded after it is found complete, and an
 * event says "not ready" to its first FAKE_CUDA_EVENT_POLLS queries (default 2): so cohort
 * reading a copy's destination before the copy is known to be over reads stale data. With
 * FAKE_CUDA_SYNC_OPENED_FAIL=1 a synchronous copy to or from memory opened from another
 * process's handle fails (cudaErrorNotPermitted), so a run shows that cohort's copy out of a
 * peer's memory is asynchronous where it must be (the point-to-point single copy, made from
 * progress: src/proto/cuda_ipc.c).
 *
 * Built only with CUDA (it needs the runtime's headers for its types) and only for tests: see
 * tests/gpu/fake_check.sh. Single-threaded, like the ranks that use it. Its settings
 * (FAKE_CUDA_NO_DEVICE_RANK, FAKE_CUDA_IPC_FAIL_RANK, FAKE_CUDA_EVENT_POLLS,
 * FAKE_CUDA_SYNC_OPENED_FAIL) are read at each
 * call they govern, never kept, so that configurations run one after the other in one process
 * (tests/mpi/cuda_coll, harness.h's test_configs) each see their own.
 */
#define _GNU_SOURCE /* memfd_create */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#define FAKE_MAX_ALLOCS 4096

typedef struct {
    char *base;
    size_t len; /* mapped bytes */
    int managed;
    int fd;     /* the memfd behind device memory; -1 for managed memory */
    int opened; /* mapped from another process's handle */
    /* CU_POINTER_ATTRIBUTE_BUFFER_ID: never reused in a process, as CUDA's; for an opened
     * mapping, the owner's id of the allocation */
    unsigned long long id;
    int pid; /* opened: the owner */
} fake_alloc_t;

typedef struct {
    int pid, fd;
    size_t len;
    unsigned long long id;
} fake_handle_t;

static fake_alloc_t fake_allocs[FAKE_MAX_ALLOCS];
static CUresult fake_address_range(CUdeviceptr *base, size_t *size, CUdeviceptr p);
static CUresult fake_pointer_attr(void *data, CUpointer_attribute attr, CUdeviceptr p);
static cudaError_t fake_last;

static cudaError_t fake_set(cudaError_t e)
{
    if (e != cudaSuccess) {
        fake_last = e;
    }
    return e;
}

static fake_alloc_t *fake_find(const void *p)
{
    for (int i = 0; i < FAKE_MAX_ALLOCS; i++) {
        fake_alloc_t *a = &fake_allocs[i];
        if (a->base != NULL && (const char *)p >= a->base && (const char *)p < a->base + a->len) {
            return a;
        }
    }
    return NULL;
}

static cudaError_t fake_register(void *p, size_t len, int managed, int fd, int opened,
                                 unsigned long long id, int pid)
{
    static unsigned long long next_id;

    for (int i = 0; i < FAKE_MAX_ALLOCS; i++) {
        if (fake_allocs[i].base == NULL) {
            fake_allocs[i] =
                (fake_alloc_t){p, len, managed, fd, opened, opened ? id : ++next_id, pid};
            return cudaSuccess;
        }
    }
    return fake_set(cudaErrorMemoryAllocation);
}

static cudaError_t fake_map(void **ptr, size_t bytes, int managed)
{
    size_t len = (bytes + 4095) & ~(size_t)4095;
    int fd = -1;
    void *p;

    if (len == 0) {
        len = 4096;
    }
    if (!managed) {
        fd = memfd_create("fake-cuda", 0);
        if (fd < 0 || ftruncate(fd, (off_t)len) != 0) {
            return fake_set(cudaErrorMemoryAllocation);
        }
    }
    p = managed ? mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                : mmap(NULL, len, PROT_NONE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED || fake_register(p, len, managed, fd, 0, 0, 0) != cudaSuccess) {
        if (fd >= 0) {
            close(fd);
        }
        return fake_set(cudaErrorMemoryAllocation);
    }
    *ptr = p;
    return cudaSuccess;
}

static void fake_open(fake_alloc_t *a, int open)
{
    if (a != NULL && !a->managed) {
        mprotect(a->base, a->len, open ? PROT_READ | PROT_WRITE : PROT_NONE);
    }
}

/* Whether the variable @a name names this rank (PMIX_RANK). */
static int fake_this_rank(const char *name)
{
    const char *r = getenv(name), *me = getenv("PMIX_RANK");

    return r != NULL && me != NULL && strcmp(r, me) == 0;
}

/* FAKE_CUDA_NO_DEVICE_RANK=r: rank r is shown no device (CUDA_VISIBLE_DEVICES=""), the driver
 * being there all the same, as on a GPU node. */
cudaError_t cudaGetDeviceCount(int *count)
{
    if (fake_this_rank("FAKE_CUDA_NO_DEVICE_RANK")) {
        *count = 0;
        return fake_set(cudaErrorNoDevice);
    }
    *count = 1;
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *version)
{
    *version = 13000;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device)
{
    return device == 0 ? cudaSuccess : fake_set(cudaErrorInvalidDevice);
}

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = fake_last;

    fake_last = cudaSuccess;
    return e;
}

const char *cudaGetErrorString(cudaError_t e)
{
    return e == cudaSuccess ? "no error" : "fake CUDA runtime: not supported";
}

const char *cudaGetErrorName(cudaError_t e)
{
    return e == cudaSuccess ? "cudaSuccess" : "cudaErrorFake";
}

/* A stream: the asynchronous copies and host functions (the fake kernels' launches,
 * fake_kernels.c) enqueued on it and not run yet (tail enqueued, head run), in order. */
#define FAKE_QUEUE   1024
#define FAKE_STREAMS 8
typedef struct {
    struct {
        void *dst;
        const void *src;
        size_t bytes;
        cudaHostFn_t fn; /* a host function instead of a copy */
        void *arg;
    } op[FAKE_QUEUE];
    unsigned long long head, tail;
    cudaError_t err; /* the first failed copy, reported by the next wait */
    int used;        /* created and not destroyed */
} fake_stream_t;

typedef struct {
    fake_stream_t *st;
    unsigned long long at; /* the copies before it on its stream */
    int polls;             /* "not ready" answers left */
} fake_event_t;

static fake_stream_t fake_streams[FAKE_STREAMS];

/* Make @a st's copies up to number @a upto. */
/* FAKE_CUDA_SYNC_OPENED_FAIL=1 and a copy touching memory opened from another process's
 * handle that the caller waits for: cudaMemcpy, or a stream synchronized (the CUDA module's
 * synchronous copy is an asynchronous one on its own lane, then that lane synchronized). */
/* A host function's cudaMemcpy (a fake kernel's) is the queued work's own: refused only when
 * the queue runs because somebody waits for it. */
static enum { FAKE_NOT_QUEUED, FAKE_QUEUED_POLLED, FAKE_QUEUED_WAITED } fake_queued;
static cudaError_t fake_fn_err; /* a host function's failed copy */

static int fake_sync_refused(const void *dst, const void *src)
{
    const char *no_sync = getenv("FAKE_CUDA_SYNC_OPENED_FAIL");
    fake_alloc_t *d, *s;

    if (no_sync == NULL || strcmp(no_sync, "1") != 0 || fake_queued == FAKE_QUEUED_POLLED) {
        return 0;
    }
    d = fake_find(dst);
    s = fake_find(src);
    return (d != NULL && d->opened) || (s != NULL && s->opened);
}

/* A copy, made now: the synchronous one's and a queued asynchronous one's, once due. */
static cudaError_t fake_copy(void *dst, const void *src, size_t bytes)
{
    fake_alloc_t *d = fake_find(dst), *s = fake_find(src);

    if ((d != NULL && (char *)dst + bytes > d->base + d->len) ||
        (s != NULL && (const char *)src + bytes > s->base + s->len)) {
        return fake_set(cudaErrorInvalidValue); /* past the end of an allocation */
    }
    fake_open(d, 1);
    fake_open(s, 1);
    memmove(dst, src, bytes);
    fake_open(d, 0);
    fake_open(s, 0);
    return cudaSuccess;
}

/* Host function @a fn run as queued work, waited for or not; its copies' first error. */
static cudaError_t fake_run_fn(cudaHostFn_t fn, void *arg, int waited)
{
    fake_queued = waited ? FAKE_QUEUED_WAITED : FAKE_QUEUED_POLLED;
    fake_fn_err = cudaSuccess;
    fn(arg);
    fake_queued = FAKE_NOT_QUEUED;
    return fake_fn_err;
}

static cudaError_t fake_run(fake_stream_t *st, unsigned long long upto, int waited)
{
    cudaError_t e;

    while (st->head < upto) {
        if (st->op[st->head % FAKE_QUEUE].fn != NULL) {
            e = fake_run_fn(st->op[st->head % FAKE_QUEUE].fn, st->op[st->head % FAKE_QUEUE].arg,
                            waited);
        } else {
            e = waited && fake_sync_refused(st->op[st->head % FAKE_QUEUE].dst,
                                            st->op[st->head % FAKE_QUEUE].src)
                    ? cudaErrorNotPermitted
                    : fake_copy(st->op[st->head % FAKE_QUEUE].dst,
                                st->op[st->head % FAKE_QUEUE].src,
                                st->op[st->head % FAKE_QUEUE].bytes);
        }
        if (e != cudaSuccess && st->err == cudaSuccess) {
            st->err = e;
        }
        st->head++;
    }
    e = st->err;
    st->err = cudaSuccess;
    return e;
}

/* A stream not in use, or an error: never one already handed out, whose copies a caller's
 * synchronization would then make too (a process running configuration after configuration,
 * tests/mpi/cuda_coll, makes a stream in each; the module keeps its own for the process). A
 * destroyed stream's counters go on, so an event recorded on it before asks for nothing of the
 * stream's next user. */
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags)
{
    for (int i = 0; i < FAKE_STREAMS; i++) {
        if (!fake_streams[i].used) {
            fake_streams[i].used = 1;
            *s = (cudaStream_t)&fake_streams[i];
            return cudaSuccess;
        }
    }
    return fake_set(cudaErrorMemoryAllocation);
}

cudaError_t cudaStreamCreate(cudaStream_t *s)
{
    return cudaStreamCreateWithFlags(s, 0);
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    cudaError_t e = cudaStreamSynchronize(s);

    if (s != NULL) {
        ((fake_stream_t *)s)->used = 0;
    }
    return e;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    fake_stream_t *st = (fake_stream_t *)s;

    return st != NULL ? fake_set(fake_run(st, st->tail, 1)) : cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    cudaError_t e = cudaSuccess;

    for (int i = 0; i < FAKE_STREAMS; i++) {
        if (fake_run(&fake_streams[i], fake_streams[i].tail, 1) != cudaSuccess) {
            e = cudaErrorUnknown;
        }
    }
    return fake_set(e);
}

cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **fn, unsigned int version,
                                             unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *q)
{
    *fn = strcmp(symbol, "cuMemGetAddressRange") == 0    ? (void *)fake_address_range
          : strcmp(symbol, "cuPointerGetAttribute") == 0 ? (void *)fake_pointer_attr
                                                         : NULL;
    if (q != NULL) {
        *q = *fn != NULL ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
    }
    return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attr, const void *p)
{
    fake_alloc_t *a = fake_find(p);

    memset(attr, 0, sizeof(*attr));
    attr->device = a != NULL ? 0 : -2;
    attr->type = a == NULL    ? cudaMemoryTypeUnregistered
                 : a->managed ? cudaMemoryTypeManaged
                              : cudaMemoryTypeDevice;
    return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t bytes)
{
    return fake_map(p, bytes, 0);
}

cudaError_t cudaMallocManaged(void **p, size_t bytes, unsigned int flags)
{
    return fake_map(p, bytes, 1);
}

cudaError_t cudaFree(void *p)
{
    fake_alloc_t *a = fake_find(p);

    if (p == NULL) {
        return cudaSuccess;
    }
    if (a == NULL || a->base != p) {
        return fake_set(cudaErrorInvalidValue);
    }
    munmap(a->base, a->len);
    if (a->fd >= 0) {
        close(a->fd);
    }
    a->base = NULL;
    return cudaSuccess;
}

cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned int flags)
{
    return posix_memalign(p, 4096, bytes) == 0 ? cudaSuccess : fake_set(cudaErrorMemoryAllocation);
}

cudaError_t cudaFreeHost(void *p)
{
    free(p);
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind)
{
    cudaError_t e;

    (void)kind;
    e = fake_sync_refused(dst, src) ? fake_set(cudaErrorNotPermitted) : fake_copy(dst, src, bytes);
    if (e != cudaSuccess && fake_queued != FAKE_NOT_QUEUED && fake_fn_err == cudaSuccess) {
        fake_fn_err = e;
    }
    return e;
}

/* A copy (@a fn NULL) or a host function queued at the tail of @a st; a full queue runs its
 * oldest entry first, as a device would have got to it. */
static void fake_enqueue(fake_stream_t *st, void *dst, const void *src, size_t bytes,
                         cudaHostFn_t fn, void *arg)
{
    if (st->tail - st->head == FAKE_QUEUE) {
        fake_run(st, st->head + 1, 0);
    }
    st->op[st->tail % FAKE_QUEUE].dst = dst;
    st->op[st->tail % FAKE_QUEUE].src = src;
    st->op[st->tail % FAKE_QUEUE].bytes = bytes;
    st->op[st->tail % FAKE_QUEUE].fn = fn;
    st->op[st->tail % FAKE_QUEUE].arg = arg;
    st->tail++;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                            cudaStream_t s)
{
    fake_stream_t *st = (fake_stream_t *)s;

    if (st == NULL) {
        return fake_copy(dst, src, bytes); /* the null stream: in order with the host here */
    }
    fake_enqueue(st, dst, src, bytes, NULL, NULL);
    return cudaSuccess;
}

/* The fake kernels' launch (fake_kernels.c): queued like a copy, run when the stream gets there
 * (a real kernel runs when the device does, not in cudaLaunchKernel). Unlike CUDA's, the
 * function may call cudaMemcpy: its copies are the queued work's. */
cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void *arg)
{
    fake_stream_t *st = (fake_stream_t *)s;

    if (st == NULL) {
        return fake_set(fake_run_fn(fn, arg, 1)); /* the null stream: in order with the host */
    }
    fake_enqueue(st, NULL, NULL, 0, fn, arg);
    return cudaSuccess;
}

cudaError_t cudaMemset(void *p, int value, size_t bytes)
{
    fake_alloc_t *a = fake_find(p);

    fake_open(a, 1);
    memset(p, value, bytes);
    fake_open(a, 0);
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *e)
{
    *e = (cudaEvent_t)calloc(1, sizeof(fake_event_t));
    return *e != NULL ? cudaSuccess : fake_set(cudaErrorMemoryAllocation);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags)
{
    return cudaEventCreate(e);
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    fake_event_t *ev = (fake_event_t *)e;
    const char *polls = getenv("FAKE_CUDA_EVENT_POLLS");

    ev->st = (fake_stream_t *)s;
    ev->at = ev->st != NULL ? ev->st->tail : 0;
    ev->polls = polls != NULL ? atoi(polls) : 2;
    return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t e)
{
    fake_event_t *ev = (fake_event_t *)e;

    if (ev->polls > 0) {
        ev->polls--;
        return cudaErrorNotReady; /* not an error: not remembered */
    }
    return ev->st != NULL ? fake_set(fake_run(ev->st, ev->at, 0)) : cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    fake_event_t *ev = (fake_event_t *)e;

    ev->polls = 0;
    return ev->st != NULL ? fake_set(fake_run(ev->st, ev->at, 0)) : cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
    *ms = 1.0f;
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    free(e);
    return cudaSuccess;
}

cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *h, void *p)
{
    fake_alloc_t *a = fake_find(p);
    fake_handle_t fh;

    if (a == NULL || a->base != p || a->fd < 0 || a->opened) {
        return fake_set(cudaErrorInvalidValue);
    }
    fh = (fake_handle_t){(int)getpid(), a->fd, a->len, a->id};
    memset(h, 0, sizeof(*h));
    memcpy(h, &fh, sizeof(fh));
    return cudaSuccess;
}

cudaError_t cudaIpcOpenMemHandle(void **p, cudaIpcMemHandle_t h, unsigned int flags)
{
    fake_handle_t fh;
    char path[64];
    void *m;
    int fd;

    memcpy(&fh, &h, sizeof(fh));
    /* FAKE_CUDA_IPC_FAIL_RANK=r: rank r's "device" cannot reach the others' (no peer access
     * between two GPUs), so every open there fails, as cudaIpcOpenMemHandle would */
    if (fake_this_rank("FAKE_CUDA_IPC_FAIL_RANK")) {
        return fake_set(cudaErrorPeerAccessUnsupported);
    }
    /* CUDA refuses a second mapping of an allocation this process already has open */
    for (int i = 0; i < FAKE_MAX_ALLOCS; i++) {
        if (fake_allocs[i].base != NULL && fake_allocs[i].opened && fake_allocs[i].pid == fh.pid &&
            fake_allocs[i].id == fh.id) {
            return fake_set(cudaErrorAlreadyMapped);
        }
    }
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", fh.pid, fh.fd);
    fd = open(path, O_RDWR);
    if (fd < 0) {
        return fake_set(cudaErrorInvalidResourceHandle);
    }
    m = mmap(NULL, fh.len, PROT_NONE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED || fake_register(m, fh.len, 0, fd, 1, fh.id, fh.pid) != cudaSuccess) {
        close(fd);
        return fake_set(cudaErrorMemoryAllocation);
    }
    *p = m;
    return cudaSuccess;
}

cudaError_t cudaIpcCloseMemHandle(void *p)
{
    fake_alloc_t *a = fake_find(p);

    if (a == NULL || !a->opened) {
        return fake_set(cudaErrorInvalidValue);
    }
    munmap(a->base, a->len);
    close(a->fd);
    a->base = NULL;
    return cudaSuccess;
}

/* cuMemGetAddressRange and cuPointerGetAttribute(BUFFER_ID), as the module asks for them. */
static CUresult fake_address_range(CUdeviceptr *base, size_t *size, CUdeviceptr p)
{
    fake_alloc_t *a = fake_find((void *)(uintptr_t)p);

    if (a == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *base = (CUdeviceptr)(uintptr_t)a->base;
    *size = a->len;
    return CUDA_SUCCESS;
}

static CUresult fake_pointer_attr(void *data, CUpointer_attribute attr, CUdeviceptr p)
{
    fake_alloc_t *a = fake_find((void *)(uintptr_t)p);

    if (a == NULL || attr != CU_POINTER_ATTRIBUTE_BUFFER_ID) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *(unsigned long long *)data = a->id;
    return CUDA_SUCCESS;
}

cudaError_t cudaDeviceCanAccessPeer(int *ok, int a, int b)
{
    *ok = a == b;
    return cudaSuccess;
}

/* What nvcc's generated code calls to register and launch kernels (crt/host_runtime.h; not in
 * the public headers, so declared here with the shapes it uses). */
void **__cudaRegisterFatBinary(void *fatbin);
void __cudaRegisterFatBinaryEnd(void **handle);
void __cudaUnregisterFatBinary(void **handle);
void __cudaRegisterFunction(void **handle, const char *host, char *dev, const char *name, int limit,
                            void *tid, void *bid, void *bdim, void *gdim, int *wsize);
unsigned __cudaPushCallConfiguration(dim3 g, dim3 b, size_t shmem, void *stream);
cudaError_t __cudaPopCallConfiguration(dim3 *g, dim3 *b, size_t *shmem, void *stream);
cudaError_t __cudaLaunchKernel(const void *fn, dim3 g, dim3 b, void **args, size_t shmem,
                               cudaStream_t s);
cudaError_t __cudaGetKernel(void **kernel, const void *fn);
void __cudaInitModule(void **handle);

static void *fake_module;

void **__cudaRegisterFatBinary(void *fatbin)
{
    return &fake_module;
}

void __cudaRegisterFatBinaryEnd(void **handle) {}

void __cudaUnregisterFatBinary(void **handle) {}

void __cudaRegisterFunction(void **handle, const char *host, char *dev, const char *name, int limit,
                            void *tid, void *bid, void *bdim, void *gdim, int *wsize)
{
}

unsigned __cudaPushCallConfiguration(dim3 g, dim3 b, size_t shmem, void *stream)
{
    return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3 *g, dim3 *b, size_t *shmem, void *stream)
{
    return cudaSuccess;
}

cudaError_t __cudaLaunchKernel(const void *fn, dim3 g, dim3 b, void **args, size_t shmem,
                               cudaStream_t s)
{
    return fake_set(cudaErrorNoKernelImageForDevice);
}

cudaError_t __cudaGetKernel(void **kernel, const void *fn)
{
    *kernel = NULL;
    return cudaSuccess;
}

void __cudaInitModule(void **handle) {}
