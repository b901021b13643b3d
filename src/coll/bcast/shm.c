/*
 * bcast on one node through the group's shared segment, no message (the shm family,
 * path/shm.c, runs it): the root writes its buffer into the segment, the others copy it out.
 */
#include <string.h>
#include "coll/coll_reduce.h"
#include "coll/path/shm.h"

/* Only the root contributes; the others publish the call with nothing in it. */
static const void *bcast_shm_input(cohort_request_t *req)
{
    const cohort_coll_args_t *a = &cohort_coll_base(req)->args;

    return req->comm->rank == a->root ? cohort_coll_input(a) : NULL;
}

static void bcast_shm_compute(cohort_request_t *req, const cohort_shm_call_t *call)
{
    const cohort_coll_args_t *a = &cohort_coll_base(req)->args;

    if (req->comm->rank != a->root) {
        memcpy(a->rbuf, cohort_shm_buf(req, call, a->root), a->count * a->esize);
    }
}

static const cohort_shm_row_t bcast_shm = {
    .in_bytes = cohort_shm_coll_one,
    .input = bcast_shm_input,
    .compute = bcast_shm_compute,
};

const cohort_coll_algo_t cohort_bcast_shm = COHORT_SHM_ROW(23, COHORT_COLL_BCAST, &bcast_shm);
