/*
 * Recursive-halving reduce-scatter, for small messages: log2(p) rounds instead of the ring's
 * n - 1. In each round a rank keeps one half of its current window of blocks, sends the other
 * half to the partner 2^k away that keeps it, and combines what it receives.
 *
 * Not a power of two (p the largest power of two below n, r = n - p): each even rank among the
 * lowest 2r hands its whole input to the odd rank above it, which then stands for both in the
 * rounds; the core's "block" i is then the two consecutive blocks 2i, 2i+1 for i < r, else the
 * single block i + r, so windows stay contiguous. At the end the odd rank sends the even one
 * its block.
 *
 * The halving is a task (pattern/halving.h: cohort_task_halving_reduce_scatter), which
 * allreduce_rabenseifner runs too, on its own cut of the vector and in segments. This row runs
 * it on n blocks of count, each exchange one message, its partial sums in scratch; then a
 * second task of its own hands each even rank its block.
 */
#include <stdlib.h>
#include "coll/coll_reduce.h"
#include "coll/pattern/halving.h"
#include "mem/scratch.h"
#include "core/comm.h"

/* ---- The task: the halving itself ---- */

static cohort_status_t rh_task_post(cohort_request_t *req, cohort_task_t *t)
{
    cohort_halving_rs_t *h = t->state;
    const cohort_halving_cut_t *c = &h->cut;
    size_t esize = cohort_coll_base(req)->args.esize, tmp_elems, acc_elems, first, second;

    cohort_halving_cut_init(req, &h->cut);
    t->nsteps = (c->nrounds + 1) * h->xchg.max_segs;
    h->cur = h->in;
    h->round = 0; /* the fold: a rank in no pair has no part in it */
    if (c->newrank < 0) {
        return COHORT_OK; /* an even extra only sends its input */
    }
    /* The whole vector for a fold partner, else the larger half of the first round. */
    first = cohort_halving_off(c, c->p / 2);
    second = cohort_halving_off(c, c->p) - first;
    tmp_elems = req->comm->rank < 2 * c->r ? c->total : first > second ? first : second;
    acc_elems = h->acc == NULL ? c->total : 0;
    /* One allocation for both: see reduce/knomial.c. */
    h->scratch = cohort_coll_mem_scratch(req, (acc_elems + tmp_elems) * esize + 1);
    if (h->scratch == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    if (h->acc == NULL) {
        h->acc = h->scratch;
    }
    h->tmp = h->scratch + acc_elems * esize;
    return COHORT_OK;
}

/* Round 0: the fold. Round k = 1 .. nrounds (mask p >> k): the halving, where this rank keeps
 * one half of its window and sends the other to the partner that keeps it. */
static cohort_status_t rh_round_post(cohort_request_t *req, cohort_task_t *t, int round)
{
    cohort_halving_rs_t *h = t->state;
    const cohort_halving_cut_t *c = &h->cut;
    cohort_pair_xchg_t *xg = &h->xchg;
    size_t esize = cohort_coll_base(req)->args.esize, keep_off, send_off;
    int nr = c->newrank, mask = c->p >> round, lo = nr & ~(2 * mask - 1);
    int keep_lo = nr & mask ? lo + mask : lo, send_lo = nr & mask ? lo : lo + mask;

    if (round == 0) {
        return cohort_halving_fold_post(req, t, xg, c, h->in, h->acc, h->tmp);
    }
    keep_off = cohort_halving_off(c, keep_lo);
    send_off = cohort_halving_off(c, send_lo);
    xg->combine = 1;
    xg->peer_is_lower = (nr ^ mask) < nr;
    xg->dst = cohort_coll_at(h->acc, keep_off, esize);
    xg->mine = cohort_coll_at(h->cur, keep_off, esize);
    return cohort_pair_xchg_post(req, t, xg, round, cohort_coll_fold_rank(c->r, nr ^ mask),
                                 cohort_coll_at(h->cur, send_off, esize),
                                 cohort_halving_off(c, send_lo + mask) - send_off, h->tmp,
                                 cohort_halving_off(c, keep_lo + mask) - keep_off);
}

/* After a round: an even extra is done once its input has left; otherwise the partial sums are
 * in acc, and after the last round this rank's core block is final: divided once, here (AVG),
 * before anything copies it out. */
static int rh_round_next(cohort_request_t *req, cohort_task_t *t, int round)
{
    cohort_halving_rs_t *h = t->state;
    const cohort_halving_cut_t *c = &h->cut;
    size_t esize = cohort_coll_base(req)->args.esize, off;

    if (c->newrank < 0) {
        return c->nrounds + 1;
    }
    h->cur = h->acc;
    if (round == c->nrounds) {
        off = cohort_halving_off(c, c->newrank);
        cohort_coll_mem_finish(req, cohort_coll_at(h->acc, off, esize),
                               cohort_halving_off(c, c->newrank + 1) - off, req->comm->size);
    }
    return round + 1;
}

static cohort_status_t rh_task_progress(cohort_request_t *req, cohort_task_t *t)
{
    cohort_halving_rs_t *h = t->state;

    return cohort_rounds_progress(req, t, &h->xchg, &h->round, h->cut.nrounds, rh_round_post,
                                  rh_round_next);
}

static void rh_task_finalize(cohort_request_t *req, cohort_task_t *t)
{
    cohort_halving_rs_t *h = t->state;

    cohort_coll_mem_release(req, h->scratch);
    h->scratch = h->tmp = NULL;
}

const cohort_task_row_t cohort_task_halving_reduce_scatter = {
    .name = "recursive-halving reduce-scatter",
    .post = rh_task_post,
    .progress = rh_task_progress,
    .finalize = rh_task_finalize,
};

/* ---- The row: the task on n blocks of count, then each rank's block to rbuf ---- */

/* The hand-out after the halving: the odd rank of a folded pair sends the even one its block
 * (the first of its core block), and every core rank copies its own to rbuf. */
typedef struct {
    const cohort_halving_rs_t *rs;
    cohort_pair_xchg_t xchg;
} rh_out_t;

typedef struct {
    cohort_task_parent_t p; /* the call's base, and the two tasks */
    cohort_halving_rs_t rs;
    rh_out_t out;
    cohort_xfer_t x[2]; /* lent to both: one send, one receive */
} rh_state_t;

static cohort_status_t rh_out_post(cohort_request_t *req, cohort_task_t *t)
{
    rh_out_t *o = t->state;
    const cohort_halving_rs_t *rs = o->rs;
    const cohort_coll_args_t *a = &cohort_coll_base(req)->args;
    int me = req->comm->rank;

    t->nsteps = 1;
    if (rs->cut.newrank < 0) {
        return cohort_pair_xchg_post(req, t, &o->xchg, 0, me + 1, NULL, a->count, a->rbuf,
                                     a->count);
    }
    if (me < 2 * rs->cut.r) {
        return cohort_pair_xchg_post(req, t, &o->xchg, 0, me - 1,
                                     cohort_coll_at(rs->acc, (size_t)(me - 1) * a->count, a->esize),
                                     a->count, NULL, a->count);
    }
    return COHORT_OK;
}

static cohort_status_t rh_out_progress(cohort_request_t *req, cohort_task_t *t)
{
    rh_out_t *o = t->state;
    const cohort_coll_args_t *a = &cohort_coll_base(req)->args;
    cohort_status_t status;

    if (o->xchg.waiting) {
        status = cohort_pair_xchg_progress(req, &o->xchg);
        if (status != COHORT_OK) {
            return status;
        }
    }
    if (o->rs->cut.newrank >= 0) {
        /* After every send: under COHORT_IN_PLACE rbuf's start was input until now. */
        cohort_coll_mem_copy(
            req, a->rbuf, cohort_coll_at(o->rs->acc, (size_t)req->comm->rank * a->count, a->esize),
            a->count * a->esize);
    }
    return COHORT_OK;
}

static const cohort_task_row_t rh_out_task = {
    .name = "recursive-halving hand-out",
    .post = rh_out_post,
    .progress = rh_out_progress,
};

static size_t rh_state_size(const cohort_coll_args_t *args, int gsize)
{
    return sizeof(rh_state_t);
}

static cohort_status_t rh_start(cohort_request_t *req)
{
    rh_state_t *s = req->state;
    const cohort_coll_args_t *a = &s->p.base.args;
    cohort_pair_xchg_t one = {.x = s->x, .max_segs = 1, .min_seg_elems = 1};

    if (!cohort_halving_row_begin(req, s->x, 2, COHORT_HALVING_CUT_RANKS,
                                  (size_t)req->comm->size * a->count, &s->rs.cut)) {
        return COHORT_OK; /* no task: done */
    }
    s->rs.in = cohort_coll_input(a);
    s->rs.acc = NULL; /* rbuf holds one block: the partial sums go to scratch */
    s->rs.xchg = one;
    s->out.rs = &s->rs;
    s->out.xchg = one;
    cohort_task_seq_add(&s->p.seq, &cohort_task_halving_reduce_scatter, &s->rs);
    cohort_task_seq_add(&s->p.seq, &rh_out_task, &s->out);
    return cohort_task_seq_start(req, &s->p.seq);
}

static int rh_peers(const cohort_coll_args_t *a, int n, int me, int *out, int max)
{
    return cohort_coll_fold_peers(a, n, me, out, max);
}

const cohort_coll_algo_t cohort_reduce_scatter_recursive_halving = {
    .name = "recursive_halving",
    .description = "log2(p) rounds halving the window; extra ranks folded in pairs",
    .coll = COHORT_COLL_REDUCE_SCATTER,
    .id = 12,
    .state_size = rh_state_size,
    .start = rh_start,
    .progress = cohort_task_parent_progress,
    .cleanup = cohort_task_parent_cleanup,
    .peers = rh_peers,
    .device_ok = 1,
};
