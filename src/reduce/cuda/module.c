/*
 * The CUDA module: the table of gpu_module.h over the CUDA runtime. Loaded by libcohort with
 * dlopen the first time a call needs it, so that libcudart (and through it the driver) is only
 * touched by programs that ask for CUDA, and a machine without a driver just answers "no
 * device" (open() returns 0 with the runtime's reason).
 *
 * The module's state (its streams, the events of asynchronous copies) is per process, not per
 * context: the CUDA runtime's own state is per process, and two contexts sharing the streams
 * is harmless because every call below returns only when its work is done (copy_start
 * excepted, whose ticket is per process too).
 */
#include <cuda.h> /* types of the driver entry points only: libcuda is not linked */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>
#include "reduce/cuda/kernels.h"
#include "reduce/gpu_module.h"

/* Asynchronous copies in flight at once; past that a copy is made synchronously. */
#define COHORT_CUDA_COPIES 256

typedef CUresult (*cohort_cu_pointer_attr_t)(void *data, CUpointer_attribute attr, CUdeviceptr p);
typedef CUresult (*cohort_cu_address_range_t)(CUdeviceptr *base, size_t *size, CUdeviceptr p);

static struct {
    int opened;
    int ndevices;
    char why[160];
    cudaStream_t lane[COHORT_GPU_LANES];
    /* asynchronous copies in flight: slot i's event marks the end of the copy ticket
     * (gen << 32 | i + 1) names */
    struct {
        cudaEvent_t ev;
        uint32_t gen;
        int busy;
    } copy[COHORT_CUDA_COPIES];
    int next_copy;
    cohort_cu_pointer_attr_t pointer_attr;
    cohort_cu_address_range_t address_range;
} cohort_cuda;

static __thread char cohort_cuda_error[256];

static cohort_status_t cohort_cuda_fail(const char *what, cudaError_t e)
{
    snprintf(cohort_cuda_error, sizeof(cohort_cuda_error), "%s: %s (%s)", what,
             cudaGetErrorString(e), cudaGetErrorName(e));
    return COHORT_ERR_CUDA;
}

static const char *cohort_cuda_last_error(void)
{
    return cohort_cuda_error;
}

/* The driver calls that the runtime has no twin for (an allocation's range and buffer id, for
 * the IPC cache), fetched through the runtime so that libcuda is never linked. */
static void cohort_cuda_driver_entries(void)
{
    enum cudaDriverEntryPointQueryResult q;
    void *fn = NULL;

    if (cudaGetDriverEntryPointByVersion("cuPointerGetAttribute", &fn, 12000, cudaEnableDefault,
                                         &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess) {
        cohort_cuda.pointer_attr = (cohort_cu_pointer_attr_t)fn;
    }
    fn = NULL;
    if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &fn, 12000, cudaEnableDefault,
                                         &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess) {
        cohort_cuda.address_range = (cohort_cu_address_range_t)fn;
    }
}

static int cohort_cuda_open(char *why, size_t whylen)
{
    cudaError_t e;
    int n = 0;

    if (!cohort_cuda.opened) {
        cohort_cuda.opened = 1;
        e = cudaGetDeviceCount(&n);
        if (e != cudaSuccess || n == 0) {
            /* No driver, no device: the runtime's own words, and the sticky error cleared. */
            snprintf(cohort_cuda.why, sizeof(cohort_cuda.why), "no CUDA device (%s)",
                     e != cudaSuccess ? cudaGetErrorString(e) : "none visible");
            (void)cudaGetLastError();
            n = 0;
        }
        if (n > 0) {
            cohort_cuda_driver_entries();
        }
        cohort_cuda.ndevices = n;
    }
    if (why != NULL && whylen > 0) {
        snprintf(why, whylen, "%s", cohort_cuda.why);
    }
    return cohort_cuda.ndevices;
}

