/*
 * reduce_scatter on one node on device buffers through CUDA IPC (the cuda_ipc family,
 * path/cuda_ipc.c, runs it): each member combines its block from every member's input in one
 * kernel, into its own output.
 */
#include "coll/path/cuda_ipc.h"

/* In place the result would overwrite input the others still read: it goes to scratch. */
static cohort_status_t reduce_scatter_ipc_exports(cohort_request_t *req, cohort_cuda_ipc_state_t *s)
{
    const cohort_coll_args_t *a = &s->base.args;

    s->out_bytes = a->count * a->esize;
    s->in_bytes = s->out_bytes * (size_t)req->comm->size;
    return a->sbuf != COHORT_IN_PLACE ? cohort_cuda_ipc_coll_export_both(req, s)
                                      : cohort_cuda_ipc_coll_export_apart(req, s);
}

static cohort_status_t reduce_scatter_ipc_combine(cohort_request_t *req, cohort_cuda_ipc_state_t *s)
{
    const cohort_coll_args_t *a = &s->base.args;

    return cohort_cuda_ipc_coll_combine(req, s, (size_t)req->comm->rank * s->out_bytes, a->count,
                                        &s->dout, 1, 0);
}

static int reduce_scatter_ipc_fallback_reduces(const cohort_coll_args_t *a, int me)
{
    (void)a;
    (void)me;
    return 1;
}

/* Member k's block of every member's input to member k. */
static void reduce_scatter_ipc_fallback_peer(const cohort_cuda_ipc_state_t *s, int me, int k,
                                             char **rx, const char **tx)
{
    (void)me;
    *rx = s->fb_in + (size_t)k * s->out_bytes;
    *tx = s->din + (size_t)k * s->out_bytes;
}

/* This member's own block of its input is at its place in din. */
static cohort_status_t reduce_scatter_ipc_fallback_end(cohort_request_t *req,
                                                       cohort_cuda_ipc_state_t *s)
{
    return cohort_cuda_ipc_coll_fallback_reduce(req, s, (size_t)req->comm->rank * s->out_bytes);
}

static const cohort_cuda_ipc_row_t reduce_scatter_ipc = {
    .exports = reduce_scatter_ipc_exports,
    .combine = reduce_scatter_ipc_combine,
    .fallback_reduces = reduce_scatter_ipc_fallback_reduces,
    .fallback_peer = reduce_scatter_ipc_fallback_peer,
    .fallback_end = reduce_scatter_ipc_fallback_end,
};

const cohort_coll_algo_t cohort_reduce_scatter_cuda_ipc =
    COHORT_CUDA_IPC_ROW(29, COHORT_COLL_REDUCE_SCATTER, &reduce_scatter_ipc);
