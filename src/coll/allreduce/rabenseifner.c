/*
 * Rabenseifner's allreduce, for large messages on few hops: a reduce-scatter by recursive
 * halving (log2 p rounds; in each, a rank keeps one half of its current window, sends the
 * other half to the rank that keeps it, and combines what it receives), then an allgather by
 * recursive doubling (the windows grow back). Each element is combined on one rank and copied
 * from there, so every rank holds the same bits.
 *
 * Not a power of two (p the largest power of two below n, r = n - p): as in recursive
 * doubling, each even rank among the lowest 2r hands its input to the odd rank above it before
 * the rounds and receives the finished result from it after them. The vector is cut into p
 * near-equal blocks, one per core rank, so the extras' share is spread over the core.
 *
 * Built from two tasks (task.h, pattern/halving.h): the recursive-halving reduce-scatter, the
 * same code as the reduce_scatter recursive_halving row, keeping its partial sums in rbuf, and
 * the recursive-doubling allgather on rbuf once it is done. Every exchange is cut into up to
 * RAB_SEGS segments, all posted at once, and a received segment is combined as soon as it (and
 * those before it) arrived: the arithmetic overlaps the rest of the transfer and works on data
 * still in cache. Round k's messages take steps k x RAB_SEGS on: the fold 0, the halving 1 ..
 * log2 p, the doubling log2 p + 1 .. 2 log2 p, the hand-back 2 log2 p + 1.
 */
#include <stdlib.h>
#include "coll/coll_reduce.h"
#include "coll/pattern/halving.h"
#include "core/comm.h"

#define RAB_SEGS 16

typedef struct {
    cohort_task_parent_t p; /* the call's base, and the two tasks in line */
    cohort_halving_rs_t rs;
    cohort_doubling_ag_t ag;
    /* Lent to both tasks (one exchange at a time): sends in [0, S), receives in [S, 2S). */
    cohort_xfer_t x[2 * RAB_SEGS];
} rab_state_t;

static size_t rab_state_size(const cohort_coll_args_t *args, int gsize)
{
    return sizeof(rab_state_t);
}

static cohort_status_t rab_start(cohort_request_t *req)
{
    rab_state_t *s = req->state;
    const cohort_coll_args_t *a = &s->p.base.args;
    cohort_pair_xchg_t xchg = {
        .x = s->x,
        .max_segs = RAB_SEGS,
        .min_seg_elems = cohort_coll_seg_elems(cohort_coll_knob(req, 0), a->esize),
    };

    if (!cohort_halving_row_begin(req, s->x, 2 * RAB_SEGS, COHORT_HALVING_CUT_CORE, a->count,
                                  &s->rs.cut)) {
        return COHORT_OK; /* no task: done */
    }
    s->rs.in = cohort_coll_input(a);
    s->rs.acc = a->rbuf;
    s->rs.xchg = xchg;
    s->ag.cut = s->rs.cut;
    s->ag.buf = a->rbuf;
    s->ag.xchg = xchg;
    cohort_task_seq_add(&s->p.seq, &cohort_task_halving_reduce_scatter, &s->rs);
    cohort_task_seq_add(&s->p.seq, &cohort_task_doubling_allgather, &s->ag);
    return cohort_task_seq_start(req, &s->p.seq);
}

static int rab_peers(const cohort_coll_args_t *a, int n, int me, int *out, int max)
{
    return cohort_coll_fold_peers(a, n, me, out, max);
}

const cohort_coll_algo_t cohort_allreduce_rabenseifner = {
    .name = "rabenseifner",
    .description = "recursive-halving reduce-scatter + recursive-doubling allgather",
    .coll = COHORT_COLL_ALLREDUCE,
    .id = 9,
    .state_size = rab_state_size,
    .start = rab_start,
    .progress = cohort_task_parent_progress,
    .cleanup = cohort_task_parent_cleanup,
    .peers = rab_peers,
    .nknobs = 1,
    .knobs = {{"min_segment", "COHORT_ALGO_ALLREDUCE_RABENSEIFNER_MIN_SEGMENT", 64 * 1024, 1024,
               1u << 30, 1,
               "an exchange is cut into up to 16 messages of at least this many bytes"}},
    .device_ok = 1,
};
