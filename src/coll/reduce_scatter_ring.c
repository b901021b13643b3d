/*
 * Ring reduce-scatter, for large messages: n - 1 steps; at step t a rank sends the partial sum
 * of block me - t - 1 to the right and receives that of block me - t - 2 from the left, adds
 * its own input's block and passes it on at the next step; the last step's block is its own.
 *
 * Pipelined like the ring allreduce: blocks are cut into segments and (step, segment) units
 * flow through a window of receives (the "window" parameter). Partial sums wait in "acc", one block
 * long: the segment j received at step t is combined into acc's segment j once acc's segment j (the
 * previous step's) has left, and sent on at step t + 1. acc is rbuf itself, or under
 * COHORT_IN_PLACE (where rbuf holds the whole input) a scratch block copied to rbuf's start at
 * the end.
 */
#include <stdlib.h>
#include "coll/coll_reduce.h"
#include "coll/pattern/ring_pipeline.h"
#include "mem/scratch.h"
#include "core/comm.h"

/* The segment and window are tuning parameters; the state has room for the largest window. */
#define RS_WINDOW_MAX 16

typedef struct {
    cohort_coll_base_t base;
    int done;
    int left, right;
    size_t seg_elems;
    size_t nseg;                        /* segments per block */
    cohort_ring_pipe_t pipe;            /* (n - 1) nseg units */
    char *tmp;                          /* W incoming segments (then acc, under COHORT_IN_PLACE) */
    char *acc;                          /* one block: rbuf, or after tmp under COHORT_IN_PLACE */
    int window;                         /* W */
    cohort_xfer_t x[2 * RS_WINDOW_MAX]; /* sends in [0, W), receives in [W, 2W) */
} rs_state_t;

static size_t rs_state_size(const cohort_coll_args_t *args, int gsize)
{
    return sizeof(rs_state_t);
}

