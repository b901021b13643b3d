/*
 * Recursive doubling allreduce, for small messages: log2(p) rounds in which every rank swaps
 * its whole partial result with the rank 2^k away and combines the two. Both partners combine
 * the same two operands, lower rank's first, so every rank ends with the same bits.
 *
 * A group that is not a power of two (p the largest power of two below n, r = n - p) folds
 * first: of the lowest 2r ranks, each even one hands its input to the odd one above it and
 * receives the finished result from it at the end; the remaining p ranks run the rounds with
 * "new ranks" 0..p-1 (rank / 2 for the odd folded ranks, rank - r above them).
 */
#include <stdlib.h>
#include "coll/coll_reduce.h"
#include "mem/scratch.h"
#include "core/comm.h"

typedef enum {
    RD_FOLD, /* extras hand their input over; their partners take it */
    RD_FOLD_WAIT,
    RD_ROUND, /* swap with new rank ^ mask */
    RD_ROUND_WAIT,
    RD_UNFOLD, /* partners hand the result back to the extras */
    RD_UNFOLD_WAIT,
    RD_DONE
} rd_phase_t;

typedef struct {
    cohort_coll_base_t base;
    rd_phase_t phase;
    int p;           /* power-of-two core size */
    int r;           /* extra ranks folded away (n - p) */
    int newrank;     /* rank among the core, -1 for a folded-away rank */
    int mask;        /* current round's distance among the core */
    int round;       /* 1-based round number, for steps */
    int nrounds;     /* log2(p) */
    const void *acc; /* the partial result: the input until the first combination, then rbuf */
    void *tmp;       /* the partner's partial result */
    cohort_xfer_t x[2];
} rd_state_t;

static size_t rd_state_size(const cohort_coll_args_t *args, int gsize)
{
    return sizeof(rd_state_t);
}

static cohort_status_t rd_start(cohort_request_t *req)
{
    rd_state_t *s = req->state;
    const cohort_comm_t *g = req->comm;
    const cohort_coll_args_t *a = &s->base.args;
    int n = g->size, me = g->rank;

    s->base.xfers = s->x;
    s->base.nxfers = 2;
    if (a->count == 0 || n == 1) {
        cohort_coll_copy_input(req, a, a->count);
        s->phase = RD_DONE;
        return COHORT_OK;
    }
    cohort_coll_fold(n, me, &s->p, &s->nrounds, &s->r, &s->newrank);
    s->acc = cohort_coll_input(a);
    if (s->newrank >= 0) {
        s->tmp = cohort_coll_mem_scratch(req, a->count * a->esize);
        if (s->tmp == NULL) {
            return COHORT_ERR_NO_MEMORY;
        }
    }
    s->mask = 1;
    s->round = 1;
    s->phase = RD_FOLD;
    return COHORT_OK;
}

/* rbuf = lower-ranked operand op higher-ranked one: the same expression on both partners. */
static void rd_combine(cohort_request_t *req, int peer_is_lower)
{
    rd_state_t *s = req->state;
    const cohort_coll_args_t *a = &s->base.args;

    if (peer_is_lower) {
        cohort_coll_mem_reduce(req, a->rbuf, s->tmp, s->acc, a->count);
    } else {
        cohort_coll_mem_reduce(req, a->rbuf, s->acc, s->tmp, a->count);
    }
    s->acc = a->rbuf;
}

static cohort_status_t rd_progress(cohort_request_t *req)
{
    rd_state_t *s = req->state;
    const cohort_comm_t *g = req->comm;
    const cohort_coll_args_t *a = &s->base.args;
    size_t bytes = a->count * a->esize;
    int me = g->rank, last_step = s->nrounds + 1;
    cohort_status_t status;

    for (;;) {
        switch (s->phase) {
        case RD_FOLD:
            if (me >= 2 * s->r) {
                s->phase = RD_ROUND;
                break;
            }
            if (s->newrank < 0) {
                status = cohort_coll_send(req, &s->x[0], me + 1, 0, s->acc, bytes);
            } else {
                status = cohort_coll_recv(req, &s->x[1], me - 1, 0, s->tmp, bytes);
            }
            if (status != COHORT_OK) {
                return status;
            }
            s->phase = RD_FOLD_WAIT;
            /* fall through */
        case RD_FOLD_WAIT:
            status = cohort_coll_xfers_wait(s->x, 2);
            if (status != COHORT_OK) {
                return status;
            }
            if (s->newrank < 0) {
                /* The input (perhaps rbuf itself) has left: rbuf may now take the result. */
                s->phase = RD_UNFOLD;
                break;
            }
            rd_combine(req, 1);
            s->phase = RD_ROUND;
            break;
        case RD_ROUND: {
            int peer;

            if (s->mask >= s->p) {
                /* AVG divides here, once per core rank, on identical sums: identical results. */
                cohort_coll_mem_finish(req, a->rbuf, a->count, g->size);
                s->phase = RD_UNFOLD;
                break;
            }
            peer = cohort_coll_fold_rank(s->r, s->newrank ^ s->mask);
            status = cohort_coll_recv(req, &s->x[1], peer, s->round, s->tmp, bytes);
            if (status != COHORT_OK) {
                return status;
            }
            status = cohort_coll_send(req, &s->x[0], peer, s->round, s->acc, bytes);
            if (status != COHORT_OK) {
                return status;
            }
            s->phase = RD_ROUND_WAIT;
        }
            /* fall through */
        case RD_ROUND_WAIT:
            status = cohort_coll_xfers_wait(s->x, 2);
            if (status != COHORT_OK) {
                return status;
            }
            rd_combine(req, (s->newrank ^ s->mask) < s->newrank);
            s->mask *= 2;
            s->round++;
            s->phase = RD_ROUND;
            break;
        case RD_UNFOLD:
            if (me >= 2 * s->r) {
                s->phase = RD_DONE;
                break;
            }
            if (s->newrank < 0) {
                status = cohort_coll_recv(req, &s->x[1], me + 1, last_step, a->rbuf, bytes);
            } else {
                status = cohort_coll_send(req, &s->x[0], me - 1, last_step, a->rbuf, bytes);
            }
            if (status != COHORT_OK) {
                return status;
            }
            s->phase = RD_UNFOLD_WAIT;
            /* fall through */
        case RD_UNFOLD_WAIT:
            status = cohort_coll_xfers_wait(s->x, 2);
            if (status != COHORT_OK) {
                return status;
            }
            s->phase = RD_DONE;
            break;
        case RD_DONE:
            return COHORT_OK;
        }
    }
}

static void rd_cleanup(cohort_request_t *req)
{
    rd_state_t *s = req->state;

    cohort_coll_mem_release(req, s->tmp);
    s->tmp = NULL;
}

static int rd_peers(const cohort_coll_args_t *a, int n, int me, int *out, int max)
{
    return cohort_coll_fold_peers(a, n, me, out, max);
}

const cohort_coll_algo_t cohort_allreduce_recursive_doubling = {
    .name = "recursive_doubling",
    .description = "log2(p) whole-vector swaps with rank^2^k; extra ranks folded in pairs",
    .coll = COHORT_COLL_ALLREDUCE,
    .state_size = rd_state_size,
    .start = rd_start,
    .progress = rd_progress,
    .cleanup = rd_cleanup,
    .peers = rd_peers,
    .device_ok = 1,
};
