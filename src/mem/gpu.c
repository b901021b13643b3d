/*
 * Loading the CUDA module (cohort_cuda.so, src/reduce/cuda/) and the engine's calls into it.
 * The module is looked up like the exchange plugins, the first time a call asks where a buffer
 * lives once the process has the CUDA runtime or driver loaded, or when a caller needs a device
 * (a stream, cohort_cuda_info, the node's driver for CUDA IPC's vote). Init never touches
 * CUDA, and a process that has not loaded CUDA never loads it for cohort.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <config.h> /* the build's (top of the tree), not core/config.h */
#include "base/module.h"
#include "mem/gpu.h"
#include "mem/room.h"

#ifdef COHORT_HAVE_CUDA
static void *cohort_gpu_pinned_alloc(void *arg, size_t bytes)
{
    const cohort_gpu_module_t *mod = arg;
    void *p = NULL;

    return mod->host_alloc(&p, bytes) == COHORT_OK ? p : NULL;
}

static void cohort_gpu_pinned_release(void *arg, void *raw)
{
    const cohort_gpu_module_t *mod = arg;

    mod->host_free(raw);
}
#endif

/* Nothing to do in a build without CUDA: the module was never built, so it is not looked for
 * (an old cohort_cuda.so on COHORT_PLUGIN_PATH must not turn up in such a build). */
static void cohort_gpu_load(cohort_context_t *ctx)
{
    cohort_mem_room_t *room = cohort_mem_room(ctx);
    cohort_gpu_t *gpu = &room->gpu;
    char tried[COHORT_MODULE_DIR_MAX] = "";
    const cohort_gpu_module_t *mod;
    void *dl;

    gpu->state = COHORT_GPU_NONE;
    if (room->cuda_off) {
        snprintf(gpu->why, sizeof(gpu->why), "CUDA is off (COHORT_CUDA=off)");
        return;
    }
#ifndef COHORT_HAVE_CUDA
    snprintf(gpu->why, sizeof(gpu->why), "no CUDA device support (cohort built without CUDA)");
    (void)dl;
    (void)mod;
    (void)tried;
#else
    dl = cohort_module_open(room->plugin_path, room->log, COHORT_GPU_MODULE_FILE, tried,
                            sizeof(tried));
    if (dl == NULL) {
        snprintf(gpu->why, sizeof(gpu->why), "no CUDA device support (%s not loaded; tried %.96s)",
                 COHORT_GPU_MODULE_FILE, tried);
        cohort_log(room->log, COHORT_LOG_INFO, "%s", gpu->why);
        return;
    }
    mod = dlsym(dl, COHORT_GPU_MODULE_SYMBOL);
    if (mod == NULL || mod->abi != COHORT_GPU_MODULE_ABI) {
        snprintf(gpu->why, sizeof(gpu->why), "no CUDA device support (%s is %s)",
                 COHORT_GPU_MODULE_FILE,
                 mod == NULL ? "not a cohort CUDA module" : "from another version of cohort");
        cohort_log(room->log, COHORT_LOG_WARN, "%s", gpu->why);
        dlclose(dl);
        return;
    }
    gpu->driver = mod->driver() > 0;
    gpu->ndevices = mod->open(gpu->why, sizeof(gpu->why));
    if (gpu->ndevices <= 0) {
        gpu->ndevices = 0;
        cohort_log(room->log, COHORT_LOG_INFO, "%s", gpu->why);
    } else {
        gpu->mod = mod;
        gpu->state = COHORT_GPU_READY;
        gpu->pinned.alloc = cohort_gpu_pinned_alloc;
        gpu->pinned.release = cohort_gpu_pinned_release;
        gpu->pinned.arg = (void *)mod;
        gpu->scratch = (cohort_gpu_pool_t){gpu->scratch_slots, COHORT_GPU_DEV_SCRATCH, 1};
        gpu->bounce = (cohort_gpu_pool_t){gpu->bounce_slots, COHORT_GPU_BOUNCE, 0};
        cohort_log(room->log, COHORT_LOG_INFO, "CUDA: %d device(s); UCX %s CUDA memory",
                   gpu->ndevices,
                   room->ucx_mem_cuda ? "takes" : "does not take (device data is staged)");
    }
    /* Never dlclose'd: the CUDA runtime it pulls in registers exit handlers and keeps driver
     * state that does not survive being unloaded and loaded again. */
#endif
}

