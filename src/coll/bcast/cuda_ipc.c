/*
 * bcast on one node on device buffers through CUDA IPC (the cuda_ipc family, path/cuda_ipc.c,
 * runs it): every member copies the root's buffer into its own.
 */
#include "coll/path/cuda_ipc.h"

/* One buffer per member: the root's is read, the others' written by their owners only. */
static cohort_status_t bcast_ipc_exports(cohort_request_t *req, cohort_cuda_ipc_state_t *s)
{
    const cohort_coll_args_t *a = &s->base.args;

    s->in_bytes = s->out_bytes = a->count * a->esize;
    return cohort_cuda_ipc_coll_export_shared(req, s, req->comm->rank == a->root ? s->in_bytes : 0);
}

/* Only the root's input is read, by the others. */
static int bcast_ipc_reads(const cohort_coll_args_t *a, int me, int k)
{
    return k == a->root && me != a->root;
}

static cohort_status_t bcast_ipc_combine(cohort_request_t *req, cohort_cuda_ipc_state_t *s)
{
    int root = s->base.args.root;

    return req->comm->rank == root
               ? COHORT_OK
               : cohort_gpu_copy_start(req->ctx, s->dout, s->in_map[root], s->out_bytes,
                                       COHORT_CUDA_IPC_LANE, NULL);
}

/* The root's buffer to every other member. */
static void bcast_ipc_fallback_peer(const cohort_cuda_ipc_state_t *s, int me, int k, char **rx,
                                    const char **tx)
{
    int root = s->base.args.root;

    *rx = k == root ? s->dout : NULL;
    *tx = me == root ? s->din : NULL;
}

static const cohort_cuda_ipc_row_t bcast_ipc = {
    .exports = bcast_ipc_exports,
    .reads = bcast_ipc_reads,
    .combine = bcast_ipc_combine,
    .fallback_peer = bcast_ipc_fallback_peer,
};

const cohort_coll_algo_t cohort_bcast_cuda_ipc =
    COHORT_CUDA_IPC_ROW(25, COHORT_COLL_BCAST, &bcast_ipc);
