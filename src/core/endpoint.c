/*
 * The peer table and asynchronous wiring. A peer's address is fetched with the exchange
 * plugin's nonblocking lookup, tested on every progress pass; sends to it wait on its pending
 * list meanwhile. Memory grows with the peers this rank deals with, never with the world.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/card.h"
#include "core/endpoint.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/time.h"

/* Closing endpoints at finalize: how long to let them flush when COHORT_TIMEOUT is unset. A
 * healthy peer acknowledges within milliseconds; one that died is forced closed. */
#define COHORT_CLOSE_WAIT_S 5.0

cohort_peer_t *cohort_peer_get(cohort_context_t *ctx, int rank)
{
    cohort_peer_t *peer = cohort_map_get(&ctx->peers, (uint64_t)rank + 1);

    if (peer != NULL) {
        return peer;
    }
    peer = calloc(1, sizeof(*peer));
    if (peer == NULL) {
        cohort_error(ctx, "out of memory adding peer %d", rank);
        return NULL;
    }
    peer->ctx = ctx;
    peer->rank = rank;
    peer->state = COHORT_PEER_NONE;
    cohort_list_init(&peer->pending);
    cohort_list_init(&peer->ctl_pending);
    cohort_list_init(&peer->link);
    cohort_list_init(&peer->close_link);
    cohort_list_init(&peer->reset_link);
    if (cohort_map_put(&ctx->peers, (uint64_t)rank + 1, peer) != COHORT_OK) {
        cohort_error(ctx, "out of memory adding peer %d", rank);
        free(peer);
        return NULL;
    }
    cohort_list_push(&ctx->peer_list, &peer->all_link);
    return peer;
}

static void cohort_endpoint_error_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    cohort_peer_t *peer = arg;

    /* Whether it said goodbye is decided when the error is applied (cohort_peer_apply_resets). */
    if (peer->ep != ep || peer->state == COHORT_PEER_FAILED) {
        return;
    }
    if (cohort_list_empty(&peer->reset_link)) {
        peer->reset_ep = ep;
        peer->reset = status;
        cohort_list_push(&peer->ctx->resets, &peer->reset_link);
    }
}

/* Bounded: a stream of arrivals must not hold the failure back for long. */
#define COHORT_RESET_DRAIN_PASSES 64

int cohort_peer_apply_resets(cohort_context_t *ctx)
{
    cohort_list_t *pos, *tmp;
    int n = 0;

    for (int i = 0; i < COHORT_RESET_DRAIN_PASSES && ucp_worker_progress(ctx->worker) > 0; i++) {
    }
    cohort_list_for_each(pos, tmp, &ctx->resets)
    {
        cohort_peer_t *peer = cohort_container_of(pos, cohort_peer_t, reset_link);
        cohort_list_del(&peer->reset_link);
        if (peer->ep != peer->reset_ep || peer->state == COHORT_PEER_FAILED) {
            continue; /* closed and wired again since, or failed meanwhile */
        }
        if (peer->state == COHORT_PEER_LEFT) {
            /* It said goodbye first: its side closing is no failure. */
            cohort_debug(ctx, "endpoint to rank %d closed by its finalize (%s)", peer->rank,
                         ucs_status_string(peer->reset));
            continue;
        }
        cohort_peer_fail(peer, cohort_ucs_status(peer->reset), ucs_status_string(peer->reset));
        n++;
    }
    return n;
}

static void cohort_peer_fail_as(cohort_peer_t *peer, cohort_status_t status, const char *why,
                                int tell)
{
    cohort_context_t *ctx = peer->ctx;

    if (status == COHORT_OK || status == COHORT_INPROGRESS) {
        status = COHORT_ERR_PEER_FAILED;
    }
    if (peer->state == COHORT_PEER_LOOKING_UP) {
        cohort_list_del(&peer->link);
    }
    if (peer->state != COHORT_PEER_FAILED) {
        ctx->stat_failed++;
    }
    peer->state = COHORT_PEER_FAILED;
    if (peer->ep != NULL && cohort_list_empty(&peer->close_link) && peer->rank != ctx->rank) {
        /* Its resources go at the next progress pass: a rebuilt job must not keep one
         * endpoint per rank that ever died. */
        cohort_list_push(&ctx->to_close, &peer->close_link);
    }
    peer->error = status;
    /* Quiet when nothing waited on the peer; the transfers that fail say so. */
    cohort_debug(ctx, "peer %d failed: %s", peer->rank, why);
    /* What waits on it, in the order its layers registered (cohort_context_create). */
    for (int i = 0; i < ctx->npeer_obs; i++) {
        ctx->peer_obs[i]->failed(peer, status, why, tell);
    }
}

