/*
 * Ring allreduce, for large messages: the vector is cut into n blocks; n - 1 reduce-scatter
 * steps (send block me - t to the right, receive block me - t - 1 from the left and add the
 * input's) leave each rank owning the finished block me + 1; n - 1 allgather steps pass the
 * finished blocks around. Each element is combined by one chain of ranks and copied from there,
 * so every rank holds the same bits.
 *
 * Pipelined: each block is cut into segments, and the 2(n - 1) x nseg (step, segment) units
 * flow through a window of RING_WINDOW receives, so a rank reduces one segment while the next
 * ones are on the wire. Unit u = t * nseg + j is also the message step.
 */
#include <stdlib.h>
#include "coll/coll_reduce.h"
#include "core/scratch.h"
#include "core/comm.h"

#define RING_SEG_BYTES (256 * 1024)
#define RING_WINDOW    4

typedef struct {
    cohort_coll_base_t base;
    int done;
    int left, right;
    size_t seg_elems;
    size_t nseg;                      /* segments per block (of the largest block) */
    size_t nunits;                    /* 2 (n - 1) nseg */
    size_t next_recv;                 /* next unit to post a receive for */
    size_t next_proc;                 /* next unit to process once received */
    size_t next_send;                 /* next unit to send */
    char *tmp;                        /* RING_WINDOW segments of incoming partial sums */
    cohort_xfer_t x[2 * RING_WINDOW]; /* sends in [0, W), receives in [W, 2W) */
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

    s->base.xfers = s->x;
    s->base.nxfers = 2 * RING_WINDOW;
    if (a->count == 0 || n == 1) {
        cohort_coll_copy_input(a, a->count);
        s->done = 1;
        return COHORT_OK;
    }
    s->left = (g->rank - 1 + n) % n;
    s->right = (g->rank + 1) % n;
    s->seg_elems = cohort_coll_seg_elems(RING_SEG_BYTES, a->esize);
    s->nseg = cohort_coll_nsegs(cohort_coll_block_len(a->count, n, 0), s->seg_elems);
    s->nunits = 2 * (size_t)(n - 1) * s->nseg;
    s->seg_elems = (cohort_coll_block_len(a->count, n, 0) + s->nseg - 1) / s->nseg;
    s->tmp = cohort_scratch_get(req->ctx, RING_WINDOW * s->seg_elems * a->esize);
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

static cohort_status_t ring_post_recv(cohort_request_t *req, ring_state_t *s, size_t u)
{
    const cohort_coll_args_t *a = &s->base.args;
    size_t t = u / s->nseg, off, len;
    void *dst;

    ring_unit(s, req->comm, u, 1, &off, &len);
    if (t + 2 <= (size_t)req->comm->size) {
        dst = s->tmp + (u % RING_WINDOW) * s->seg_elems * a->esize; /* to be reduced */
    } else {
        dst = cohort_coll_at(a->rbuf, off, a->esize); /* a finished block: straight in place */
    }
    return cohort_coll_recv(req, &s->x[RING_WINDOW + u % RING_WINDOW], s->left, (int)u, dst,
                            len * a->esize);
}

static cohort_status_t ring_post_send(cohort_request_t *req, ring_state_t *s, size_t u)
{
    const cohort_coll_args_t *a = &s->base.args;
    const void *src = u < s->nseg ? cohort_coll_input(a) : a->rbuf;
    size_t off, len;

    ring_unit(s, req->comm, u, 0, &off, &len);
    return cohort_coll_send(req, &s->x[u % RING_WINDOW], s->right, (int)u,
                            cohort_coll_at(src, off, a->esize), len * a->esize);
}

/* A received unit: during reduce-scatter, rbuf's segment = incoming op input's segment. */
static void ring_process(cohort_request_t *req, ring_state_t *s, size_t u)
{
    const cohort_coll_args_t *a = &s->base.args;
    int n = req->comm->size;
    size_t t = u / s->nseg, off, len;
    void *dst;

    if (t + 2 > (size_t)n) {
        return;
    }
    ring_unit(s, req->comm, u, 1, &off, &len);
    dst = cohort_coll_at(a->rbuf, off, a->esize);
    cohort_reduce_local(dst, s->tmp + (u % RING_WINDOW) * s->seg_elems * a->esize,
                        cohort_coll_at(cohort_coll_input(a), off, a->esize), len, a->dt, a->op);
    if (t + 2 == (size_t)n) {
        /* The last reduce-scatter step finished this segment of the block this rank owns. */
        cohort_reduce_finish(dst, len, a->dt, a->op, n);
    }
}

static cohort_status_t ring_progress(cohort_request_t *req)
{
    ring_state_t *s = req->state;
    cohort_status_t status;
    int progressed;

    if (s->done) {
        return COHORT_OK;
    }
    do {
        status = cohort_coll_xfers_error(s->x, 2 * RING_WINDOW);
        if (status != COHORT_OK) {
            return status;
        }
        progressed = 0;
        while (s->next_recv < s->nunits && s->next_recv < s->next_proc + RING_WINDOW) {
            status = ring_post_recv(req, s, s->next_recv);
            if (status != COHORT_OK) {
                return status;
            }
            s->next_recv++;
            progressed = 1;
        }
        /* A unit past the first step forwards what was received one step earlier. */
        while (s->next_send < s->nunits &&
               cohort_coll_xfer_idle(&s->x[s->next_send % RING_WINDOW]) &&
               (s->next_send < s->nseg || s->next_send - s->nseg < s->next_proc)) {
            status = ring_post_send(req, s, s->next_send);
            if (status != COHORT_OK) {
                return status;
            }
            s->next_send++;
            progressed = 1;
        }
        while (s->next_proc < s->next_recv) {
            cohort_xfer_t *x = &s->x[RING_WINDOW + s->next_proc % RING_WINDOW];
            if (!x->done) {
                break;
            }
            if (x->status != COHORT_OK) {
                return x->status;
            }
            ring_process(req, s, s->next_proc);
            s->next_proc++;
            progressed = 1;
        }
    } while (progressed);
    if (s->next_proc < s->nunits || s->next_send < s->nunits) {
        return COHORT_INPROGRESS;
    }
    status = cohort_coll_xfers_wait(s->x, 2 * RING_WINDOW);
    if (status == COHORT_OK) {
        s->done = 1;
    }
    return status;
}

static void ring_cleanup(cohort_request_t *req)
{
    ring_state_t *s = req->state;

    cohort_scratch_put(req->ctx, s->tmp);
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
};
