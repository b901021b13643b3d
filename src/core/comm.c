/* Communicators: creation, the first-use step of the exchange plugin, revocation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/am.h"
#include "core/comm.h"
#include "core/endpoint.h"
#include "core/log.h"
#include "core/notify.h"

cohort_status_t cohort_comm_create(cohort_context_t *ctx, uint64_t id, const int *members, int size,
                                   int rank, const char *label, cohort_comm_t **comm_p)
{
    cohort_comm_t *c;
    cohort_status_t status;

    if (cohort_map_get(&ctx->comms, id) != NULL) {
        /* 64-bit ids collide with probability ~ groups^2 / 2^65: say so rather than cross
         * two groups' messages. */
        cohort_error(ctx, "group '%s': id 0x%016llx collides with a live group", label,
                     (unsigned long long)id);
        return COHORT_ERR_INVALID_ARG;
    }
    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    if (members != NULL) {
        c->members = malloc((size_t)size * sizeof(int));
        if (c->members == NULL) {
            free(c);
            return COHORT_ERR_NO_MEMORY;
        }
        memcpy(c->members, members, (size_t)size * sizeof(int));
    }
    c->ctx = ctx;
    c->id = id;
    c->size = size;
    c->rank = rank;
    c->label = label;
    c->state = COHORT_COMM_NEW;
    c->error = COHORT_OK;
    c->failed_rank = -1;
    cohort_list_init(&c->posted);
    cohort_list_init(&c->unexpected);
    cohort_list_init(&c->held);
    cohort_list_init(&c->waiting);
    cohort_list_init(&c->cancels);
    cohort_list_init(&c->requests);
    cohort_list_init(&c->prep_link);
    status = cohort_map_put(&ctx->comms, id, c);
    if (status != COHORT_OK) {
        free(c->members);
        free(c);
        return status;
    }
    cohort_list_push(&ctx->comm_list, &c->link);
    cohort_am_adopt(c);
    *comm_p = c;
    return COHORT_OK;
}

/* Whether an operation on @a c is still unfinished. */
static int cohort_comm_busy(const cohort_comm_t *c)
{
    const cohort_list_t *pos;

    for (pos = c->requests.next; pos != &c->requests; pos = pos->next) {
        if (!cohort_container_of(pos, cohort_request_t, comm_link)->done) {
            return 1;
        }
    }
    return 0;
}

void cohort_comm_destroy(cohort_comm_t *c)
{
    cohort_context_t *ctx = c->ctx;

    if (c->error == COHORT_OK && cohort_comm_busy(c)) {
        /* The other members wait on steps this rank will never take: they are told (the
         * notices go out in cohort_notify_flush below). Setting the error first would cancel
         * the operations as a revocation already sent, and nobody would tell them. */
        cohort_comm_revoke(c, COHORT_ERR_REVOKED, "freed with operations outstanding");
    }
    if (c->error == COHORT_OK) {
        c->error = COHORT_ERR_REVOKED;
    }
    /* Outstanding requests stay the user's to free; they finish now, revoked. */
    while (!cohort_list_empty(&c->requests)) {
        cohort_request_t *req = cohort_container_of(c->requests.next, cohort_request_t, comm_link);
        cohort_request_cancel(req, COHORT_ERR_REVOKED);
        cohort_list_del(&req->comm_link);
        req->comm = NULL;
    }
    if (c->prepare != NULL) {
        ctx->plugin->group_prepare_abandon(c->prepare);
        cohort_list_del(&c->prep_link);
    }
    if (c->prepared && ctx->plugin->group_release != NULL) {
        ctx->plugin->group_release(ctx->pmix, c->id);
    }
    if (c->node_shm_free != NULL) {
        c->node_shm_free(c->node_shm);
    }
    cohort_notify_flush(c);
    cohort_am_comm_cleanup(c);
    cohort_map_del(&ctx->comms, c->id);
    cohort_list_del(&c->link);
    free(c->send_seq);
    free(c->recv_seq);
    free(c->members);
    free(c);
}

