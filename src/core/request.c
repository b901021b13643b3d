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
#include "core/progress.h"
#include "core/request.h"
#include "mem/gpu.h"
#include "base/time.h"

#define COHORT_REQ_LIVE     0x5e9a11feu
#define COHORT_REQ_FREED    0xdeadf5eeu
#define COHORT_REQ_DETACHED 0xdeadc0c0u

/* Inline state per block: the small-message algorithms' state fits (recursive doubling ~500 B
 * with its two transfer slots), so a steady stream of small collectives allocates nothing. */
#define COHORT_REQ_INLINE 1024

typedef struct {
    cohort_request_t req;
    alignas(64) unsigned char inline_state[COHORT_REQ_INLINE];
} cohort_req_block_t;

/* How long finalize lets a reader or UCX finish with a request's buffers when COHORT_TIMEOUT
 * is unset (the same as closing endpoints gets): a live peer answers within a round trip of its
 * progress, and finalize must end even when one does not. */
#define COHORT_FINALIZE_LET_GO_S 5.0

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
            char what[512];
            req->ops->describe(req, what, sizeof(what));
            cohort_error(ctx, "timed out after %.1f s (COHORT_TIMEOUT) waiting for %s", timeout,
                         what);
            req->timed_out = 1;
            return COHORT_ERR_TIMEOUT;
        }
        cohort_progress_idle(ctx, t - idle_since, timeout > 0 ? timeout - (t - start) : 1.0);
    }
    return req->status;
}

cohort_status_t cohort_request_publish(cohort_request_t *req, cohort_request_t **out)
{
    req->handle = cohort_handle_new(COHORT_HANDLE_REQUEST, req);
    if (req->handle == 0) {
        cohort_error(req->ctx, "out of memory making a request handle");
        cohort_request_free_internal(req);
        return COHORT_ERR_NO_MEMORY;
    }
    *out = (cohort_request_t *)req->handle;
    return COHORT_OK;
}

/* The request a user's handle names: live, or detached by finalize; NULL otherwise (logged),
 * a fork child's included. Never reads through a stale handle. */
static cohort_request_t *cohort_request_lookup(const cohort_request_t *handle, const char *fn)
{
    char what[64];
    cohort_request_t *req;

    snprintf(what, sizeof(what), "%s: req", fn);
    req = cohort_handle_lookup(handle, COHORT_HANDLE_REQUEST, what);
    return req != NULL && cohort_guard_check_epoch(req->fork_epoch, fn) == COHORT_OK ? req : NULL;
}

/* The same, and its context taken for this thread unless finalize detached it (core/guard.h):
 * give it back with cohort_request_leave. */
static cohort_request_t *cohort_request_enter(const cohort_request_t *handle, const char *fn)
{
    cohort_request_t *req = cohort_request_lookup(handle, fn);

    if (req == NULL || req->detached) {
        return req;
    }
    if (cohort_guard_enter(req->ctx, fn) != COHORT_OK) {
        return NULL;
    }
    /* Looked up before the context was taken: another thread may have freed it meanwhile (the
     * block stays, in the context's pool, or detached by a finalize). */
    return cohort_guard_still_live(req->ctx,
                                   req->magic == COHORT_REQ_LIVE && req->handle == (uintptr_t)handle,
                                   fn, handle)
               ? req
               : NULL;
}

static void cohort_request_leave(cohort_context_t *ctx)
{
    if (ctx != NULL) {
        cohort_guard_leave(ctx);
    }
}

cohort_status_t cohort_test(cohort_request_t *handle, int *done)
{
    cohort_request_t *req = cohort_request_enter(handle, "cohort_test");
    cohort_context_t *ctx;
    cohort_status_t status;

    if (req == NULL) {
        return COHORT_ERR_INVALID_ARG;
    }
    ctx = req->detached ? NULL : req->ctx;
    if (done == NULL) {
        cohort_error(ctx, "cohort_test: done is NULL");
        status = COHORT_ERR_INVALID_ARG;
    } else {
        if (!req->done && !req->detached) {
            cohort_progress(req->ctx);
        }
        *done = req->done;
        status = req->done ? req->status : COHORT_OK;
    }
    cohort_request_leave(ctx);
    return status;
}

cohort_status_t cohort_wait(cohort_request_t *handle)
{
    cohort_request_t *req = cohort_request_enter(handle, "cohort_wait");
    cohort_context_t *ctx;
    cohort_status_t status;

    if (req == NULL) {
        return COHORT_ERR_INVALID_ARG;
    }
    if (req->detached) {
        return req->status;
    }
    ctx = req->ctx;
    /* The wait lets the context go between progress passes (core/guard.h): a free from another
     * thread meanwhile is refused while this one holds the request. */
    req->waiters++;
    status = cohort_request_wait_internal(req);
    req->waiters--;
    cohort_request_leave(ctx);
    return status;
}

