/*
 * Device buffers of a collective, staged through page-locked host memory around the host
 * algorithm: the input's copy to the host is enqueued when the call is made (the caller's data
 * is ready then, DESIGN.md "CUDA streams") and the algorithm starts once a poll finds it finished
 * (polled: progress never waits for a copy), runs on host buffers as it always does, and the
 * result's copy to the device is enqueued and polled before the request completes. Each buffer is
 * looked at on its own, so host and device buffers mix in one call; a call with host buffers only
 * costs one pointer query per buffer (nothing at all without a device).
 *
 * Large calls on device buffers skip this and run the algorithm on them (on_device, see
 * cohort_coll_stage_on_device), when the algorithm allows it.
 */
#include "coll/coll.h"
#include "core/context.h"
#include "mem/gpu.h"

/* Bytes of the send buffer, of the receive buffer read as input, and of the receive buffer
 * written, for this rank. */
static void cohort_coll_stage_sizes(const cohort_coll_args_t *a, int n, int me, size_t *sbytes,
                                    size_t *rin, size_t *rout)
{
    size_t one = a->count * a->esize, all = one * (size_t)n;
    int in_place = a->sbuf == COHORT_IN_PLACE;

    *sbytes = *rin = *rout = 0;
    switch (a->coll) {
    case COHORT_COLL_BCAST:
        *rin = me == a->root ? one : 0;
        *rout = me == a->root ? 0 : one;
        return;
    case COHORT_COLL_REDUCE:
        *sbytes = one;
        *rout = me == a->root ? one : 0;
        break;
    case COHORT_COLL_ALLREDUCE:
        *sbytes = *rout = one;
        break;
    case COHORT_COLL_ALLGATHER:
        *sbytes = one;
        *rout = all;
        break;
    case COHORT_COLL_REDUCE_SCATTER:
        *sbytes = all;
        *rout = one;
        break;
    case COHORT_COLL_ALLTOALL:
        *sbytes = *rout = all;
        break;
    default:
        return;
    }
    if (in_place) {
        *rin = *sbytes;
        *sbytes = 0;
    }
}

/* A page-locked buffer of @a cap bytes in @a *host, the first @a in bytes of @a dev copied
 * into it on the lane to the host (enqueued only: cohort_coll_stage_in marks the lane after
 * the call's copies, and the algorithm starts once the mark is over). */
