/*
 * alltoall on one node on device buffers through CUDA IPC (the cuda_ipc family,
 * path/cuda_ipc.c, runs it): each member copies its block of every member's input into its
 * output.
 */
#include "coll/path/cuda_ipc.h"

/* In place the result would overwrite input the others still read: it goes to scratch. */
static cohort_status_t alltoall_ipc_exports(cohort_request_t *req, cohort_cuda_ipc_state_t *s)
{
    const cohort_coll_args_t *a = &s->base.args;

    s->in_bytes = s->out_bytes = a->count * a->esize * (size_t)req->comm->size;
    return a->sbuf != COHORT_IN_PLACE ? cohort_cuda_ipc_coll_export_both(req, s)
                                      : cohort_cuda_ipc_coll_export_apart(req, s);
}

/* Block me of every member's input into its block. */
static cohort_status_t alltoall_ipc_combine(cohort_request_t *req, cohort_cuda_ipc_state_t *s)
{
    const cohort_coll_args_t *a = &s->base.args;
    size_t one = a->count * a->esize, mine = (size_t)req->comm->rank * one;
    cohort_status_t status = COHORT_OK;

    for (int k = 0; k < req->comm->size && status == COHORT_OK; k++) {
        status = cohort_gpu_copy_start(req->ctx, s->dout + (size_t)k * one, s->in_map[k] + mine,
                                       one, COHORT_CUDA_IPC_LANE, NULL);
    }
    return status;
}

static void alltoall_ipc_fallback_peer(const cohort_cuda_ipc_state_t *s, int me, int k, char **rx,
                                       const char **tx)
{
    size_t one = s->base.args.count * s->base.args.esize;

    (void)me;
    *rx = s->dout + (size_t)k * one;
    *tx = s->din + (size_t)k * one;
}

/* Its own block, which no message brings. */
static cohort_status_t alltoall_ipc_fallback_end(cohort_request_t *req, cohort_cuda_ipc_state_t *s)
{
    size_t one = s->base.args.count * s->base.args.esize, mine = (size_t)req->comm->rank * one;

    return cohort_gpu_copy_start(req->ctx, s->dout + mine, s->din + mine, one, COHORT_CUDA_IPC_LANE,
                                 NULL);
}

static const cohort_cuda_ipc_row_t alltoall_ipc = {
    .exports = alltoall_ipc_exports,
    .combine = alltoall_ipc_combine,
    .fallback_peer = alltoall_ipc_fallback_peer,
    .fallback_end = alltoall_ipc_fallback_end,
};

const cohort_coll_algo_t cohort_alltoall_cuda_ipc =
    COHORT_CUDA_IPC_ROW(30, COHORT_COLL_ALLTOALL, &alltoall_ipc);
