/*
 * What recursive halving and doubling share (halving.h): the fold and the cut, the exchange
 * with a partner in segments, and the recursive-doubling allgather task. The halving
 * reduce-scatter task is in reduce_scatter_recursive_halving.c, beside its row.
 */
#include "coll/coll_reduce.h"
#include "coll/pattern/halving.h"
#include "core/comm.h"

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
                                      cohort_pair_xchg_t *xg, int round, int peer,
                                      const void *sbuf, size_t slen, void *rbuf, size_t rlen)
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
        status = cohort_task_send(req, t, &xg->x[j], peer, step0 + j,
                                  cohort_coll_at(sbuf, off, esize),
                                  cohort_coll_seg_len(slen, xg->seg_elems, (size_t)j) * esize);
        if (status != COHORT_OK) {
            return status;
        }
    }
    xg->waiting = 1;
    return COHORT_OK;
}

cohort_status_t cohort_pair_xchg_progress(cohort_request_t *req, cohort_pair_xchg_t *xg)
{
    size_t esize = cohort_coll_base(req)->args.esize;

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
    for (int j = 0; j < xg->nsend; j++) {
        if (!xg->x[j].done) {
            return COHORT_INPROGRESS;
        }
        if (xg->x[j].status != COHORT_OK) {
            return xg->x[j].status;
        }
    }
    xg->waiting = 0;
    return COHORT_OK;
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
 * partner's window from it, in place. Round nrounds: the unfold. */
static cohort_status_t rd_task_progress(cohort_request_t *req, cohort_task_t *t)
{
    cohort_doubling_ag_t *d = t->state;
    const cohort_halving_cut_t *c = &d->cut;
    size_t esize = cohort_coll_base(req)->args.esize;
    int me = req->comm->rank, nr = c->newrank;
    cohort_status_t status;

    while (d->round <= c->nrounds) {
        if (!d->xchg.waiting) {
            if (d->round < c->nrounds) {
                int mask = 1 << d->round, peer_nr = nr ^ mask;
                int mine_lo = nr & ~(mask - 1), theirs_lo = peer_nr & ~(mask - 1);
                size_t mine_off = cohort_halving_off(c, mine_lo);
                size_t theirs_off = cohort_halving_off(c, theirs_lo);

                status = cohort_pair_xchg_post(
                    req, t, &d->xchg, d->round, cohort_coll_fold_rank(c->r, peer_nr),
                    cohort_coll_at(d->buf, mine_off, esize),
                    cohort_halving_off(c, mine_lo + mask) - mine_off,
                    cohort_coll_at(d->buf, theirs_off, esize),
                    cohort_halving_off(c, theirs_lo + mask) - theirs_off);
            } else if (me >= 2 * c->r) {
                d->round++; /* not in a folded pair: nothing to hand back */
                continue;
            } else if (nr < 0) {
                status = cohort_pair_xchg_post(req, t, &d->xchg, d->round, me + 1, NULL, c->total,
                                               d->buf, c->total);
            } else {
                status = cohort_pair_xchg_post(req, t, &d->xchg, d->round, me - 1, d->buf,
                                               c->total, NULL, c->total);
            }
            if (status != COHORT_OK) {
                return status;
            }
        }
        status = cohort_pair_xchg_progress(req, &d->xchg);
        if (status != COHORT_OK) {
            return status;
        }
        d->round++;
    }
    return COHORT_OK;
}

const cohort_task_row_t cohort_task_doubling_allgather = {
    .name = "recursive-doubling allgather",
    .post = rd_task_post,
    .progress = rd_task_progress,
};
