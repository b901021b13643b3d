#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coll/coll.h"
#include "core/am.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/request.h"
#include "core/time.h"
#include "group/group.h"

cohort_request_t *cohort_request_alloc(cohort_group_t *group, int type, size_t extra)
{
    cohort_request_t *req = calloc(1, sizeof(*req) + extra);

    if (req == NULL) {
        cohort_error("out of memory allocating a request");
        return NULL;
    }
    req->ctx = group->ctx;
    req->group = group;
    req->type = type;
    req->status = COHORT_INPROGRESS;
    req->state = extra ? (void *)(req + 1) : NULL;
    cohort_list_init(&req->link);
    cohort_list_push(&group->requests, &req->group_link);
    return req;
}

void cohort_request_complete(cohort_request_t *req, cohort_status_t status)
{
    if (req->done) {
        return;
    }
    req->done = 1;
    req->status = status;
    if (req->active) {
        cohort_list_del(&req->link);
        req->active = 0;
    }
}

void cohort_request_release(cohort_request_t *req)
{
    if (req->inflight > 0) {
        /* UCX still points into this request: free it from the last completion callback. */
        if (!req->user_freed) {
            req->user_freed = 1;
            cohort_list_push(&req->ctx->zombies, &req->link);
        }
        return;
    }
    if (req->user_freed) {
        cohort_list_del(&req->link); /* from the zombie list */
    }
    if (req->type == COHORT_REQ_COLL) {
        cohort_coll_release(req);
    }
    if (req->group != NULL) {
        cohort_list_del(&req->group_link);
    }
    free(req);
}

void cohort_request_cancel(cohort_request_t *req, cohort_status_t status)
{
    if (req->done && req->inflight == 0) {
        return;
    }
    if (req->type == COHORT_REQ_COLL) {
        cohort_coll_cancel(req, status);
    } else {
        cohort_xfer_cancel(&req->xfer, status);
    }
    cohort_request_complete(req, status);
}

void cohort_request_describe(const cohort_request_t *req, char *buf, size_t len)
{
    const cohort_group_t *g = req->group;
    unsigned long long gid = g ? (unsigned long long)g->gid : 0;

    if (req->type == COHORT_REQ_COLL) {
        cohort_coll_describe(req, buf, len);
        return;
    }
    snprintf(buf, len, "%s group rank %d (world %d) tag %d, %zu bytes, on group 0x%016llx",
             req->type == COHORT_REQ_SEND ? "send to" : "receive from", req->xfer.peer,
             g ? g->members[req->xfer.peer] : -1, req->xfer.tag, req->xfer.len, gid);
}

cohort_status_t cohort_request_wait_internal(cohort_request_t *req)
{
    cohort_context_t *ctx = req->ctx;
    double timeout = ctx->cfg.timeout_s;
    double start = cohort_time_now(), idle_since = start, t;

    while (!req->done) {
        if (cohort_progress(ctx) > 0) {
            idle_since = 0;
            continue;
        }
        if (req->done) {
            break;
        }
        t = cohort_time_now();
        if (idle_since == 0) {
            idle_since = t;
        }
        if (timeout > 0 && t - start > timeout) {
            char what[256];
            cohort_request_describe(req, what, sizeof(what));
            cohort_error("timed out after %.1f s (COHORT_TIMEOUT) waiting for %s", timeout, what);
            return COHORT_ERR_TIMEOUT;
        }
        cohort_progress_idle(ctx, t - idle_since, timeout > 0 ? timeout - (t - start) : 1.0);
    }
    return req->status;
}

cohort_status_t cohort_test(cohort_request_t *req, int *done)
{
    if (req == NULL || done == NULL) {
        cohort_error("cohort_test: %s is NULL", req == NULL ? "req" : "done");
        return COHORT_ERR_INVALID_ARG;
    }
    if (!req->done) {
        cohort_progress(req->ctx);
    }
    *done = req->done;
    return req->done ? req->status : COHORT_OK;
}

cohort_status_t cohort_wait(cohort_request_t *req)
{
    if (req == NULL) {
        cohort_error("cohort_wait: req is NULL");
        return COHORT_ERR_INVALID_ARG;
    }
    return cohort_request_wait_internal(req);
}

void cohort_request_free(cohort_request_t *req)
{
    if (req == NULL || req->user_freed) {
        return;
    }
    if (!req->done) {
        cohort_request_cancel(req, COHORT_ERR_REVOKED);
    }
    cohort_request_release(req);
}