const cohort_gpu_module_t *cohort_gpu_get(cohort_context_t *ctx)
{
    cohort_gpu_t *gpu = &cohort_mem_room(ctx)->gpu;

    if (gpu->state == COHORT_GPU_UNTRIED) {
        cohort_gpu_load(ctx);
    }
    return gpu->mod;
}

int cohort_gpu_driver(cohort_context_t *ctx)
{
    (void)cohort_gpu_get(ctx);
    return cohort_mem_room(ctx)->gpu.driver;
}

/* What the loader holds: how many objects it loaded so far, and whether one is the CUDA runtime
 * or driver. The count comes with the first object; the names are read only when it grew. */
typedef struct {
    unsigned long long seen, adds;
    int first, cuda;
} cohort_gpu_scan_t;

static int cohort_gpu_scan_one(struct dl_phdr_info *info, size_t size, void *arg)
{
    cohort_gpu_scan_t *s = arg;
    const char *base;

    if (s->first) {
        s->first = 0;
        if (size < offsetof(struct dl_phdr_info, dlpi_adds) + sizeof(info->dlpi_adds)) {
            s->cuda = 1; /* a loader that does not count: look for the module, as before */
            return 1;
        }
        s->adds = info->dlpi_adds;
        if (s->adds == s->seen) {
            return 1;
        }
    }
    base = strrchr(info->dlpi_name, '/');
    base = base != NULL ? base + 1 : info->dlpi_name;
    if (strncmp(base, "libcuda.so", 10) == 0 || strncmp(base, "libcudart.so", 12) == 0) {
        s->cuda = 1;
        return 1;
    }
    return 0;
}

/* Whether CUDA is in this process. Device and managed memory are made through the CUDA driver,
 * which a program reaches through the runtime (or directly): where neither is loaded, no buffer
 * is device memory, and loading the module to ask would cost every process of a host-only job
 * about 2 ms at its first collective (dlopen of the runtime, a failed driver query: measured
 * with cohort_bench setup at 2 ranks). A library loaded later is seen at the next call. */
static int cohort_gpu_in_process(cohort_gpu_t *gpu)
{
    cohort_gpu_scan_t s = {.seen = gpu->dl_adds, .first = 1};

    if (gpu->dl_cuda) {
        return 1;
    }
    dl_iterate_phdr(cohort_gpu_scan_one, &s);
    gpu->dl_adds = s.adds;
    gpu->dl_cuda = s.cuda;
    return s.cuda;
}

void cohort_gpu_scan_loaded(cohort_context_t *ctx)
{
    cohort_mem_room_t *room = cohort_mem_room(ctx);

    if (room->gpu.state == COHORT_GPU_UNTRIED && !room->cuda_off) {
        (void)cohort_gpu_in_process(&room->gpu);
    }
}

cohort_mem_type_t cohort_gpu_mem_type(cohort_context_t *ctx, const void *ptr)
{
    cohort_gpu_t *gpu = &cohort_mem_room(ctx)->gpu;
    const cohort_gpu_module_t *mod;

    if (gpu->state == COHORT_GPU_NONE || ptr == NULL || ptr == COHORT_IN_PLACE) {
        return COHORT_MEM_HOST;
    }
    if (gpu->state == COHORT_GPU_UNTRIED && !cohort_gpu_in_process(gpu)) {
        return COHORT_MEM_HOST;
    }
    mod = cohort_gpu_get(ctx);
    if (mod == NULL) {
        return COHORT_MEM_HOST;
    }
    return mod->ptr_kind(ptr, NULL) == COHORT_GPU_PTR_HOST ? COHORT_MEM_HOST : COHORT_MEM_CUDA;
}

/* The loaded module, for the calls below: their callers asked cohort_gpu_get first. */
static const cohort_gpu_module_t *cohort_gpu_mod(cohort_context_t *ctx)
{
    return cohort_mem_room(ctx)->gpu.mod;
}

