/*
 * Recursive doubling allreduce, for small messages: log2(p) rounds in which every rank swaps
 * its whole partial result with the rank 2^k away and combines the two. Both partners combine
 * the same two operands, lower rank's first, so every rank ends with the same bits.
 *
 * A group that is not a power of two (p the largest power of two below n, r = n - p) folds
 * first: of the lowest 2r ranks, each even one hands its input to the odd one above it and
 * receives the finished result from it at the end; the remaining p ranks run the rounds with
 * "new ranks" 0..p-1 (rank / 2 for the odd folded ranks, rank - r above them).
 *
 * The rounds are a task (pattern/halving.h: cohort_task_doubling_allreduce), on the same loop,
 * fold and hand-back as the recursive-halving reduce-scatter and the recursive-doubling
 * allgather that rabenseifner is made of; what is its own is the round: the whole vector, one
 * message each way. Its steps are the fold 0, the rounds 1 .. log2 p, the hand-back log2 p + 1.
 */
#include <stdlib.h>
#include "coll/coll_reduce.h"
#include "coll/pattern/halving.h"
#include "core/comm.h"

/* The row's state: the task, and the two transfer slots it is lent. */
typedef struct {
    cohort_task_parent_t p; /* the call's base, and the task */
    cohort_doubling_ar_t ar;
    cohort_xfer_t x[2]; /* one send, one receive */
} rd_state_t;

/* ---- The task: fold, whole-vector rounds, hand-back ---- */

static cohort_status_t rd_task_post(cohort_request_t *req, cohort_task_t *t)
{
    cohort_doubling_ar_t *d = t->state;
    const cohort_halving_cut_t *c = &d->cut;
    size_t esize = cohort_coll_base(req)->args.esize;

    cohort_halving_cut_init(req, &d->cut);
    t->nsteps = c->nrounds + 2;
    d->cur = d->in;
    d->round = 0;
    if (c->newrank >= 0) {
        d->tmp = cohort_coll_mem_scratch(req, c->total * esize);
        if (d->tmp == NULL) {
            return COHORT_ERR_NO_MEMORY;
        }
    }
    return COHORT_OK;
}

/* Round 0: the fold. Round k = 1 .. nrounds: the swap with core rank newrank ^ 2^(k-1); what is
 * sent (cur) is also where the sum goes once out has taken it, so the combination waits for
 * the send. Round nrounds + 1: the hand-back. */
static cohort_status_t rd_round_post(cohort_request_t *req, cohort_task_t *t, int round)
{
    cohort_doubling_ar_t *d = t->state;
    const cohort_halving_cut_t *c = &d->cut;
    cohort_pair_xchg_t *xg = &d->xchg;
    int peer_nr;

    if (round == 0) {
        return cohort_halving_fold_post(req, t, xg, c, d->in, d->out, d->tmp);
    }
    if (round > c->nrounds) {
        return cohort_halving_unfold_post(req, t, xg, c, round, d->out);
    }
    peer_nr = c->newrank ^ (1 << (round - 1));
    xg->combine = 1;
    xg->sends_first = 1;
    xg->peer_is_lower = peer_nr < c->newrank;
    xg->dst = d->out;
    xg->mine = d->cur;
    return cohort_pair_xchg_post(req, t, xg, round, cohort_coll_fold_rank(c->r, peer_nr), d->cur,
                                 c->total, d->tmp, c->total);
}

/* After a round: once an even extra's input has left, out may take the result: it waits for
 * the hand-back. A core rank's partial result is in out; after the last round AVG divides, once
 * per core rank, on identical sums: identical results. */
static int rd_round_next(cohort_request_t *req, cohort_task_t *t, int round)
{
    cohort_doubling_ar_t *d = t->state;
    const cohort_halving_cut_t *c = &d->cut;

    if (c->newrank < 0) {
        return round == 0 ? c->nrounds + 1 : round + 1;
    }
    d->cur = d->out;
    if (round == c->nrounds) {
        cohort_coll_mem_finish(req, d->out, c->total, req->comm->size);
    }
    return round + 1;
}

static cohort_status_t rd_task_progress(cohort_request_t *req, cohort_task_t *t)
{
    cohort_doubling_ar_t *d = t->state;

    return cohort_rounds_progress(req, t, &d->xchg, &d->round, d->cut.nrounds + 1, rd_round_post,
                                  rd_round_next);
}

static void rd_task_finalize(cohort_request_t *req, cohort_task_t *t)
{
    cohort_doubling_ar_t *d = t->state;

    cohort_coll_mem_release(req, d->tmp);
    d->tmp = NULL;
}

const cohort_task_row_t cohort_task_doubling_allreduce = {
    .name = "recursive-doubling allreduce",
    .post = rd_task_post,
    .progress = rd_task_progress,
    .finalize = rd_task_finalize,
};

/* ---- The row: the task on the whole vector ---- */

static size_t rd_state_size(const cohort_coll_args_t *args, int gsize)
{
    return sizeof(rd_state_t);
}

static cohort_status_t rd_start(cohort_request_t *req)
{
    rd_state_t *s = req->state;
    const cohort_coll_args_t *a = &s->p.base.args;

    if (!cohort_halving_row_begin(req, s->x, 2, COHORT_HALVING_CUT_CORE, a->count, &s->ar.cut)) {
        return COHORT_OK; /* no task: done */
    }
    s->ar.in = cohort_coll_input(a);
    s->ar.out = a->rbuf;
    s->ar.xchg = (cohort_pair_xchg_t){.x = s->x, .max_segs = 1, .min_seg_elems = 1};
    cohort_task_seq_add(&s->p.seq, &cohort_task_doubling_allreduce, &s->ar);
    return cohort_task_seq_start(req, &s->p.seq);
}

static int rd_peers(const cohort_coll_args_t *a, int n, int me, int *out, int max)
{
    return cohort_coll_fold_peers(a, n, me, out, max);
}

const cohort_coll_algo_t cohort_allreduce_recursive_doubling = {
    .name = "recursive_doubling",
    .description = "log2(p) whole-vector swaps with rank^2^k; extra ranks folded in pairs",
    .coll = COHORT_COLL_ALLREDUCE,
    .id = 7,
    .state_size = rd_state_size,
    .start = rd_start,
    .progress = cohort_task_parent_progress,
    .cleanup = cohort_task_parent_cleanup,
    .peers = rd_peers,
    .device_ok = 1,
};
