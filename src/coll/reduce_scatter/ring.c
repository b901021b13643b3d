/*
 * Ring reduce-scatter, for large messages: n - 1 steps; at step t a rank sends the partial sum
 * of block me - t - 1 to the right and receives that of block me - t - 2 from the left, adds
 * its own input's block and passes it on at the next step; the last step's block is its own.
 *
 * Pipelined: blocks are cut into segments and (step, segment) units flow through a window of
 * receives (the "window" parameter, pattern/ring_pipeline.c).
 *
 * The ring is a task (task.h: cohort_task_ring_reduce_scatter), which allreduce_ring runs too,
 * on its own cut of the vector and with the blocks shifted by one. Partial sums wait either at
 * their block's place in the output (allreduce: the output spans every block) or in "acc", one
 * block long: the segment j received at step t is combined into acc's segment j once acc's
 * segment j (the previous step's) has left, and sent on at step t + 1. This row's acc is rbuf
 * itself, or under COHORT_IN_PLACE (where rbuf holds the whole input) a scratch block copied to
 * rbuf's start at the end.
 */
#include <stdlib.h>
#include "coll/coll_reduce.h"
#include "coll/pattern/ring_pipeline.h"
#include "mem/scratch.h"
#include "core/comm.h"

/* The segment and window are tuning parameters; the state has room for the largest window. */
#define RS_WINDOW_MAX 16

/* ---- The task: the ring itself ---- */

static size_t rs_esize(cohort_request_t *req)
{
    return cohort_coll_base(req)->args.esize;
}

/* Where the partial sum of a segment (block at @a boff, segment at @a soff inside it) is kept. */
static char *rs_acc(const cohort_ring_rs_t *s, size_t esize, size_t boff, size_t soff)
{
    if (s->acc_at == COHORT_RING_ACC_BLOCKS) {
        return cohort_coll_at(s->out, boff + soff, esize);
    }
    return cohort_coll_at(s->acc, soff, esize);
}

static char *rs_tmp(const cohort_ring_rs_t *s, size_t esize, size_t u)
{
    return s->tmp + (u % (size_t)s->shape.window) * s->shape.seg_elems * esize;
}

static cohort_status_t rs_post_recv(cohort_request_t *req, void *self, size_t u,
                                    cohort_xfer_t *slot)
{
    cohort_task_t *t = self;
    cohort_ring_rs_t *s = t->state;
    size_t esize = rs_esize(req), boff, soff, len;

    cohort_ring_shape_unit(req, &s->shape, u, 2, &boff, &soff, &len);
    return cohort_task_recv(req, t, slot, (req->comm->rank - 1 + req->comm->size) % req->comm->size,
                            (int)u, rs_tmp(s, esize, u), len * esize);
}

static cohort_status_t rs_post_send(cohort_request_t *req, void *self, size_t u,
                                    cohort_xfer_t *slot)
{
    cohort_task_t *t = self;
    cohort_ring_rs_t *s = t->state;
    size_t esize = rs_esize(req), boff, soff, len;
    const char *src;

    cohort_ring_shape_unit(req, &s->shape, u, 1, &boff, &soff, &len);
    if (u < s->shape.nseg) {
        src = cohort_coll_at(s->in, boff + soff, esize); /* the first step sends the input */
    } else {
        src = rs_acc(s, esize, boff, soff); /* then the sum made one step earlier */
    }
    return cohort_task_send(req, t, slot, (req->comm->rank + 1) % req->comm->size, (int)u, src,
                            len * esize);
}

/* One block reused by every step: a unit past the first step accumulates into acc's segment,
 * which send u (forwarding the sum made one step earlier) reads until it finishes. At the
 * blocks' own places no step overwrites what another still sends. */
static int rs_can_process(cohort_request_t *req, void *self, size_t u)
{
    cohort_ring_rs_t *s = ((cohort_task_t *)self)->state;

    (void)req;
    return s->acc_at == COHORT_RING_ACC_BLOCKS || u < s->shape.nseg ||
           cohort_ring_pipe_sent(&s->shape.pipe, u);
}

/* A received unit: acc's segment = incoming op the input's segment, finished (AVG) at the last
 * step, whose block is this rank's. */
static void rs_process(cohort_request_t *req, void *self, size_t u)
{
    cohort_ring_rs_t *s = ((cohort_task_t *)self)->state;
    size_t esize = rs_esize(req), boff, soff, len;
    char *dst;

    cohort_ring_shape_unit(req, &s->shape, u, 2, &boff, &soff, &len);
    dst = rs_acc(s, esize, boff, soff);
    cohort_coll_mem_reduce(req, dst, rs_tmp(s, esize, u), cohort_coll_at(s->in, boff + soff, esize),
                           len);
    if (u / s->shape.nseg + 2 == (size_t)req->comm->size) {
        cohort_coll_mem_finish(req, dst, len, req->comm->size);
    }
}

