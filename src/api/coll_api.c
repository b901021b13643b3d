/* The public collective calls: each decodes its group's handle, takes the group's context for
 * the call (core/guard.h), checks that the buffers do not overlap, and posts, or posts and
 * waits. */
#include <stdio.h>
#include "coll/coll.h"
#include "base/dtype.h"
#include "core/guard.h"
#include "core/log.h"
#include "group/group.h"

/* Whether [a, a + alen) and [b, b + blen) share a byte. */
static int coll_ranges_meet(const void *a, size_t alen, const void *b, size_t blen)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

    return alen > 0 && blen > 0 && x < y + blen && y < x + alen;
}

/*
 * MPI calls overlapping input and output erroneous; here it is INVALID_ARG before anything is
 * posted (the algorithms would read what they already wrote: wrong data, or a memcpy with
 * overlapping arguments). One case is well defined and taken as COHORT_IN_PLACE: allreduce,
 * or reduce at the root, with sbuf == rbuf (the same count in and out, so "my input is in
 * rbuf" is exactly what the caller wrote). cohort.h says so.
 */
static cohort_status_t coll_overlap_check(const cohort_group_t *g, cohort_coll_args_t *a)
{
    size_t esize = cohort_dtype_size(a->dt), n = (size_t)g->comm->size, one, sbytes, rbytes;

    if (a->coll == COHORT_COLL_BARRIER || a->coll == COHORT_COLL_BCAST || a->sbuf == NULL ||
        a->rbuf == NULL || a->sbuf == COHORT_IN_PLACE || a->rbuf == COHORT_IN_PLACE ||
        esize == 0 || a->count == 0 || a->count > SIZE_MAX / esize / n) {
        return COHORT_OK; /* nothing to compare, or the collective's own check refuses it */
    }
    if (a->coll == COHORT_COLL_REDUCE && a->root != g->comm->rank) {
        return COHORT_OK; /* rbuf is not used off the root */
    }
    one = a->count * esize;
    sbytes = a->coll == COHORT_COLL_REDUCE_SCATTER || a->coll == COHORT_COLL_ALLTOALL ? one * n
                                                                                     : one;
    rbytes = a->coll == COHORT_COLL_ALLGATHER || a->coll == COHORT_COLL_ALLTOALL ? one * n : one;
    if (!coll_ranges_meet(a->sbuf, sbytes, a->rbuf, rbytes)) {
        return COHORT_OK;
    }
    if (a->sbuf == a->rbuf &&
        (a->coll == COHORT_COLL_ALLREDUCE || a->coll == COHORT_COLL_REDUCE)) {
        a->sbuf = COHORT_IN_PLACE;
        return COHORT_OK;
    }
    cohort_error(g->ctx,
                 "cohort_%s: sbuf %p (%zu bytes) and rbuf %p (%zu bytes) overlap; pass "
                 "COHORT_IN_PLACE as sbuf for an in-place call",
                 cohort_coll_names[a->coll], a->sbuf, sbytes, (void *)a->rbuf, rbytes);
    return COHORT_ERR_INVALID_ARG;
}

/* @a req_p NULL: blocking. */
static cohort_status_t coll_call(cohort_group_t *handle, const cohort_coll_args_t *args,
                                 cohort_request_t **req_p)
{
    /* The entry's name for its messages, made once per call site rather than per call: a
     * small collective's whole cost is a few hundred nanoseconds. Index by cohort_coll_type_t. */
    static const char *const what[2][COHORT_COLL_LAST] = {
        {"cohort_barrier: group", "cohort_bcast: group", "cohort_reduce: group",
         "cohort_allreduce: group", "cohort_allgather: group", "cohort_reduce_scatter: group",
         "cohort_alltoall: group"},
        {"cohort_ibarrier: group", "cohort_ibcast: group", "cohort_ireduce: group",
         "cohort_iallreduce: group", "cohort_iallgather: group", "cohort_ireduce_scatter: group",
         "cohort_ialltoall: group"}};
    _Static_assert(COHORT_COLL_LAST == 7, "a collective without its names above");
    cohort_group_t *g;
    cohort_coll_args_t a = *args;
    cohort_request_t *req = NULL;
    cohort_status_t status;

    g = cohort_group_enter_call(handle, what[req_p != NULL][args->coll]);
    if (g == NULL) {
        return COHORT_ERR_INVALID_ARG;
    }
    status = coll_overlap_check(g, &a);
    if (status == COHORT_OK && req_p != NULL) {
        status = cohort_coll_post(g->comm, &a, &req);
        if (status == COHORT_OK) {
            status = cohort_request_publish(req, req_p);
        }
    } else if (status == COHORT_OK) {
        status = cohort_coll_run(g->comm, &a);
    }
    cohort_group_leave(g);
    return status;
}

static cohort_status_t coll_run(cohort_group_t *g, const cohort_coll_args_t *args)
{
    return coll_call(g, args, NULL);
}

