/*
 * The peer table and asynchronous wiring. A peer's address is fetched with the exchange
 * plugin's nonblocking lookup, tested on every progress pass; sends to it wait on its pending
 * list meanwhile. Memory grows with the peers this rank deals with, never with the world.
 * Closing is endpoint_close.c's job (finalize's, endpoint_finalize.c's), the queries
 * peer_info.c's. Wiring calls nothing above it by name: what waits on a peer hears of it
 * through the peer observers (context.h) its layers registered.
 */
#define _GNU_SOURCE /* ppoll */
#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/address_card.h"
#include "core/endpoint.h"
#include "core/log.h"
#include "base/time.h"

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
    peer->arena.fd = -1; /* until its card says */
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

/* Asked once per peer and kept: wiring decides by it whether a peer's pid can be checked
 * (below), the protocols whether a single copy may be tried. It lives here, with the peer's
 * other states, so that wiring needs nothing of the readers in peer_info.c. */
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

void cohort_peer_left(cohort_peer_t *peer, const char *how)
{
    cohort_context_t *ctx = peer->ctx;

    cohort_debug(ctx, "rank %d finalized (%s)", peer->rank, how);
    if (peer->state == COHORT_PEER_LOOKING_UP) {
        cohort_list_del(&peer->link);
    }
    if (peer->state != COHORT_PEER_FAILED) {
        peer->state = COHORT_PEER_LEFT;
    }
    /* the receives posted from it fail (am.c's observer): nothing more comes */
    for (int i = 0; i < ctx->npeer_obs; i++) {
        if (ctx->peer_obs[i]->left != NULL) {
            ctx->peer_obs[i]->left(peer, "it finalized first");
        }
    }
}

/* A peer that this rank reached only through a group's shared segment gets no goodbye message
 * from it at its finalize (it never wired us), so its exit shows here as an endpoint error,
 * or as an endpoint that cannot be made, when this rank wired it just to watch it. Its mark in
 * a segment we still share says it finalized (coll/shm_seg.c). Nothing may be waiting to go
 * to it: a send to a rank that finalized is that send's failure, as before. */
static int cohort_peer_finalized(cohort_peer_t *peer)
{
    cohort_context_t *ctx = peer->ctx;

    if (!cohort_list_empty(&peer->pending)) {
        return 0;
    }
    /* the communicators' observer reads the segments' marks (comm.c) */
    for (int i = 0; i < ctx->npeer_obs; i++) {
        if (ctx->peer_obs[i]->finalized != NULL && ctx->peer_obs[i]->finalized(peer)) {
            return 1;
        }
    }
    return 0;
}

/* How long a live peer's connections may go on failing before it counts as failed all the
 * same, and how long a peer on another node has to take a new connection, when COHORT_TIMEOUT
 * is unset: a process that lives but whose cohort is gone (a context finalized without a
 * goodbye to us) must not keep a wait on it going for ever, and a dead host must be found. */
#define COHORT_RESET_GRACE_S 10.0

/* Process @a pid's state letter and start time (clock ticks after boot, field 22 of
 * /proc/PID/stat). @return 0 when it is not there. */
static int cohort_pid_stat(int32_t pid, char *state, unsigned long long *start)
{
    char path[64], line[1024], *p;
    FILE *f;
    int ok = 0;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }
    /* "pid (comm) S f4 ... f22": the command may hold spaces and parentheses, so the fields are
     * counted from the last ')'. */
    if (fgets(line, sizeof(line), f) != NULL && (p = strrchr(line, ')')) != NULL) {
        ok = sscanf(p + 1,
                    " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d "
                    "%llu",
                    state, start) == 2;
    }
    fclose(f);
    return ok;
}

/* 1: its process is alive; 0: it is not (gone, a zombie, its pid another process's); -1:
 * this rank cannot tell (another node, or its pid not known). */
static int cohort_peer_liveness(cohort_peer_t *peer)
{
    unsigned long long start = 0;
    char state = '?';

    if (peer->pid <= 0 || peer->rank == peer->ctx->rank || !cohort_peer_same_node(peer)) {
        return -1;
    }
    if (kill((pid_t)peer->pid, 0) != 0 && errno == ESRCH) {
        return 0;
    }
    if (!cohort_pid_stat(peer->pid, &state, &start) || state == 'Z' || state == 'X' ||
        state == 'x') {
        return 0; /* a zombie has exited: its launcher has not reaped it yet */
    }
    if (peer->pid_start == 0) {
        peer->pid_start = start;
    }
    return peer->pid_start == start; /* else its pid went to another process */
}

int cohort_peer_alive(cohort_peer_t *peer)
{
    return cohort_peer_liveness(peer) == 1;
}

static void cohort_peer_unsuspect(cohort_peer_t *peer)
{
    if (peer->suspect) {
        peer->suspect = 0;
        peer->ctx->suspects--;
    }
}

