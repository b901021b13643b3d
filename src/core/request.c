/*
 * Requests: pooled blocks with an ops table. A completion wakes only its own request (the
 * ready list); progress never rescans requests that nothing happened to.
 *
 * Lifetime. A block goes back to the context's pool when the user freed it and no UCX
 * operation points into it any more, so a freed handle still reads as freed (its magic) while
 * the context lives. At finalize, requests the user still holds are cancelled and detached:
 * the block stays allocated, marked, until the user frees it.
 */
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/am.h"
#include "core/comm.h"
#include "core/endpoint.h"
#include "core/guard.h"
#include "core/handle.h"
#include "core/log.h"
#include "core/request.h"
#include "mem/gpu.h"
#include "base/time.h"

cohort_request_t *cohort_request_alloc(cohort_comm_t *comm, const cohort_request_ops_t *ops,
                                       size_t extra)
{
    cohort_context_t *ctx = comm->ctx;
    cohort_req_block_t *b;
    cohort_request_t *req;
    void *block = NULL;
    size_t block_cap = 0;

    if (!cohort_list_empty(&ctx->req_free)) {
        req = cohort_container_of(ctx->req_free.next, cohort_request_t, free_link);
        cohort_list_del(&req->free_link);
        block = req->state_block;
        block_cap = req->state_block_cap;
        b = (cohort_req_block_t *)req;
    } else {
        b = malloc(sizeof(*b));
        if (b == NULL) {
            cohort_error(ctx, "out of memory allocating a request");
            return NULL;
        }
        req = &b->req;
    }
    if (extra > COHORT_REQ_INLINE && extra > block_cap) {
        free(block);
        block = malloc(extra);
        block_cap = block != NULL ? extra : 0;
        if (block == NULL) {
            cohort_error(ctx, "out of memory allocating %zu bytes of request state", extra);
            req->state_block = NULL;
            req->state_block_cap = 0;
            req->magic = COHORT_REQ_FREED;
            cohort_list_push(&ctx->req_free, &req->free_link);
            return NULL;
        }
    }
    memset(req, 0, sizeof(*req));
    req->magic = COHORT_REQ_LIVE;
    req->fork_epoch = ctx->fork_epoch;
    req->ctx = ctx;
    req->comm = comm;
    req->ops = ops;
    req->status = COHORT_INPROGRESS;
    req->state_block = block;
    req->state_block_cap = block_cap;
    req->state = extra > COHORT_REQ_INLINE ? block : (extra > 0 ? b->inline_state : NULL);
    if (extra > 0) {
        memset(req->state, 0, extra);
    }
    cohort_list_init(&req->xfers);
    cohort_list_init(&req->ready_link);
    cohort_list_init(&req->free_link);
    cohort_list_push(&comm->requests, &req->comm_link);
    cohort_list_push(&ctx->requests, &req->ctx_link);
    return req;
}

/* Off the lists of what the next pass progresses (woken, or polled). */
static void cohort_request_unschedule(cohort_request_t *req)
{
    if (req->queued) {
        cohort_list_del(&req->ready_link);
        req->queued = 0;
    }
    if (req->polling) {
        cohort_list_del(&req->poll_link);
        req->polling = 0;
    }
}

void cohort_request_complete(cohort_request_t *req, cohort_status_t status)
{
    if (req->done) {
        return;
    }
    if (req->held) {
        status = req->held_status; /* what it finished with when it was held */
    }
    if (req->readers > 0) {
        /* Another process may be reading one of its sends' buffers: the caller gets them back
         * once it said it is done, or is declared dead (cma.h). */
        if (!req->held) {
            req->held = 1;
            req->held_status = status;
        }
        cohort_request_unschedule(req);
        return;
    }
    req->done = 1;
    req->status = status;
    cohort_request_unschedule(req);
}

void cohort_request_poll(cohort_request_t *req)
{
    if (req->done || req->polling) {
        return;
    }
    req->polling = 1;
    cohort_list_push(&req->ctx->polling, &req->poll_link);
}

cohort_status_t cohort_gpu_ticket_poll(cohort_request_t *req, uint64_t *ticket)
{
    cohort_status_t status;

    if (*ticket == 0) {
        return COHORT_OK;
    }
    status = cohort_gpu_copy_test(req->ctx, *ticket);
    if (status == COHORT_INPROGRESS) {
        cohort_request_poll(req);
        return status;
    }
    *ticket = 0;
    return status;
}

int cohort_request_poll_all(cohort_context_t *ctx)
{
    cohort_list_t todo;
    int n = 0;

    /* Taken off first: a request polled again goes to the next pass. */
    cohort_list_init(&todo);
    cohort_list_splice(&ctx->polling, &todo);
    while (!cohort_list_empty(&todo)) {
        cohort_request_t *req = cohort_container_of(todo.next, cohort_request_t, poll_link);
        cohort_list_del(&req->poll_link);
        req->polling = 0;
        cohort_request_progress(req);
        n += req->done;
    }
    return n;
}

