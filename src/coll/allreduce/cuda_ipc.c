/*
 * allreduce on one node on device buffers through CUDA IPC (the cuda_ipc family,
 * path/cuda_ipc.c, runs it): each member combines its block from every input in one kernel that
 * writes it into every output.
 */
#include "coll/path/cuda_ipc.h"

const cohort_coll_algo_t cohort_allreduce_cuda_ipc = COHORT_CUDA_IPC_ROW(27, COHORT_COLL_ALLREDUCE);