static int cohort_cuda_driver(void)
{
    int v = 0;

    if (cudaDriverGetVersion(&v) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return v;
}

/* The streams are made when the first device buffer is seen, not at open: a program that only
 * passes host buffers never creates a CUDA context (hundreds of MiB of device memory per
 * process). They belong to the device current then. */
static cohort_status_t cohort_cuda_lanes(void)
{
    cudaError_t e;

    for (int i = 0; i < COHORT_GPU_LANES; i++) {
        if (cohort_cuda.lane[i] == NULL) {
            e = cudaStreamCreateWithFlags(&cohort_cuda.lane[i], cudaStreamNonBlocking);
            if (e != cudaSuccess) {
                cohort_cuda.lane[i] = NULL;
                return cohort_cuda_fail("cudaStreamCreateWithFlags", e);
            }
        }
    }
    return COHORT_OK;
}

static cohort_gpu_ptr_kind_t cohort_cuda_ptr_kind(const void *ptr, int *device)
{
    struct cudaPointerAttributes attr;

    if (ptr == NULL || cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) {
        /* Memory CUDA never heard of; older runtimes said so with an error. */
        (void)cudaGetLastError();
        return COHORT_GPU_PTR_HOST;
    }
    if (device != NULL) {
        *device = attr.device;
    }
    switch (attr.type) {
    case cudaMemoryTypeDevice:
        return COHORT_GPU_PTR_DEVICE;
    case cudaMemoryTypeManaged:
        return COHORT_GPU_PTR_MANAGED;
    default:
        return COHORT_GPU_PTR_HOST;
    }
}

static cohort_status_t cohort_cuda_copy_async(void *dst, const void *src, size_t bytes, int lane)
{
    cudaError_t e;

    if (cohort_cuda_lanes() != COHORT_OK) {
        return COHORT_ERR_CUDA;
    }
    e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, cohort_cuda.lane[lane]);
    return e == cudaSuccess ? COHORT_OK : cohort_cuda_fail("cudaMemcpyAsync", e);
}

static cohort_status_t cohort_cuda_copy_wait(int lane)
{
    cudaError_t e = cudaStreamSynchronize(cohort_cuda.lane[lane]);

    return e == cudaSuccess ? COHORT_OK : cohort_cuda_fail("cudaStreamSynchronize", e);
}

static cohort_status_t cohort_cuda_copy(void *dst, const void *src, size_t bytes)
{
    cohort_status_t status;

    if (bytes == 0 || dst == src) {
        return COHORT_OK;
    }
    status = cohort_cuda_copy_async(dst, src, bytes, COHORT_GPU_LANE_SYNC);
    return status == COHORT_OK ? cohort_cuda_copy_wait(COHORT_GPU_LANE_SYNC) : status;
}

/* A free copy slot with its event (made on first use, kept: creating events costs more than
 * the copies they time), or -1. */
static int cohort_cuda_copy_slot(void)
{
    for (int k = 0; k < COHORT_CUDA_COPIES; k++) {
        int i = (cohort_cuda.next_copy + k) % COHORT_CUDA_COPIES;
        if (cohort_cuda.copy[i].busy) {
            continue;
        }
        if (cohort_cuda.copy[i].ev == NULL &&
            cudaEventCreateWithFlags(&cohort_cuda.copy[i].ev, cudaEventDisableTiming) !=
                cudaSuccess) {
            cohort_cuda.copy[i].ev = NULL;
            (void)cudaGetLastError();
            return -1;
        }
        cohort_cuda.next_copy = (i + 1) % COHORT_CUDA_COPIES;
        return i;
    }
    return -1;
}

/* Slot @a i's event recorded on @a stream: the ticket that names it, or the stream waited for
 * when the record fails. */
static cohort_status_t cohort_cuda_copy_arm(int i, cudaStream_t stream, uint64_t *ticket)
{
    cudaError_t e = cudaEventRecord(cohort_cuda.copy[i].ev, stream);

    if (e != cudaSuccess) {
        (void)cudaStreamSynchronize(stream);
        return cohort_cuda_fail("cudaEventRecord", e);
    }
    cohort_cuda.copy[i].busy = 1;
    *ticket = (uint64_t)cohort_cuda.copy[i].gen << 32 | (uint64_t)(i + 1);
    return COHORT_OK;
}

static cohort_status_t cohort_cuda_copy_start(void *dst, const void *src, size_t bytes, int lane,
                                              uint64_t *ticket)
{
    cohort_status_t status;
    int i;

    if (ticket != NULL) {
        *ticket = 0;
    }
    if (bytes == 0 || dst == src) {
        return COHORT_OK;
    }
    if (ticket == NULL) {
        return cohort_cuda_copy_async(dst, src, bytes, lane);
    }
    i = cohort_cuda_copy_slot();
    status = cohort_cuda_copy_async(dst, src, bytes, lane);
    if (status != COHORT_OK) {
        return status;
    }
    /* every slot in flight: this one is waited for now */
    return i < 0 ? cohort_cuda_copy_wait(lane)
                 : cohort_cuda_copy_arm(i, cohort_cuda.lane[lane], ticket);
}

static cohort_status_t cohort_cuda_stream_mark(void *stream, uint64_t *ticket)
{
    int i = cohort_cuda_copy_slot();
    cudaError_t e;

    *ticket = 0;
    if (i >= 0) {
        return cohort_cuda_copy_arm(i, (cudaStream_t)stream, ticket);
    }
    e = cudaStreamSynchronize((cudaStream_t)stream);
    return e == cudaSuccess ? COHORT_OK : cohort_cuda_fail("cudaStreamSynchronize", e);
}