static cohort_status_t cohort_coll_stage_one(cohort_context_t *ctx, void **host, const void *dev,
                                             size_t cap, size_t in)
{
    *host = cohort_gpu_pinned_get(ctx, cap);
    if (*host == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    return cohort_gpu_copy_start(ctx, *host, dev, in, COHORT_GPU_LANE_TO_HOST, NULL);
}

/* The call's copies to the host so far, marked (after a failure too: release waits for what
 * was enqueued before the buffers go back). */
static cohort_status_t cohort_coll_stage_mark(cohort_request_t *req, cohort_status_t status)
{
    cohort_coll_stage_t *st = &cohort_coll_base(req)->stage;
    cohort_status_t mark = cohort_gpu_lane_mark(req->ctx, COHORT_GPU_LANE_TO_HOST, &st->in);

    return status != COHORT_OK ? status : mark;
}

/* Whether the algorithm runs on the device buffers as they are: it can (device_ok), every
 * buffer of this rank's call is on the device (a mixed call is staged whole), and the call is
 * large enough that copying each transfer's data on its own, overlapped with the others'
 * transfers, beats two whole copies around the algorithm (COHORT_CUDA_PIPELINE_MIN); where UCX
 * takes device memory itself there is nothing to copy, whatever the size. Local knowledge only:
 * the algorithm, and so every message, is the same either way, so members may differ. */
static int cohort_coll_stage_on_device(cohort_context_t *ctx, const cohort_coll_algo_t *algo,
                                       int s_dev, size_t sbytes, int r_dev, size_t rcap)
{
    size_t most = sbytes > rcap ? sbytes : rcap;

    if (!algo->device_ok || (sbytes > 0 && !s_dev) || (rcap > 0 && !r_dev) || (!s_dev && !r_dev)) {
        return 0;
    }
    return ctx->mem.ucx_mem_cuda || most >= ctx->cfg.cuda_pipeline_min;
}

cohort_status_t cohort_coll_stage_in(cohort_request_t *req, const cohort_coll_algo_t *algo)
{
    cohort_coll_base_t *b = cohort_coll_base(req);
    cohort_coll_args_t *a = &b->args;
    cohort_coll_stage_t *st = &b->stage;
    cohort_context_t *ctx = req->ctx;
    size_t sbytes, rin, rout, rcap;
    int s_dev, r_dev;
    cohort_status_t status;

    if (a->coll == COHORT_COLL_BARRIER || a->count == 0) {
        return COHORT_OK;
    }
    cohort_coll_stage_sizes(a, req->comm->size, req->comm->rank, &sbytes, &rin, &rout);
    rcap = rin > rout ? rin : rout;
    s_dev = sbytes > 0 && cohort_gpu_mem_type(ctx, a->sbuf) == COHORT_MEM_CUDA;
    r_dev = rcap > 0 && cohort_gpu_mem_type(ctx, a->rbuf) == COHORT_MEM_CUDA;
    if (cohort_coll_stage_on_device(ctx, algo, s_dev, sbytes, r_dev, rcap)) {
        b->on_device = 1;
        req->device = 1;
        return COHORT_OK;
    }
    if (s_dev || r_dev) {
        ctx->stat_stage_calls++;
    }
    if (s_dev) {
        status = cohort_coll_stage_one(ctx, &st->host_s, a->sbuf, sbytes, sbytes);
        if (status != COHORT_OK) {
            return cohort_coll_stage_mark(req, status);
        }
        a->sbuf = st->host_s;
    }
    if (r_dev) {
        status = cohort_coll_stage_one(ctx, &st->host_r, a->rbuf, rcap, rin);
        if (status != COHORT_OK) {
            return cohort_coll_stage_mark(req, status);
        }
        st->user_rbuf = a->rbuf;
        st->rout = rout;
        if (a->coll == COHORT_COLL_BCAST) {
            a->sbuf = st->host_r;
        }
        a->rbuf = st->host_r;
    }
    return s_dev || r_dev ? cohort_coll_stage_mark(req, COHORT_OK) : COHORT_OK;
}

cohort_status_t cohort_coll_stage_in_test(cohort_request_t *req)
{
    return cohort_gpu_ticket_poll(req, &cohort_coll_base(req)->stage.in);
}

int cohort_coll_stage_all_device(cohort_request_t *req)
{
    const cohort_coll_args_t *a = &cohort_coll_base(req)->args;
    size_t sbytes, rin, rout;

    cohort_coll_stage_sizes(a, req->comm->size, req->comm->rank, &sbytes, &rin, &rout);
    if (sbytes == 0 && rin == 0 && rout == 0) {
        return 0;
    }
    return (sbytes == 0 || cohort_gpu_mem_type(req->ctx, a->sbuf) == COHORT_MEM_CUDA) &&
           ((rin == 0 && rout == 0) || cohort_gpu_mem_type(req->ctx, a->rbuf) == COHORT_MEM_CUDA);
}

/* The result's copy to the device, started once and then polled (it runs in progress, which
 * waits for nothing: no completion announces its end, so the request is polled). */
cohort_status_t cohort_coll_stage_out(cohort_request_t *req)
{
    cohort_coll_stage_t *st = &cohort_coll_base(req)->stage;
    cohort_status_t status = COHORT_OK;

    if (st->user_rbuf != NULL && st->rout > 0) {
        status = cohort_gpu_copy_start(req->ctx, st->user_rbuf, st->host_r, st->rout,
                                       COHORT_GPU_LANE_TO_DEVICE, &st->out);
        st->rout = 0; /* once, even if progress is asked again */
    }
    return status != COHORT_OK ? status : cohort_gpu_ticket_poll(req, &st->out);
}

void cohort_coll_stage_release(cohort_request_t *req)
{
    cohort_coll_stage_t *st = &cohort_coll_base(req)->stage;

    if (st->in != 0) {
        /* the copies write host_s and host_r, which go back to the cache below */
        (void)cohort_gpu_copy_finish(req->ctx, st->in);
        st->in = 0;
    }
    if (st->out != 0) {
        /* the copy reads host_r */
        (void)cohort_gpu_copy_finish(req->ctx, st->out);
        st->out = 0;
    }

    cohort_gpu_pinned_put(req->ctx, st->host_s);
    cohort_gpu_pinned_put(req->ctx, st->host_r);
    st->host_s = st->host_r = NULL;
}