cohort_request_t *cohort_request_get(const cohort_request_t *handle, const char *fn)
{
    cohort_request_t *req = cohort_request_lookup(handle, fn);

    if (req == NULL || req->detached) {
        return req;
    }
    return cohort_guard_check(req->ctx, fn) == COHORT_OK ? req : NULL;
}

void cohort_request_free(cohort_request_t *handle)
{
    cohort_request_t *req = cohort_request_enter(handle, "cohort_request_free");
    cohort_context_t *ctx;

    if (req == NULL) {
        return;
    }
    ctx = req->detached ? NULL : req->ctx;
    if (req->waiters > 0) {
        cohort_error(ctx, "cohort_request_free: another thread is waiting on this request "
                          "(cohort_wait); free it once that wait returned");
        cohort_request_leave(ctx);
        return;
    }
    cohort_handle_retire(req->handle);
    req->handle = 0;
    cohort_request_free_internal(req);
    cohort_request_leave(ctx);
}

static int cohort_within(const void *p, size_t n, const void *lo, size_t cap)
{
    uintptr_t a = (uintptr_t)p, b = (uintptr_t)lo;

    return lo != NULL && a >= b && a - b <= cap && n <= cap - (a - b);
}

/* Whether what UCX still reads or writes for @a x lies in the request's own block (the
 * agreement's vectors, a single-copy descriptor): the block outlives the user's free until UCX
 * lets go (cohort_request_release), so nothing of the caller's is touched after it. */
static int cohort_request_ucx_in_block(const cohort_request_t *req, const cohort_xfer_t *x)
{
    size_t n;
    const void *p = req->ctx->proto_ops->payload(x, &n);

    return cohort_within(p, n, req, sizeof(cohort_req_block_t)) ||
           cohort_within(p, n, req->state_block, req->state_block_cap);
}

/* Whether every UCX operation still pointing into @a req works on its block alone. */
static int cohort_request_ucx_inside(const cohort_request_t *req)
{
    const cohort_list_t *pos;

    for (pos = req->xfers.next; pos != &req->xfers; pos = pos->next) {
        const cohort_xfer_t *x = cohort_container_of(pos, cohort_xfer_t, req_link);
        if (x->ucx_req != NULL && !cohort_request_ucx_in_block(req, x)) {
            return 0;
        }
    }
    return 1;
}

/* Whether another process, or UCX on its behalf, may still read or write @a req's buffers:
 * a single-copy reader that has not answered, or a UCX operation on the caller's memory (one
 * on the request's own block alone is left to finish: the block outlives the free). */
static int cohort_request_busy(const cohort_request_t *req)
{
    return req->readers > 0 || (req->inflight > 0 && !cohort_request_ucx_inside(req));
}

/* Whether all that holds @a req's buffers is UCX working with peers declared dead. A
 * rendezvous receive runs on the endpoint UCX made for its sender, which has no error handling
 * of ours, so over shared memory it may never end once the sender died; and a rendezvous send
 * to a dead receiver may stay in UCX (1.13) after its endpoint was closed by force. Either hung
 * a free in peer_death's rndv case with COHORT_CMA=off (1 run in 3). A dead process sends and
 * reads nothing more, and a send's endpoint closed by force has no transport left to read the
 * buffer with. */
static int cohort_request_held_by_dead(cohort_request_t *req)
{
    const cohort_list_t *pos;

    if (req->readers > 0 || req->comm == NULL) {
        return 0;
    }
    for (pos = req->xfers.next; pos != &req->xfers; pos = pos->next) {
        const cohort_xfer_t *x = cohort_container_of(pos, cohort_xfer_t, req_link);
        cohort_peer_t *peer;
        if (x->ucx_req == NULL || cohort_request_ucx_in_block(req, x)) {
            continue;
        }
        if (x->peer < 0) {
            return 0;
        }
        peer = cohort_peer_get(req->ctx, cohort_comm_world_rank(req->comm, x->peer));
        if (peer == NULL || peer->state != COHORT_PEER_FAILED ||
            (x->is_send && peer->ep != NULL)) {
            return 0;
        }
    }
    return 1;
}

/* Passes of progress with nothing to do, once only dead peers' transfers hold a request, after
 * which it is let go: what a dead sender had sent before it died and this rank holds (in its
 * queues, its socket) is written by then, and nothing more comes. */
#define COHORT_DEAD_IDLE_PASSES 8

/* Progress until nobody reads or writes @a req's buffers any more (the reader answered, UCX
 * let go, or the peer was declared dead), at most @a bound seconds (0: no bound). Without a
 * bound, the wait is named in the log once it has lasted COHORT_WATCH_S (10 s when unset),
 * never silent. @return 1 when it is let go of. */
