/*
 * reduce_scatter on one node through the group's shared segment, no message (the shm family,
 * path/shm.c, runs it): every member writes its whole input, and reduces its own block of every
 * member's.
 */
#include "coll/path/shm.h"

static void reduce_scatter_shm_compute(cohort_request_t *req, const cohort_shm_call_t *call)
{
    const cohort_coll_args_t *a = &cohort_coll_base(req)->args;

    cohort_shm_coll_reduce(req, call, (size_t)req->comm->rank * a->count * a->esize);
}

static const cohort_shm_row_t reduce_scatter_shm = {
    .in_bytes = cohort_shm_coll_all,
    .compute = reduce_scatter_shm_compute,
};

const cohort_coll_algo_t cohort_reduce_scatter_shm =
    COHORT_SHM_ROW(20, COHORT_COLL_REDUCE_SCATTER, &reduce_scatter_shm);
