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
 */
#include <stdlib.h>
#include "coll/coll_reduce.h"
#include "mem/scratch.h"
#include "core/comm.h"

typedef enum {
    RH_FOLD,
    RH_FOLD_WAIT,
    RH_ROUND, /* mask p/2 .. 1 */
    RH_ROUND_WAIT,
    RH_UNFOLD,
    RH_UNFOLD_WAIT,
    RH_DONE
} rh_phase_t;

typedef struct {
    cohort_coll_base_t base;
    rh_phase_t phase;
    int p, r, newrank; /* as in recursive doubling allreduce */
    int nrounds;
    int mask;
    int round;
    size_t keep_off, keep_len;
    const void *cur; /* partial sums over the whole vector: the input until the first
                      * combination, then acc */
    char *acc;       /* n * count: partial sums (only the kept window is meaningful) */
    char *tmp;       /* n * count: incoming data (in acc's allocation) */
    cohort_xfer_t x[2];
} rh_state_t;

static size_t rh_state_size(const cohort_coll_args_t *args, int gsize)
{
    return sizeof(rh_state_t);
}

/* First element of core block @a i; core block p is the end of the vector. */
static size_t rh_off(const rh_state_t *s, int i)
{
    return (size_t)(i < s->r ? 2 * i : i + s->r) * s->base.args.count;
}

static cohort_status_t rh_start(cohort_request_t *req)
{
    rh_state_t *s = req->state;
    const cohort_comm_t *g = req->comm;
    const cohort_coll_args_t *a = &s->base.args;
    int n = g->size, me = g->rank;
    size_t total = (size_t)n * a->count * a->esize;

    s->base.xfers = s->x;
    s->base.nxfers = 2;
    if (a->count == 0 || n == 1) {
        cohort_coll_copy_input(req, a, a->count);
        s->phase = RH_DONE;
        return COHORT_OK;
    }
    cohort_coll_fold(n, me, &s->p, &s->nrounds, &s->r, &s->newrank);
    s->cur = cohort_coll_input(a);
    if (s->newrank >= 0) {
        /* One allocation for both: see reduce_knomial.c. */
        s->acc = cohort_coll_mem_scratch(req, 2 * total);
        if (s->acc == NULL) {
            return COHORT_ERR_NO_MEMORY;
        }
        s->tmp = s->acc + total;
    }
    s->mask = s->p / 2;
    s->round = 1;
    s->phase = RH_FOLD;
    return COHORT_OK;
}

