/*
 * What an algorithm does to its buffers between transfers, on host memory or, when the request
 * runs on the caller's device buffers (stage.c decides), on the device: the algorithms call
 * these instead of memcpy, the host reduction loops and the host scratch cache, and never ask
 * where their buffers are.
 */
#include <string.h>
#include "coll/coll.h"
#include "core/context.h"
#include "mem/gpu.h"
#include "mem/scratch.h"
#include "reduce/reduce.h"

static int cohort_coll_mem_dev(cohort_request_t *req)
{
    return cohort_coll_base(req)->on_device;
}

/* After a device failure the request is over (its next progress says so): nothing more runs. */
static int cohort_coll_mem_failed(cohort_request_t *req)
{
    return cohort_coll_base(req)->mem_status != COHORT_OK;
}

static void cohort_coll_mem_fail(cohort_request_t *req, cohort_status_t status)
{
    cohort_coll_base_t *b = cohort_coll_base(req);

    if (status != COHORT_OK && b->mem_status == COHORT_OK) {
        b->mem_status = status;
    }
}

void *cohort_coll_mem_scratch(cohort_request_t *req, size_t bytes)
{
    return cohort_coll_mem_dev(req) ? cohort_gpu_scratch_get(req->ctx, bytes)
                                    : cohort_scratch_get(req->ctx, bytes);
}

void cohort_coll_mem_release(cohort_request_t *req, void *buf)
{
    if (cohort_coll_mem_dev(req)) {
        cohort_gpu_scratch_put(req->ctx, buf);
    } else {
        cohort_scratch_put(req->ctx, buf);
    }
}

void cohort_coll_mem_copy(cohort_request_t *req, void *dst, const void *src, size_t bytes)
{
    if (bytes == 0 || dst == src || cohort_coll_mem_failed(req)) {
        return;
    }
    if (cohort_coll_mem_dev(req)) {
        cohort_coll_mem_fail(req, cohort_gpu_copy(req->ctx, dst, src, bytes));
    } else {
        memmove(dst, src, bytes);
    }
}

void cohort_coll_mem_reduce(cohort_request_t *req, void *dst, const void *a, const void *b,
                            size_t count)
{
    const cohort_coll_args_t *args = &cohort_coll_base(req)->args;

    if (count == 0 || cohort_coll_mem_failed(req)) {
        return;
    }
    if (cohort_coll_mem_dev(req)) {
        cohort_coll_mem_fail(req,
                             cohort_gpu_reduce(req->ctx, dst, a, b, count, args->dt, args->op));
    } else {
        cohort_reduce_local(dst, a, b, count, args->dt, args->op);
    }
}

void cohort_coll_mem_finish(cohort_request_t *req, void *buf, size_t count, int nranks)
{
    const cohort_coll_args_t *args = &cohort_coll_base(req)->args;

    if (count == 0 || args->op != COHORT_AVG || cohort_coll_mem_failed(req)) {
        return;
    }
    if (cohort_coll_mem_dev(req)) {
        cohort_coll_mem_fail(req,
                             cohort_gpu_finish(req->ctx, buf, count, args->dt, args->op, nranks));
    } else {
        cohort_reduce_finish(buf, count, args->dt, args->op, nranks);
    }
}
