/*
 * reduce on one node on device buffers through CUDA IPC (the cuda_ipc family,
 * path/cuda_ipc.c, runs it): the root combines every member's input in one kernel.
 */
#include "coll/path/cuda_ipc.h"

const cohort_coll_algo_t cohort_reduce_cuda_ipc = COHORT_CUDA_IPC_ROW(26, COHORT_COLL_REDUCE);