static cohort_status_t cohort_cuda_lane_mark(int lane, uint64_t *ticket)
{
    *ticket = 0;
    if (cohort_cuda.lane[lane] == NULL) {
        return COHORT_OK; /* nothing was ever enqueued on it */
    }
    return cohort_cuda_stream_mark(cohort_cuda.lane[lane], ticket);
}

/* The slot a ticket names, or -1 for one not in flight. */
static int cohort_cuda_copy_find(uint64_t ticket)
{
    uint64_t low = ticket & 0xffffffffu;
    int i = (int)low - 1;

    if (low == 0 || low > COHORT_CUDA_COPIES || !cohort_cuda.copy[i].busy ||
        cohort_cuda.copy[i].gen != (uint32_t)(ticket >> 32)) {
        return -1;
    }
    return i;
}

/* Whether the copy is over (@a how 0), waiting for it (1), or not asking (2: a stream mark
 * given up; the event is recorded anew at its next use); once it is, the ticket is used up. */
static cohort_status_t cohort_cuda_copy_end(uint64_t ticket, int how)
{
    int i = cohort_cuda_copy_find(ticket);
    cudaError_t e;

    if (i < 0) {
        return COHORT_OK;
    }
    e = how == 2   ? cudaSuccess
        : how == 1 ? cudaEventSynchronize(cohort_cuda.copy[i].ev)
                   : cudaEventQuery(cohort_cuda.copy[i].ev);
    if (e == cudaErrorNotReady) {
        return COHORT_INPROGRESS;
    }
    cohort_cuda.copy[i].busy = 0;
    cohort_cuda.copy[i].gen++;
    return e == cudaSuccess ? COHORT_OK : cohort_cuda_fail("asynchronous copy", e);
}

static cohort_status_t cohort_cuda_copy_test(uint64_t ticket)
{
    return cohort_cuda_copy_end(ticket, 0);
}

static cohort_status_t cohort_cuda_copy_finish(uint64_t ticket)
{
    return cohort_cuda_copy_end(ticket, 1);
}

static void cohort_cuda_mark_drop(uint64_t ticket)
{
    (void)cohort_cuda_copy_end(ticket, 2);
}

/* Every reduction of the module is the one kernel's (kernels.cu), enqueued on @a lane. */
static cohort_status_t cohort_cuda_reduce_multi_start(void *const *dsts, int ndst,
                                                      const void *const *srcs, int nsrc,
                                                      size_t count, cohort_dtype_t dt,
                                                      cohort_op_t op, int nranks, int lane)
{
    cudaError_t e;

    if (cohort_cuda_lanes() != COHORT_OK) {
        return COHORT_ERR_CUDA;
    }
    e = cohort_cuda_reduce_multi_launch(dsts, ndst, srcs, nsrc, count, dt, op, nranks,
                                        cohort_cuda.lane[lane]);
    return e == cudaSuccess ? COHORT_OK : cohort_cuda_fail("reduction kernel", e);
}

/* The same, run to completion. */
static cohort_status_t cohort_cuda_reduce_multi(void *const *dsts, int ndst,
                                                const void *const *srcs, int nsrc, size_t count,
                                                cohort_dtype_t dt, cohort_op_t op, int nranks)
{
    cohort_status_t status = cohort_cuda_reduce_multi_start(dsts, ndst, srcs, nsrc, count, dt, op,
                                                            nranks, COHORT_GPU_LANE_SYNC);

    return status == COHORT_OK ? cohort_cuda_copy_wait(COHORT_GPU_LANE_SYNC) : status;
}

/* dst = a op b: two sources, no division (AVG sums here; finish divides). */
static cohort_status_t cohort_cuda_reduce(void *dst, const void *a, const void *b, size_t count,
                                          cohort_dtype_t dt, cohort_op_t op)
{
    const void *srcs[2] = {a, b};

    return cohort_cuda_reduce_multi(&dst, 1, srcs, 2, count, dt, op == COHORT_AVG ? COHORT_SUM : op,
                                    1);
}

/* AVG's division: the buffer, one source, divided into itself. */
static cohort_status_t cohort_cuda_finish(void *buf, size_t count, cohort_dtype_t dt,
                                          cohort_op_t op, int nranks)
{
    const void *src = buf;

    if (op != COHORT_AVG) {
        return COHORT_OK;
    }
    return cohort_cuda_reduce_multi(&buf, 1, &src, 1, count, dt, COHORT_AVG, nranks);
}

static cohort_status_t cohort_cuda_host_alloc(void **ptr, size_t bytes)
{
    cudaError_t e = cudaHostAlloc(ptr, bytes > 0 ? bytes : 1, cudaHostAllocPortable);

    return e == cudaSuccess ? COHORT_OK : cohort_cuda_fail("cudaHostAlloc", e);
}

