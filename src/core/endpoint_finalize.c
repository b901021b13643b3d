/*
 * Finalize's close of every endpoint: a goodbye to each wired peer (and to peers that only sent
 * to us, wired for it), then each endpoint closed and waited for, within bounds. Above wiring,
 * closing and requests, and called only by the context's destruction: its waits progress the
 * worker and sleep as a wait does (core/progress.h), which nothing below it may.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/endpoint.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/request.h"
#include "base/time.h"

/* Closing endpoints at finalize: how long to let them flush when COHORT_TIMEOUT is unset. A
 * healthy peer acknowledges within milliseconds; one that died is forced closed. */
#define COHORT_CLOSE_WAIT_S 5.0

static void *cohort_peer_close_start(cohort_peer_t *peer, int force)
{
    ucp_request_param_t param;
    void *r;

    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    r = ucp_ep_close_nbx(peer->ep, &param);
    peer->ep = NULL;
    return UCS_PTR_IS_PTR(r) ? r : NULL;
}

/* Progress until every close request is done or @a bound passes; politely, not spinning. */
static void cohort_peer_close_wait(cohort_context_t *ctx, void **reqs, int n, double bound)
{
    double start = cohort_time_now(), idle_since = start, t;
    int left = n;

    while (left > 0 && (t = cohort_time_now()) - start < bound) {
        left = 0;
        for (int i = 0; i < n; i++) {
            if (reqs[i] != NULL && ucp_request_check_status(reqs[i]) != UCS_INPROGRESS) {
                ucp_request_free(reqs[i]);
                reqs[i] = NULL;
            }
            left += reqs[i] != NULL;
        }
        if (left == 0) {
            break;
        }
        if (ucp_worker_progress(ctx->worker) > 0) {
            idle_since = t;
        } else {
            cohort_progress_idle(ctx, t - idle_since, bound - (t - start));
        }
    }
    for (int i = 0; i < n; i++) {
        if (reqs[i] != NULL) {
            cohort_warn(ctx, "closing an endpoint did not finish in %.1f s", bound);
            ucp_request_free(reqs[i]);
        }
    }
}

/* Sends handed to UCX that nobody will take (cancelled, to a receiver that never asks) keep an
 * endpoint from flushing: let them finish for a moment, then close those endpoints by force. */
#define COHORT_CLOSE_DRAIN_S 0.2
/* How long finalize may spend wiring peers that only sent to us, to say goodbye. */
#define COHORT_BYE_WIRE_S 2.0

/* Peers that sent to us but that we never sent to hold an endpoint to us that closing ours
 * does not tell about: wire them now, so that they too get our goodbye. Bounded; a walk over
 * the peers this rank dealt with, never over the world. */
static void cohort_endpoint_wire_listeners(cohort_context_t *ctx)
{
    double start = cohort_time_now(), bound = cohort_context_bound(ctx, COHORT_BYE_WIRE_S);
    cohort_list_t *pos, *tmp;

    if (bound > COHORT_BYE_WIRE_S) {
        bound = COHORT_BYE_WIRE_S;
    }
    cohort_list_for_each(pos, tmp, &ctx->peer_list)
    {
        cohort_peer_t *peer = cohort_container_of(pos, cohort_peer_t, all_link);
        if (peer->heard && peer->state == COHORT_PEER_NONE && peer->rank != ctx->rank) {
            cohort_peer_want(peer);
        }
    }
    while (!cohort_list_empty(&ctx->looking_up) && cohort_time_now() - start < bound) {
        ucp_worker_progress(ctx->worker);
        cohort_peer_progress(ctx);
    }
}

/* A failed peer's endpoint closed by force earlier (cohort_peer_close_failed) is still in the
 * worker until UCX finishes the close: destroying the worker before then meets the requests
 * UCX still keeps on it (an active-message rendezvous fetch it cannot cancel), which Debian's
 * UCX asserts on (ucp_ep.c:437, proto_reqs not empty; seen at finalize in
 * tests/mpi/peer_death's rndv case under load). */
static void cohort_endpoint_wait_closing(cohort_context_t *ctx, double start)
{
    double bound = cohort_context_bound(ctx, COHORT_CLOSE_WAIT_S), idle_since = start, t;

    while (ctx->closing > 0 && (t = cohort_time_now()) - start < bound) {
        if (ucp_worker_progress(ctx->worker) > 0) {
            idle_since = t;
        } else {
            cohort_progress_idle(ctx, t - idle_since, bound - (t - start));
        }
    }
    if (ctx->closing > 0) {
        cohort_warn(ctx, "finalize: %d endpoints of failed peers still closing after %.1f s",
                    ctx->closing, bound);
    }
}

static void cohort_peer_bye_done(void *ucx_req, ucs_status_t ucs, void *user_data)
{
    cohort_peer_t *peer = user_data;

    peer->inflight--;
    ucp_request_free(ucx_req);
}

