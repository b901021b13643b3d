/*
 * bcast on one node by single copy (the direct family, path/direct.c, runs it). The buffer is
 * cut in n blocks: the root writes block 0 into every other member while each of them reads
 * blocks 1..n-1 of the root's buffer, so the root's core copies too (2 ranks: half each).
 */
#include "coll/coll_reduce.h"
#include "coll/path/direct.h"

/* Every member exposes its one buffer: the root's is read, the others' written. */
static cohort_status_t bcast_direct_prepare(cohort_request_t *req, const void **in)
{
    *in = cohort_coll_base(req)->args.rbuf;
    return COHORT_OK;
}

static cohort_status_t bcast_direct_copy(cohort_request_t *req)
{
    const cohort_coll_args_t *a = &cohort_coll_base(req)->args;
    int n = req->comm->size, me = req->comm->rank, root = a->root;
    size_t one = a->count * a->esize, len0 = cohort_coll_block_len(a->count, n, 0) * a->esize;
    char *r = a->rbuf;
    cohort_status_t status = COHORT_OK;

    if (me == root) {
        for (int j = 1; j < n && status == COHORT_OK; j++) {
            status = cohort_direct_coll_push(req, (me + j) % n, r, 0, len0);
        }
        return status;
    }
    return cohort_direct_coll_pull(req, root, 0, r + len0, len0, one - len0);
}

static const cohort_direct_row_t bcast_direct = {
    .prepare = bcast_direct_prepare,
    .copy = bcast_direct_copy,
};

const cohort_coll_algo_t cohort_bcast_direct =
    COHORT_DIRECT_ROW(17, COHORT_COLL_BCAST, &bcast_direct,
                      "the root writes a share into every member, which read the rest",
                      cohort_direct_coll_decline_writer, COHORT_DIRECT_WRITES);