/* The flush of a suspect's new endpoint ended: done means its UCX took the connection. An
 * error is left to the endpoint's own error (cohort_peer_lost: a second loss fails it). */
static void cohort_peer_probe_done(void *ucx_req, ucs_status_t ucs, void *user_data)
{
    cohort_peer_t *peer = user_data;

    ucp_request_free(ucx_req);
    if (ucs == UCS_OK && peer->suspect && peer->state == COHORT_PEER_WIRED) {
        cohort_info(peer->ctx,
                    "rank %d answered on a new connection: it had lost its connection, "
                    "not its process",
                    peer->rank);
        cohort_peer_unsuspect(peer);
    }
}

/* A suspect was wired again: a flush of the new endpoint completes once the peer's UCX has
 * accepted the connection (tcp: its answer to the connection request), which a dead process
 * never gives. */
static void cohort_peer_probe(cohort_peer_t *peer)
{
    ucp_request_param_t param;
    void *r;

    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send = cohort_peer_probe_done;
    param.user_data = peer;
    r = ucp_ep_flush_nbx(peer->ep, &param);
    if (r == NULL) {
        cohort_peer_unsuspect(peer); /* nothing to wait for: connected already */
    }
}

int cohort_peer_suspects_check(cohort_context_t *ctx)
{
    double now = cohort_time_now(), bound = cohort_context_bound(ctx, COHORT_RESET_GRACE_S);
    cohort_list_t *pos, *tmp;
    char why[128];
    int n = 0;

    cohort_list_for_each(pos, tmp, &ctx->peer_list)
    {
        cohort_peer_t *peer = cohort_container_of(pos, cohort_peer_t, all_link);
        if (!peer->suspect || now - peer->suspect_since < bound) {
            continue;
        }
        cohort_peer_unsuspect(peer);
        if (peer->state == COHORT_PEER_FAILED || peer->state == COHORT_PEER_LEFT) {
            continue;
        }
        snprintf(why, sizeof(why),
                 "its connection was lost and it did not take a new one within %.1f s", bound);
        cohort_peer_fail(peer, COHORT_ERR_PEER_FAILED, why);
        n++;
    }
    return n;
}

void cohort_peer_lost(cohort_peer_t *peer, ucs_status_t ucs)
{
    cohort_context_t *ctx = peer->ctx;
    double now = cohort_time_now(), grace = cohort_context_bound(ctx, COHORT_RESET_GRACE_S);
    int live;

    if (peer->state != COHORT_PEER_WIRED) {
        return;
    }
    if (cohort_peer_finalized(peer)) {
        cohort_peer_left(peer, "marked in a shared segment; its endpoint then failed");
        return;
    }
    live = cohort_peer_liveness(peer);
    if (live == 0 || (live < 0 && peer->suspect)) {
        /* Dead; or on another node and its new connection failed too before it answered. */
        cohort_peer_unsuspect(peer);
        cohort_peer_fail(peer, cohort_ucs_status(ucs), ucs_status_string(ucs));
        return;
    }
    if (peer->resets == 0 || now - peer->reset_last > grace) {
        peer->reset_since = now; /* a new spell */
    } else if (now - peer->reset_since > grace) {
        cohort_error(ctx,
                     "endpoint to rank %d failed again (%s), %.1f s after the first of %u such "
                     "failures while its process %d lives: taken as failed",
                     peer->rank, ucs_status_string(ucs), now - peer->reset_since, peer->resets,
                     (int)peer->pid);
        cohort_peer_fail(peer, cohort_ucs_status(ucs), ucs_status_string(ucs));
        return;
    }
    /* UCX 1.13 reports any lost connection as "Endpoint timeout" over tcp (a connection closed
     * under it, as when two ranks wire each other at once and UCX keeps the other one), and a
     * keepalive then finds it: a live peer is not dead. Its endpoint goes, and the next send
     * or watch wires it again; what was in flight on it ends with COHORT_ERR_UCX (REVOKED for
     * what closing it cancels). */
    if (live < 0) {
        /* Another node: its process cannot be seen. It is wired again at once, and answers
         * (cohort_peer_probe) or is failed (a second loss, or cohort_peer_suspects_check). */
        cohort_warn(ctx,
                    "endpoint to rank %d failed (%s); it is on another node: wiring it again to "
                    "see whether it lives (within %.1f s)",
                    peer->rank, ucs_status_string(ucs), grace);
        peer->suspect = 1;
        peer->suspect_since = now;
        ctx->suspects++;
    } else if (peer->resets == 0 || now - peer->reset_since < 1e-9) {
        cohort_warn(ctx,
                    "endpoint to rank %d failed (%s) but its process %d is alive: not a death; "
                    "it is wired again when next needed",
                    peer->rank, ucs_status_string(ucs), (int)peer->pid);
    } else {
        cohort_debug(ctx, "endpoint to rank %d failed again (%s); its process lives", peer->rank,
                     ucs_status_string(ucs));
    }
    peer->resets++;
    peer->reset_last = now;
    peer->state = COHORT_PEER_NONE;
    if (peer->ep != NULL) {
        /* Closed at the next progress pass, or before a new endpoint is made (which only
         * progress does): this may run inside a UCX callback. So there is one at most. */
        assert(peer->dropped_ep == NULL);
        peer->dropped_ep = peer->ep;
        peer->ep = NULL;
        if (cohort_list_empty(&peer->close_link)) {
            cohort_list_push(&ctx->to_close, &peer->close_link);
        }
    }
    if (peer->suspect && !ctx->finalizing) {
        cohort_peer_want(peer); /* its lookup starts now; it is wired from progress */
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
        cohort_peer_lost(peer, peer->reset);
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

    cohort_peer_close_dropped(peer);
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
        if (cohort_peer_finalized(peer) || ctx->finalizing) {
            /* It left; or this rank finalizes and wires a peer that sent to it only to say
             * goodbye (endpoint_close.c), which may have exited already. */
            cohort_debug(ctx, "ucp_ep_create to rank %d failed (%s): it has finalized%s",
                         peer->rank, ucs_status_string(ucs),
                         ctx->finalizing ? ", or this rank finalizes" : "");
        } else {
            cohort_error(ctx, "ucp_ep_create to rank %d failed: %s", peer->rank,
                         ucs_status_string(ucs));
        }
        return cohort_ucs_status(ucs);
    }
    peer->state = COHORT_PEER_WIRED;
    peer->wired_at = cohort_time_now();
    peer->ep_us = (float)((peer->wired_at - t) * 1e6);
    peer->wire_us = (float)((peer->wired_at - peer->start) * 1e6);
    peer->first_send_us = -1;
    cohort_debug(ctx,
                 "wired rank %d in %.1f us: lookup %.1f us (%d tries, %.1f us before the last, "
                 "%.1f us at the server, %.1f us until progress saw it), card %.1f us, "
                 "ucp_ep_create %.1f us",
                 peer->rank, peer->wire_us, (t - peer->start) * 1e6, peer->tries, peer->retry_us,
                 peer->server_us, peer->poll_us, peer->card_us, peer->ep_us);
    return COHORT_OK;
}

