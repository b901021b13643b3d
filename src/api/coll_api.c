/* The public collective calls: each checks its group, fills the arguments and posts, or posts
 * and waits. */
#include "coll/coll.h"
#include "core/log.h"
#include "group/group.h"

static cohort_status_t coll_run(cohort_group_t *g, const cohort_coll_args_t *args)
{
    if (cohort_group_check(g, "group") != COHORT_OK) {
        return COHORT_ERR_INVALID_ARG;
    }
    return cohort_coll_run(g->comm, args);
}

static cohort_status_t coll_post(cohort_group_t *g, const cohort_coll_args_t *args,
                                 cohort_request_t **req)
{
    if (cohort_group_check(g, "group") != COHORT_OK) {
        return COHORT_ERR_INVALID_ARG;
    }
    return cohort_coll_post(g->comm, args, req);
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
