/*
 * Ring allreduce, for large messages: the vector is cut into n blocks; n - 1 reduce-scatter
 * steps (send block me - t to the right, receive block me - t - 1 from the left and add the
 * input's) leave each rank owning the finished block me + 1; n - 1 allgather steps pass the
 * finished blocks around. Each element is combined by one chain of ranks and copied from there,
 * so every rank holds the same bits.
 *
 * Pipelined: each block is cut into segments, and the 2(n - 1) x nseg (step, segment) units
 * flow through a window of receives (the "window" parameter), so a rank reduces one segment while
 * the next ones are on the wire. Unit u = t * nseg + j is also the message step.
 */
#include <stdlib.h>
#include "coll/coll_reduce.h"
#include "coll/pattern/ring_pipeline.h"
#include "mem/scratch.h"
#include "core/comm.h"

/* The segment and window are tuning parameters (cohort_bench algorithms); the state has room
 * for the largest window. */
#define RING_WINDOW_MAX 16

typedef struct {
    cohort_coll_base_t base;
    int done;
    int left, right;
    size_t seg_elems;
    size_t nseg;                          /* segments per block (of the largest block) */
    cohort_ring_pipe_t pipe;              /* 2 (n - 1) nseg units */
    int window;                           /* W */
    char *tmp;                            /* W segments of incoming partial sums */
    cohort_xfer_t x[2 * RING_WINDOW_MAX]; /* sends in [0, W), receives in [W, 2W) */
} ring_state_t;

static size_t ring_state_size(const cohort_coll_args_t *args, int gsize)
{
    return sizeof(ring_state_t);
}

static cohort_status_t ring_start(cohort_request_t *req)
{
    ring_state_t *s = req->state;
    const cohort_comm_t *g = req->comm;
    const cohort_coll_args_t *a = &s->base.args;
    int n = g->size;

    s->window = (int)cohort_coll_knob(req, 1);
    s->base.xfers = s->x;
    s->base.nxfers = 2 * s->window;
    if (a->count == 0 || n == 1) {
        cohort_coll_copy_input(req, a, a->count);
        s->done = 1;
        return COHORT_OK;
    }
    s->left = (g->rank - 1 + n) % n;
    s->right = (g->rank + 1) % n;
    s->seg_elems = cohort_coll_seg_elems(cohort_coll_knob(req, 0), a->esize);
    s->nseg = cohort_coll_nsegs(cohort_coll_block_len(a->count, n, 0), s->seg_elems);
    s->pipe.nseg = s->nseg;
    s->pipe.nunits = 2 * (size_t)(n - 1) * s->nseg;
    s->pipe.window = (size_t)s->window;
    s->pipe.x = s->x;
    s->seg_elems = (cohort_coll_block_len(a->count, n, 0) + s->nseg - 1) / s->nseg;
    s->tmp = cohort_coll_mem_scratch(req, (size_t)s->window * s->seg_elems * a->esize);
    if (s->tmp == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    return COHORT_OK;
}

/* Block index (me - t - back) mod n, and the element range of segment j of it. */
static void ring_unit(const ring_state_t *s, const cohort_comm_t *g, size_t u, int back,
                      size_t *off, size_t *len)
{
    const cohort_coll_args_t *a = &s->base.args;
    int n = g->size;
    size_t t = u / s->nseg, j = u % s->nseg;
    int b = (int)(((size_t)g->rank + (size_t)n * 2 - t % (size_t)n - (size_t)back) % (size_t)n);
    size_t blen = cohort_coll_block_len(a->count, n, b);

    *off = cohort_coll_block_off(a->count, n, b) + cohort_coll_seg_off(blen, s->seg_elems, j);
    *len = cohort_coll_seg_len(blen, s->seg_elems, j);
}

static cohort_status_t ring_post_recv(cohort_request_t *req, size_t u, cohort_xfer_t *slot)
{
    ring_state_t *s = req->state;
    const cohort_coll_args_t *a = &s->base.args;
    size_t t = u / s->nseg, off, len;
    void *dst;

    ring_unit(s, req->comm, u, 1, &off, &len);
    if (t + 2 <= (size_t)req->comm->size) {
        dst = s->tmp + (u % (size_t)s->window) * s->seg_elems * a->esize; /* to be reduced */
    } else {
        dst = cohort_coll_at(a->rbuf, off, a->esize); /* a finished block: straight in place */
    }
    return cohort_coll_recv(req, slot, s->left, (int)u, dst, len * a->esize);
}

static cohort_status_t ring_post_send(cohort_request_t *req, size_t u, cohort_xfer_t *slot)
{
    ring_state_t *s = req->state;
    const cohort_coll_args_t *a = &s->base.args;
    const void *src = u < s->nseg ? cohort_coll_input(a) : a->rbuf;
    size_t off, len;

    ring_unit(s, req->comm, u, 0, &off, &len);
    return cohort_coll_send(req, slot, s->right, (int)u, cohort_coll_at(src, off, a->esize),
                            len * a->esize);
}

/* A received unit: during reduce-scatter, rbuf's segment = incoming op input's segment. */
static void ring_process(cohort_request_t *req, size_t u)
{
    ring_state_t *s = req->state;
    const cohort_coll_args_t *a = &s->base.args;
    int n = req->comm->size;
    size_t t = u / s->nseg, off, len;
    void *dst;

    if (t + 2 > (size_t)n) {
        return;
    }
    ring_unit(s, req->comm, u, 1, &off, &len);
    dst = cohort_coll_at(a->rbuf, off, a->esize);
    cohort_coll_mem_reduce(req, dst, s->tmp + (u % (size_t)s->window) * s->seg_elems * a->esize,
                           cohort_coll_at(cohort_coll_input(a), off, a->esize), len);
    if (t + 2 == (size_t)n) {
        /* The last reduce-scatter step finished this segment of the block this rank owns. */
        cohort_coll_mem_finish(req, dst, len, n);
    }
}

static const cohort_ring_pipe_ops_t ring_pipe_ops = {
    .post_recv = ring_post_recv,
    .post_send = ring_post_send,
    .process = ring_process,
};

static cohort_status_t ring_progress(cohort_request_t *req)
{
    ring_state_t *s = req->state;
    cohort_status_t status;

    if (s->done) {
        return COHORT_OK;
    }
    status = cohort_ring_pipe_progress(req, &s->pipe, &ring_pipe_ops);
    if (status == COHORT_OK) {
        s->done = 1;
    }
    return status;
}

static void ring_cleanup(cohort_request_t *req)
{
    ring_state_t *s = req->state;

    cohort_coll_mem_release(req, s->tmp);
    s->tmp = NULL;
}

const cohort_coll_algo_t cohort_allreduce_ring = {
    .name = "ring",
    .description = "pipelined ring: reduce-scatter then allgather, 2(n-1) steps",
    .coll = COHORT_COLL_ALLREDUCE,
    .state_size = ring_state_size,
    .start = ring_start,
    .progress = ring_progress,
    .cleanup = ring_cleanup,
    .peers = cohort_coll_peers_ring,
    .nknobs = 2,
    .knobs = {{"segment", "COHORT_ALGO_ALLREDUCE_RING_SEGMENT", 256 * 1024, 1024, 1u << 30, 1,
               "bytes per pipelined message; 256 KiB kept 2-8 ranks busy here at 4-16 MiB"},
              {"window", "COHORT_ALGO_ALLREDUCE_RING_WINDOW", 4, 1, 16, 0,
               "segments in flight per direction; 4 hid the reduction behind the copy here"}},
    .device_ok = 1,
};
