/*
 * What recursive halving and doubling share (halving.h): the fold and the cut, the exchange
 * with a partner in segments, the loop over a task's rounds, the fold and the hand-back as
 * rounds, and the recursive-doubling allgather task. The halving reduce-scatter task is in
 * reduce_scatter/recursive_halving.c, the whole-vector allreduce task in
 * allreduce/recursive_doubling.c, each beside its row.
 */
#include "coll/coll_reduce.h"
#include "coll/pattern/halving.h"
#include "core/comm.h"

int cohort_halving_row_begin(cohort_request_t *req, cohort_xfer_t *x, int nxfers,
                             cohort_halving_how_t how, size_t total, cohort_halving_cut_t *cut)
{
    cohort_coll_base_t *b = cohort_coll_base(req);

    b->xfers = x;
    b->nxfers = nxfers;
    if (b->args.count == 0 || req->comm->size == 1) {
        cohort_coll_copy_input(req, &b->args, b->args.count);
        return 0;
    }
    cut->how = how;
    cut->total = total;
    return 1;
}

void cohort_halving_cut_init(const cohort_request_t *req, cohort_halving_cut_t *c)
{
    cohort_coll_fold(req->comm->size, req->comm->rank, &c->p, &c->nrounds, &c->r, &c->newrank);
}

size_t cohort_halving_off(const cohort_halving_cut_t *c, int i)
{
    if (c->how == COHORT_HALVING_CUT_CORE) {
        return cohort_coll_block_off(c->total, c->p, i);
    }
    /* A folded pair's core block is its two group blocks. */
    return (size_t)(i < c->r ? 2 * i : i + c->r) * (c->total / (size_t)(c->p + c->r));
}

cohort_status_t cohort_pair_xchg_post(cohort_request_t *req, const cohort_task_t *t,
                                      cohort_pair_xchg_t *xg, int round, int peer, const void *sbuf,
                                      size_t slen, void *rbuf, size_t rlen)
{
    size_t esize = cohort_coll_base(req)->args.esize, most = slen > rlen ? slen : rlen;
    int step0 = round * xg->max_segs;
    cohort_status_t status;

    xg->seg_elems = (most + (size_t)xg->max_segs - 1) / (size_t)xg->max_segs;
    if (xg->seg_elems < xg->min_seg_elems) {
        xg->seg_elems = xg->min_seg_elems;
    }
    xg->nsend = sbuf != NULL ? (int)cohort_coll_nsegs(slen, xg->seg_elems) : 0;
    xg->nrecv = rbuf != NULL ? (int)cohort_coll_nsegs(rlen, xg->seg_elems) : 0;
    xg->nproc = 0;
    xg->rlen = rlen;
    xg->recv_buf = rbuf;
    for (int j = 0; j < xg->nrecv; j++) {
        size_t off = cohort_coll_seg_off(rlen, xg->seg_elems, (size_t)j);
        status = cohort_task_recv(req, t, &xg->x[xg->max_segs + j], peer, step0 + j,
                                  cohort_coll_at(rbuf, off, esize),
                                  cohort_coll_seg_len(rlen, xg->seg_elems, (size_t)j) * esize);
        if (status != COHORT_OK) {
            return status;
        }
    }
    for (int j = 0; j < xg->nsend; j++) {
        size_t off = cohort_coll_seg_off(slen, xg->seg_elems, (size_t)j);
        status =
            cohort_task_send(req, t, &xg->x[j], peer, step0 + j, cohort_coll_at(sbuf, off, esize),
                             cohort_coll_seg_len(slen, xg->seg_elems, (size_t)j) * esize);
        if (status != COHORT_OK) {
            return status;
        }
    }
    xg->waiting = 1;
    return COHORT_OK;
}

/* COHORT_OK once every send of the exchange is over, COHORT_INPROGRESS, or a send's error. */
static cohort_status_t xchg_sends_over(const cohort_pair_xchg_t *xg)
{
    for (int j = 0; j < xg->nsend; j++) {
        if (!xg->x[j].done) {
            return COHORT_INPROGRESS;
        }
        if (xg->x[j].status != COHORT_OK) {
            return xg->x[j].status;
        }
    }
    return COHORT_OK;
}

cohort_status_t cohort_pair_xchg_progress(cohort_request_t *req, cohort_pair_xchg_t *xg)
{
    size_t esize = cohort_coll_base(req)->args.esize;
    cohort_status_t status;

    /* A send may still read its buffer until it is over: nothing is written into it before. */
    if (xg->sends_first && xg->nproc < xg->nrecv) {
        status = xchg_sends_over(xg);
        if (status != COHORT_OK) {
            return status;
        }
    }
    while (xg->nproc < xg->nrecv) {
        cohort_xfer_t *x = &xg->x[xg->max_segs + xg->nproc];

        if (!x->done) {
            return COHORT_INPROGRESS;
        }
        if (x->status != COHORT_OK) {
            return x->status;
        }
        if (xg->combine) {
            size_t off = cohort_coll_seg_off(xg->rlen, xg->seg_elems, (size_t)xg->nproc);
            size_t len = cohort_coll_seg_len(xg->rlen, xg->seg_elems, (size_t)xg->nproc);
            char *dst = cohort_coll_at(xg->dst, off, esize);
            const char *theirs = cohort_coll_at(xg->recv_buf, off, esize);
            const char *mine = cohort_coll_at(xg->mine, off, esize);

            if (xg->peer_is_lower) {
                cohort_coll_mem_reduce(req, dst, theirs, mine, len);
            } else {
                cohort_coll_mem_reduce(req, dst, mine, theirs, len);
            }
        }
        xg->nproc++;
    }
    status = xchg_sends_over(xg);
    if (status != COHORT_OK) {
        return status;
    }
    xg->waiting = 0;
    return COHORT_OK;
}

