/*
 * alltoall on one node by single copy (the direct family, path/direct.c, runs it). Each member
 * reads its block of every member's input straight into its receive buffer; it only reads, so
 * it needs no segment.
 */
#include <string.h>
#include "coll/path/direct.h"

/* In place, this member writes the blocks the others read: they read a copy. Otherwise its own
 * block goes into place here, since nobody reads it. */
static cohort_status_t alltoall_direct_prepare(cohort_request_t *req, const void **in)
{
    const cohort_coll_args_t *a = &cohort_coll_base(req)->args;
    int n = req->comm->size, me = req->comm->rank;
    size_t one = a->count * a->esize;
    char *copy;

    if (a->sbuf != COHORT_IN_PLACE) {
        memcpy((char *)a->rbuf + (size_t)me * one, (const char *)*in + (size_t)me * one, one);
        return COHORT_OK;
    }
    copy = cohort_direct_coll_scratch(req, (size_t)n * one);
    if (copy == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    memcpy(copy, a->rbuf, (size_t)n * one);
    *in = copy;
    return COHORT_OK;
}

static cohort_status_t alltoall_direct_copy(cohort_request_t *req)
{
    const cohort_coll_args_t *a = &cohort_coll_base(req)->args;
    int n = req->comm->size, me = req->comm->rank;
    size_t one = a->count * a->esize;
    cohort_status_t status = COHORT_OK;

    for (int j = 1; j < n && status == COHORT_OK; j++) {
        int k = (me + j) % n;
        status = cohort_direct_coll_pull(req, k, 0, (char *)a->rbuf + (size_t)k * one,
                                         (size_t)me * one, one);
    }
    return status;
}

static const cohort_direct_row_t alltoall_direct = {
    .prepare = alltoall_direct_prepare,
    .copy = alltoall_direct_copy,
};

const cohort_coll_algo_t cohort_alltoall_direct =
    COHORT_DIRECT_ROW(16, COHORT_COLL_ALLTOALL, &alltoall_direct,
                      "each rank reads its block of every input into place",
                      cohort_direct_coll_decline, COHORT_NODE_DIRECT);