void cohort_peer_observe(cohort_context_t *ctx, const cohort_peer_observer_t *obs)
{
    assert(ctx->npeer_obs < COHORT_PEER_OBSERVERS);
    ctx->peer_obs[ctx->npeer_obs++] = obs;
}

void cohort_peer_fail(cohort_peer_t *peer, cohort_status_t status, const char *why)
{
    cohort_peer_fail_as(peer, status, why, 1);
}

void cohort_peer_fail_reported(cohort_peer_t *peer, const char *why)
{
    cohort_peer_fail_as(peer, COHORT_ERR_PEER_FAILED, why, 0);
}

static cohort_status_t cohort_peer_connect(cohort_peer_t *peer, const void *addr)
{
    cohort_context_t *ctx = peer->ctx;
    ucp_ep_params_t params;
    ucs_status_t ucs;
    double t = cohort_time_now();

    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                        UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.address = addr;
    params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb = cohort_endpoint_error_cb;
    params.err_handler.arg = peer; /* the callback gets its peer directly */
    ucs = ucp_ep_create(ctx->worker, &params, &peer->ep);
    if (ucs != UCS_OK) {
        peer->ep = NULL;
        cohort_error(ctx, "ucp_ep_create to rank %d failed: %s", peer->rank,
                     ucs_status_string(ucs));
        return cohort_ucs_status(ucs);
    }
    peer->state = COHORT_PEER_WIRED;
    peer->wire_us = (float)((cohort_time_now() - peer->start) * 1e6);
    cohort_debug(ctx, "wired rank %d in %.1f us (address lookup %.1f us, ucp_ep_create %.1f us)",
                 peer->rank, peer->wire_us, (t - peer->start) * 1e6, (cohort_time_now() - t) * 1e6);
    return COHORT_OK;
}

/* The endpoint exists: what waited on it goes out, in the order it was posted. */
static void cohort_peer_flush(cohort_peer_t *peer)
{
    cohort_context_t *ctx = peer->ctx;

    for (int i = 0; i < ctx->npeer_obs && peer->state == COHORT_PEER_WIRED; i++) {
        if (ctx->peer_obs[i]->wired != NULL) {
            ctx->peer_obs[i]->wired(peer);
        }
    }
}

static void cohort_peer_lookup(cohort_peer_t *peer, int pid_only)
{
    cohort_context_t *ctx = peer->ctx;
    cohort_status_t status;

    if (peer->state == COHORT_PEER_LOOKING_UP && !pid_only) {
        peer->pid_only = 0; /* wired when its card arrives, after all */
        return;
    }
    if (peer->state != COHORT_PEER_NONE || (pid_only && peer->pid != 0)) {
        return;
    }
    peer->pid_only = (uint8_t)pid_only;
    peer->start = cohort_time_now();
    if (peer->rank == ctx->rank) {
        /* Our own address is at hand: no lookup for sends to self. */
        peer->pid = (int32_t)getpid();
        if (cohort_peer_connect(peer, ctx->address) != COHORT_OK) {
            cohort_peer_fail(peer, COHORT_ERR_UCX, "cannot connect to self");
        }
        return;
    }
    peer->lookups++;
    ctx->stat_lookups++;
    status = ctx->plugin->lookup_start(ctx->pmix, peer->rank, &peer->lookup);
    if (status != COHORT_OK) {
        cohort_error(ctx, "cannot wire rank %d: its address lookup failed to start (%s)",
                     peer->rank, cohort_strerror(status));
        cohort_peer_fail(peer, status, "address lookup failed");
        return;
    }
    peer->state = COHORT_PEER_LOOKING_UP;
    cohort_list_push(&ctx->looking_up, &peer->link);
}

void cohort_peer_want(cohort_peer_t *peer)
{
    cohort_peer_lookup(peer, 0);
}