cohort_status_t cohort_rounds_progress(cohort_request_t *req, cohort_task_t *t,
                                       cohort_pair_xchg_t *xg, int *round, int last,
                                       cohort_round_post_fn post, cohort_round_next_fn next)
{
    cohort_status_t status;

    while (*round <= last) {
        if (!xg->waiting) {
            status = post(req, t, *round);
            if (status != COHORT_OK) {
                return status;
            }
            if (!xg->waiting) {
                (*round)++; /* no part in this round */
                continue;
            }
        }
        status = cohort_pair_xchg_progress(req, xg);
        if (status != COHORT_OK) {
            return status;
        }
        *round = next != NULL ? next(req, t, *round) : *round + 1;
    }
    return COHORT_OK;
}

cohort_status_t cohort_halving_fold_post(cohort_request_t *req, cohort_task_t *t,
                                         cohort_pair_xchg_t *xg, const cohort_halving_cut_t *c,
                                         const void *in, char *acc, char *tmp)
{
    int me = req->comm->rank;

    if (me >= 2 * c->r) {
        return COHORT_OK;
    }
    if (c->newrank < 0) {
        return cohort_pair_xchg_post(req, t, xg, 0, me + 1, in, c->total, NULL, c->total);
    }
    xg->combine = 1;
    xg->peer_is_lower = 1;
    xg->dst = acc;
    xg->mine = in;
    return cohort_pair_xchg_post(req, t, xg, 0, me - 1, NULL, c->total, tmp, c->total);
}

cohort_status_t cohort_halving_unfold_post(cohort_request_t *req, cohort_task_t *t,
                                           cohort_pair_xchg_t *xg, const cohort_halving_cut_t *c,
                                           int round, void *buf)
{
    int me = req->comm->rank;

    if (me >= 2 * c->r) {
        return COHORT_OK;
    }
    xg->combine = 0;
    if (c->newrank < 0) {
        return cohort_pair_xchg_post(req, t, xg, round, me + 1, NULL, c->total, buf, c->total);
    }
    return cohort_pair_xchg_post(req, t, xg, round, me - 1, buf, c->total, NULL, c->total);
}

/* ---- The recursive-doubling allgather task ---- */

static cohort_status_t rd_task_post(cohort_request_t *req, cohort_task_t *t)
{
    cohort_doubling_ag_t *d = t->state;

    cohort_halving_cut_init(req, &d->cut);
    t->nsteps = (d->cut.nrounds + 1) * d->xchg.max_segs;
    /* An even extra has no rounds: it only takes the result back. */
    d->round = d->cut.newrank >= 0 ? 0 : d->cut.nrounds;
    d->xchg.combine = 0;
    return COHORT_OK;
}

/* Round k < nrounds (mask 2^k): this rank's window of mask core blocks to its partner, the
 * partner's window from it, in place. Round nrounds: the hand-back. */
static cohort_status_t rd_round_post(cohort_request_t *req, cohort_task_t *t, int round)
{
    cohort_doubling_ag_t *d = t->state;
    const cohort_halving_cut_t *c = &d->cut;
    size_t esize = cohort_coll_base(req)->args.esize;
    int nr = c->newrank, mask = 1 << round, peer_nr = nr ^ mask;
    int mine_lo = nr & ~(mask - 1), theirs_lo = peer_nr & ~(mask - 1);
    size_t mine_off, theirs_off;

    if (round == c->nrounds) {
        return cohort_halving_unfold_post(req, t, &d->xchg, c, round, d->buf);
    }
    mine_off = cohort_halving_off(c, mine_lo);
    theirs_off = cohort_halving_off(c, theirs_lo);
    return cohort_pair_xchg_post(req, t, &d->xchg, round, cohort_coll_fold_rank(c->r, peer_nr),
                                 cohort_coll_at(d->buf, mine_off, esize),
                                 cohort_halving_off(c, mine_lo + mask) - mine_off,
                                 cohort_coll_at(d->buf, theirs_off, esize),
                                 cohort_halving_off(c, theirs_lo + mask) - theirs_off);
}

static cohort_status_t rd_task_progress(cohort_request_t *req, cohort_task_t *t)
{
    cohort_doubling_ag_t *d = t->state;

    return cohort_rounds_progress(req, t, &d->xchg, &d->round, d->cut.nrounds, rd_round_post, NULL);
}

const cohort_task_row_t cohort_task_doubling_allgather = {
    .name = "recursive-doubling allgather",
    .post = rd_task_post,
    .progress = rd_task_progress,
};
