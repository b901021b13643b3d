#include <stdlib.h>
#include <string.h>
#include "coll/coll.h"
#include "core/am.h"
#include "core/context.h"
#include "core/log.h"
#include "core/progress.h"
#include "group/group.h"
#include "reduce/reduce.h"

cohort_status_t cohort_coll_send(cohort_request_t *req, cohort_xfer_t *x, int peer, int step,
                                 const void *buf, size_t len)
{
    cohort_coll_base_t *b = cohort_coll_base(req);

    b->step = step;
    return cohort_xfer_send(req, x, peer, COHORT_MSG_COLL, b->seq, step, b->fp, buf, len);
}

cohort_status_t cohort_coll_recv(cohort_request_t *req, cohort_xfer_t *x, int peer, int step,
                                 void *buf, size_t len)
{
    cohort_coll_base_t *b = cohort_coll_base(req);

    b->step = step;
    return cohort_xfer_recv(req, x, peer, COHORT_MSG_COLL, b->seq, step, b->fp, buf, len);
}

cohort_status_t cohort_coll_xfers_status(const cohort_xfer_t *xs, int n)
{
    for (int i = 0; i < n; i++) {
        if (!xs[i].done) {
            return COHORT_INPROGRESS;
        }
    }
    for (int i = 0; i < n; i++) {
        if (xs[i].status != COHORT_OK) {
            return xs[i].status;
        }
    }
    return COHORT_OK;
}

/* Same on every member that called the same collective with the same arguments. */
static uint32_t cohort_coll_fingerprint(const cohort_coll_args_t *a)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    uint64_t parts[5] = {(uint64_t)a->coll, (uint64_t)a->dt, (uint64_t)a->op, (uint64_t)a->count,
                         (uint64_t)(int64_t)a->root};

    for (int i = 0; i < 5; i++) {
        h ^= parts[i];
        h *= 0x100000001b3ULL;
        h ^= h >> 29;
    }
    return (uint32_t)(h ^ (h >> 32));
}

static int cohort_coll_has_op(cohort_coll_type_t c)
{
    return c == COHORT_COLL_REDUCE || c == COHORT_COLL_ALLREDUCE || c == COHORT_COLL_REDUCE_SCATTER;
}

static int cohort_coll_has_root(cohort_coll_type_t c)
{
    return c == COHORT_COLL_BCAST || c == COHORT_COLL_REDUCE;
}

static cohort_status_t cohort_coll_validate(cohort_group_t *g, cohort_coll_args_t *a)
{
    const char *name = cohort_coll_names[a->coll];
    cohort_status_t status;

    if (a->coll == COHORT_COLL_BARRIER) {
        return COHORT_OK;
    }
    a->esize = cohort_dtype_size(a->dt);
    if (a->esize == 0) {
        cohort_error("cohort_%s: unknown dtype %d", name, (int)a->dt);
        return COHORT_ERR_INVALID_ARG;
    }
    if (cohort_coll_has_op(a->coll)) {
        status = cohort_reduce_check(a->dt, a->op);
        if (status != COHORT_OK) {
            cohort_error("cohort_%s: op %d (%s) is not valid for dtype %s", name, (int)a->op,
                         cohort_op_name(a->op), cohort_dtype_name(a->dt));
            return status;
        }
    }
    if (cohort_coll_has_root(a->coll) && (a->root < 0 || a->root >= g->size)) {
        cohort_error("cohort_%s: root %d is out of range for a group of %d", name, a->root,
                     g->size);
        return COHORT_ERR_INVALID_ARG;
    }
    if (a->count > 0) {
        int rbuf_needed = a->coll != COHORT_COLL_REDUCE || a->root == g->rank;
        if (a->sbuf == NULL && a->coll != COHORT_COLL_BCAST) {
            cohort_error("cohort_%s: sbuf is NULL with count %zu", name, a->count);
            return COHORT_ERR_INVALID_ARG;
        }
        if (a->rbuf == NULL && rbuf_needed) {
            cohort_error("cohort_%s: %s is NULL with count %zu", name,
                         a->coll == COHORT_COLL_BCAST ? "buf" : "rbuf", a->count);
            return COHORT_ERR_INVALID_ARG;
        }
        if (a->sbuf == COHORT_IN_PLACE && a->coll == COHORT_COLL_REDUCE && a->root != g->rank) {
            cohort_error("cohort_reduce: COHORT_IN_PLACE is valid at the root only");
            return COHORT_ERR_INVALID_ARG;
        }
    }
    if (a->count > SIZE_MAX / a->esize / (size_t)g->size) {
        cohort_error("cohort_%s: count %zu overflows", name, a->count);
        return COHORT_ERR_INVALID_ARG;
    }
    return COHORT_OK;
}