void cohort_peer_know(cohort_peer_t *peer)
{
    cohort_peer_lookup(peer, 1);
}

cohort_status_t cohort_peer_pid_check(cohort_peer_t *peer, int32_t pid)
{
    cohort_peer_know(peer);
    if (peer->pid != 0) {
        return peer->pid == pid ? COHORT_OK : COHORT_ERR_MISMATCH;
    }
    if (peer->state == COHORT_PEER_LOOKING_UP) {
        return COHORT_INPROGRESS;
    }
    return peer->state == COHORT_PEER_FAILED ? peer->error : COHORT_ERR_PEER_FAILED;
}

int cohort_peer_progress(cohort_context_t *ctx)
{
    cohort_list_t *pos, *tmp;
    int n = 0;

    cohort_list_for_each(pos, tmp, &ctx->looking_up)
    {
        cohort_peer_t *peer = cohort_container_of(pos, cohort_peer_t, link);
        void *addr = NULL;
        size_t len = 0;
        cohort_status_t status = ctx->plugin->lookup_test(peer->lookup, &addr, &len);

        if (status == COHORT_INPROGRESS) {
            continue;
        }
        n++;
        peer->lookup = NULL;
        cohort_list_del(&peer->link);
        peer->state = COHORT_PEER_NONE;
        if (status == COHORT_OK) {
            const void *ucx_addr = NULL;
            if (cohort_card_read(addr, len, &peer->pid, &ucx_addr) != COHORT_OK) {
                cohort_error(ctx, "cannot wire rank %d: what it published (%zu bytes) is not a "
                                  "cohort card (another version of cohort?)", peer->rank, len);
                status = COHORT_ERR_MISMATCH;
            } else if (!peer->pid_only) {
                status = cohort_peer_connect(peer, ucx_addr);
            }
            free(addr);
        } else {
            cohort_error(ctx, "cannot wire rank %d: its address lookup failed (%s)", peer->rank,
                         cohort_strerror(status));
        }
        if (status != COHORT_OK) {
            cohort_peer_fail(peer, status, "cannot wire it");
            continue;
        }
        if (peer->pid_only) {
            peer->pid_only = 0; /* known, and no endpoint until something is sent to it */
            continue;
        }
        cohort_peer_flush(peer);
    }
    return n;
}

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

static void cohort_peer_closed(void *ucx_req, ucs_status_t ucs, void *user_data)
{
    cohort_context_t *ctx = user_data;

    ctx->closing--;
    ucp_request_free(ucx_req);
}

int cohort_peer_close_failed(cohort_context_t *ctx)
{
    int n = 0;

    while (!cohort_list_empty(&ctx->to_close)) {
        cohort_peer_t *peer = cohort_container_of(ctx->to_close.next, cohort_peer_t, close_link);
        ucp_request_param_t param;

        cohort_list_del(&peer->close_link);
        cohort_list_init(&peer->close_link);
        if (peer->ep == NULL || peer->state != COHORT_PEER_FAILED) {
            continue;
        }
        memset(&param, 0, sizeof(param));
        param.op_attr_mask =
            UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
        param.flags = UCP_EP_CLOSE_FLAG_FORCE;
        param.cb.send = cohort_peer_closed;
        param.user_data = ctx;
        /* A request it returns frees itself in the callback; finalize waits for it (closing). */
        ctx->closing += UCS_PTR_IS_PTR(ucp_ep_close_nbx(peer->ep, &param));
        peer->ep = NULL;
        n++;
    }
    return n;
}

