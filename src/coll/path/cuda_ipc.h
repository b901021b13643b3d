/*
 * The cuda_ipc family: same-node collectives on device buffers through CUDA IPC
 * (path/cuda_ipc.c runs them all). Each collective's row, every one but barrier, is a file in
 * that collective's folder (allreduce/cuda_ipc.c, ...) that fills in COHORT_CUDA_IPC_ROW.
 */
#ifndef COHORT_COLL_PATH_CUDA_IPC_H
#define COHORT_COLL_PATH_CUDA_IPC_H

#include "coll/coll.h"

size_t cohort_cuda_ipc_coll_state_size(const cohort_coll_args_t *args, int n);
cohort_status_t cohort_cuda_ipc_coll_start(cohort_request_t *req);
cohort_status_t cohort_cuda_ipc_coll_progress(cohort_request_t *req);
void cohort_cuda_ipc_coll_cleanup(cohort_request_t *req);
/* By settings and the node only, never this rank's buffers (cohort_coll_algo_t's usable). */
int cohort_cuda_ipc_coll_usable(cohort_context_t *ctx, const cohort_coll_args_t *args, int gsize,
                                int forced, const char **why);

/* A cuda_ipc row: its id and collective; every one is the same otherwise. */
#define COHORT_CUDA_IPC_ROW(id_, coll_)                                                            \
    {                                                                                              \
        .name = "cuda_ipc",                                                                        \
        .description = "same node: members read each other's device buffers through CUDA IPC",     \
        .coll = coll_, .id = id_, .state_size = cohort_cuda_ipc_coll_state_size,                   \
        .start = cohort_cuda_ipc_coll_start, .progress = cohort_cuda_ipc_coll_progress,            \
        .cleanup = cohort_cuda_ipc_coll_cleanup, .usable = cohort_cuda_ipc_coll_usable,            \
        .device = 1, .node = COHORT_NODE_SAME, .ident = 1,                                         \
    }

#endif
