/*
 * allreduce on one node on device buffers through CUDA IPC (the cuda_ipc family,
 * path/cuda_ipc.c, runs it): member i combines block i from every member's input in one kernel
 * that writes it into every member's output, so each block is computed once and every member
 * ends with the same bits; each byte of every input is read once and each byte of every output
 * written once.
 */
#include "coll/coll_reduce.h"
#include "coll/path/cuda_ipc.h"

/* In place, one buffer: block i is written by member i only, and read by the others only
 * after the first signal. */
static cohort_status_t allreduce_ipc_exports(cohort_request_t *req, cohort_cuda_ipc_state_t *s)
{
    const cohort_coll_args_t *a = &s->base.args;

    s->in_bytes = s->out_bytes = a->count * a->esize;
    return a->sbuf != COHORT_IN_PLACE ? cohort_cuda_ipc_coll_export_both(req, s)
                                      : cohort_cuda_ipc_coll_export_shared(req, s, s->in_bytes);
}

/* Block me, written straight into every member's output. */
static cohort_status_t allreduce_ipc_combine(cohort_request_t *req, cohort_cuda_ipc_state_t *s)
{
    const cohort_coll_args_t *a = &s->base.args;
    int n = req->comm->size, me = req->comm->rank;
    size_t off = cohort_coll_block_off(a->count, n, me) * a->esize;

    return cohort_cuda_ipc_coll_combine(req, s, off, cohort_coll_block_len(a->count, n, me),
                                        s->out_map, n, off);
}

static int allreduce_ipc_fallback_reduces(const cohort_coll_args_t *a, int me)
{
    (void)a;
    (void)me;
    return 1;
}

/* Every member's whole input to every other, which combines them all. */
static void allreduce_ipc_fallback_peer(const cohort_cuda_ipc_state_t *s, int me, int k, char **rx,
                                        const char **tx)
{
    const cohort_coll_args_t *a = &s->base.args;

    (void)me;
    *rx = s->fb_in + (size_t)k * a->count * a->esize;
    *tx = s->din;
}

static cohort_status_t allreduce_ipc_fallback_end(cohort_request_t *req, cohort_cuda_ipc_state_t *s)
{
    return cohort_cuda_ipc_coll_fallback_reduce(req, s, 0);
}

static const cohort_cuda_ipc_row_t allreduce_ipc = {
    .exports = allreduce_ipc_exports,
    .writes_outputs = 1,
    .combine = allreduce_ipc_combine,
    .fallback_reduces = allreduce_ipc_fallback_reduces,
    .fallback_peer = allreduce_ipc_fallback_peer,
    .fallback_end = allreduce_ipc_fallback_end,
};

const cohort_coll_algo_t cohort_allreduce_cuda_ipc =
    COHORT_CUDA_IPC_ROW(27, COHORT_COLL_ALLREDUCE, &allreduce_ipc);