static const cohort_ring_pipe_ops_t rs_pipe_ops = {
    .post_recv = rs_post_recv,
    .post_send = rs_post_send,
    .can_process = rs_can_process,
    .process = rs_process,
};

static cohort_status_t rs_task_post(cohort_request_t *req, cohort_task_t *t)
{
    cohort_ring_rs_t *s = t->state;
    size_t esize = rs_esize(req);
    size_t tmp_bytes, own_len;

    cohort_ring_shape_start(req, &s->shape, t);
    tmp_bytes = (size_t)s->shape.window * s->shape.seg_elems * esize;
    own_len = cohort_coll_block_len(s->shape.total, req->comm->size,
                                    (req->comm->rank + s->shape.own) % req->comm->size);
    /* One allocation for both: see reduce/knomial.c. */
    s->tmp = cohort_coll_mem_scratch(
        req, tmp_bytes + (s->acc_at == COHORT_RING_ACC_SCRATCH ? own_len * esize : 0));
    if (s->tmp == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    s->acc = s->acc_at == COHORT_RING_ACC_SCRATCH ? s->tmp + tmp_bytes : s->out;
    return COHORT_OK;
}

static cohort_status_t rs_task_progress(cohort_request_t *req, cohort_task_t *t)
{
    cohort_ring_rs_t *s = t->state;
    cohort_status_t status = cohort_ring_pipe_progress(req, &s->shape.pipe, &rs_pipe_ops, t);

    t->mark = cohort_ring_pipe_mark(&s->shape.pipe);
    if (status == COHORT_OK && s->acc_at == COHORT_RING_ACC_SCRATCH) {
        /* Every send has read its input: the output may now take the result. */
        cohort_coll_mem_copy(req, s->out, s->acc,
                             cohort_coll_block_len(s->shape.total, req->comm->size,
                                                   (req->comm->rank + s->shape.own) %
                                                       req->comm->size) *
                                 rs_esize(req));
    }
    return status;
}

static void rs_task_finalize(cohort_request_t *req, cohort_task_t *t)
{
    cohort_ring_rs_t *s = t->state;

    cohort_coll_mem_release(req, s->tmp);
    s->tmp = s->acc = NULL;
}

const cohort_task_row_t cohort_task_ring_reduce_scatter = {
    .name = "ring reduce-scatter",
    .post = rs_task_post,
    .progress = rs_task_progress,
    .finalize = rs_task_finalize,
};

/* ---- The row: the task alone, on the call's buffers ---- */

typedef struct {
    cohort_task_parent_t p; /* the call's base, and the one task */
    cohort_ring_rs_t rs;
    cohort_xfer_t x[2 * RS_WINDOW_MAX]; /* lent to the task */
} rs_state_t;

static size_t rs_state_size(const cohort_coll_args_t *args, int gsize)
{
    return sizeof(rs_state_t);
}

/* Equal blocks of count, this rank's own; its partial sums in rbuf, or under COHORT_IN_PLACE
 * (rbuf holds the input) in scratch. */
static cohort_status_t rs_start(cohort_request_t *req)
{
    rs_state_t *s = req->state;
    const cohort_coll_args_t *a = &s->p.base.args;
    cohort_ring_rs_t *rs = &s->rs;

    rs->shape.window = (int)cohort_coll_knob(req, 1);
    s->p.base.xfers = rs->shape.x = s->x;
    s->p.base.nxfers = 2 * rs->shape.window;
    if (a->count == 0 || req->comm->size == 1) {
        cohort_coll_copy_input(req, a, a->count);
        return COHORT_OK; /* no task: done */
    }
    rs->shape.total = (size_t)req->comm->size * a->count;
    rs->shape.seg_bytes = cohort_coll_knob(req, 0);
    rs->in = cohort_coll_input(a);
    rs->out = a->rbuf;
    rs->acc_at = a->sbuf == COHORT_IN_PLACE ? COHORT_RING_ACC_SCRATCH : COHORT_RING_ACC_OUT;
    cohort_task_seq_add(&s->p.seq, &cohort_task_ring_reduce_scatter, rs);
    return cohort_task_seq_start(req, &s->p.seq);
}

const cohort_coll_algo_t cohort_reduce_scatter_ring = {
    .name = "ring",
    .description = "pipelined ring, n-1 steps of one block each",
    .coll = COHORT_COLL_REDUCE_SCATTER,
    .id = 11,
    .state_size = rs_state_size,
    .start = rs_start,
    .progress = cohort_task_parent_progress,
    .cleanup = cohort_task_parent_cleanup,
    .peers = cohort_coll_peers_ring,
    .nknobs = 2,
    .knobs = {{"segment", "COHORT_ALGO_REDUCE_SCATTER_RING_SEGMENT", 128 * 1024, 1024, 1u << 30, 1,
               "bytes per pipelined message; 128 KiB measured best here at 1-16 MiB"},
              {"window", "COHORT_ALGO_REDUCE_SCATTER_RING_WINDOW", 4, 1, 16, 0,
               "segments in flight per direction"}},
    .device_ok = 1,
};
