/*
 * Ring allgather: at step i every rank sends block (rank - i) to its right neighbour and
 * receives block (rank - i - 1) from its left one, straight into the receive buffer. n - 1
 * steps, each link carries (n - 1) blocks: bandwidth-optimal, for large blocks. Every receive
 * is posted up front (they land in distinct blocks), and each block is sent on the moment it
 * has arrived.
 */
#include <string.h>
#include "coll/coll.h"
#include "core/comm.h"

typedef enum { AG_RING_POST, AG_RING_SEND, AG_RING_WAIT } ag_ring_phase_t;

typedef struct {
    cohort_coll_base_t base;
    ag_ring_phase_t phase;
    int sent; /* ring steps whose send is posted */
    size_t blk;
    /* xfers: n-1 receives, then n-1 sends */
} ag_ring_state_t;

static size_t ag_ring_state_size(const cohort_coll_args_t *args, int gsize)
{
    return sizeof(ag_ring_state_t) + 2 * (size_t)(gsize - 1) * sizeof(cohort_xfer_t);
}

static cohort_status_t ag_ring_start(cohort_request_t *req)
{
    ag_ring_state_t *s = req->state;
    const cohort_comm_t *g = req->comm;
    const cohort_coll_args_t *a = &s->base.args;

    s->blk = a->count * a->esize;
    s->base.xfers = (cohort_xfer_t *)(s + 1);
    s->base.nxfers = 2 * (g->size - 1);
    if (a->sbuf != COHORT_IN_PLACE && s->blk > 0) {
        cohort_coll_mem_copy(req, (char *)a->rbuf + (size_t)g->rank * s->blk, a->sbuf, s->blk);
    }
    s->phase = AG_RING_POST;
    return COHORT_OK;
}

static cohort_status_t ag_ring_progress(cohort_request_t *req)
{
    ag_ring_state_t *s = req->state;
    const cohort_comm_t *g = req->comm;
    int n = g->size, me = g->rank;
    int left = (me - 1 + n) % n, right = (me + 1) % n;
    char *rbuf = s->base.args.rbuf;
    cohort_xfer_t *recvs = s->base.xfers, *sends = s->base.xfers + (n - 1);
    cohort_status_t status;

    if (s->blk == 0) {
        return COHORT_OK;
    }
    switch (s->phase) {
    case AG_RING_POST:
        for (int i = 0; i < n - 1; i++) {
            int b = ((me - i - 1) % n + n) % n;
            status = cohort_coll_recv(req, &recvs[i], left, i, rbuf + (size_t)b * s->blk, s->blk);
            if (status != COHORT_OK) {
                return status;
            }
        }
        s->phase = AG_RING_SEND;
        /* fall through */
    case AG_RING_SEND:
        while (s->sent < n - 1) {
            int i = s->sent;
            int b = ((me - i) % n + n) % n;
            if (i > 0) {
                status = cohort_coll_xfers_status(&recvs[i - 1], 1);
                if (status != COHORT_OK) {
                    return status;
                }
            }
            status = cohort_coll_send(req, &sends[i], right, i, rbuf + (size_t)b * s->blk, s->blk);
            if (status != COHORT_OK) {
                return status;
            }
            s->sent++;
        }
        s->phase = AG_RING_WAIT;
        /* fall through */
    case AG_RING_WAIT:
        return cohort_coll_xfers_status(s->base.xfers, s->base.nxfers);
    }
    return COHORT_ERR_INVALID_ARG; /* not reached */
}

const cohort_coll_algo_t cohort_allgather_ring = {
    .name = "ring",
    .description = "n-1 steps to the right neighbour, blocks forwarded as they arrive",
    .coll = COHORT_COLL_ALLGATHER,
    .state_size = ag_ring_state_size,
    .start = ag_ring_start,
    .progress = ag_ring_progress,
    .peers = cohort_coll_peers_ring,
    .device_ok = 1,
};
