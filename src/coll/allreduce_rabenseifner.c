/*
 * Rabenseifner's allreduce, for large messages on few hops: a reduce-scatter by recursive
 * halving (log2 p rounds; in each, a rank keeps one half of its current window, sends the
 * other half to the rank that keeps it, and combines what it receives), then an allgather by
 * recursive doubling (the windows grow back). Each element is combined on one rank and copied
 * from there, so every rank holds the same bits.
 *
 * Not a power of two (p the largest power of two below n, r = n - p): as in recursive
 * doubling, each even rank among the lowest 2r hands its input to the odd rank above it before
 * the rounds and receives the finished result from it after them.
 *
 * Every exchange is cut into up to RAB_SEGS segments, all posted at once, and a received
 * segment is combined as soon as it (and those before it) arrived: the arithmetic overlaps the
 * rest of the transfer and works on data still in cache.
 */
#include <stdlib.h>
#include "coll/coll_reduce.h"
#include "mem/scratch.h"
#include "core/comm.h"

#define RAB_SEGS 16

typedef enum {
    RAB_FOLD,    /* extras hand their input over; their partners combine it */
    RAB_SCATTER, /* recursive halving, mask p/2 .. 1 */
    RAB_GATHER,  /* recursive doubling, mask 1 .. p/2 */
    RAB_UNFOLD,  /* partners hand the result back to the extras */
    RAB_DONE
} rab_phase_t;

typedef struct {
    cohort_coll_base_t base;
    rab_phase_t phase;
    int waiting;       /* the current phase's exchange is posted */
    int p, r, newrank; /* as in recursive doubling */
    int nrounds;       /* log2(p) */
    int mask;
    int round;       /* the current exchange's number, for steps */
    const void *acc; /* the partial result: the input until the first combination, then rbuf */
    void *tmp;
    /* The exchange in flight: received segments go to recv_buf; when combine is set, each is
     * then combined as dst = lower-ranked op higher-ranked with mine (same offsets). */
    size_t seg_elems;
    int nsend, nrecv, nproc;
    int combine, peer_is_lower;
    char *recv_buf;
    char *dst;
    const char *mine;
    cohort_xfer_t x[2 * RAB_SEGS]; /* sends in [0, S), receives in [S, 2S) */
} rab_state_t;

static size_t rab_state_size(const cohort_coll_args_t *args, int gsize)
{
    return sizeof(rab_state_t);
}

/* First element of core block @a i (of p); block p is the end of the vector. */
static size_t rab_off(const rab_state_t *s, int i)
{
    return cohort_coll_block_off(s->base.args.count, s->p, i);
}

static cohort_status_t rab_start(cohort_request_t *req)
{
    rab_state_t *s = req->state;
    const cohort_comm_t *g = req->comm;
    const cohort_coll_args_t *a = &s->base.args;
    int n = g->size, me = g->rank;
    size_t tmp_elems;

    s->base.xfers = s->x;
    s->base.nxfers = 2 * RAB_SEGS;
    if (a->count == 0 || n == 1) {
        cohort_coll_copy_input(req, a, a->count);
        s->phase = RAB_DONE;
        return COHORT_OK;
    }
    cohort_coll_fold(n, me, &s->p, &s->nrounds, &s->r, &s->newrank);
    s->acc = cohort_coll_input(a);
    if (s->newrank >= 0) {
        /* The whole input of a folded partner, else at most the first scatter round's half. */
        tmp_elems = me < 2 * s->r ? a->count : rab_off(s, s->p / 2);
        s->tmp = cohort_coll_mem_scratch(req, tmp_elems * a->esize + 1);
        if (s->tmp == NULL) {
            return COHORT_ERR_NO_MEMORY;
        }
    }
    s->mask = s->p / 2;
    s->phase = RAB_FOLD;
    return COHORT_OK;
}

/*
 * Post one exchange with group rank @a peer: @a slen elements from @a sbuf, @a rlen into
 * @a rbuf; a NULL buffer skips that direction (the other length still counts). Both partners
 * cut by the larger of the two lengths, which they agree on, so their segments match.
 */
