/*
 * Waiting for requests and letting go of them: cohort_wait, cohort_test, cohort_request_free and
 * finalize's wait for every request, with the handle checks they share. These are the engine's
 * waits, so they sit above progress (core/progress.h) and above the transfers they cancel;
 * request.c below them is the pool and the ready list, which progress itself uses.
 *
 * Free means finished: a block is not recycled while another process or UCX may still read or
 * write the caller's buffers (the let-go below), bounded by COHORT_TIMEOUT, never by a fixed time.
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

/* How long finalize lets a reader or UCX finish with a request's buffers when COHORT_TIMEOUT
 * is unset (the same as closing endpoints gets): a live peer answers within a round trip of its
 * progress, and finalize must end even when one does not. */
#define COHORT_FINALIZE_LET_GO_S 5.0

/* A point-to-point receive that failed because its peer finalized (am.c): said now, once, as
 * the program takes its status. */
static void cohort_request_say_left(cohort_request_t *req)
{
    if (!req->peer_left || !req->done) {
        return;
    }
    req->peer_left = 0;
    if (req->comm == NULL) {
        return; /* its group was freed since: the wait says REVOKED's story, not this one */
    }
    cohort_am_say_recv_failed(req->ctx, COHORT_LOG_ERROR, req->comm, req->xfer.peer,
                              "it finalized first");
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
    cohort_request_say_left(req);
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
        if (req->done && !req->detached) {
            cohort_request_say_left(req);
        }
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
