/*
 * The windowed ring pipeline of allreduce_ring and reduce_scatter_ring: a sequence of units
 * (step t, segment j; u = t * nseg + j, also the message step) flows to the right neighbour
 * while the left one's arrive. Up to W receives are posted ahead of the unit being processed;
 * a unit past the first step forwards what was received (and processed) one step earlier; units
 * are processed in order as their receives complete. The algorithm says what each unit sends,
 * receives and computes; the driver owns the order and the window.
 */
#ifndef COHORT_COLL_PATTERN_RING_PIPELINE_H
#define COHORT_COLL_PATTERN_RING_PIPELINE_H

#include "coll/coll.h"

typedef struct {
    size_t nseg;      /* segments per step */
    size_t nunits;    /* steps x nseg */
    size_t window;    /* W: receives (and sends) in flight */
    size_t next_recv; /* next unit to post a receive for */
    size_t next_send; /* next unit to send */
    size_t next_proc; /* next unit to process once received */
    cohort_xfer_t *x; /* 2W slots: sends in [0, W), receives in [W, 2W) */
} cohort_ring_pipe_t;

typedef struct {
    cohort_status_t (*post_recv)(cohort_request_t *req, size_t u, cohort_xfer_t *slot);
    cohort_status_t (*post_send)(cohort_request_t *req, size_t u, cohort_xfer_t *slot);
    /* Optional: 0 while unit u may not be processed yet although its receive is in. */
    int (*can_process)(cohort_request_t *req, size_t u);
    void (*process)(cohort_request_t *req, size_t u);
} cohort_ring_pipe_ops_t;

/* Whether send @a u has finished: its slot holds it idle, or a later send that could only be
 * posted once it finished holds the slot. */
int cohort_ring_pipe_sent(const cohort_ring_pipe_t *p, size_t u);

/* As far as it goes without waiting: COHORT_OK when every unit is done, COHORT_INPROGRESS, or
 * the first error. */
cohort_status_t cohort_ring_pipe_progress(cohort_request_t *req, cohort_ring_pipe_t *p,
                                          const cohort_ring_pipe_ops_t *ops);

#endif