static cohort_status_t rab_exchange(cohort_request_t *req, rab_state_t *s, int peer,
                                    const void *sbuf, size_t slen, void *rbuf, size_t rlen)
{
    size_t esize = s->base.args.esize, most = slen > rlen ? slen : rlen;
    size_t min_elems = cohort_coll_seg_elems(cohort_coll_knob(req, 0), esize);
    int step0 = s->round * RAB_SEGS;
    cohort_status_t status;

    s->seg_elems = (most + RAB_SEGS - 1) / RAB_SEGS;
    if (s->seg_elems < min_elems) {
        s->seg_elems = min_elems;
    }
    s->nsend = sbuf != NULL ? (int)cohort_coll_nsegs(slen, s->seg_elems) : 0;
    s->nrecv = rbuf != NULL ? (int)cohort_coll_nsegs(rlen, s->seg_elems) : 0;
    s->nproc = 0;
    s->recv_buf = rbuf;
    for (int j = 0; j < s->nrecv; j++) {
        size_t off = cohort_coll_seg_off(rlen, s->seg_elems, (size_t)j);
        status = cohort_coll_recv(req, &s->x[RAB_SEGS + j], peer, step0 + j,
                                  cohort_coll_at(rbuf, off, esize),
                                  cohort_coll_seg_len(rlen, s->seg_elems, (size_t)j) * esize);
        if (status != COHORT_OK) {
            return status;
        }
    }
    for (int j = 0; j < s->nsend; j++) {
        size_t off = cohort_coll_seg_off(slen, s->seg_elems, (size_t)j);
        status = cohort_coll_send(req, &s->x[j], peer, step0 + j, cohort_coll_at(sbuf, off, esize),
                                  cohort_coll_seg_len(slen, s->seg_elems, (size_t)j) * esize);
        if (status != COHORT_OK) {
            return status;
        }
    }
    s->waiting = 1;
    return COHORT_OK;
}

/* Combine received segments in order as they land; OK when the whole exchange is over. */
static cohort_status_t rab_exchange_progress(cohort_request_t *req, size_t rlen)
{
    rab_state_t *s = req->state;
    const cohort_coll_args_t *a = &s->base.args;

    while (s->nproc < s->nrecv) {
        cohort_xfer_t *x = &s->x[RAB_SEGS + s->nproc];

        if (!x->done) {
            return COHORT_INPROGRESS;
        }
        if (x->status != COHORT_OK) {
            return x->status;
        }
        if (s->combine) {
            size_t off = cohort_coll_seg_off(rlen, s->seg_elems, (size_t)s->nproc);
            size_t len = cohort_coll_seg_len(rlen, s->seg_elems, (size_t)s->nproc);
            char *dst = cohort_coll_at(s->dst, off, a->esize);
            const char *theirs = cohort_coll_at(s->recv_buf, off, a->esize);
            const char *mine = cohort_coll_at(s->mine, off, a->esize);

            if (s->peer_is_lower) {
                cohort_coll_mem_reduce(req, dst, theirs, mine, len);
            } else {
                cohort_coll_mem_reduce(req, dst, mine, theirs, len);
            }
        }
        s->nproc++;
    }
    for (int j = 0; j < s->nsend; j++) {
        if (!s->x[j].done) {
            return COHORT_INPROGRESS;
        }
        if (s->x[j].status != COHORT_OK) {
            return s->x[j].status;
        }
    }
    s->waiting = 0;
    s->round++;
    return COHORT_OK;
}

/* The scatter round at s->mask: [off, off + len) of the vector is kept. */
static void rab_scatter_halves(const rab_state_t *s, size_t *keep_off, size_t *keep_len,
                               size_t *send_off, size_t *send_len)
{
    int nr = s->newrank, lo = nr & ~(2 * s->mask - 1);
    int keep_lo = nr & s->mask ? lo + s->mask : lo;
    int send_lo = nr & s->mask ? lo : lo + s->mask;

    *keep_off = rab_off(s, keep_lo);
    *keep_len = rab_off(s, keep_lo + s->mask) - *keep_off;
    *send_off = rab_off(s, send_lo);
    *send_len = rab_off(s, send_lo + s->mask) - *send_off;
}

