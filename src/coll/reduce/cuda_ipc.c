/*
 * reduce on one node on device buffers through CUDA IPC (the cuda_ipc family, path/cuda_ipc.c,
 * runs it): the root combines every member's input into its output in one kernel; the others
 * only export their input.
 */
#include "coll/coll_reduce.h"
#include "coll/path/cuda_ipc.h"

/* A member that is not the root has no output: the root writes its own. In place, the root's
 * one buffer is read by nobody else. */
static cohort_status_t reduce_ipc_exports(cohort_request_t *req, cohort_cuda_ipc_state_t *s)
{
    const cohort_coll_args_t *a = &s->base.args;

    s->in_bytes = s->out_bytes = a->count * a->esize;
    if (req->comm->rank != a->root) {
        s->out_bytes = 0;
        s->dout = NULL;
        return cohort_cuda_ipc_coll_export(req, s, cohort_coll_input(a), s->in_bytes, s->in_bytes,
                                           0, &s->din, &s->mine.in);
    }
    return a->sbuf != COHORT_IN_PLACE ? cohort_cuda_ipc_coll_export_both(req, s)
                                      : cohort_cuda_ipc_coll_export_shared(req, s, s->in_bytes);
}

/* Only the root reads, every member's input. */
static int reduce_ipc_reads(const cohort_coll_args_t *a, int me, int k)
{
    (void)k;
    return me == a->root;
}

static cohort_status_t reduce_ipc_combine(cohort_request_t *req, cohort_cuda_ipc_state_t *s)
{
    const cohort_coll_args_t *a = &s->base.args;

    return req->comm->rank == a->root
               ? cohort_cuda_ipc_coll_combine(req, s, 0, a->count, &s->dout, 1, 0)
               : COHORT_OK;
}

static int reduce_ipc_fallback_reduces(const cohort_coll_args_t *a, int me)
{
    return me == a->root;
}

/* Every member's input to the root. */
static void reduce_ipc_fallback_peer(const cohort_cuda_ipc_state_t *s, int me, int k, char **rx,
                                     const char **tx)
{
    const cohort_coll_args_t *a = &s->base.args;

    *rx = me == a->root ? s->fb_in + (size_t)k * a->count * a->esize : NULL;
    *tx = k == a->root ? s->din : NULL;
}

static cohort_status_t reduce_ipc_fallback_end(cohort_request_t *req, cohort_cuda_ipc_state_t *s)
{
    return req->comm->rank == s->base.args.root ? cohort_cuda_ipc_coll_fallback_reduce(req, s, 0)
                                                : COHORT_OK;
}

static const cohort_cuda_ipc_row_t reduce_ipc = {
    .exports = reduce_ipc_exports,
    .reads = reduce_ipc_reads,
    .combine = reduce_ipc_combine,
    .fallback_reduces = reduce_ipc_fallback_reduces,
    .fallback_peer = reduce_ipc_fallback_peer,
    .fallback_end = reduce_ipc_fallback_end,
};

const cohort_coll_algo_t cohort_reduce_cuda_ipc =
    COHORT_CUDA_IPC_ROW(26, COHORT_COLL_REDUCE, &reduce_ipc);