/* Finalize: tell a wired peer we leave (nothing of ours follows). */
static void cohort_peer_send_bye(cohort_context_t *ctx, cohort_peer_t *peer)
{
    uint8_t *hdr_buf = ctx->bye_hdr;
    cohort_am_hdr_t hdr;
    ucp_request_param_t param;
    void *r;

    memset(&hdr, 0, sizeof(hdr));
    hdr.kind = COHORT_MSG_BYE;
    hdr.src = ctx->rank;
    hdr.wsrc = ctx->rank;
    /* Every goodbye carries the same header: one copy, which UCX may read later. */
    cohort_am_hdr_encode(&hdr, hdr_buf);
    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send = cohort_peer_bye_done;
    param.user_data = peer;
    r = ucp_am_send_nbx(peer->ep, COHORT_AM_ID, hdr_buf, COHORT_AM_HDR_BYTES, NULL, 0, &param);
    if (UCS_PTR_IS_PTR(r)) {
        peer->inflight++;
    }
}

/* How long finalize lets the worker settle before it is destroyed, at most, and how many
 * passes in a row with nothing to do count as settled. */
#define COHORT_SETTLE_S    0.5
#define COHORT_SETTLE_IDLE 10

/* The last passes before the worker goes: endpoints UCX made itself for peers that wired this
 * rank (over tcp, while this rank did not progress: a member asleep in tests/mpi/absent) may
 * still hold wireup replies waiting for their connection. Debian's UCX 1.13 asserts on such a
 * reply when ucp_worker_destroy purges it ('ucp_request.c:684 Assertion ... wireup.type',
 * removed in UCX by openucx/ucx#8175) and aborts the process. A few passes send them, or fail
 * their endpoint, which UCX then purges without asserting. Bounded, and ended by a run of idle
 * passes (about 10 ms where nothing is left). */
static void cohort_endpoint_settle(cohort_context_t *ctx)
{
    double start = cohort_time_now();
    int idle = 0;

    while (idle < COHORT_SETTLE_IDLE && cohort_time_now() - start < COHORT_SETTLE_S) {
        if (ucp_worker_progress(ctx->worker) > 0) {
            idle = 0;
        } else {
            idle++;
            usleep(1000);
        }
    }
}

void cohort_endpoint_close_all(cohort_context_t *ctx)
{
    cohort_list_t *pos, *tmp;
    double start = cohort_time_now();
    void **reqs;
    int n = 0, busy = 0, fetching;

    /* Failed endpoints not closed yet are closed below with the rest; those a live peer's lost
     * connection left go now (not on the peer's ep any more). */
    cohort_list_for_each(pos, tmp, &ctx->peer_list)
    {
        cohort_peer_close_dropped(cohort_container_of(pos, cohort_peer_t, all_link));
    }
    cohort_list_init(&ctx->to_close);
    cohort_endpoint_wire_listeners(ctx);
    cohort_list_for_each(pos, tmp, &ctx->peer_list)
    {
        cohort_peer_t *peer = cohort_container_of(pos, cohort_peer_t, all_link);
        if (peer->state == COHORT_PEER_LOOKING_UP) {
            /* The plugin frees an unanswered lookup when it finalizes. */
            cohort_list_del(&peer->link);
            peer->state = COHORT_PEER_NONE;
        }
        if (peer->ep != NULL) {
            n++;
            if (peer->state == COHORT_PEER_WIRED && peer->rank != ctx->rank) {
                cohort_peer_send_bye(ctx, peer);
            }
        }
    }
    if (n == 0) {
        cohort_endpoint_wait_closing(ctx, cohort_time_now());
        cohort_endpoint_settle(ctx);
        return;
    }
    do {
        busy = 0;
        ucp_worker_progress(ctx->worker);
        cohort_list_for_each(pos, tmp, &ctx->peer_list)
        {
            cohort_peer_t *peer = cohort_container_of(pos, cohort_peer_t, all_link);
            busy += peer->inflight > 0;
        }
    } while (busy > 0 && cohort_time_now() - start < COHORT_CLOSE_DRAIN_S);

    fetching = cohort_request_fetches(ctx, NULL, NULL) > 0;
    reqs = calloc((size_t)n, sizeof(*reqs));
    n = 0;
    cohort_list_for_each(pos, tmp, &ctx->peer_list)
    {
        cohort_peer_t *peer = cohort_container_of(pos, cohort_peer_t, all_link);
        int force;
        void *r;

        if (peer->ep == NULL) {
            continue;
        }
        /* A rendezvous fetch still running may be on this endpoint (UCX pairs ours with the
         * one a sender's message came on): a forced close takes it off, a flush would wait
         * for a sender that may be dead. */
        force = peer->state != COHORT_PEER_WIRED || peer->inflight > 0 || fetching;
        r = cohort_peer_close_start(peer, force);
        if (reqs != NULL) {
            reqs[n++] = r;
        } else if (r != NULL) {
            cohort_peer_close_wait(ctx, &r, 1, cohort_context_bound(ctx, COHORT_CLOSE_WAIT_S));
        }
    }
    if (reqs != NULL) {
        cohort_peer_close_wait(ctx, reqs, n, cohort_context_bound(ctx, COHORT_CLOSE_WAIT_S));
        free(reqs);
    }
    cohort_endpoint_wait_closing(ctx, cohort_time_now());
    cohort_endpoint_settle(ctx);
}
