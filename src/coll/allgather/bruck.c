/*
 * Bruck allgather: ceil(log2 n) rounds for any n. Each rank gathers into a scratch buffer in
 * its own rotated order (slot i holds the block of rank me + i): in round k (dist = 2^k) it
 * sends its first min(dist, n - dist) slots to rank me - dist and receives as many into slots
 * [dist, ...) from rank me + dist. A final local rotation puts the blocks in rank order. Rank 0's
 * order is already rank order, so it gathers in place. For small blocks: latency-optimal.
 * Every round's receive is posted up front (they land in distinct slots).
 */
#include <stdlib.h>
#include <string.h>
#include "coll/coll.h"
#include "mem/scratch.h"
#include "core/comm.h"

typedef enum { AG_BRUCK_POST, AG_BRUCK_SEND, AG_BRUCK_WAIT } ag_bruck_phase_t;

typedef struct {
    cohort_coll_base_t base;
    ag_bruck_phase_t phase;
    int rounds;
    int sent; /* rounds whose send is posted */
    size_t blk;
    char *tmp;     /* n blocks in rotated order; rbuf itself at rank 0 */
    char *scratch; /* what start allocated, or NULL */
    /* xfers: rounds receives, then rounds sends */
} ag_bruck_state_t;

static int ag_bruck_rounds(int n)
{
    int r = 0;

    while ((1L << r) < n) {
        r++;
    }
    return r;
}

static size_t ag_bruck_state_size(const cohort_coll_args_t *args, int gsize)
{
    return sizeof(ag_bruck_state_t) + 2 * (size_t)ag_bruck_rounds(gsize) * sizeof(cohort_xfer_t);
}

static cohort_status_t ag_bruck_start(cohort_request_t *req)
{
    ag_bruck_state_t *s = req->state;
    const cohort_comm_t *g = req->comm;
    const cohort_coll_args_t *a = &s->base.args;
    const char *mine;

    s->blk = a->count * a->esize;
    s->rounds = ag_bruck_rounds(g->size);
    s->base.xfers = (cohort_xfer_t *)(s + 1);
    s->base.nxfers = 2 * s->rounds;
    s->phase = AG_BRUCK_POST;
    if (s->blk == 0) {
        return COHORT_OK;
    }
    mine = a->sbuf == COHORT_IN_PLACE ? (char *)a->rbuf + (size_t)g->rank * s->blk : a->sbuf;
    if (g->rank == 0) {
        s->tmp = a->rbuf;
    } else {
        s->scratch = cohort_coll_mem_scratch(req, (size_t)g->size * s->blk);
        if (s->scratch == NULL) {
            return COHORT_ERR_NO_MEMORY;
        }
        s->tmp = s->scratch;
    }
    if (s->tmp != mine) {
        cohort_coll_mem_copy(req, s->tmp, mine, s->blk);
    }
    return COHORT_OK;
}

static cohort_status_t ag_bruck_progress(cohort_request_t *req)
{
    ag_bruck_state_t *s = req->state;
    const cohort_comm_t *g = req->comm;
    int n = g->size, me = g->rank;
    cohort_xfer_t *recvs = s->base.xfers, *sends = s->base.xfers + s->rounds;
    cohort_status_t status;

    if (s->blk == 0) {
        return COHORT_OK;
    }
    switch (s->phase) {
    case AG_BRUCK_POST:
        for (int k = 0; k < s->rounds; k++) {
            int dist = 1 << k, cnt = dist < n - dist ? dist : n - dist;
            status = cohort_coll_recv(req, &recvs[k], (me + dist) % n, k,
                                      s->tmp + (size_t)dist * s->blk, (size_t)cnt * s->blk);
            if (status != COHORT_OK) {
                return status;
            }
        }
        s->phase = AG_BRUCK_SEND;
        /* fall through */
    case AG_BRUCK_SEND:
        while (s->sent < s->rounds) {
            int k = s->sent, dist = 1 << k, cnt = dist < n - dist ? dist : n - dist;
            if (k > 0) {
                status = cohort_coll_xfers_status(&recvs[k - 1], 1);
                if (status != COHORT_OK) {
                    return status;
                }
            }
            status = cohort_coll_send(req, &sends[k], (me - dist + n) % n, k, s->tmp,
                                      (size_t)cnt * s->blk);
            if (status != COHORT_OK) {
                return status;
            }
            s->sent++;
        }
        s->phase = AG_BRUCK_WAIT;
        /* fall through */
    case AG_BRUCK_WAIT:
        status = cohort_coll_xfers_status(s->base.xfers, s->base.nxfers);
        if (status != COHORT_OK) {
            return status;
        }
        if (me != 0) {
            char *rbuf = s->base.args.rbuf;
            size_t head = (size_t)(n - me) * s->blk;
            cohort_coll_mem_copy(req, rbuf + (size_t)me * s->blk, s->tmp, head);
            cohort_coll_mem_copy(req, rbuf, s->tmp + head, (size_t)me * s->blk);
        }
        return COHORT_OK;
    }
    return COHORT_ERR_INVALID_ARG; /* not reached */
}

static void ag_bruck_cleanup(cohort_request_t *req)
{
    ag_bruck_state_t *s = req->state;

    cohort_coll_mem_release(req, s->scratch);
    s->scratch = NULL;
}

static int ag_bruck_peers(const cohort_coll_args_t *a, int n, int me, int *out, int max)
{
    return a->count == 0 ? 0 : cohort_coll_peers_dist(n, me, -1, out, max);
}

const cohort_coll_algo_t cohort_allgather_bruck = {
    .name = "bruck",
    .description = "ceil(log2 n) rounds, any n; rotated gather then one local rotation",
    .coll = COHORT_COLL_ALLGATHER,
    .id = 3,
    .state_size = ag_bruck_state_size,
    .start = ag_bruck_start,
    .progress = ag_bruck_progress,
    .cleanup = ag_bruck_cleanup,
    .peers = ag_bruck_peers,
    .device_ok = 1,
};
