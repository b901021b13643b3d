/*
 * allgather on one node through the group's shared segment, no message (the shm family,
 * path/shm.c, runs it): every member writes its block, and copies every member's out of the
 * segment.
 */
#include <string.h>
#include "coll/path/shm.h"

/* In place, this member's block is already at its place in rbuf. */
static const void *allgather_shm_input(cohort_request_t *req)
{
    const cohort_coll_args_t *a = &cohort_coll_base(req)->args;

    return a->sbuf == COHORT_IN_PLACE
               ? (const char *)a->rbuf + (size_t)req->comm->rank * a->count * a->esize
               : a->sbuf;
}

static void allgather_shm_compute(cohort_request_t *req, const cohort_shm_call_t *call)
{
    const cohort_coll_args_t *a = &cohort_coll_base(req)->args;
    size_t one = a->count * a->esize;

    for (int k = 0; k < req->comm->size; k++) {
        memcpy((char *)a->rbuf + (size_t)k * one, cohort_shm_buf(req, call, k), one);
    }
}

static const cohort_shm_row_t allgather_shm = {
    .in_bytes = cohort_shm_coll_one,
    .input = allgather_shm_input,
    .compute = allgather_shm_compute,
};

const cohort_coll_algo_t cohort_allgather_shm =
    COHORT_SHM_ROW(21, COHORT_COLL_ALLGATHER, &allgather_shm);