/* The longest a wait sleeps on a lookup before it polls UCX again: what a message arriving
 * meanwhile may wait. The answer itself wakes it at once. Measured (issue 37, 2 cores, 16 ranks
 * and other jobs): PMIx's server answers in 20-150 us, and a wait that yielded instead saw the
 * answer 1-10 ms later, the CPU-bound neighbours it yielded to keeping whole slices, while a
 * thread woken from sleep runs almost at once. */
#define COHORT_LOOKUP_NAP_S 200e-6

int cohort_peer_lookup_nap(cohort_context_t *ctx, double max_s)
{
    struct pollfd pfd;
    struct timespec ts;
    double s = max_s > 0 && max_s < COHORT_LOOKUP_NAP_S ? max_s : COHORT_LOOKUP_NAP_S;
    uint64_t v;

    if (cohort_list_empty(&ctx->looking_up) || ctx->plugin->wake_fd == NULL) {
        return 0;
    }
    for (const cohort_list_t *pos = ctx->looking_up.next; pos != &ctx->looking_up;
         pos = pos->next) {
        if (cohort_container_of(pos, cohort_peer_t, link)->lookup == NULL) {
            return 0; /* wired from its kept card at the next pass: nothing to sleep for */
        }
    }
    pfd.fd = ctx->plugin->wake_fd(ctx->pmix);
    if (pfd.fd < 0) {
        return 0;
    }
    pfd.events = POLLIN;
    pfd.revents = 0;
    ts.tv_sec = 0;
    ts.tv_nsec = (long)(s * 1e9);
    if (ppoll(&pfd, 1, &ts, NULL) > 0) {
        (void)!read(pfd.fd, &v, sizeof(v)); /* empty again: the next answer wakes the next nap */
    }
    return 1;
}

void cohort_peer_sent(cohort_peer_t *peer)
{
    if (peer->first_send_us < 0) {
        peer->first_send_us = (float)((cohort_time_now() - peer->wired_at) * 1e6);
        cohort_debug(peer->ctx, "first send to rank %d completed %.1f us after its endpoint",
                     peer->rank, peer->first_send_us);
    }
}

