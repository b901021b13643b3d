/*
 * Ring reduce-scatter, for large messages: n - 1 steps; at step t a rank sends the partial sum
 * of block me - t - 1 to the right and receives that of block me - t - 2 from the left, adds
 * its own input's block and passes it on at the next step; the last step's block is its own.
 *
 * Pipelined like the ring allreduce: blocks are cut into segments and (step, segment) units
 * flow through a window of RS_WINDOW receives. Partial sums wait in "acc", one block long: the
 * segment j received at step t is combined into acc's segment j once acc's segment j (the
 * previous step's) has left, and sent on at step t + 1. acc is rbuf itself, or under
 * COHORT_IN_PLACE (where rbuf holds the whole input) a scratch block copied to rbuf's start at
 * the end.
 */
#include <stdlib.h>
#include "coll/coll_reduce.h"
#include "core/scratch.h"
#include "core/comm.h"

#define RS_SEG_BYTES (128 * 1024)
#define RS_WINDOW    4

typedef struct {
    cohort_coll_base_t base;
    int done;
    int left, right;
    size_t seg_elems;
    size_t nseg;   /* segments per block */
    size_t nunits; /* (n - 1) nseg */
    size_t next_recv;
    size_t next_proc;
    size_t next_send;
    char *tmp; /* RS_WINDOW incoming segments (then acc, under COHORT_IN_PLACE) */
    char *acc; /* one block: rbuf, or after tmp under COHORT_IN_PLACE */
    cohort_xfer_t x[2 * RS_WINDOW]; /* sends in [0, W), receives in [W, 2W) */
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
    s->base.nxfers = 2 * RS_WINDOW;
    if (a->count == 0 || n == 1) {
        cohort_coll_copy_input(a, a->count);
        s->done = 1;
        return COHORT_OK;
    }
    s->left = (g->rank - 1 + n) % n;
    s->right = (g->rank + 1) % n;
    s->seg_elems = cohort_coll_seg_elems(RS_SEG_BYTES, a->esize);
    s->nseg = cohort_coll_nsegs(a->count, s->seg_elems);
    s->seg_elems = (a->count + s->nseg - 1) / s->nseg;
    s->nunits = (size_t)(n - 1) * s->nseg;
    tmp_bytes = RS_WINDOW * s->seg_elems * a->esize;
    /* One allocation for both: see reduce_knomial.c. */
    s->tmp = cohort_scratch_get(req->ctx,
                                tmp_bytes + (a->sbuf == COHORT_IN_PLACE ? a->count * a->esize : 0));
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

static cohort_status_t rs_post_send(cohort_request_t *req, rs_state_t *s, size_t u)
{
    size_t t = u / s->nseg, j = u % s->nseg;
    const char *src;

    if (t == 0) {
        src = rs_input(s, req->comm, 0, j, 1);
    } else {
        src = s->acc + j * s->seg_elems * s->base.args.esize;
    }
    return cohort_coll_send(req, &s->x[u % RS_WINDOW], s->right, (int)u, src, rs_seg_bytes(s, j));
}

/* Whether send @a u (which reads acc's segment) has finished: its slot holds it, or a later
 * send that could only be posted after it finished. */
static int rs_send_finished(const rs_state_t *s, size_t u)
{
    if (s->next_send <= u) {
        return 0;
    }
    return s->next_send > u + RS_WINDOW || cohort_coll_xfer_idle(&s->x[u % RS_WINDOW]);
}

static void rs_process(cohort_request_t *req, rs_state_t *s, size_t u)
{
    const cohort_coll_args_t *a = &s->base.args;
    size_t t = u / s->nseg, j = u % s->nseg;
    char *dst = s->acc + j * s->seg_elems * a->esize;
    size_t len = cohort_coll_seg_len(a->count, s->seg_elems, j);

    cohort_reduce_local(dst, s->tmp + (u % RS_WINDOW) * s->seg_elems * a->esize,
                        rs_input(s, req->comm, t, j, 2), len, a->dt, a->op);
    if (t + 2 == (size_t)req->comm->size) {
        cohort_reduce_finish(dst, len, a->dt, a->op, req->comm->size);
    }
}

static cohort_status_t rs_progress(cohort_request_t *req)
{
    rs_state_t *s = req->state;
    const cohort_coll_args_t *a = &s->base.args;
    cohort_status_t status;
    int progressed;

    if (s->done) {
        return COHORT_OK;
    }
    do {
        status = cohort_coll_xfers_error(s->x, 2 * RS_WINDOW);
        if (status != COHORT_OK) {
            return status;
        }
        progressed = 0;
        while (s->next_recv < s->nunits && s->next_recv < s->next_proc + RS_WINDOW) {
            size_t u = s->next_recv;
            status = cohort_coll_recv(req, &s->x[RS_WINDOW + u % RS_WINDOW], s->left, (int)u,
                                      s->tmp + (u % RS_WINDOW) * s->seg_elems * a->esize,
                                      rs_seg_bytes(s, u % s->nseg));
            if (status != COHORT_OK) {
                return status;
            }
            s->next_recv++;
            progressed = 1;
        }
        while (s->next_send < s->nunits && cohort_coll_xfer_idle(&s->x[s->next_send % RS_WINDOW]) &&
               (s->next_send < s->nseg || s->next_send - s->nseg < s->next_proc)) {
            status = rs_post_send(req, s, s->next_send);
            if (status != COHORT_OK) {
                return status;
            }
            s->next_send++;
            progressed = 1;
        }
        while (s->next_proc < s->next_recv) {
            size_t u = s->next_proc;
            cohort_xfer_t *x = &s->x[RS_WINDOW + u % RS_WINDOW];
            if (!x->done || (u >= s->nseg && !rs_send_finished(s, u))) {
                break;
            }
            if (x->status != COHORT_OK) {
                return x->status;
            }
            rs_process(req, s, u);
            s->next_proc++;
            progressed = 1;
        }
    } while (progressed);
    if (s->next_proc < s->nunits || s->next_send < s->nunits) {
        return COHORT_INPROGRESS;
    }
    status = cohort_coll_xfers_wait(s->x, 2 * RS_WINDOW);
    if (status != COHORT_OK) {
        return status;
    }
    if (s->acc != a->rbuf) {
        /* Every send has read its input: the start of rbuf may now take the result. */
        memcpy(a->rbuf, s->acc, a->count * a->esize);
    }
    s->done = 1;
    return COHORT_OK;
}

static void rs_cleanup(cohort_request_t *req)
{
    rs_state_t *s = req->state;

    cohort_scratch_put(req->ctx, s->tmp);
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
};
