/*
 * allgather on one node by single copy (the direct family, path/direct.c, runs it). Each member
 * writes its block into every member's output, a chunk at a time: read once, written n times,
 * where reading every block from its owner reads n blocks and writes n.
 */
#include <string.h>
#include "coll/path/direct.h"

/* In place, this member's block is already at its place in rbuf: the others read it there. */
static cohort_status_t allgather_direct_prepare(cohort_request_t *req, const void **in)
{
    const cohort_coll_args_t *a = &cohort_coll_base(req)->args;

    if (a->sbuf == COHORT_IN_PLACE) {
        *in = (const char *)a->rbuf + (size_t)req->comm->rank * a->count * a->esize;
    }
    return COHORT_OK;
}

/* This member's block, a cache-sized chunk at a time, copied into place and then written into
 * every other member's output while it is in cache. */
static cohort_status_t allgather_direct_copy(cohort_request_t *req)
{
    const cohort_coll_args_t *a = &cohort_coll_base(req)->args;
    int n = req->comm->size, me = req->comm->rank;
    size_t one = a->count * a->esize, chunk = cohort_coll_knob(req, COHORT_DIRECT_CHUNK);
    char *mine = (char *)a->rbuf + (size_t)me * one;
    cohort_status_t status = COHORT_OK;

    for (size_t c = 0; c < one && status == COHORT_OK; c += chunk) {
        size_t len = one - c < chunk ? one - c : chunk;
        if (a->sbuf != COHORT_IN_PLACE) {
            memcpy(mine + c, (const char *)a->sbuf + c, len);
        }
        for (int j = 1; j < n && status == COHORT_OK; j++) {
            status =
                cohort_direct_coll_push(req, (me + j) % n, mine + c, (size_t)me * one + c, len);
        }
    }
    return status;
}

static const cohort_direct_row_t allgather_direct = {
    .prepare = allgather_direct_prepare,
    .copy = allgather_direct_copy,
};

const cohort_coll_algo_t cohort_allgather_direct = COHORT_DIRECT_ROW(
    15, COHORT_COLL_ALLGATHER, &allgather_direct, "each rank writes its block into every output",
    cohort_direct_coll_decline_writer, COHORT_DIRECT_WRITES,
    COHORT_DIRECT_CHUNK_KNOB("COHORT_ALGO_ALLGATHER_DIRECT_CHUNK"));
