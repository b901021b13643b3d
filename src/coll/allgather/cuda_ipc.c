/*
 * allgather on one node on device buffers through CUDA IPC (the cuda_ipc family,
 * path/cuda_ipc.c, runs it): each member copies every member's input into its output.
 */
#include "coll/path/cuda_ipc.h"

const cohort_coll_algo_t cohort_allgather_cuda_ipc = COHORT_CUDA_IPC_ROW(28, COHORT_COLL_ALLGATHER);
