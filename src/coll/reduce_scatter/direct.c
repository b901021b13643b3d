/*
 * reduce_scatter on one node by single copy (the direct family, path/direct.c, runs it). Each
 * member combines its own block straight from every member's input, a chunk at a time; it only
 * reads, so it needs no segment.
 */
#include <string.h>
#include "coll/path/direct.h"

/* In place the result belongs at rbuf's start, which rank 0 still reads: it is made in this
 * rank's own block (read by nobody else) and moved once every member has signalled. */
static cohort_status_t reduce_scatter_direct_copy(cohort_request_t *req)
{
    const cohort_coll_args_t *a = &cohort_coll_base(req)->args;
    size_t mine = (size_t)req->comm->rank * a->count * a->esize;
    char *r = a->rbuf;

    return cohort_direct_coll_combine(req, a->sbuf == COHORT_IN_PLACE ? r + mine : r, mine,
                                      a->count, 0);
}

static void reduce_scatter_direct_finish(cohort_request_t *req)
{
    const cohort_coll_args_t *a = &cohort_coll_base(req)->args;
    size_t one = a->count * a->esize;

    if (a->sbuf == COHORT_IN_PLACE) {
        memmove(a->rbuf, (char *)a->rbuf + (size_t)req->comm->rank * one, one);
    }
}

static const cohort_direct_row_t reduce_scatter_direct = {
    .prepare = cohort_direct_coll_combine_prepare,
    .copy = reduce_scatter_direct_copy,
    .finish = reduce_scatter_direct_finish,
};

const cohort_coll_algo_t cohort_reduce_scatter_direct = COHORT_DIRECT_ROW(
    14, COHORT_COLL_REDUCE_SCATTER, &reduce_scatter_direct,
    "each rank combines its block straight from every input", cohort_direct_coll_decline,
    COHORT_NODE_DIRECT, COHORT_DIRECT_CHUNK_KNOB("COHORT_ALGO_REDUCE_SCATTER_DIRECT_CHUNK"));