static int cohort_request_let_go(cohort_request_t *req, double bound, const char *fn)
{
    cohort_context_t *ctx = req->ctx;
    double start = cohort_time_now(), idle_since = start, t;
    double say_at = ctx->cfg.watch_s > 0 ? ctx->cfg.watch_s : 10.0;
    int said = 0, dead_idle = 0;

    while (cohort_request_busy(req) && !req->dead_let_go) {
        t = cohort_time_now();
        if (bound > 0 && t - start >= bound) {
            return 0;
        }
        if (!said && bound == 0 && t - start >= say_at) {
            char what[512];
            req->ops->describe(req, what, sizeof(what));
            cohort_warn(ctx, "%s has waited %.0f s for a peer to let go of the request's buffer "
                             "(%s); it waits until that peer answers or is declared dead "
                             "(COHORT_TIMEOUT bounds it)",
                        fn, t - start, what);
            said = 1;
        }
        if (cohort_progress(ctx) > 0) {
            idle_since = t;
            dead_idle = 0;
        } else if (cohort_request_held_by_dead(req) && ++dead_idle >= COHORT_DEAD_IDLE_PASSES) {
            cohort_debug(ctx, "%s: let go of what UCX still holds for peers declared dead", fn);
            req->dead_let_go = 1;
            return 1;
        } else {
            cohort_progress_idle(ctx, t - idle_since, bound > 0 ? bound - (t - start) : 1.0);
        }
    }
    return 1;
}

void cohort_request_free_internal(cohort_request_t *req)
{
    cohort_context_t *ctx;
    cohort_list_t *pos;

    if (req->detached) {
        req->magic = 0;
        free(req->state_block);
        free(req);
        return;
    }
    ctx = req->ctx;
    if (!req->done) {
        /* A point-to-point send tells its receiver (COHORT_MSG_CANCEL, core/cancel.c); anything
         * else revokes its group, and the other members learn why: this rank gave up. */
        cohort_request_cancel(req, req->timed_out ? COHORT_ERR_TIMEOUT : COHORT_ERR_REVOKED);
    }
    /* Done with a transfer still waiting on its staging copy (ctx->copying points into this
     * block): stopped, the copy waited for. One at a time, from the start: a cancel can revoke
     * the group, which reshuffles the request's list. */
    for (pos = req->xfers.next; pos != &req->xfers;) {
        cohort_xfer_t *x = cohort_container_of(pos, cohort_xfer_t, req_link);
        if (x->stage_copy == 0 || x->done) {
            pos = pos->next;
            continue;
        }
        cohort_xfer_cancel(x, COHORT_ERR_REVOKED);
        pos = req->xfers.next;
    }
    /* Free means finished: a process on this node may be reading a send's buffer right now
     * (single copy), or UCX may (a rendezvous the receiver fetches). Progress runs here until
     * the reader has answered the cancel (it stops between two chunks), UCX has let go (the
     * receiver dropped the message, or fetched it whole), or the peer is declared dead:
     * bounded by COHORT_TIMEOUT, never by a fixed time, and never by closing an endpoint,
     * which a live peer would take for this rank's death. */
    if (cohort_request_busy(req) && !cohort_request_let_go(req, ctx->cfg.timeout_s,
                                                           "cohort_request_free")) {
        char what[512];
        req->ops->describe(req, what, sizeof(what));
        cohort_error(ctx, "cohort_request_free: after %.1f s (COHORT_TIMEOUT) a peer has not let "
                          "go of this request's buffer (%s): it must stay as it is until that "
                          "peer calls cohort or dies",
                     ctx->cfg.timeout_s, what);
    }
    cohort_request_release(req);
}

void cohort_request_finalize_all(cohort_context_t *ctx)
{
    cohort_list_t *pos, *tmp;

    cohort_list_for_each(pos, tmp, &ctx->requests)
    {
        cohort_request_t *req = cohort_container_of(pos, cohort_request_t, ctx_link);
        if (!req->done) {
            cohort_request_cancel(req, COHORT_ERR_REVOKED);
        }
    }
    /* Nobody reads or writes a request's buffers once finalize returns: each is waited for as
     * a free waits, with a bound (COHORT_TIMEOUT, else COHORT_FINALIZE_LET_GO_S) for all. */
    double bound = cohort_context_bound(ctx, COHORT_FINALIZE_LET_GO_S), start = cohort_time_now();
    for (;;) {
        cohort_request_t *busy = NULL;
        /* From the start each time: progress may recycle any request of the list. */
        for (pos = ctx->requests.next; pos != &ctx->requests && busy == NULL; pos = pos->next) {
            cohort_request_t *req = cohort_container_of(pos, cohort_request_t, ctx_link);
            busy = cohort_request_busy(req) && !req->dead_let_go ? req : NULL;
        }
        double left = bound - (cohort_time_now() - start);
        if (busy == NULL) {
            break;
        }
        if (left <= 0 || !cohort_request_let_go(busy, left, "cohort_finalize")) {
            cohort_warn(ctx, "finalize: a peer has not let go of a request's buffer after "
                             "%.1f s",
                        bound);
            break;
        }
    }
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
