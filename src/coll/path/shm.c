/*
 * Small collectives of same-node members through one shared segment: no message at all once
 * the segment exists. Each member owns a slot (a sequence word, a done word, two data buffers);
 * call s writes this rank's contribution into its buffer s % 2, publishes s, waits for the
 * members it needs to have published s, computes its result straight from their buffers, and
 * publishes done = s. A buffer is written again at call s + 2 only once every member has
 * published done >= s, so nobody reads it while it changes. Every member reduces all inputs in
 * member order, so all end with the same bits and nothing is sent back.
 *
 * The segment is shm_seg.c's, made at the group's first call on it. Where a member cannot
 * reach it, that call fails with COHORT_ERR_UNSUPPORTED on every member, and the group takes the
 * other algorithms from then on, as direct.c does. A member that dies never publishes: its
 * group is revoked when the death is seen (keepalive), which fails the waits here.
 *
 * Chosen by placement only (every member on this node, single copy allowed) for calls whose data
 * fit a buffer (COHORT_SHM_SLOT bytes: for alltoall and reduce_scatter every block, for
 * allgather one member's). What each collective puts in and computes is its row's
 * (cohort_shm_row_t, in <collective>/shm.c); the rest is here, once.
 */
#include <string.h>
#include "coll/coll_reduce.h"
#include "coll/path/shm.h"
#include "coll/shm_seg.h"

typedef enum { SHM_BEGIN, SHM_WAIT, SHM_DONE } shm_phase_t;

typedef struct {
    cohort_coll_base_t base;
    shm_phase_t phase;
    cohort_shm_call_t call;
    /* then cohort_shm_call_extra() */
} shm_state_t;

size_t cohort_shm_coll_one(const cohort_coll_args_t *a, int n)
{
    (void)n;
    return a->count * a->esize;
}

size_t cohort_shm_coll_all(const cohort_coll_args_t *a, int n)
{
    return a->count > SIZE_MAX / a->esize / (size_t)n ? SIZE_MAX : a->count * a->esize * (size_t)n;
}

/* Bytes this rank writes into its buffer (its contribution), SIZE_MAX when they overflow. */
static size_t shm_in_bytes(const cohort_shm_row_t *row, const cohort_coll_args_t *a, int n)
{
    return row->in_bytes != NULL ? row->in_bytes(a, n) : 0;
}

int cohort_shm_coll_decline(const cohort_coll_algo_t *algo, const cohort_coll_args_t *args,
                            int gsize)
{
    const cohort_shm_row_t *row = algo->family;

    /* count 0 moves nothing: the other algorithms return at once, buffers maybe NULL; a row
     * that contributes nothing (barrier) runs whatever the count */
    return gsize < 2 || gsize > COHORT_SHM_MAX_N ||
           shm_in_bytes(row, args, gsize) > COHORT_SHM_SLOT ||
           (args->count == 0 && row->in_bytes != NULL);
}

size_t cohort_shm_coll_state_size(const cohort_coll_args_t *args, int n)
{
    (void)args;
    return sizeof(shm_state_t) + cohort_shm_call_extra(n);
}

cohort_status_t cohort_shm_coll_start(cohort_request_t *req)
{
    shm_state_t *s = req->state;

    s->phase = SHM_BEGIN;
    return cohort_shm_call_start(req, &s->call, (char *)(s + 1));
}

void cohort_shm_coll_reduce(cohort_request_t *req, const cohort_shm_call_t *call, size_t off)
{
    const cohort_coll_args_t *a = &cohort_coll_base(req)->args;
    int n = req->comm->size;
    char *r = a->rbuf;

    cohort_reduce_local(r, cohort_shm_buf(req, call, 0) + off, cohort_shm_buf(req, call, 1) + off,
                        a->count, a->dt, a->op);
    for (int k = 2; k < n; k++) {
        cohort_reduce_local(r, r, cohort_shm_buf(req, call, k) + off, a->count, a->dt, a->op);
    }
    cohort_reduce_finish(r, a->count, a->dt, a->op, n);
}

cohort_status_t cohort_shm_coll_progress(cohort_request_t *req)
{
    shm_state_t *s = req->state;
    const cohort_shm_row_t *row = s->base.algo->family;
    const cohort_coll_args_t *a = &s->base.args;
    int n = req->comm->size, me = req->comm->rank;
    cohort_status_t status = COHORT_OK;

    s->base.step = (int)s->phase;
    if (s->phase == SHM_BEGIN) {
        const void *src = row->input != NULL ? row->input(req) : cohort_coll_input(a);
        status = cohort_shm_put(req, &s->call, src, shm_in_bytes(row, a, n));
        if (status != COHORT_OK) {
            return status;
        }
        s->phase = SHM_WAIT;
    }
    if (s->phase == SHM_WAIT) {
        /* A member that gave up left its contribution: not to be taken as if it had not.
         * Every member, even for a bcast's root: each must see every other's tags, so that a
         * mismatch is every member's answer. */
        status = cohort_shm_await(req, &s->call, -1, COHORT_SHM_SEQ);
        if (status != COHORT_OK) {
            return status;
        }
        for (int k = 0; k < n && status == COHORT_OK; k++) {
            if (k != me && !cohort_shm_matches(req, &s->call, k)) {
                status = COHORT_ERR_MISMATCH;
            }
        }
        if (status == COHORT_OK && row->compute != NULL) {
            row->compute(req, &s->call);
        }
        cohort_shm_publish(req, &s->call, COHORT_SHM_DONE);
        cohort_shm_call_end(req, &s->call);
        s->phase = SHM_DONE;
        s->base.agreed = status != COHORT_OK; /* every member found it: they stay in step */
    }
    return status;
}

size_t cohort_shm_coll_describe(const cohort_request_t *req, char *buf, size_t len, size_t used)
{
    const shm_state_t *s = req->state;

    return cohort_shm_describe(req, &s->call, buf, len, used);
}

void cohort_shm_coll_abandon(cohort_request_t *req, cohort_status_t status)
{
    const shm_state_t *s = req->state;

    cohort_shm_abandon(req, &s->call, status);
}
