/*
 * Ring allgather: at step i every rank sends block (rank - i) to its right neighbour and
 * receives block (rank - i - 1) from its left one, straight into the receive buffer. n - 1
 * steps, each link carries (n - 1) blocks: bandwidth-optimal, for large blocks. Every receive
 * is posted up front (they land in distinct blocks), and each block is sent on the moment it
 * has arrived.
 *
 * The ring is a task (task.h: cohort_task_ring_allgather) on the ring pipeline
 * (pattern/ring_pipeline.c), which allreduce_ring runs too after its reduce-scatter, on its own
 * cut of the vector, in segments, with a window of its own. This row runs it alone: whole
 * blocks, and a window of n - 1, so that every receive is posted at once.
 */
#include <string.h>
#include "coll/coll_reduce.h"
#include "coll/pattern/ring_pipeline.h"
#include "core/comm.h"

/* ---- The task: the ring itself ---- */

/* Unit u's segment: received from the left into block (rank + own - t - 1), or sent to the
 * right from block (rank + own - t), once it has arrived (the driver sends unit u after unit
 * u - nseg). */
static cohort_status_t ag_post(cohort_request_t *req, cohort_task_t *t, size_t u,
                               cohort_xfer_t *slot, int send)
{
    cohort_ring_ag_t *s = t->state;
    int n = req->comm->size, me = req->comm->rank;
    size_t esize = cohort_coll_base(req)->args.esize, boff, soff, len;
    char *at;

    cohort_ring_shape_unit(req, &s->shape, u, send ? 0 : 1, &boff, &soff, &len);
    at = cohort_coll_at(s->buf, boff + soff, esize);
    if (send) {
        return cohort_task_send(req, t, slot, (me + 1) % n, (int)u, at, len * esize);
    }
    return cohort_task_recv(req, t, slot, (me - 1 + n) % n, (int)u, at, len * esize);
}

static cohort_status_t ag_post_recv(cohort_request_t *req, void *self, size_t u,
                                    cohort_xfer_t *slot)
{
    return ag_post(req, self, u, slot, 0);
}

static cohort_status_t ag_post_send(cohort_request_t *req, void *self, size_t u,
                                    cohort_xfer_t *slot)
{
    return ag_post(req, self, u, slot, 1);
}

static const cohort_ring_pipe_ops_t ag_pipe_ops = {
    .post_recv = ag_post_recv,
    .post_send = ag_post_send,
};

static cohort_status_t ag_task_post(cohort_request_t *req, cohort_task_t *t)
{
    cohort_ring_shape_start(req, &((cohort_ring_ag_t *)t->state)->shape, t);
    return COHORT_OK;
}

static cohort_status_t ag_task_progress(cohort_request_t *req, cohort_task_t *t)
{
    cohort_ring_pipe_t *pipe = &((cohort_ring_ag_t *)t->state)->shape.pipe;
    cohort_status_t status = cohort_ring_pipe_progress(req, pipe, &ag_pipe_ops, t);

    t->mark = cohort_ring_pipe_mark(pipe);
    return status;
}

const cohort_task_row_t cohort_task_ring_allgather = {
    .name = "ring allgather",
    .post = ag_task_post,
    .progress = ag_task_progress,
};

/* ---- The row: the task alone, on the call's buffers ---- */

typedef struct {
    cohort_task_parent_t p; /* the call's base, and the one task */
    cohort_ring_ag_t ag;
    /* xfers: n-1 sends, then n-1 receives (lent to the task) */
} ag_ring_state_t;

static size_t ag_ring_state_size(const cohort_coll_args_t *args, int gsize)
{
    return sizeof(ag_ring_state_t) + 2 * (size_t)(gsize - 1) * sizeof(cohort_xfer_t);
}

static cohort_status_t ag_ring_start(cohort_request_t *req)
{
    ag_ring_state_t *s = req->state;
    const cohort_comm_t *g = req->comm;
    const cohort_coll_args_t *a = &s->p.base.args;
    size_t blk = a->count * a->esize;

    s->p.base.xfers = (cohort_xfer_t *)(s + 1);
    s->p.base.nxfers = 2 * (g->size - 1);
    if (a->sbuf != COHORT_IN_PLACE && blk > 0) {
        cohort_coll_mem_copy(req, (char *)a->rbuf + (size_t)g->rank * blk, a->sbuf, blk);
    }
    if (blk == 0 || g->size == 1) {
        return COHORT_OK; /* no task: done */
    }
    s->ag.shape.total = (size_t)g->size * a->count;
    s->ag.shape.own = 0;
    s->ag.shape.seg_bytes = 0; /* whole blocks */
    s->ag.shape.window = g->size - 1;
    s->ag.shape.x = s->p.base.xfers;
    s->ag.buf = a->rbuf;
    cohort_task_seq_add(&s->p.seq, &cohort_task_ring_allgather, &s->ag);
    return cohort_task_seq_start(req, &s->p.seq);
}

const cohort_coll_algo_t cohort_allgather_ring = {
    .name = "ring",
    .description = "n-1 steps to the right neighbour, blocks forwarded as they arrive",
    .coll = COHORT_COLL_ALLGATHER,
    .id = 4,
    .state_size = ag_ring_state_size,
    .start = ag_ring_start,
    .progress = cohort_task_parent_progress,
    .peers = cohort_coll_peers_ring,
    .device_ok = 1,
};
