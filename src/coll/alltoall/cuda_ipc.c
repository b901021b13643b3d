/*
 * alltoall on one node on device buffers through CUDA IPC (the cuda_ipc family,
 * path/cuda_ipc.c, runs it): each member copies its block of every member's input.
 */
#include "coll/path/cuda_ipc.h"

const cohort_coll_algo_t cohort_alltoall_cuda_ipc = COHORT_CUDA_IPC_ROW(30, COHORT_COLL_ALLTOALL);