static cohort_status_t rh_progress(cohort_request_t *req)
{
    rh_state_t *s = req->state;
    const cohort_comm_t *g = req->comm;
    const cohort_coll_args_t *a = &s->base.args;
    size_t esize = a->esize, block = a->count * esize, total = (size_t)g->size * block;
    int me = g->rank, nr = s->newrank, last_step = s->nrounds + 1;
    cohort_status_t status;

    for (;;) {
        switch (s->phase) {
        case RH_FOLD:
            if (me >= 2 * s->r) {
                s->phase = RH_ROUND;
                break;
            }
            if (nr < 0) {
                status = cohort_coll_send(req, &s->x[0], me + 1, 0, s->cur, total);
            } else {
                status = cohort_coll_recv(req, &s->x[1], me - 1, 0, s->tmp, total);
            }
            if (status != COHORT_OK) {
                return status;
            }
            s->phase = RH_FOLD_WAIT;
            /* fall through */
        case RH_FOLD_WAIT:
            status = cohort_coll_xfers_wait(s->x, 2);
            if (status != COHORT_OK) {
                return status;
            }
            if (nr < 0) {
                /* The input (perhaps rbuf itself) has left: rbuf may now take the result. */
                s->phase = RH_UNFOLD;
                break;
            }
            cohort_coll_mem_reduce(req, s->acc, s->tmp, s->cur, (size_t)g->size * a->count);
            s->cur = s->acc;
            s->phase = RH_ROUND;
            break;
        case RH_ROUND: {
            int peer = cohort_coll_fold_rank(s->r, nr ^ s->mask), lo = nr & ~(2 * s->mask - 1);
            int keep_lo = nr & s->mask ? lo + s->mask : lo;
            int send_lo = nr & s->mask ? lo : lo + s->mask;
            size_t send_off = rh_off(s, send_lo);

            if (s->mask == 0) {
                s->phase = RH_UNFOLD;
                break;
            }
            s->keep_off = rh_off(s, keep_lo);
            s->keep_len = rh_off(s, keep_lo + s->mask) - s->keep_off;
            status = cohort_coll_recv(req, &s->x[1], peer, s->round, s->tmp, s->keep_len * esize);
            if (status != COHORT_OK) {
                return status;
            }
            status = cohort_coll_send(req, &s->x[0], peer, s->round,
                                      cohort_coll_at(s->cur, send_off, esize),
                                      (rh_off(s, send_lo + s->mask) - send_off) * esize);
            if (status != COHORT_OK) {
                return status;
            }
            s->phase = RH_ROUND_WAIT;
        }
            /* fall through */
        case RH_ROUND_WAIT: {
            char *dst = cohort_coll_at(s->acc, s->keep_off, esize);
            const char *mine = cohort_coll_at(s->cur, s->keep_off, esize);

            status = cohort_coll_xfers_wait(s->x, 2);
            if (status != COHORT_OK) {
                return status;
            }
            if ((nr ^ s->mask) < nr) {
                cohort_coll_mem_reduce(req, dst, s->tmp, mine, s->keep_len);
            } else {
                cohort_coll_mem_reduce(req, dst, mine, s->tmp, s->keep_len);
            }
            s->cur = s->acc;
            s->mask /= 2;
            s->round++;
            s->phase = RH_ROUND;
            break;
        }
        case RH_UNFOLD:
            if (nr >= 0) {
                /* acc holds this core rank's final blocks: the partner's first, if folded. */
                char *own = s->acc + (size_t)me * block;
                size_t nblocks = me < 2 * s->r ? 2 : 1;

                cohort_coll_mem_finish(req, own + block - nblocks * block, nblocks * a->count,
                                       g->size);
                if (me < 2 * s->r) {
                    status = cohort_coll_send(req, &s->x[0], me - 1, last_step, own - block, block);
                    if (status != COHORT_OK) {
                        return status;
                    }
                }
            } else {
                status = cohort_coll_recv(req, &s->x[1], me + 1, last_step, a->rbuf, block);
                if (status != COHORT_OK) {
                    return status;
                }
            }
            s->phase = RH_UNFOLD_WAIT;
            /* fall through */
        case RH_UNFOLD_WAIT:
            status = cohort_coll_xfers_wait(s->x, 2);
            if (status != COHORT_OK) {
                return status;
            }
            if (nr >= 0) {
                /* After every send: under COHORT_IN_PLACE rbuf's start was input until now. */
                cohort_coll_mem_copy(req, a->rbuf, s->acc + (size_t)me * block, block);
            }
            s->phase = RH_DONE;
            break;
        case RH_DONE:
            return COHORT_OK;
        }
    }
}

static void rh_cleanup(cohort_request_t *req)
{
    rh_state_t *s = req->state;

    cohort_coll_mem_release(req, s->acc);
    s->acc = s->tmp = NULL;
}

static int rh_peers(const cohort_coll_args_t *a, int n, int me, int *out, int max)
{
    return cohort_coll_fold_peers(a, n, me, out, max);
}

const cohort_coll_algo_t cohort_reduce_scatter_recursive_halving = {
    .name = "recursive_halving",
    .description = "log2(p) rounds halving the window; extra ranks folded in pairs",
    .coll = COHORT_COLL_REDUCE_SCATTER,
    .state_size = rh_state_size,
    .start = rh_start,
    .progress = rh_progress,
    .cleanup = rh_cleanup,
    .peers = rh_peers,
    .device_ok = 1,
};
