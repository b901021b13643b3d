/*
 * Ring allreduce, for large messages: the vector is cut into n blocks; a ring reduce-scatter
 * (n - 1 steps) leaves each rank owning the finished block me + 1, then a ring allgather (n - 1
 * steps) passes the finished blocks around, in place on rbuf. Each element is combined by one
 * chain of ranks and copied from there, so every rank holds the same bits.
 *
 * Built from two tasks (task.h), the same code as the reduce_scatter and allgather ring rows
 * (pattern/ring_pipeline.h): the reduce-scatter keeps its partial sums at their blocks' places in
 * rbuf, and the allgather runs alongside it (task.h), continuing its pipeline: a segment of this
 * rank's block goes out as soon as the reduce-scatter has finished it. Both are pipelined: each
 * block is cut into segments, and the (n - 1) x nseg (step, segment) units of each flow through
 * one window of receives (the "window" parameter), so a rank reduces one segment while the next
 * ones are on the wire. Their messages take steps 0 .. (n-1)nseg - 1 and then (n-1)nseg ..
 * 2(n-1)nseg - 1.
 *
 * Why the allgather may write rbuf while the reduce-scatter still runs: a block's final value
 * reaches this rank only after the send that reads its partial sum (or input) here was
 * received, since every rank after this one in the block's chain waits for it.
 */
#include <stdlib.h>
#include "coll/coll_reduce.h"
#include "coll/pattern/ring_pipeline.h"
#include "core/comm.h"

/* The segment and window are tuning parameters (cohort_bench algorithms); the state has room
 * for the largest window. */
#define RING_WINDOW_MAX 16

typedef struct {
    cohort_task_parent_t p; /* the call's base, and the two tasks in line */
    cohort_ring_rs_t rs;
    cohort_ring_ag_t ag;
    /* Lent to both tasks: the allgather takes them over from the reduce-scatter, whose last
     * sends may still be in flight then (it posts a send only into an idle slot, and waits for
     * every slot at its end). Sends in [0, W), receives in [W, 2W). */
    cohort_xfer_t x[2 * RING_WINDOW_MAX];
} ring_state_t;

static cohort_status_t ring_start(cohort_request_t *req)
{
    ring_state_t *s = req->state;
    const cohort_coll_args_t *a = &s->p.base.args;
    int n = req->comm->size;
    /* The same cut for both: rank me finishes block me + 1, and the allgather starts there. */
    cohort_ring_shape_t shape = {
        .total = a->count,
        .own = 1,
        .seg_bytes = cohort_coll_knob(req, 0),
        .window = (int)cohort_coll_knob(req, 1),
        .x = s->x,
    };

    s->p.base.xfers = s->x;
    s->p.base.nxfers = 2 * shape.window;
    if (a->count == 0 || n == 1) {
        cohort_coll_copy_input(req, a, a->count);
        return COHORT_OK; /* no task: done */
    }
    s->rs.shape = shape;
    /* The reduce-scatter is done once its last sums are made and sent, before those sends are
     * over: the allgather, which takes its slots on, waits for them at its end. */
    s->rs.shape.hand_over = 1;
    s->rs.in = cohort_coll_input(a);
    s->rs.out = a->rbuf;
    s->rs.acc_at = COHORT_RING_ACC_BLOCKS;
    s->ag.shape = shape;
    s->ag.buf = a->rbuf;
    cohort_task_seq_add(&s->p.seq, &cohort_task_ring_reduce_scatter, &s->rs);
    /* Alongside: the allgather sends a segment of this rank's block as soon as the
     * reduce-scatter has finished it, and posts its receives as the window frees, not once the
     * whole reduce-scatter is over (the two continue one pipeline, pattern/ring_pipeline.h). */
    cohort_task_seq_add_alongside(&s->p.seq, &cohort_task_ring_allgather, &s->ag);
    return cohort_task_seq_start(req, &s->p.seq);
}

static size_t ring_state_size(const cohort_coll_args_t *args, int gsize)
{
    return sizeof(ring_state_t);
}

const cohort_coll_algo_t cohort_allreduce_ring = {
    .name = "ring",
    .description = "pipelined ring: reduce-scatter then allgather, 2(n-1) steps",
    .coll = COHORT_COLL_ALLREDUCE,
    .id = 8,
    .state_size = ring_state_size,
    .start = ring_start,
    .progress = cohort_task_parent_progress,
    .cleanup = cohort_task_parent_cleanup,
    .peers = cohort_coll_peers_ring,
    .nknobs = 2,
    .knobs = {{"segment", "COHORT_ALGO_ALLREDUCE_RING_SEGMENT", 256 * 1024, 1024, 1u << 30, 1,
               "bytes per pipelined message; 256 KiB kept 2-8 ranks busy here at 4-16 MiB"},
              {"window", "COHORT_ALGO_ALLREDUCE_RING_WINDOW", 4, 1, 16, 0,
               "segments in flight per direction; 4 hid the reduction behind the copy here"}},
    .device_ok = 1,
};
