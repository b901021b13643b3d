#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/am.h"
#include "core/endpoint.h"
#include "core/log.h"
#include "core/notify.h"
#include "base/time.h"

/* One tree to pass on: in this rank's revoked communicator @a gid, rooted at group rank
 * @a root. */
typedef struct {
    cohort_list_t link; /* in ctx->notices */
    uint64_t gid;
    int root;
    int dead; /* world rank, or -1 */
    cohort_status_t status;
} cohort_notice_t;

/* How often waits are looked over for peers to watch, at most. */
#define COHORT_WATCH_SCAN_S 0.1

static void cohort_notice_queue(cohort_comm_t *c, int root)
{
    cohort_notice_t *n;

    if (c->size < 2 || c->ctx->finalizing) {
        return;
    }
    n = malloc(sizeof(*n));
    if (n == NULL) {
        /* The members still learn of it: from their own waits, their watch, their timeout. */
        cohort_error(c->ctx, "out of memory telling group 0x%016llx it is revoked",
                     (unsigned long long)c->id);
        return;
    }
    n->gid = c->id;
    n->root = root;
    n->dead = c->failed_rank;
    n->status = c->error;
    cohort_list_push(&c->ctx->notices, &n->link);
}

void cohort_notify_revoke(cohort_comm_t *c)
{
    cohort_notice_queue(c, c->rank);
}

void cohort_notify_recv(cohort_comm_t *c, const cohort_am_hdr_t *h)
{
    cohort_context_t *ctx = c->ctx;
    cohort_status_t status = (cohort_status_t)(int32_t)h->status;
    char why[160];

    if (h->seq >= (uint32_t)c->size || h->tag < -1 || h->tag >= ctx->size) {
        ctx->stat_rejected++;
        cohort_debug(ctx, "group 0x%016llx: malformed revoke from rank %d dropped",
                     (unsigned long long)c->id, h->src);
        return;
    }
    if (status != COHORT_ERR_PEER_FAILED && status != COHORT_ERR_MISMATCH &&
        status != COHORT_ERR_TIMEOUT && status != COHORT_ERR_NO_MEMORY) {
        status = COHORT_ERR_REVOKED;
    }
    if (h->tag >= 0) {
        snprintf(why, sizeof(why), "world rank %d failed (told by world rank %d)", h->tag, h->wsrc);
    } else {
        snprintf(why, sizeof(why), "world rank %d revoked it (%s)", h->wsrc,
                 cohort_strerror(status));
    }
    if (c->error == COHORT_OK) {
        c->failed_rank = h->tag;
        cohort_comm_revoke_local(c, status, why);
    }
    cohort_notice_queue(c, (int)h->seq);
    if (h->tag >= 0 && h->tag != ctx->rank) {
        cohort_peer_t *peer = cohort_peer_get(ctx, h->tag);
        if (peer != NULL && peer->state != COHORT_PEER_FAILED && peer->state != COHORT_PEER_LEFT) {
            cohort_peer_fail_reported(peer, why);
        }
    }
}

/* Tell the children of relative rank @a rel in the tree rooted at @a root; a child that
 * cannot be told (failed, gone) has its own children told instead. */
static void cohort_notify_subtree(cohort_comm_t *c, const cohort_am_hdr_t *h, int root, int rel,
                                  int dead)
{
    int n = c->size;
    int low = rel == 0 ? n : (rel & -rel);

    for (int mask = 1; mask < low && rel + mask < n; mask <<= 1) {
        int child = rel + mask;
        int w = cohort_comm_world_rank(c, (root + child) % n);

        if (w == dead || cohort_ctl_send(c->ctx, w, h) != 0) {
            cohort_notify_subtree(c, h, root, child, dead);
        }
    }
}

static void cohort_notice_send(cohort_context_t *ctx, const cohort_notice_t *n)
{
    cohort_comm_t *c = cohort_map_get(&ctx->comms, n->gid);
    cohort_am_hdr_t h;

    if (c == NULL) {
        return; /* freed: its notices went out then (cohort_notify_flush) */
    }
    memset(&h, 0, sizeof(h));
    h.kind = COHORT_MSG_REVOKE;
    h.gid = c->id;
    h.seq = (uint32_t)n->root;
    h.src = c->rank;
    h.wsrc = ctx->rank;
    h.tag = n->dead;
    h.status = (uint32_t)n->status;
    cohort_notify_subtree(c, &h, n->root, (c->rank - n->root + c->size) % c->size, n->dead);
}