int cohort_comm_revoke_local(cohort_comm_t *c, cohort_status_t status, const char *why)
{
    cohort_list_t *pos, *tmp;

    if (c->error != COHORT_OK) {
        return 0;
    }
    c->error = status;
    if (status == COHORT_ERR_PEER_FAILED || status == COHORT_ERR_TIMEOUT) {
        int shown = 0;
        /* What the user needs to know once per group, and what was waiting here. */
        cohort_warn(c->ctx, "group '%s' 0x%016llx: %s; its operations return %s", c->label,
                    (unsigned long long)c->id, why, cohort_strerror(status));
        cohort_list_for_each(pos, tmp, &c->requests)
        {
            cohort_request_t *req = cohort_container_of(pos, cohort_request_t, comm_link);
            char what[512];
            if (req->done || req->user_freed || shown++ == 4) {
                continue;
            }
            req->ops->describe(req, what, sizeof(what));
            cohort_warn(c->ctx, "  it fails %s", what);
        }
    } else {
        cohort_debug(c->ctx, "group '%s' 0x%016llx revoked (%s): %s", c->label,
                     (unsigned long long)c->id, cohort_strerror(status), why);
    }
    cohort_list_for_each(pos, tmp, &c->requests)
    {
        cohort_request_cancel(cohort_container_of(pos, cohort_request_t, comm_link), status);
    }
    cohort_am_comm_drop(c);
    return 1;
}

void cohort_comm_revoke(cohort_comm_t *c, cohort_status_t status, const char *why)
{
    if (cohort_comm_revoke_local(c, status, why)) {
        cohort_notify_revoke(c);
    }
}

/* The refusal of cohort_guard_take_comm (core/guard.h) is here, not in guard.c: it revokes the
 * group, and the lock must not call up into the communicators it guards. */
cohort_status_t cohort_comm_refuse_thread(cohort_comm_t *c, int call, const char *fn)
{
    cohort_error(c->ctx,
                 "%s: another thread is inside a call on group '%s' 0x%016llx; a group is used by "
                 "one thread at a time (cohort.h)%s",
                 fn, c->label, (unsigned long long)c->id,
                 call ? ": the group is revoked with COHORT_ERR_MISMATCH, so that its members do "
                        "not wait in a call this rank never made"
                      : "");
    if (call) {
        cohort_comm_revoke(c, COHORT_ERR_MISMATCH, "a call on it came from a second thread");
    }
    return COHORT_ERR_INVALID_ARG;
}

int cohort_comm_contains(const cohort_comm_t *c, int world_rank)
{
    if (c->members == NULL) {
        return world_rank >= 0 && world_rank < c->size;
    }
    for (int i = 0; i < c->size; i++) {
        if (c->members[i] == world_rank) {
            return 1;
        }
    }
    return 0;
}

/* Member @a world_rank's group rank in @a c, or -1. */
static int cohort_comm_group_rank(const cohort_comm_t *c, int world_rank)
{
    if (c->members == NULL) {
        return world_rank >= 0 && world_rank < c->size ? world_rank : -1;
    }
    for (int i = 0; i < c->size; i++) {
        if (c->members[i] == world_rank) {
            return i;
        }
    }
    return -1;
}

/* What member @a world_rank said in @a c's segment on its way out (COHORT_COMM_MEMBER_*). */
static int cohort_comm_left_here(const cohort_comm_t *c, int world_rank)
{
    int k;

    if (c->node_shm_left == NULL || c->node_shm == NULL ||
        (k = cohort_comm_group_rank(c, world_rank)) < 0 || k == c->rank) {
        return COHORT_COMM_MEMBER_IN;
    }
    return c->node_shm_left(c->node_shm, k);
}

int cohort_comm_member_left(cohort_context_t *ctx, int world_rank)
{
    cohort_list_t *pos, *tmp;
    int left = COHORT_COMM_MEMBER_IN, here;

    cohort_list_for_each(pos, tmp, &ctx->comm_list)
    {
        here = cohort_comm_left_here(cohort_container_of(pos, cohort_comm_t, link), world_rank);
        left = here > left ? here : left;
    }
    return left;
}

void cohort_comm_peer_failed(cohort_context_t *ctx, int world_rank, int tell, const char *why)
{
    cohort_list_t *pos, *tmp;
    char what[192];

    if (ctx->finalizing) {
        return;
    }
    snprintf(what, sizeof(what), "member world rank %d failed: %s", world_rank, why);
    cohort_list_for_each(pos, tmp, &ctx->comm_list)
    {
        cohort_comm_t *c = cohort_container_of(pos, cohort_comm_t, link);
        if (c->error != COHORT_OK || !cohort_comm_contains(c, world_rank)) {
            continue;
        }
        if (cohort_comm_left_here(c, world_rank) != COHORT_COMM_MEMBER_IN) {
            /* It freed this group (or finalized) after its part of every call was in the
             * segment (a free with calls outstanding revokes it first, and says so): what
             * became of its process later changes nothing here. */
            cohort_debug(ctx, "group '%s' 0x%016llx: world rank %d left it before it %s", c->label,
                         (unsigned long long)c->id, world_rank,
                         tell ? "failed" : "was reported failed");
            continue;
        }
        c->failed_rank = world_rank;
        if (tell) {
            cohort_comm_revoke(c, COHORT_ERR_PEER_FAILED, what);
        } else {
            cohort_comm_revoke_local(c, COHORT_ERR_PEER_FAILED, what);
        }
    }
}