/* The endpoint exists: what waited on it goes out, in the order it was posted. */
static void cohort_peer_flush(cohort_peer_t *peer)
{
    cohort_context_t *ctx = peer->ctx;

    if (peer->suspect) {
        cohort_peer_probe(peer);
    }
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
    if (peer->card != NULL) {
        /* Its card came earlier, for its pid: no second lookup. It is wired at the next progress
         * pass (lookup NULL), like an answered lookup, never here: the caller may be inside a
         * UCX callback (a fetch's completion watching its sender). */
        peer->retry_us = peer->server_us = peer->poll_us = peer->card_us = 0;
        peer->tries = 0;
        peer->lookup = NULL;
        peer->state = COHORT_PEER_LOOKING_UP;
        cohort_list_push(&ctx->looking_up, &peer->link);
        return;
    }
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

int cohort_peer_watch(cohort_peer_t *peer)
{
    /* This rank itself passes too: a rendezvous from it means it is wired already. */
    if (peer == NULL || peer->state != COHORT_PEER_NONE || peer->ctx->finalizing) {
        return 0;
    }
    cohort_peer_want(peer);
    return 1;
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

/* Wiring @a peer failed with @a status: a failure, unless it finalized meanwhile. */
static void cohort_peer_unwired(cohort_peer_t *peer, cohort_status_t status)
{
    if (cohort_peer_finalized(peer)) {
        cohort_peer_left(peer, "marked in a shared segment; it could not be wired after");
        return;
    }
    cohort_peer_fail(peer, status, "cannot wire it");
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
        cohort_pmix_lookup_times_t times = {0, 0, 0};
        cohort_status_t status;
        double seen, read;

        if (peer->lookup == NULL) {
            /* Its kept card (cohort_peer_lookup): wire it now. */
            n++;
            cohort_list_del(&peer->link);
            peer->state = COHORT_PEER_NONE;
            status = cohort_peer_connect(peer, peer->card_addr);
            free(peer->card);
            peer->card = NULL;
            if (status != COHORT_OK) {
                cohort_peer_unwired(peer, status);
                continue;
            }
            cohort_peer_flush(peer);
            continue;
        }
        status = ctx->plugin->lookup_test(peer->lookup, &addr, &len, &times);
        if (status == COHORT_INPROGRESS) {
            continue;
        }
        n++;
        peer->lookup = NULL;
        cohort_list_del(&peer->link);
        peer->state = COHORT_PEER_NONE;
        if (status == COHORT_OK) {
            const void *ucx_addr = NULL;
            seen = cohort_time_now();
            peer->tries = (uint8_t)(times.tries > 255 ? 255 : times.tries);
            peer->retry_us = (float)(times.retry_s * 1e6);
            peer->server_us = (float)((times.answered - peer->start - times.retry_s) * 1e6);
            peer->poll_us = (float)((seen - times.answered) * 1e6);
            status = cohort_card_read(addr, len, &peer->pid, &peer->arena, &ucx_addr);
            read = cohort_time_now();
            peer->card_us = (float)((read - seen) * 1e6);
            if (status != COHORT_OK) {
                cohort_error(ctx,
                             "cannot wire rank %d: what it published (%zu bytes) is not a "
                             "cohort card (another version of cohort?)",
                             peer->rank, len);
                status = COHORT_ERR_MISMATCH;
            } else if (!peer->pid_only) {
                status = cohort_peer_connect(peer, ucx_addr);
            } else {
                /* Kept: a send to it later wires it from here, with no second lookup. */
                peer->card = addr;
                peer->card_addr = ucx_addr;
                addr = NULL;
            }
            free(addr);
        } else if (!cohort_peer_finalized(peer)) {
            cohort_error(ctx, "cannot wire rank %d: its address lookup failed (%s)", peer->rank,
                         cohort_strerror(status));
        }
        if (status != COHORT_OK) {
            cohort_peer_unwired(peer, status);
            continue;
        }
        if (peer->pid_only) {
            peer->pid_only = 0; /* known, and no endpoint until something is sent to it */
            cohort_debug(ctx, "card of rank %d (its pid only, no endpoint) in %.1f us", peer->rank,
                         (cohort_time_now() - peer->start) * 1e6);
            continue;
        }
        cohort_peer_flush(peer);
    }
    return n;
}

void cohort_peer_table_cleanup(cohort_context_t *ctx)
{
    cohort_list_t *pos, *tmp;

    cohort_list_for_each(pos, tmp, &ctx->peer_list)
    {
        cohort_peer_t *peer = cohort_container_of(pos, cohort_peer_t, all_link);
        cohort_list_del(&peer->all_link);
        free(peer->card);
        cohort_arena_view_close(peer->view);
        for (int i = 0; i < ctx->npeer_obs; i++) {
            if (ctx->peer_obs[i]->forget != NULL) {
                ctx->peer_obs[i]->forget(peer);
            }
        }
        free(peer);
    }
    cohort_map_cleanup(&ctx->peers);
}