/* Wire @a peer, which something of ours has waited on for @a waited seconds (@a what). */
static void cohort_notify_watch_peer(cohort_context_t *ctx, cohort_peer_t *peer, const char *what,
                                     double waited)
{
    if (cohort_peer_watch(peer)) {
        cohort_debug(ctx, "watching world rank %d: %s has waited %.1f s (COHORT_WATCH_S)",
                     peer->rank, what, waited);
    }
}

/* A rendezvous fetch runs on the endpoint UCX made when the sender's message arrived, not on
 * one of ours: a rank that only receives from a peer holds none, and that endpoint has no
 * keepalive of ours, so a sender dying mid-fetch may leave the fetch waiting for ever (and
 * still queued when the worker is destroyed). Watching the sender puts an endpoint of ours
 * next to it, whose error names the death. */
static void cohort_notify_watch_fetch(cohort_xfer_t *x, void *arg)
{
    cohort_request_t *req = x->req;
    double now = *(const double *)arg;

    if (req->comm != NULL && x->peer >= 0 && now - x->since >= req->ctx->cfg.watch_s) {
        cohort_notify_watch_peer(
            req->ctx, cohort_peer_get(req->ctx, cohort_comm_world_rank(req->comm, x->peer)),
            "a rendezvous fetch from it", now - x->since);
    }
}

static void cohort_notify_watch(cohort_context_t *ctx, double now)
{
    cohort_list_t *cpos, *ctmp, *pos, *tmp;

    cohort_list_for_each(cpos, ctmp, &ctx->comm_list)
    {
        cohort_comm_t *c = cohort_container_of(cpos, cohort_comm_t, link);
        cohort_list_for_each(pos, tmp, &c->posted)
        {
            cohort_xfer_t *x = cohort_container_of(pos, cohort_xfer_t, link);

            if (now - x->since < ctx->cfg.watch_s || x->peer == COHORT_ANY_SOURCE) {
                continue;
            }
            cohort_notify_watch_peer(ctx, cohort_peer_get(ctx, cohort_comm_world_rank(c, x->peer)),
                                     "a receive from it", now - x->since);
        }
    }
    cohort_request_fetches(ctx, cohort_notify_watch_fetch, &now);
}

void cohort_notify_flush(cohort_comm_t *c)
{
    cohort_list_t *pos, *tmp;

    cohort_list_for_each(pos, tmp, &c->ctx->notices)
    {
        cohort_notice_t *notice = cohort_container_of(pos, cohort_notice_t, link);
        if (notice->gid == c->id) {
            cohort_list_del(&notice->link);
            cohort_notice_send(c->ctx, notice);
            free(notice);
        }
    }
}

int cohort_notify_progress(cohort_context_t *ctx)
{
    int n = cohort_list_empty(&ctx->ctl_resend) ? 0 : cohort_ctl_progress(ctx);

    while (!cohort_list_empty(&ctx->notices)) {
        cohort_notice_t *notice = cohort_container_of(ctx->notices.next, cohort_notice_t, link);
        cohort_list_del(&notice->link);
        cohort_notice_send(ctx, notice);
        free(notice);
        n++;
    }
    /* The clock is read every few passes only: a pass of the small-message path is ~100 ns. */
    if (ctx->cfg.watch_s > 0 && !ctx->finalizing && (++ctx->watch_tick & 63) == 0) {
        double now = cohort_time_now();
        if (now >= ctx->watch_next) {
            ctx->watch_next = now + COHORT_WATCH_SCAN_S;
            cohort_notify_watch(ctx, now);
        }
    }
    return n;
}

void cohort_notify_cleanup(cohort_context_t *ctx)
{
    while (!cohort_list_empty(&ctx->notices)) {
        cohort_notice_t *n = cohort_container_of(ctx->notices.next, cohort_notice_t, link);
        cohort_list_del(&n->link);
        free(n);
    }
    cohort_ctl_cleanup(ctx);
}

static const cohort_am_kind_t cohort_notify_kind = {.header_only = 1, .member = cohort_notify_recv};

void cohort_notify_init(cohort_context_t *ctx)
{
    cohort_am_kind_set(ctx, COHORT_MSG_REVOKE, &cohort_notify_kind);
    cohort_ctl_init(ctx);
}