static void cohort_comm_peer_observed(cohort_peer_t *peer, cohort_status_t status, const char *why,
                                      int tell)
{
    if (peer->rank != peer->ctx->rank) {
        cohort_comm_peer_failed(peer->ctx, peer->rank, tell, why);
    }
}

/* A shared segment's mark says the peer finalized (coll/shm_seg.c): wiring asks when the peer's
 * endpoint fails, to tell a normal exit from a death. */
static int cohort_comm_peer_finalized(cohort_peer_t *peer)
{
    return cohort_comm_member_left(peer->ctx, peer->rank) == COHORT_COMM_MEMBER_FINALIZED;
}

static const cohort_peer_observer_t cohort_comm_observer = {.name = "communicators",
                                                            .failed = cohort_comm_peer_observed,
                                                            .finalized =
                                                                cohort_comm_peer_finalized};

static cohort_status_t cohort_comm_first_use(cohort_comm_t *c);

static const cohort_comm_hooks_t cohort_comm_hooks = {.first_use = cohort_comm_first_use,
                                                      .revoke = cohort_comm_revoke};

void cohort_comm_init(cohort_context_t *ctx)
{
    cohort_peer_observe(ctx, &cohort_comm_observer);
    ctx->comm_hooks = &cohort_comm_hooks;
}

/* The first-use step is over: the sends it held go on to their peers. */
static void cohort_comm_ready(cohort_comm_t *c, cohort_status_t status, int prepared)
{
    c->state = COHORT_COMM_READY;
    c->prepared = prepared && status == COHORT_OK;
    if (status != COHORT_OK) {
        cohort_error(c->ctx, "group '%s' 0x%016llx: the %s plugin could not prepare it: %s",
                     c->label, (unsigned long long)c->id, c->ctx->plugin->name,
                     cohort_strerror(status));
        cohort_comm_revoke(c, status, "its first-use step failed");
    }
    while (!cohort_list_empty(&c->waiting)) {
        cohort_xfer_t *x = cohort_container_of(c->waiting.next, cohort_xfer_t, link);
        cohort_list_del(&x->link);
        x->waiting = 0;
        if (c->error != COHORT_OK) {
            cohort_xfer_finish(x, c->error);
        } else {
            cohort_xfer_route(x);
        }
    }
}

/* cohort_comm_use's first call on @a c (comm.h): the exchange plugin's first-use step starts. */
static cohort_status_t cohort_comm_first_use(cohort_comm_t *c)
{
    cohort_context_t *ctx = c->ctx;
    cohort_status_t status;

    if (c->state == COHORT_COMM_NEW) {
        if (ctx->singleton || ctx->plugin->group_prepare_start == NULL) {
            c->state = COHORT_COMM_READY;
        } else {
            status = ctx->plugin->group_prepare_start(ctx->pmix, c->id, c->members, c->size,
                                                      &c->prepare);
            if (status != COHORT_OK) {
                c->prepare = NULL;
                cohort_comm_ready(c, status, 0);
            } else {
                c->state = COHORT_COMM_PREPARING;
                cohort_list_push(&ctx->preparing, &c->prep_link);
            }
        }
    }
    return c->error;
}

int cohort_comm_progress(cohort_context_t *ctx)
{
    cohort_list_t *pos, *tmp;
    int n = 0;

    cohort_list_for_each(pos, tmp, &ctx->preparing)
    {
        cohort_comm_t *c = cohort_container_of(pos, cohort_comm_t, prep_link);
        cohort_status_t status = ctx->plugin->group_prepare_test(c->prepare);

        if (status == COHORT_INPROGRESS) {
            continue;
        }
        c->prepare = NULL;
        cohort_list_del(&c->prep_link);
        cohort_comm_ready(c, status, 1);
        n++;
    }
    return n;
}