static cohort_status_t cohort_gpu_check(cohort_context_t *ctx, cohort_status_t status,
                                        const char *what)
{
    if (status != COHORT_OK) {
        cohort_log(cohort_mem_log(ctx), COHORT_LOG_ERROR, "%s: %s", what,
                   cohort_gpu_mod(ctx)->last_error());
    }
    return status;
}

cohort_status_t cohort_gpu_copy(cohort_context_t *ctx, void *dst, const void *src, size_t bytes)
{
    if (bytes == 0) {
        return COHORT_OK;
    }
    return cohort_gpu_check(ctx, cohort_gpu_mod(ctx)->copy(dst, src, bytes), "copy of device data");
}

cohort_status_t cohort_gpu_copy_start(cohort_context_t *ctx, void *dst, const void *src,
                                      size_t bytes, int lane, uint64_t *ticket)
{
    return cohort_gpu_check(ctx, cohort_gpu_mod(ctx)->copy_start(dst, src, bytes, lane, ticket),
                            "copy of device data");
}

cohort_status_t cohort_gpu_lane_mark(cohort_context_t *ctx, int lane, uint64_t *ticket)
{
    return cohort_gpu_check(ctx, cohort_gpu_mod(ctx)->lane_mark(lane, ticket),
                            "marking a copy lane");
}

cohort_status_t cohort_gpu_stream_mark(cohort_context_t *ctx, void *stream, uint64_t *ticket)
{
    return cohort_gpu_check(ctx, cohort_gpu_mod(ctx)->stream_mark(stream, ticket),
                            "marking the caller's CUDA stream");
}

void cohort_gpu_mark_drop(cohort_context_t *ctx, uint64_t ticket)
{
    cohort_gpu_mod(ctx)->mark_drop(ticket);
}

cohort_status_t cohort_gpu_copy_test(cohort_context_t *ctx, uint64_t ticket)
{
    cohort_status_t status = cohort_gpu_mod(ctx)->copy_test(ticket);

    return status == COHORT_INPROGRESS ? status
                                       : cohort_gpu_check(ctx, status, "copy of device data");
}

cohort_status_t cohort_gpu_copy_finish(cohort_context_t *ctx, uint64_t ticket)
{
    return cohort_gpu_check(ctx, cohort_gpu_mod(ctx)->copy_finish(ticket), "copy of device data");
}

cohort_status_t cohort_gpu_reduce(cohort_context_t *ctx, void *dst, const void *a, const void *b,
                                  size_t count, cohort_dtype_t dt, cohort_op_t op)
{
    return cohort_gpu_check(ctx, cohort_gpu_mod(ctx)->reduce(dst, a, b, count, dt, op),
                            "reduction on the device");
}

cohort_status_t cohort_gpu_reduce_multi(cohort_context_t *ctx, void *const *dsts, int ndst,
                                        const void *const *srcs, int nsrc, size_t count,
                                        cohort_dtype_t dt, cohort_op_t op, int nranks)
{
    return cohort_gpu_check(
        ctx, cohort_gpu_mod(ctx)->reduce_multi(dsts, ndst, srcs, nsrc, count, dt, op, nranks),
        "n-way reduction on the device");
}

cohort_status_t cohort_gpu_reduce_multi_start(cohort_context_t *ctx, void *const *dsts, int ndst,
                                              const void *const *srcs, int nsrc, size_t count,
                                              cohort_dtype_t dt, cohort_op_t op, int nranks,
                                              int lane)
{
    return cohort_gpu_check(ctx,
                            cohort_gpu_mod(ctx)->reduce_multi_start(dsts, ndst, srcs, nsrc, count,
                                                                    dt, op, nranks, lane),
                            "n-way reduction on the device");
}

cohort_status_t cohort_gpu_finish(cohort_context_t *ctx, void *buf, size_t count, cohort_dtype_t dt,
                                  cohort_op_t op, int nranks)
{
    return cohort_gpu_check(ctx, cohort_gpu_mod(ctx)->finish(buf, count, dt, op, nranks),
                            "average on the device");
}