static cohort_status_t coll_post(cohort_group_t *g, const cohort_coll_args_t *args,
                                 cohort_request_t **req)
{
    if (req == NULL) {
        cohort_error(NULL, "cohort_%s: req is NULL", cohort_coll_names[args->coll]);
        return COHORT_ERR_INVALID_ARG;
    }
    return coll_call(g, args, req);
}

#define COHORT_ARGS(c, s, r, n, d, o, rt)                                                          \
    (cohort_coll_args_t)                                                                           \
    {                                                                                              \
        .coll = (c), .sbuf = (s), .rbuf = (r), .count = (n), .dt = (d), .op = (o), .root = (rt)    \
    }

cohort_status_t cohort_barrier(cohort_group_t *g)
{
    return coll_run(g, &COHORT_ARGS(COHORT_COLL_BARRIER, NULL, NULL, 0, 0, 0, 0));
}

cohort_status_t cohort_ibarrier(cohort_group_t *g, cohort_request_t **req)
{
    return coll_post(g, &COHORT_ARGS(COHORT_COLL_BARRIER, NULL, NULL, 0, 0, 0, 0), req);
}

cohort_status_t cohort_bcast(cohort_group_t *g, void *buf, size_t count, cohort_dtype_t dt,
                             int root)
{
    return coll_run(g, &COHORT_ARGS(COHORT_COLL_BCAST, buf, buf, count, dt, 0, root));
}

cohort_status_t cohort_ibcast(cohort_group_t *g, void *buf, size_t count, cohort_dtype_t dt,
                              int root, cohort_request_t **req)
{
    return coll_post(g, &COHORT_ARGS(COHORT_COLL_BCAST, buf, buf, count, dt, 0, root), req);
}

cohort_status_t cohort_reduce(cohort_group_t *g, const void *sbuf, void *rbuf, size_t count,
                              cohort_dtype_t dt, cohort_op_t op, int root)
{
    return coll_run(g, &COHORT_ARGS(COHORT_COLL_REDUCE, sbuf, rbuf, count, dt, op, root));
}

cohort_status_t cohort_ireduce(cohort_group_t *g, const void *sbuf, void *rbuf, size_t count,
                               cohort_dtype_t dt, cohort_op_t op, int root, cohort_request_t **req)
{
    return coll_post(g, &COHORT_ARGS(COHORT_COLL_REDUCE, sbuf, rbuf, count, dt, op, root), req);
}

cohort_status_t cohort_allreduce(cohort_group_t *g, const void *sbuf, void *rbuf, size_t count,
                                 cohort_dtype_t dt, cohort_op_t op)
{
    return coll_run(g, &COHORT_ARGS(COHORT_COLL_ALLREDUCE, sbuf, rbuf, count, dt, op, 0));
}

cohort_status_t cohort_iallreduce(cohort_group_t *g, const void *sbuf, void *rbuf, size_t count,
                                  cohort_dtype_t dt, cohort_op_t op, cohort_request_t **req)
{
    return coll_post(g, &COHORT_ARGS(COHORT_COLL_ALLREDUCE, sbuf, rbuf, count, dt, op, 0), req);
}

cohort_status_t cohort_allgather(cohort_group_t *g, const void *sbuf, void *rbuf, size_t count,
                                 cohort_dtype_t dt)
{
    return coll_run(g, &COHORT_ARGS(COHORT_COLL_ALLGATHER, sbuf, rbuf, count, dt, 0, 0));
}

cohort_status_t cohort_iallgather(cohort_group_t *g, const void *sbuf, void *rbuf, size_t count,
                                  cohort_dtype_t dt, cohort_request_t **req)
{
    return coll_post(g, &COHORT_ARGS(COHORT_COLL_ALLGATHER, sbuf, rbuf, count, dt, 0, 0), req);
}

cohort_status_t cohort_reduce_scatter(cohort_group_t *g, const void *sbuf, void *rbuf, size_t count,
                                      cohort_dtype_t dt, cohort_op_t op)
{
    return coll_run(g, &COHORT_ARGS(COHORT_COLL_REDUCE_SCATTER, sbuf, rbuf, count, dt, op, 0));
}

cohort_status_t cohort_ireduce_scatter(cohort_group_t *g, const void *sbuf, void *rbuf,
                                       size_t count, cohort_dtype_t dt, cohort_op_t op,
                                       cohort_request_t **req)
{
    return coll_post(g, &COHORT_ARGS(COHORT_COLL_REDUCE_SCATTER, sbuf, rbuf, count, dt, op, 0),
                     req);
}

cohort_status_t cohort_alltoall(cohort_group_t *g, const void *sbuf, void *rbuf, size_t count,
                                cohort_dtype_t dt)
{
    return coll_run(g, &COHORT_ARGS(COHORT_COLL_ALLTOALL, sbuf, rbuf, count, dt, 0, 0));
}

cohort_status_t cohort_ialltoall(cohort_group_t *g, const void *sbuf, void *rbuf, size_t count,
                                 cohort_dtype_t dt, cohort_request_t **req)
{
    return coll_post(g, &COHORT_ARGS(COHORT_COLL_ALLTOALL, sbuf, rbuf, count, dt, 0, 0), req);
}
