/*
 * K-nomial tree reduce (radix KN_RADIX), rooted anywhere: in virtual ranks (rank - root) mod n,
 * at distance d = 1, k, k^2, ... a rank that is a multiple of k*d receives from the up to k - 1
 * ranks at +d, +2d, ...; any other multiple of d sends its subtree's sum to the multiple of k*d
 * below it and is done. ceil(log_k n) levels.
 *
 * Pipelined: the vector is cut into segments that flow up the tree one after the other, a
 * window of KN_WINDOW in flight, so every level works at once on a large message. A rank
 * combines its children in a fixed order (lowest level first, then by distance), whatever order
 * they arrive in, so the result does not depend on timing.
 */
#include <stdlib.h>
#include "coll/coll_reduce.h"
#include "coll/pattern/knomial.h"
#include "mem/scratch.h"
#include "core/comm.h"

#define KN_RADIX     4
#define KN_SEG_BYTES (128 * 1024)
#define KN_WINDOW    3

typedef struct {
    cohort_coll_base_t base;
    int done;
    int parent; /* group rank, -1 at the root */
    int nchildren;
    int maxchildren; /* children slots in the arrays that follow */
    size_t seg_elems;
    size_t nseg;
    size_t next_post;  /* next segment to post the children's receives for */
    size_t next_proc;  /* next segment to combine (and send on) */
    char *tmp;         /* [KN_WINDOW][nchildren] incoming segments */
    char *acc;         /* [KN_WINDOW] partial sums of inner ranks (in tmp's allocation) */
    int *children;     /* group ranks, in combination order */
    cohort_xfer_t *sx; /* [KN_WINDOW] sends to the parent */
    cohort_xfer_t *rx; /* [KN_WINDOW][nchildren] receives from children */
} kn_state_t;

static size_t kn_state_size(const cohort_coll_args_t *args, int gsize)
{
    int m = cohort_knomial_max_children(gsize, KN_RADIX);

    return sizeof(kn_state_t) + (size_t)KN_WINDOW * (size_t)(m + 1) * sizeof(cohort_xfer_t) +
           (size_t)m * sizeof(int);
}

static cohort_status_t kn_start(cohort_request_t *req)
{
    kn_state_t *s = req->state;
    const cohort_comm_t *g = req->comm;
    const cohort_coll_args_t *a = &s->base.args;
    int n = g->size;
    size_t seg_bytes;

    s->maxchildren = cohort_knomial_max_children(n, KN_RADIX);
    s->sx = (cohort_xfer_t *)(s + 1);
    s->rx = s->sx + KN_WINDOW;
    s->children = (int *)(s->rx + (size_t)KN_WINDOW * (size_t)s->maxchildren);
    s->base.xfers = s->sx;
    s->base.nxfers = KN_WINDOW * (s->maxchildren + 1);
    s->parent = -1;
    if (a->count == 0 || n == 1) {
        if (n == 1) {
            cohort_coll_copy_input(req, a, a->count);
        }
        s->done = 1;
        return COHORT_OK;
    }
    cohort_knomial_tree(n, g->rank, a->root, KN_RADIX, &s->parent, s->children, &s->nchildren);
    s->seg_elems = cohort_coll_seg_elems(KN_SEG_BYTES, a->esize);
    s->nseg = cohort_coll_nsegs(a->count, s->seg_elems);
    s->seg_elems = (a->count + s->nseg - 1) / s->nseg; /* even segments */
    seg_bytes = s->seg_elems * a->esize;
    if (s->nchildren > 0) {
        size_t tmp_bytes = (size_t)KN_WINDOW * (size_t)s->nchildren * seg_bytes;
        size_t acc_bytes = s->parent >= 0 ? (size_t)KN_WINDOW * seg_bytes : 0;

        /* One allocation: two large ones freed together can make malloc give the heap back,
         * and take page faults for it again, on every call. */
        s->tmp = cohort_coll_mem_scratch(req, tmp_bytes + acc_bytes);
        if (s->tmp == NULL) {
            return COHORT_ERR_NO_MEMORY;
        }
        if (s->parent >= 0) {
            s->acc = s->tmp + tmp_bytes;
        }
    }
    return COHORT_OK;
}

static char *kn_tmp(const kn_state_t *s, size_t j, int c)
{
    size_t slot = (j % KN_WINDOW) * (size_t)s->nchildren + (size_t)c;

    return s->tmp + slot * s->seg_elems * s->base.args.esize;
}

static cohort_xfer_t *kn_rx(const kn_state_t *s, size_t j, int c)
{
    return &s->rx[(j % KN_WINDOW) * (size_t)s->nchildren + (size_t)c];
}

