/*
 * reduce on one node through the group's shared segment, no message (the shm family,
 * path/shm.c, runs it): the root reduces all the members' buffers in member order.
 */
#include "coll/path/shm.h"

static void reduce_shm_compute(cohort_request_t *req, const cohort_shm_call_t *call)
{
    if (req->comm->rank == cohort_coll_base(req)->args.root) {
        cohort_shm_coll_reduce(req, call, 0);
    }
}

static const cohort_shm_row_t reduce_shm = {
    .in_bytes = cohort_shm_coll_one,
    .compute = reduce_shm_compute,
};

const cohort_coll_algo_t cohort_reduce_shm = COHORT_SHM_ROW(19, COHORT_COLL_REDUCE, &reduce_shm);