void cohort_peer_force_close(cohort_peer_t *peer, const char *why, double bound)
{
    void *r;

    if (peer->ep == NULL) {
        return;
    }
    cohort_warn(peer->ctx, "closing the endpoint to rank %d by force: %s", peer->rank, why);
    /* NONE first: UCX may cancel what is in flight on it from inside the close call. */
    if (peer->state == COHORT_PEER_WIRED) {
        peer->state = COHORT_PEER_NONE;
    }
    r = cohort_peer_close_start(peer, 1);
    cohort_peer_close_wait(peer->ctx, &r, 1, bound);
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

void cohort_endpoint_close_all(cohort_context_t *ctx)
{
    cohort_list_t *pos, *tmp;
    double start = cohort_time_now();
    void **reqs;
    int n = 0, busy = 0;

    /* Failed endpoints not closed yet are closed below with the rest. */
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
        force = peer->state != COHORT_PEER_WIRED || peer->inflight > 0;
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
}

void cohort_peer_table_cleanup(cohort_context_t *ctx)
{
    cohort_list_t *pos, *tmp;

    cohort_list_for_each(pos, tmp, &ctx->peer_list)
    {
        cohort_peer_t *peer = cohort_container_of(pos, cohort_peer_t, all_link);
        cohort_list_del(&peer->all_link);
        for (int i = 0; i < ctx->npeer_obs; i++) {
            if (ctx->peer_obs[i]->forget != NULL) {
                ctx->peer_obs[i]->forget(peer);
            }
        }
        free(peer);
    }
    cohort_map_cleanup(&ctx->peers);
}

static int cohort_int_cmp(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

static int cohort_peer_is_wired(const cohort_peer_t *peer)
{
    return peer->ep != NULL;
}

static int cohort_peer_is_failed(const cohort_peer_t *peer)
{
    return peer->state == COHORT_PEER_FAILED;
}

/* The world ranks of the peers @a pick selects, ascending. */
static int cohort_peer_ranks(const cohort_context_t *ctx, int (*pick)(const cohort_peer_t *),
                             int *world_ranks, int max)
{
    const cohort_list_t *pos;
    int n = 0, *all;

    for (pos = ctx->peer_list.next; pos != &ctx->peer_list; pos = pos->next) {
        n += pick(cohort_container_of(pos, cohort_peer_t, all_link));
    }
    if (world_ranks == NULL || max <= 0 || n == 0) {
        return n;
    }
    all = malloc((size_t)n * sizeof(int));
    if (all == NULL) {
        return n;
    }
    n = 0;
    for (pos = ctx->peer_list.next; pos != &ctx->peer_list; pos = pos->next) {
        const cohort_peer_t *peer = cohort_container_of(pos, cohort_peer_t, all_link);
        if (pick(peer)) {
            all[n++] = peer->rank;
        }
    }
    qsort(all, (size_t)n, sizeof(int), cohort_int_cmp);
    memcpy(world_ranks, all, (size_t)(n < max ? n : max) * sizeof(int));
    free(all);
    return n;
}

int cohort_wired_peers(const cohort_context_t *ctx, int *world_ranks, int max)
{
    if (cohort_context_check(ctx, "cohort_wired_peers: ctx") != COHORT_OK) {
        return 0;
    }
    return cohort_peer_ranks(ctx, cohort_peer_is_wired, world_ranks, max);
}

int cohort_failed_ranks(const cohort_context_t *ctx, int *world_ranks, int max)
{
    if (cohort_context_check(ctx, "cohort_failed_ranks: ctx") != COHORT_OK) {
        return 0;
    }
    return cohort_peer_ranks(ctx, cohort_peer_is_failed, world_ranks, max);
}

/* Pull "tl/dev" names out of ucp_ep_print_info's lane lines. */
static void cohort_endpoint_transports(ucp_ep_h ep, char *out, size_t outlen)
{
    char *text = NULL, *line, *save = NULL;
    size_t textlen = 0, used = 0;
    FILE *f = open_memstream(&text, &textlen);

    out[0] = '\0';
    if (f == NULL) {
        return;
    }
    ucp_ep_print_info(ep, f);
    fclose(f);
    for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        char *lane = strstr(line, "lane[");
        char *colon, *end, name[64];

        if (lane == NULL || (colon = strchr(lane, ':')) == NULL) {
            continue;
        }
        /* "lane[0]:  1:sysv/memory.0 md[1] ..." -> "sysv/memory" */
        colon++;
        while (*colon == ' ') {
            colon++;
        }
        while (*colon >= '0' && *colon <= '9') {
            colon++;
        }
        if (*colon == ':') {
            colon++;
        }
        end = colon;
        while (*end != '\0' && *end != ' ' && *end != '.' && end - colon < 63) {
            end++;
        }
        snprintf(name, sizeof(name), "%.*s", (int)(end - colon), colon);
        if (name[0] == '\0' || strstr(out, name) != NULL) {
            continue;
        }
        used += (size_t)snprintf(out + used, used < outlen ? outlen - used : 0, "%s%s",
                                 used ? " " : "", name);
        if (used >= outlen) {
            break;
        }
    }
    free(text);
}

int cohort_peer_same_node(cohort_peer_t *peer)
{
    cohort_context_t *ctx = peer->ctx;
    int same = 1;

    if (peer->local == 0) {
        if (ctx->plugin->node_info != NULL &&
            ctx->plugin->node_info(ctx->pmix, peer->rank, &same, NULL, NULL, 0) != COHORT_OK) {
            same = 0;
        }
        peer->local = same ? 1 : -1;
    }
    return peer->local > 0;
}

cohort_status_t cohort_node_info(const cohort_context_t *ctx, int world_rank,
                                 cohort_node_info_t *info)
{
    cohort_status_t status = COHORT_OK;

    if (cohort_context_check(ctx, "cohort_node_info: ctx") != COHORT_OK) {
        return COHORT_ERR_INVALID_ARG;
    }
    if (info == NULL || world_rank < 0 || world_rank >= ctx->size) {
        cohort_error(ctx, "cohort_node_info: %s",
                     info == NULL ? "info is NULL" : "rank out of range");
        return COHORT_ERR_INVALID_ARG;
    }
    info->world_rank = world_rank;
    if (ctx->plugin->node_info == NULL) {
        info->same_node = 1;
        info->node_id = 0;
        info->hostname[0] = '\0';
    } else {
        status = ctx->plugin->node_info(ctx->pmix, world_rank, &info->same_node, &info->node_id,
                                        info->hostname, sizeof(info->hostname));
    }
    return status;
}

cohort_status_t cohort_peer_info(const cohort_context_t *ctx, int world_rank,
                                 cohort_peer_info_t *info)
{
    const cohort_peer_t *peer;
    cohort_node_info_t node;

    if (cohort_context_check(ctx, "cohort_peer_info: ctx") != COHORT_OK) {
        return COHORT_ERR_INVALID_ARG;
    }
    peer = cohort_map_get(&ctx->peers, (uint64_t)world_rank + 1);
    if (info == NULL || world_rank < 0 || world_rank >= ctx->size || peer == NULL ||
        peer->ep == NULL) {
        cohort_error(ctx, "cohort_peer_info: no endpoint to rank %d", world_rank);
        return COHORT_ERR_INVALID_ARG;
    }
    info->world_rank = world_rank;
    info->same_node = cohort_node_info(ctx, world_rank, &node) == COHORT_OK && node.same_node;
    info->wire_us = peer->wire_us;
    info->pmix_lookups = peer->lookups;
    cohort_endpoint_transports(peer->ep, info->transports, sizeof(info->transports));
    return COHORT_OK;
}

cohort_status_t cohort_stats(const cohort_context_t *ctx, cohort_stats_t *stats)
{
    if (cohort_context_check(ctx, "cohort_stats: ctx") != COHORT_OK) {
        return COHORT_ERR_INVALID_ARG;
    }
    if (stats == NULL) {
        cohort_error(ctx, "cohort_stats: stats is NULL");
        return COHORT_ERR_INVALID_ARG;
    }
    stats->groups_created = ctx->stat_groups;
    stats->pmix_lookups = ctx->stat_lookups;
    stats->endpoints = (uint64_t)cohort_wired_peers(ctx, NULL, 0);
    stats->messages_sent = ctx->stat_msgs;
    stats->messages_dropped = ctx->orphans_dropped;
    stats->messages_rejected = ctx->stat_rejected;
    stats->peers_failed = ctx->stat_failed;
    stats->single_copies = ctx->stat_cma;
    stats->single_copy_bytes = ctx->stat_cma_bytes;
    stats->cuda_ipc_opens = ctx->stat_ipc_opens;
    stats->cuda_ipc_reuses = ctx->stat_ipc_reuses;
    stats->cuda_staged_calls = ctx->stat_stage_calls;
    stats->cuda_staged_xfers = ctx->stat_stage_xfers;
    stats->cuda_ipc_calls = ctx->stat_ipc_calls;
    stats->cuda_ipc_votes = ctx->stat_ipc_votes;
    stats->pmix_plugin = ctx->singleton ? "singleton" : ctx->plugin->name;
    stats->progress = cohort_progress_mode_name(ctx->cfg.progress);
    return COHORT_OK;
}
