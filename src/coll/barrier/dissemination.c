/*
 * Dissemination barrier (Hensgen, Finkel, Manber): in round k every rank sends a zero-byte
 * message to rank + 2^k and receives one from rank - 2^k. ceil(log2 n) rounds, any n.
 */
#include "coll/coll.h"
#include "core/comm.h"

typedef enum { BARRIER_POST, BARRIER_WAIT } barrier_phase_t;

typedef struct {
    cohort_coll_base_t base;
    barrier_phase_t phase;
    int round;
    int dist;
    cohort_xfer_t x[2];
} barrier_state_t;

static size_t barrier_state_size(const cohort_coll_args_t *args, int gsize)
{
    return sizeof(barrier_state_t);
}

static cohort_status_t barrier_start(cohort_request_t *req)
{
    barrier_state_t *s = req->state;

    s->base.xfers = s->x;
    s->base.nxfers = 2;
    s->phase = BARRIER_POST;
    s->dist = 1;
    return COHORT_OK;
}

static cohort_status_t barrier_progress(cohort_request_t *req)
{
    barrier_state_t *s = req->state;
    const cohort_comm_t *g = req->comm;
    int n = g->size, me = g->rank;
    cohort_status_t status;

    while (s->dist < n) {
        switch (s->phase) {
        case BARRIER_POST:
            status = cohort_coll_recv(req, &s->x[1], (me - s->dist + n) % n, s->round, NULL, 0);
            if (status != COHORT_OK) {
                return status;
            }
            status = cohort_coll_send(req, &s->x[0], (me + s->dist) % n, s->round, NULL, 0);
            if (status != COHORT_OK) {
                return status;
            }
            s->phase = BARRIER_WAIT;
            /* fall through */
        case BARRIER_WAIT:
            status = cohort_coll_xfers_status(s->x, 2);
            if (status != COHORT_OK) {
                return status;
            }
            s->round++;
            s->dist *= 2;
            s->phase = BARRIER_POST;
            break;
        }
    }
    return COHORT_OK;
}

static int barrier_peers(const cohort_coll_args_t *a, int n, int me, int *out, int max)
{
    return cohort_coll_peers_dist(n, me, 1, out, max);
}

const cohort_coll_algo_t cohort_barrier_dissemination = {
    .name = "dissemination",
    .description = "ceil(log2 n) rounds of zero-byte messages to rank+2^k",
    .coll = COHORT_COLL_BARRIER,
    .id = 0,
    .state_size = barrier_state_size,
    .start = barrier_start,
    .progress = barrier_progress,
    .peers = barrier_peers,
    .device_ok = 1,
};
