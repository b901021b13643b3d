/*
 * The windowed ring pipeline, and the two ring tasks built on it (task.h): the ring
 * reduce-scatter (reduce_scatter/ring.c) and the ring allgather (allgather/ring.c). Their rows
 * run them alone; allreduce_ring runs one, then the other.
 *
 * The pipeline: a sequence of units (step t, segment j; u = t * nseg + j, also the task's message
 * step) flows to the right neighbour while the left one's arrive. Up to W receives are posted
 * ahead of the unit being processed; a unit past the first step forwards what was received (and
 * processed) one step earlier; units are processed in order as their receives complete. The task
 * says what each unit sends, receives and computes; the driver owns the order and the window.
 */
#ifndef COHORT_COLL_PATTERN_RING_PIPELINE_H
#define COHORT_COLL_PATTERN_RING_PIPELINE_H

#include "coll/coll.h"
#include "coll/task.h"

typedef struct {
    size_t nseg;      /* segments per step */
    size_t nunits;    /* steps x nseg */
    size_t window;    /* W: receives (and sends) in flight */
    size_t next_recv; /* next unit to post a receive for */
    size_t next_send; /* next unit to send */
    size_t next_proc; /* next unit to process once received */
    cohort_xfer_t *x; /* 2W slots: sends in [0, W), receives in [W, 2W) */
    /* Done once every unit is processed and its send posted, the last sends maybe still in
     * flight: the task after this one takes the same slots, posts a send only into an idle one,
     * and waits for all of them at its end. Saves a wait on the neighbour between two tasks. */
    int hand_over;
    /* Alongside the ring task before it on the same slots (task.h: cohort_task_seq_add_alongside,
     * the allreduce's allgather after its reduce-scatter): unit u is unit base + u of one
     * pipeline, the units below base the task before's, done (processed, and their sends
     * posted) while *before_mark passed them. Otherwise base 0 and before_mark NULL. */
    size_t base;
    const size_t *before_mark;
} cohort_ring_pipe_t;

/* What a task does with unit u; @a self is the task's state. */
typedef struct {
    cohort_status_t (*post_recv)(cohort_request_t *req, void *self, size_t u, cohort_xfer_t *slot);
    cohort_status_t (*post_send)(cohort_request_t *req, void *self, size_t u, cohort_xfer_t *slot);
    /* Optional: 0 while unit u may not be processed yet although its receive is in. */
    int (*can_process)(cohort_request_t *req, void *self, size_t u);
    /* Optional: what a received unit computes. */
    void (*process)(cohort_request_t *req, void *self, size_t u);
} cohort_ring_pipe_ops_t;

/* Whether send @a u has finished: its slot holds it idle, or a later send that could only be
 * posted once it finished holds the slot. */
int cohort_ring_pipe_sent(const cohort_ring_pipe_t *p, size_t u);

/* As far as it goes without waiting: COHORT_OK when every unit is done, COHORT_INPROGRESS, or
 * the first error. */
cohort_status_t cohort_ring_pipe_progress(cohort_request_t *req, cohort_ring_pipe_t *p,
                                          const cohort_ring_pipe_ops_t *ops, void *self);
/* A ring task's mark (task.h) for a task alongside it: the units done, processed and sent on. */
size_t cohort_ring_pipe_mark(const cohort_ring_pipe_t *p);

/* The n blocks both ring tasks work on: @a total elements cut by cohort_coll_block_off/len (a
 * reduce-scatter's equal blocks are total = n x count). Each segment is at most @a seg_bytes
 * (cut evenly over the largest block; 0: one segment per block). @a own: this rank ends the
 * reduce-scatter owning, and starts the allgather from, block (rank + own) mod n. The parent
 * lends the transfer slots (2 x window of them), which a task after it may use again. */
typedef struct {
    size_t total;
    int own;
    size_t seg_bytes;
    int window;
    cohort_xfer_t *x;
    int hand_over; /* a ring task follows on the same slots (cohort_ring_pipe_t) */
    /* the task's own, from its post */
    size_t seg_elems, nseg;
    cohort_ring_pipe_t pipe;
} cohort_ring_shape_t;

/* A ring task's post: cut the blocks into segments and set the pipeline and t->nsteps; a task
 * alongside the one before it (a ring task on the same slots) continues that one's pipeline. */
void cohort_ring_shape_start(cohort_request_t *req, cohort_ring_shape_t *sh, cohort_task_t *t);
/* Unit @a u's range of elements, in block (rank + own - step - back) mod n: the block's first
 * element, the segment's offset inside the block, and its length (0 past a short block's end,
 * so every member sends as many messages). */
void cohort_ring_shape_unit(const cohort_request_t *req, const cohort_ring_shape_t *sh, size_t u,
                            int back, size_t *boff, size_t *soff, size_t *len);

/* Where the ring reduce-scatter keeps its partial sums. */
typedef enum {
    COHORT_RING_ACC_BLOCKS,  /* in out, at each block's own place (out spans every block) */
    COHORT_RING_ACC_OUT,     /* in out, one block long, reused by every step */
    COHORT_RING_ACC_SCRATCH, /* in one block of scratch (out is the input: in place), copied to
                                out at the end */
} cohort_ring_acc_t;

/* The ring reduce-scatter (reduce_scatter/ring.c): n - 1 steps; at step t a rank sends the
 * partial sum of block (rank + own - t - 1) to the right, receives that of block
 * (rank + own - t - 2) from the left and adds its own input's. Block b is combined along the
 * ranks b - own + 1, b - own + 2, ..., in that order, as dst = incoming op mine, and finished
 * (AVG's division) on rank b - own. */
typedef struct {
    cohort_ring_shape_t shape;
    const void *in;        /* n blocks */
    void *out;             /* where this rank's block ends (at its place, for ACC_BLOCKS) */
    cohort_ring_acc_t acc_at;
    /* the task's own */
    char *tmp; /* W incoming segments, then the scratch block for ACC_SCRATCH */
    char *acc;
} cohort_ring_rs_t;
extern const cohort_task_row_t cohort_task_ring_reduce_scatter;

/* The ring allgather (allgather/ring.c): n - 1 steps; at step t a rank sends block
 * (rank + own - t) to the right and receives block (rank + own - t - 1) from the left, straight
 * into @a buf (which spans every block); a block is sent on once it has arrived. */
typedef struct {
    cohort_ring_shape_t shape;
    void *buf;
} cohort_ring_ag_t;
extern const cohort_task_row_t cohort_task_ring_allgather;

#endif
