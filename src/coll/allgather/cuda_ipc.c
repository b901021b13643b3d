/*
 * allgather on one node on device buffers through CUDA IPC (the cuda_ipc family,
 * path/cuda_ipc.c, runs it): each member copies every member's input into its output.
 */
#include "coll/path/cuda_ipc.h"

/* In place, the input is this member's block of rbuf, exported with the rest of it. */
static cohort_status_t allgather_ipc_exports(cohort_request_t *req, cohort_cuda_ipc_state_t *s)
{
    const cohort_coll_args_t *a = &s->base.args;
    size_t mine = (size_t)req->comm->rank * a->count * a->esize;
    cohort_status_t status;

    s->in_bytes = a->count * a->esize;
    s->out_bytes = s->in_bytes * (size_t)req->comm->size;
    if (a->sbuf != COHORT_IN_PLACE) {
        return cohort_cuda_ipc_coll_export_both(req, s);
    }
    status = cohort_cuda_ipc_coll_export(req, s, a->rbuf, s->out_bytes, s->out_bytes, 1, &s->dout,
                                         &s->mine.out);
    s->din = s->dout + mine;
    s->mine.in = s->mine.out;
    s->mine.in.offset += mine;
    return status;
}

/* Every member's input into its block. */
static cohort_status_t allgather_ipc_combine(cohort_request_t *req, cohort_cuda_ipc_state_t *s)
{
    cohort_status_t status = COHORT_OK;

    for (int k = 0; k < req->comm->size && status == COHORT_OK; k++) {
        status = cohort_gpu_copy_start(req->ctx, s->dout + (size_t)k * s->in_bytes, s->in_map[k],
                                       s->in_bytes, COHORT_CUDA_IPC_LANE, NULL);
    }
    return status;
}

/* This member's input to every other, whose block k it is. */
static void allgather_ipc_fallback_peer(const cohort_cuda_ipc_state_t *s, int me, int k, char **rx,
                                        const char **tx)
{
    (void)me;
    *rx = s->dout + (size_t)k * s->in_bytes;
    *tx = s->din;
}

/* Its own block, which no message brings. */
static cohort_status_t allgather_ipc_fallback_end(cohort_request_t *req, cohort_cuda_ipc_state_t *s)
{
    return cohort_gpu_copy_start(req->ctx, s->dout + (size_t)req->comm->rank * s->in_bytes, s->din,
                                 s->in_bytes, COHORT_CUDA_IPC_LANE, NULL);
}

static const cohort_cuda_ipc_row_t allgather_ipc = {
    .exports = allgather_ipc_exports,
    .combine = allgather_ipc_combine,
    .fallback_peer = allgather_ipc_fallback_peer,
    .fallback_end = allgather_ipc_fallback_end,
};

const cohort_coll_algo_t cohort_allgather_cuda_ipc =
    COHORT_CUDA_IPC_ROW(28, COHORT_COLL_ALLGATHER, &allgather_ipc);
