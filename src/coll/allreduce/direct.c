/*
 * allreduce on one node by single copy (the direct family, path/direct.c, runs it). Each member
 * combines its block of the vector from every member's input, a chunk at a time, and writes each
 * finished chunk into every other member's output while it is in cache.
 */
#include "coll/coll_reduce.h"
#include "coll/path/direct.h"

/* Block me of the vector, written straight into every member's output. */
static cohort_status_t allreduce_direct_copy(cohort_request_t *req)
{
    const cohort_coll_args_t *a = &cohort_coll_base(req)->args;
    int n = req->comm->size, me = req->comm->rank;
    size_t off = cohort_coll_block_off(a->count, n, me) * a->esize;

    return cohort_direct_coll_combine(req, (char *)a->rbuf + off, off,
                                      cohort_coll_block_len(a->count, n, me), 1);
}

static const cohort_direct_row_t allreduce_direct = {
    .prepare = cohort_direct_coll_combine_prepare,
    .copy = allreduce_direct_copy,
};

const cohort_coll_algo_t cohort_allreduce_direct =
    COHORT_DIRECT_ROW(13, COHORT_COLL_ALLREDUCE, &allreduce_direct,
                      "each rank combines its block from every input and writes it to all",
                      cohort_direct_coll_decline_writer, COHORT_DIRECT_WRITES,
                      COHORT_DIRECT_CHUNK_KNOB("COHORT_ALGO_ALLREDUCE_DIRECT_CHUNK"));
