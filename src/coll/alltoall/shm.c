/*
 * alltoall on one node through the group's shared segment, no message (the shm family,
 * path/shm.c, runs it): every member writes its whole input, and copies its block of every
 * member's.
 */
#include <string.h>
#include "coll/path/shm.h"

static void alltoall_shm_compute(cohort_request_t *req, const cohort_shm_call_t *call)
{
    const cohort_coll_args_t *a = &cohort_coll_base(req)->args;
    size_t one = a->count * a->esize, mine = (size_t)req->comm->rank * one;

    for (int k = 0; k < req->comm->size; k++) {
        memcpy((char *)a->rbuf + (size_t)k * one, cohort_shm_buf(req, call, k) + mine, one);
    }
}

static const cohort_shm_row_t alltoall_shm = {
    .in_bytes = cohort_shm_coll_all,
    .compute = alltoall_shm_compute,
};

const cohort_coll_algo_t cohort_alltoall_shm =
    COHORT_SHM_ROW(22, COHORT_COLL_ALLTOALL, &alltoall_shm);