cohort_status_t cohort_coll_post(cohort_group_t *g, const cohort_coll_args_t *args,
                                 cohort_request_t **req_p)
{
    const cohort_coll_algo_t *algo;
    cohort_coll_args_t a = *args;
    cohort_request_t *req;
    cohort_coll_base_t *b;
    cohort_status_t status;

    status = cohort_group_check(g, "group");
    if (status != COHORT_OK) {
        return status;
    }
    if (req_p == NULL) {
        cohort_error("cohort_i%s: req is NULL", cohort_coll_names[a.coll]);
        return COHORT_ERR_INVALID_ARG;
    }
    if (g->revoked) {
        return COHORT_ERR_REVOKED;
    }
    status = cohort_coll_validate(g, &a);
    if (status != COHORT_OK) {
        return status;
    }
    algo = cohort_coll_select(&g->ctx->cfg, &a, g->size);
    if (algo == NULL) {
        cohort_error("cohort_%s: no algorithm available", cohort_coll_names[a.coll]);
        return COHORT_ERR_UNSUPPORTED;
    }
    req = cohort_request_alloc(g, COHORT_REQ_COLL, algo->state_size(&a, g->size));
    if (req == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    req->algo = algo;
    b = cohort_coll_base(req);
    b->args = a;
    /* Every member numbers its collectives on a group alike, so (seq, step) names one
     * message exactly; the number is spent even by a collective that fails to start. */
    b->seq = g->coll_seq++;
    b->fp = cohort_coll_fingerprint(&a);
    status = algo->start(req);
    if (status != COHORT_OK) {
        cohort_request_cancel(req, status);
        cohort_request_release(req);
        return status;
    }
    cohort_progress_activate(req);
    cohort_coll_progress(req);
    *req_p = req;
    return COHORT_OK;
}

cohort_status_t cohort_coll_run(cohort_group_t *g, const cohort_coll_args_t *args)
{
    cohort_request_t *req = NULL;
    cohort_status_t status = cohort_coll_post(g, args, &req);

    if (status != COHORT_OK) {
        return status;
    }
    status = cohort_request_wait_internal(req);
    cohort_request_free(req);
    return status;
}

int cohort_coll_progress(cohort_request_t *req)
{
    cohort_status_t status;

    if (req->done) {
        return 0;
    }
    status = req->algo->progress(req);
    if (status == COHORT_INPROGRESS) {
        return 0;
    }
    if (status != COHORT_OK) {
        /* Stop what is still posted, so nothing lands in buffers the caller now owns. */
        cohort_coll_cancel(req, status);
    }
    cohort_request_complete(req, status);
    return 1;
}

void cohort_coll_cancel(cohort_request_t *req, cohort_status_t status)
{
    cohort_coll_base_t *b = cohort_coll_base(req);

    for (int i = 0; i < b->nxfers; i++) {
        cohort_xfer_t *x = &b->xfers[i];
        if (x->req == req && !x->done) {
            cohort_xfer_cancel(x, status);
        }
    }
}

void cohort_coll_release(cohort_request_t *req)
{
    /* The state itself lives in the request's allocation; only scratch needs freeing. */
    if (req->algo != NULL && req->algo->cleanup != NULL) {
        req->algo->cleanup(req);
    }
}

void cohort_coll_describe(const cohort_request_t *req, char *buf, size_t len)
{
    const cohort_coll_base_t *b = (const cohort_coll_base_t *)req->state;
    const cohort_group_t *g = req->group;
    int peer = -1;

    for (int i = 0; i < b->nxfers; i++) {
        const cohort_xfer_t *x = &b->xfers[i];
        if (x->req == req && !x->done) {
            peer = x->peer;
            break;
        }
    }
    snprintf(buf, len,
             "%s (%s, collective #%u) on group 0x%016llx, step %d, peer group rank %d "
             "(world %d)",
             cohort_coll_names[b->args.coll], req->algo->name, b->seq,
             (unsigned long long)(g ? g->gid : 0), b->step, peer,
             g && peer >= 0 ? g->members[peer] : -1);
}
