/*
 * bcast on one node on device buffers through CUDA IPC (the cuda_ipc family,
 * path/cuda_ipc.c, runs it): the members read the root's buffer.
 */
#include "coll/path/cuda_ipc.h"

const cohort_coll_algo_t cohort_bcast_cuda_ipc = COHORT_CUDA_IPC_ROW(25, COHORT_COLL_BCAST);