static cohort_status_t rab_progress(cohort_request_t *req)
{
    rab_state_t *s = req->state;
    const cohort_comm_t *g = req->comm;
    const cohort_coll_args_t *a = &s->base.args;
    size_t esize = a->esize, keep_off, keep_len, send_off, send_len;
    int me = g->rank, nr = s->newrank;
    cohort_status_t status;

    for (;;) {
        switch (s->phase) {
        case RAB_FOLD:
            if (me >= 2 * s->r) {
                s->round = 1; /* as if the fold's exchange had happened: steps stay aligned */
                s->phase = RAB_SCATTER;
                break;
            }
            if (!s->waiting) {
                if (nr < 0) {
                    status = rab_exchange(req, s, me + 1, s->acc, a->count, NULL, a->count);
                } else {
                    s->combine = 1;
                    s->peer_is_lower = 1;
                    s->dst = a->rbuf;
                    s->mine = s->acc;
                    status = rab_exchange(req, s, me - 1, NULL, a->count, s->tmp, a->count);
                }
                if (status != COHORT_OK) {
                    return status;
                }
            }
            status = rab_exchange_progress(req, a->count);
            if (status != COHORT_OK) {
                return status;
            }
            if (nr < 0) {
                /* The input (perhaps rbuf itself) has left: rbuf may now take the result. */
                s->round = 2 * s->nrounds + 1;
                s->phase = RAB_UNFOLD;
                break;
            }
            s->acc = a->rbuf;
            s->phase = RAB_SCATTER;
            break;
        case RAB_SCATTER:
            if (s->mask == 0) {
                /* This rank's block is final: divide once, here, before it is copied out. */
                size_t off = rab_off(s, nr);
                cohort_coll_mem_finish(req, cohort_coll_at(a->rbuf, off, esize),
                                       rab_off(s, nr + 1) - off, g->size);
                s->mask = 1;
                s->phase = RAB_GATHER;
                break;
            }
            rab_scatter_halves(s, &keep_off, &keep_len, &send_off, &send_len);
            if (!s->waiting) {
                s->combine = 1;
                s->peer_is_lower = (nr ^ s->mask) < nr;
                s->dst = cohort_coll_at(a->rbuf, keep_off, esize);
                s->mine = cohort_coll_at(s->acc, keep_off, esize);
                status = rab_exchange(req, s, cohort_coll_fold_rank(s->r, nr ^ s->mask),
                                      cohort_coll_at(s->acc, send_off, esize), send_len, s->tmp,
                                      keep_len);
                if (status != COHORT_OK) {
                    return status;
                }
            }
            status = rab_exchange_progress(req, keep_len);
            if (status != COHORT_OK) {
                return status;
            }
            s->acc = a->rbuf;
            s->mask /= 2;
            break;
        case RAB_GATHER: {
            int peer_nr = nr ^ s->mask, mine_lo = nr & ~(s->mask - 1);
            int theirs_lo = peer_nr & ~(s->mask - 1);
            size_t mine_off = rab_off(s, mine_lo), theirs_off = rab_off(s, theirs_lo);
            size_t theirs_len = rab_off(s, theirs_lo + s->mask) - theirs_off;

            if (s->mask >= s->p) {
                s->phase = RAB_UNFOLD;
                break;
            }
            if (!s->waiting) {
                s->combine = 0;
                status = rab_exchange(req, s, cohort_coll_fold_rank(s->r, peer_nr),
                                      cohort_coll_at(a->rbuf, mine_off, esize),
                                      rab_off(s, mine_lo + s->mask) - mine_off,
                                      cohort_coll_at(a->rbuf, theirs_off, esize), theirs_len);
                if (status != COHORT_OK) {
                    return status;
                }
            }
            status = rab_exchange_progress(req, theirs_len);
            if (status != COHORT_OK) {
                return status;
            }
            s->mask *= 2;
            break;
        }
        case RAB_UNFOLD:
            if (me >= 2 * s->r) {
                s->phase = RAB_DONE;
                break;
            }
            if (!s->waiting) {
                s->combine = 0;
                if (nr < 0) {
                    status = rab_exchange(req, s, me + 1, NULL, a->count, a->rbuf, a->count);
                } else {
                    status = rab_exchange(req, s, me - 1, a->rbuf, a->count, NULL, a->count);
                }
                if (status != COHORT_OK) {
                    return status;
                }
            }
            status = rab_exchange_progress(req, a->count);
            if (status != COHORT_OK) {
                return status;
            }
            s->phase = RAB_DONE;
            break;
        case RAB_DONE:
            return COHORT_OK;
        }
    }
}

static void rab_cleanup(cohort_request_t *req)
{
    rab_state_t *s = req->state;

    cohort_coll_mem_release(req, s->tmp);
    s->tmp = NULL;
}

static int rab_peers(const cohort_coll_args_t *a, int n, int me, int *out, int max)
{
    return cohort_coll_fold_peers(a, n, me, out, max);
}

const cohort_coll_algo_t cohort_allreduce_rabenseifner = {
    .name = "rabenseifner",
    .description = "recursive-halving reduce-scatter + recursive-doubling allgather",
    .coll = COHORT_COLL_ALLREDUCE,
    .state_size = rab_state_size,
    .start = rab_start,
    .progress = rab_progress,
    .cleanup = rab_cleanup,
    .peers = rab_peers,
    .nknobs = 1,
    .knobs = {{"min_segment", "COHORT_ALGO_ALLREDUCE_RABENSEIFNER_MIN_SEGMENT", 64 * 1024, 1024,
               1u << 30, 1,
               "an exchange is cut into up to 16 messages of at least this many bytes"}},
    .device_ok = 1,
};