static void cohort_cuda_host_free(void *ptr)
{
    if (ptr != NULL) {
        (void)cudaFreeHost(ptr);
    }
}

static cohort_status_t cohort_cuda_device_alloc(void **ptr, size_t bytes)
{
    cudaError_t e = cudaMalloc(ptr, bytes > 0 ? bytes : 1);

    return e == cudaSuccess ? COHORT_OK : cohort_cuda_fail("cudaMalloc", e);
}

static void cohort_cuda_device_free(void *ptr)
{
    if (ptr != NULL) {
        (void)cudaFree(ptr);
    }
}

static cohort_status_t cohort_cuda_ipc_get(const void *ptr, cohort_gpu_ipc_t *ipc)
{
    CUdeviceptr base = 0;
    size_t size = 0;
    unsigned long long id = 0;
    cudaIpcMemHandle_t h;
    cudaError_t e;
    int device = -1;

    if (cohort_cuda.address_range == NULL || cohort_cuda.pointer_attr == NULL) {
        snprintf(cohort_cuda_error, sizeof(cohort_cuda_error),
                 "cuMemGetAddressRange/cuPointerGetAttribute not available from the runtime");
        return COHORT_ERR_CUDA;
    }
    if (cohort_cuda_ptr_kind(ptr, &device) != COHORT_GPU_PTR_DEVICE ||
        cohort_cuda.address_range(&base, &size, (CUdeviceptr)(uintptr_t)ptr) != CUDA_SUCCESS ||
        cohort_cuda.pointer_attr(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                 (CUdeviceptr)(uintptr_t)ptr) != CUDA_SUCCESS) {
        snprintf(cohort_cuda_error, sizeof(cohort_cuda_error),
                 "%p is not in a cudaMalloc allocation", ptr);
        return COHORT_ERR_CUDA;
    }
    e = cudaIpcGetMemHandle(&h, (void *)(uintptr_t)base);
    if (e != cudaSuccess) {
        return cohort_cuda_fail("cudaIpcGetMemHandle", e);
    }
    memcpy(ipc->handle, &h, sizeof(h) < sizeof(ipc->handle) ? sizeof(h) : sizeof(ipc->handle));
    ipc->buffer_id = id;
    ipc->alloc_base = (uint64_t)base;
    ipc->offset = (size_t)((uintptr_t)ptr - (uintptr_t)base);
    ipc->alloc_size = size;
    ipc->device = device;
    return COHORT_OK;
}

static cohort_status_t cohort_cuda_ipc_open(const cohort_gpu_ipc_t *ipc, void **base)
{
    cudaIpcMemHandle_t h;
    cudaError_t e;

    memcpy(&h, ipc->handle, sizeof(h));
    e = cudaIpcOpenMemHandle(base, h, cudaIpcMemLazyEnablePeerAccess);
    return e == cudaSuccess ? COHORT_OK : cohort_cuda_fail("cudaIpcOpenMemHandle", e);
}

static void cohort_cuda_ipc_close(void *base)
{
    if (base != NULL) {
        (void)cudaIpcCloseMemHandle(base);
    }
}

static int cohort_cuda_can_access(int a, int b)
{
    int ok = 0;

    if (a == b) {
        return 1;
    }
    if (cudaDeviceCanAccessPeer(&ok, a, b) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return ok;
}

/* The one exported symbol (the module is built with hidden visibility otherwise). */
__attribute__((visibility("default"))) const cohort_gpu_module_t cohort_gpu_module = {
    .abi = COHORT_GPU_MODULE_ABI,
    .name = "cuda",
    .open = cohort_cuda_open,
    .driver = cohort_cuda_driver,
    .last_error = cohort_cuda_last_error,
    .ptr_kind = cohort_cuda_ptr_kind,
    .copy = cohort_cuda_copy,
    .copy_start = cohort_cuda_copy_start,
    .lane_mark = cohort_cuda_lane_mark,
    .copy_test = cohort_cuda_copy_test,
    .copy_finish = cohort_cuda_copy_finish,
    .stream_mark = cohort_cuda_stream_mark,
    .mark_drop = cohort_cuda_mark_drop,
    .reduce = cohort_cuda_reduce,
    .reduce_multi = cohort_cuda_reduce_multi,
    .reduce_multi_start = cohort_cuda_reduce_multi_start,
    .finish = cohort_cuda_finish,
    .host_alloc = cohort_cuda_host_alloc,
    .host_free = cohort_cuda_host_free,
    .device_alloc = cohort_cuda_device_alloc,
    .device_free = cohort_cuda_device_free,
    .ipc_get = cohort_cuda_ipc_get,
    .ipc_open = cohort_cuda_ipc_open,
    .ipc_close = cohort_cuda_ipc_close,
    .can_access = cohort_cuda_can_access,
};
