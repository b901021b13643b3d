/*
 * reduce_scatter on one node on device buffers through CUDA IPC (the cuda_ipc family,
 * path/cuda_ipc.c, runs it): each member combines its block from every input.
 */
#include "coll/path/cuda_ipc.h"

const cohort_coll_algo_t cohort_reduce_scatter_cuda_ipc =
    COHORT_CUDA_IPC_ROW(29, COHORT_COLL_REDUCE_SCATTER);
