/*
 * allreduce on one node through the group's shared segment, no message (the shm family,
 * path/shm.c, runs it): every member reduces all the members' buffers in member order.
 */
#include "coll/path/shm.h"

static void allreduce_shm_compute(cohort_request_t *req, const cohort_shm_call_t *call)
{
    cohort_shm_coll_reduce(req, call, 0);
}

static const cohort_shm_row_t allreduce_shm = {
    .in_bytes = cohort_shm_coll_one,
    .compute = allreduce_shm_compute,
};

const cohort_coll_algo_t cohort_allreduce_shm =
    COHORT_SHM_ROW(18, COHORT_COLL_ALLREDUCE, &allreduce_shm);