static cohort_status_t kn_post_recvs(cohort_request_t *req, kn_state_t *s, size_t j)
{
    const cohort_coll_args_t *a = &s->base.args;
    size_t len = cohort_coll_seg_len(a->count, s->seg_elems, j);
    cohort_status_t status;

    for (int c = 0; c < s->nchildren; c++) {
        status = cohort_coll_recv(req, kn_rx(s, j, c), s->children[c], (int)j, kn_tmp(s, j, c),
                                  len * a->esize);
        if (status != COHORT_OK) {
            return status;
        }
    }
    return COHORT_OK;
}

/* COHORT_OK once segment @a j is combined (and sent on), INPROGRESS when it must wait. */
static cohort_status_t kn_process(cohort_request_t *req, kn_state_t *s, size_t j)
{
    const cohort_coll_args_t *a = &s->base.args;
    size_t off = cohort_coll_seg_off(a->count, s->seg_elems, j);
    size_t len = cohort_coll_seg_len(a->count, s->seg_elems, j);
    const void *in = cohort_coll_at(cohort_coll_input(a), off, a->esize);
    cohort_xfer_t *sx = &s->sx[j % KN_WINDOW];
    void *dst;

    if (j >= s->next_post) {
        return COHORT_INPROGRESS;
    }
    for (int c = 0; c < s->nchildren; c++) {
        cohort_xfer_t *x = kn_rx(s, j, c);
        if (!x->done) {
            return COHORT_INPROGRESS;
        }
        if (x->status != COHORT_OK) {
            return x->status;
        }
    }
    if (s->parent >= 0 && !cohort_coll_xfer_idle(sx)) {
        return COHORT_INPROGRESS; /* the send slot (and acc slot) of segment j - W is busy */
    }
    if (s->nchildren == 0) {
        return cohort_coll_send(req, sx, s->parent, (int)j, in, len * a->esize);
    }
    if (s->parent < 0) {
        dst = cohort_coll_at(a->rbuf, off, a->esize);
    } else {
        dst = s->acc + (j % KN_WINDOW) * s->seg_elems * a->esize;
    }
    /* Lower virtual ranks first: this rank, then its children by level and distance. */
    cohort_coll_mem_reduce(req, dst, in, kn_tmp(s, j, 0), len);
    for (int c = 1; c < s->nchildren; c++) {
        cohort_coll_mem_reduce(req, dst, dst, kn_tmp(s, j, c), len);
    }
    if (s->parent < 0) {
        cohort_coll_mem_finish(req, dst, len, req->comm->size);
        return COHORT_OK;
    }
    return cohort_coll_send(req, sx, s->parent, (int)j, dst, len * a->esize);
}

static cohort_status_t kn_progress(cohort_request_t *req)
{
    kn_state_t *s = req->state;
    cohort_status_t status;
    int progressed;

    if (s->done) {
        return COHORT_OK;
    }
    do {
        status = cohort_coll_xfers_error(s->base.xfers, s->base.nxfers);
        if (status != COHORT_OK) {
            return status;
        }
        progressed = 0;
        while (s->next_post < s->nseg && s->next_post < s->next_proc + KN_WINDOW) {
            status = kn_post_recvs(req, s, s->next_post);
            if (status != COHORT_OK) {
                return status;
            }
            s->next_post++;
            progressed = 1;
        }
        while (s->next_proc < s->nseg) {
            status = kn_process(req, s, s->next_proc);
            if (status == COHORT_INPROGRESS) {
                break;
            }
            if (status != COHORT_OK) {
                return status;
            }
            s->next_proc++;
            progressed = 1;
        }
    } while (progressed);
    if (s->next_proc < s->nseg) {
        return COHORT_INPROGRESS;
    }
    status = cohort_coll_xfers_wait(s->base.xfers, s->base.nxfers);
    if (status == COHORT_OK) {
        s->done = 1;
    }
    return status;
}

static void kn_cleanup(cohort_request_t *req)
{
    kn_state_t *s = req->state;

    cohort_coll_mem_release(req, s->tmp);
    s->tmp = s->acc = NULL;
}

static int kn_peers(const cohort_coll_args_t *a, int n, int me, int *out, int max)
{
    int parent, nchildren, children[64];

    if (a->count == 0 || n < 2 || max < 1 || cohort_knomial_max_children(n, KN_RADIX) > 64) {
        return 0;
    }
    cohort_knomial_tree(n, me, a->root, KN_RADIX, &parent, children, &nchildren);
    out[0] = parent;
    return parent >= 0;
}

const cohort_coll_algo_t cohort_reduce_knomial = {
    .name = "knomial",
    .description = "radix-4 k-nomial tree to any root, pipelined in 128 KiB segments",
    .coll = COHORT_COLL_REDUCE,
    .id = 10,
    .state_size = kn_state_size,
    .start = kn_start,
    .progress = kn_progress,
    .cleanup = kn_cleanup,
    .peers = kn_peers,
    .device_ok = 1,
};