void cohort_request_wake(cohort_request_t *req)
{
    if (req->held) {
        cohort_request_complete(req, req->held_status); /* a reader answered: maybe done now */
        return;
    }
    if (req->done || req->queued || req->ops->progress == NULL) {
        return;
    }
    req->queued = 1;
    cohort_list_push(&req->ctx->ready, &req->ready_link);
}

void cohort_request_progress(cohort_request_t *req)
{
    cohort_status_t status;

    if (req->done || req->held) {
        return;
    }
    status = req->ops->progress(req);
    if (status == COHORT_INPROGRESS) {
        return;
    }
    if (status != COHORT_OK) {
        /* Stop what is still posted, so nothing lands in buffers the caller now owns. */
        cohort_request_cancel(req, status);
        return;
    }
    cohort_request_complete(req, status);
}

void cohort_request_cancel(cohort_request_t *req, cohort_status_t status)
{
    cohort_list_t todo;

    if (req->ops->cancel != NULL && !req->done && !req->held) {
        req->ops->cancel(req, status);
    }
    /* A cancelled send can revoke the communicator, which cancels this request again: work
     * from a list of our own, putting each transfer back before it is cancelled (one UCX still
     * holds stays there). */
    cohort_list_init(&todo);
    cohort_list_splice(&req->xfers, &todo);
    while (!cohort_list_empty(&todo)) {
        cohort_xfer_t *x = cohort_container_of(todo.next, cohort_xfer_t, req_link);
        cohort_list_del(&x->req_link);
        cohort_list_push(&req->xfers, &x->req_link);
        cohort_xfer_cancel(x, status);
    }
    cohort_request_complete(req, status);
}

/* Back to the pool, now that nothing points into the block. */
static void cohort_request_recycle(cohort_request_t *req)
{
    cohort_context_t *ctx = req->ctx;

    if (req->ops->release != NULL) {
        req->ops->release(req);
    }
    cohort_request_unschedule(req);
    if (req->comm != NULL) {
        cohort_list_del(&req->comm_link);
        req->comm = NULL;
    }
    cohort_list_del(&req->ctx_link);
    req->magic = COHORT_REQ_FREED;
    cohort_list_push(&ctx->req_free, &req->free_link);
}

void cohort_request_release(cohort_request_t *req)
{
    req->user_freed = 1;
    if (req->inflight == 0 && req->readers == 0) {
        cohort_request_recycle(req);
    }
    /* else: the last UCX completion (cohort_xfer_ucx_complete) or the last single-copy reader
     * (proto/single_copy.c) recycles it. */
}

int cohort_request_fetches(cohort_context_t *ctx, void (*each)(cohort_xfer_t *x, void *arg),
                           void *arg)
{
    cohort_list_t *rpos, *pos;
    int n = 0;

    for (rpos = ctx->requests.next; rpos != &ctx->requests; rpos = rpos->next) {
        cohort_request_t *req = cohort_container_of(rpos, cohort_request_t, ctx_link);
        if (req->inflight == 0) {
            continue; /* nothing of it in UCX's hands */
        }
        for (pos = req->xfers.next; pos != &req->xfers; pos = pos->next) {
            cohort_xfer_t *x = cohort_container_of(pos, cohort_xfer_t, req_link);
            if (!x->is_send && x->ucx_req != NULL) {
                n++;
                if (each != NULL) {
                    each(x, arg);
                }
            }
        }
    }
    return n;
}

void cohort_request_pool_cleanup(cohort_context_t *ctx)
{
    cohort_list_t *pos, *tmp;

    /* Endpoints are closed: UCX has completed or purged every operation by now. */
    cohort_list_for_each(pos, tmp, &ctx->requests)
    {
        cohort_request_t *req = cohort_container_of(pos, cohort_request_t, ctx_link);
        if (req->ops->release != NULL) {
            req->ops->release(req);
        }
        cohort_list_del(&req->ctx_link);
        if (req->user_freed) {
            free(req->state_block);
            free(req);
            continue;
        }
        req->magic = COHORT_REQ_DETACHED;
        req->detached = 1;
        if (!req->done) {
            /* held for a reader when the context went: over, with what it finished with */
            req->done = 1;
            req->status = req->held ? req->held_status : COHORT_ERR_REVOKED;
        }
        req->inflight = 0;
        req->ctx = NULL;
        req->comm = NULL;
        cohort_list_init(&req->xfers);
    }
    cohort_list_for_each(pos, tmp, &ctx->req_free)
    {
        cohort_request_t *req = cohort_container_of(pos, cohort_request_t, free_link);
        cohort_list_del(&req->free_link);
        free(req->state_block);
        free(req);
    }
}