static cohort_status_t rs_start(cohort_request_t *req)
{
    rs_state_t *s = req->state;
    const cohort_comm_t *g = req->comm;
    const cohort_coll_args_t *a = &s->base.args;
    int n = g->size;
    size_t tmp_bytes;

    s->base.xfers = s->x;
    s->window = (int)cohort_coll_knob(req, 1);
    s->base.nxfers = 2 * s->window;
    if (a->count == 0 || n == 1) {
        cohort_coll_copy_input(req, a, a->count);
        s->done = 1;
        return COHORT_OK;
    }
    s->left = (g->rank - 1 + n) % n;
    s->right = (g->rank + 1) % n;
    s->seg_elems = cohort_coll_seg_elems(cohort_coll_knob(req, 0), a->esize);
    s->nseg = cohort_coll_nsegs(a->count, s->seg_elems);
    s->seg_elems = (a->count + s->nseg - 1) / s->nseg;
    s->pipe.nseg = s->nseg;
    s->pipe.nunits = (size_t)(n - 1) * s->nseg;
    s->pipe.window = (size_t)s->window;
    s->pipe.x = s->x;
    tmp_bytes = (size_t)s->window * s->seg_elems * a->esize;
    /* One allocation for both: see reduce_knomial.c. */
    s->tmp = cohort_coll_mem_scratch(
        req, tmp_bytes + (a->sbuf == COHORT_IN_PLACE ? a->count * a->esize : 0));
    if (s->tmp == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    s->acc = a->sbuf == COHORT_IN_PLACE ? s->tmp + tmp_bytes : a->rbuf;
    return COHORT_OK;
}

/* The input's block (me - t - back) mod n, at segment j's offset. */
static const char *rs_input(const rs_state_t *s, const cohort_comm_t *g, size_t t, size_t j,
                            int back)
{
    const cohort_coll_args_t *a = &s->base.args;
    size_t n = (size_t)g->size;
    size_t b = ((size_t)g->rank + 2 * n - t % n - (size_t)back) % n;

    return cohort_coll_at(cohort_coll_input(a), b * a->count + j * s->seg_elems, a->esize);
}

static size_t rs_seg_bytes(const rs_state_t *s, size_t j)
{
    return cohort_coll_seg_len(s->base.args.count, s->seg_elems, j) * s->base.args.esize;
}

static cohort_status_t rs_post_recv(cohort_request_t *req, size_t u, cohort_xfer_t *slot)
{
    rs_state_t *s = req->state;

    return cohort_coll_recv(req, slot, s->left, (int)u,
                            s->tmp + (u % (size_t)s->window) * s->seg_elems * s->base.args.esize,
                            rs_seg_bytes(s, u % s->nseg));
}

static cohort_status_t rs_post_send(cohort_request_t *req, size_t u, cohort_xfer_t *slot)
{
    rs_state_t *s = req->state;
    size_t t = u / s->nseg, j = u % s->nseg;
    const char *src;

    if (t == 0) {
        src = rs_input(s, req->comm, 0, j, 1);
    } else {
        src = s->acc + j * s->seg_elems * s->base.args.esize;
    }
    return cohort_coll_send(req, slot, s->right, (int)u, src, rs_seg_bytes(s, j));
}

/* A unit past the first step accumulates into acc's segment, which send u (forwarding the sum
 * made one step earlier) reads until it finishes. */
static int rs_can_process(cohort_request_t *req, size_t u)
{
    rs_state_t *s = req->state;

    return u < s->nseg || cohort_ring_pipe_sent(&s->pipe, u);
}

static void rs_process(cohort_request_t *req, size_t u)
{
    rs_state_t *s = req->state;
    const cohort_coll_args_t *a = &s->base.args;
    size_t t = u / s->nseg, j = u % s->nseg;
    char *dst = s->acc + j * s->seg_elems * a->esize;
    size_t len = cohort_coll_seg_len(a->count, s->seg_elems, j);

    cohort_coll_mem_reduce(req, dst, s->tmp + (u % (size_t)s->window) * s->seg_elems * a->esize,
                           rs_input(s, req->comm, t, j, 2), len);
    if (t + 2 == (size_t)req->comm->size) {
        cohort_coll_mem_finish(req, dst, len, req->comm->size);
    }
}

static const cohort_ring_pipe_ops_t rs_pipe_ops = {
    .post_recv = rs_post_recv,
    .post_send = rs_post_send,
    .can_process = rs_can_process,
    .process = rs_process,
};

static cohort_status_t rs_progress(cohort_request_t *req)
{
    rs_state_t *s = req->state;
    const cohort_coll_args_t *a = &s->base.args;
    cohort_status_t status;

    if (s->done) {
        return COHORT_OK;
    }
    status = cohort_ring_pipe_progress(req, &s->pipe, &rs_pipe_ops);
    if (status != COHORT_OK) {
        return status;
    }
    if (s->acc != a->rbuf) {
        /* Every send has read its input: the start of rbuf may now take the result. */
        cohort_coll_mem_copy(req, a->rbuf, s->acc, a->count * a->esize);
    }
    s->done = 1;
    return COHORT_OK;
}

static void rs_cleanup(cohort_request_t *req)
{
    rs_state_t *s = req->state;

    cohort_coll_mem_release(req, s->tmp);
    s->tmp = s->acc = NULL;
}

const cohort_coll_algo_t cohort_reduce_scatter_ring = {
    .name = "ring",
    .description = "pipelined ring, n-1 steps of one block each",
    .coll = COHORT_COLL_REDUCE_SCATTER,
    .state_size = rs_state_size,
    .start = rs_start,
    .progress = rs_progress,
    .cleanup = rs_cleanup,
    .peers = cohort_coll_peers_ring,
    .nknobs = 2,
    .knobs = {{"segment", "COHORT_ALGO_REDUCE_SCATTER_RING_SEGMENT", 128 * 1024, 1024, 1u << 30, 1,
               "bytes per pipelined message; 128 KiB measured best here at 1-16 MiB"},
              {"window", "COHORT_ALGO_REDUCE_SCATTER_RING_WINDOW", 4, 1, 16, 0,
               "segments in flight per direction"}},
    .device_ok = 1,
};
