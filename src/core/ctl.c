/*
 * Control messages: header-only messages (a revocation notice, a cancel, a single-copy answer)
 * sent to a world rank from progress, queued while the peer is wired, sent again over a new
 * endpoint when UCX cancelled one under them, dropped when the peer failed. Below the
 * transfers, the revocation notices (notify.c) and the protocols that send them: it uses only
 * wiring (endpoint.h), so a cancel (xfer.c) can tell its receiver without reaching up.
 */
#include <stdlib.h>
#include <string.h>
#include "core/ctl.h"
#include "core/endpoint.h"

/* A header-only control message; UCX reads hdr until the send completes. */
typedef struct {
    cohort_list_t link; /* in peer->ctl_pending, ctx->ctl_inflight or ctx->ctl_resend */
    cohort_peer_t *peer;
    uint8_t hdr[COHORT_AM_HDR_BYTES];
    void (*done)(void *arg); /* when it has left, failed or been dropped; NULL: nobody asks */
    void *arg;
} cohort_ctl_t;

static void cohort_ctl_free(cohort_ctl_t *m)
{
    if (m->done != NULL) {
        m->done(m->arg);
    }
    free(m);
}

static void cohort_ctl_sent(void *ucx_req, ucs_status_t ucs, void *user_data)
{
    cohort_ctl_t *m = user_data;
    cohort_peer_t *peer = m->peer;

    peer->inflight--;
    cohort_list_del(&m->link);
    ucp_request_free(ucx_req);
    if (ucs != UCS_OK && ucs != UCS_ERR_CANCELED && peer->state == COHORT_PEER_WIRED &&
        cohort_ucs_status(ucs) == COHORT_ERR_PEER_FAILED && !peer->ctx->finalizing) {
        /* The connection went under it: a live peer on this node keeps its place
         * (cohort_peer_lost), and is told over a new endpoint as below. */
        cohort_peer_lost(peer, ucs);
    }
    if (ucs != UCS_OK && !peer->ctx->finalizing && peer->state == COHORT_PEER_NONE) {
        /* Its endpoint was closed under it (UCX cancelled the send): the peer still has to
         * be told, over a new endpoint, wired from progress rather than inside UCX's
         * callback. */
        cohort_list_push(&peer->ctx->ctl_resend, &m->link);
        return;
    }
    cohort_ctl_free(m);
}

static void cohort_ctl_issue(cohort_ctl_t *m)
{
    cohort_peer_t *peer = m->peer;
    ucp_request_param_t param;
    void *r;

    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send = cohort_ctl_sent;
    param.user_data = m;
    r = ucp_am_send_nbx(peer->ep, COHORT_AM_ID, m->hdr, sizeof(m->hdr), NULL, 0, &param);
    peer->ctx->stat_msgs++;
    if (UCS_PTR_IS_PTR(r)) {
        peer->inflight++;
        cohort_list_push(&peer->ctx->ctl_inflight, &m->link);
        return;
    }
    cohort_ctl_free(m);
}

/* On to its peer: sent when wired, queued while its address is looked up, else dropped.
 * @return 0 when sent or queued, -1 when the peer cannot be told. */
static int cohort_ctl_route(cohort_ctl_t *m)
{
    cohort_peer_t *peer = m->peer;

    if (!peer->ctx->finalizing) {
        cohort_peer_want(peer);
    }
    if (peer->state == COHORT_PEER_WIRED) {
        cohort_ctl_issue(m);
    } else if (peer->state == COHORT_PEER_LOOKING_UP) {
        cohort_list_push(&peer->ctl_pending, &m->link);
    } else {
        cohort_ctl_free(m); /* failed or gone: nobody to tell */
        return -1;
    }
    return 0;
}

int cohort_ctl_progress(cohort_context_t *ctx)
{
    int n = 0;

    while (!cohort_list_empty(&ctx->ctl_resend)) {
        cohort_ctl_t *m = cohort_container_of(ctx->ctl_resend.next, cohort_ctl_t, link);

        cohort_list_del(&m->link);
        cohort_ctl_route(m);
        n++;
    }
    return n;
}

int cohort_ctl_send_then(cohort_context_t *ctx, int world_rank, const cohort_am_hdr_t *h,
                         void (*done)(void *arg), void *arg)
{
    cohort_peer_t *peer = cohort_peer_get(ctx, world_rank);
    cohort_ctl_t *m;

    if (peer == NULL || peer->state == COHORT_PEER_FAILED || peer->state == COHORT_PEER_LEFT ||
        (m = malloc(sizeof(*m))) == NULL) {
        if (done != NULL) {
            done(arg);
        }
        return -1;
    }
    m->peer = peer;
    m->done = done;
    m->arg = arg;
    cohort_am_hdr_encode(h, m->hdr);
    cohort_list_init(&m->link);
    return cohort_ctl_route(m);
}

int cohort_ctl_send(cohort_context_t *ctx, int world_rank, const cohort_am_hdr_t *h)
{
    return cohort_ctl_send_then(ctx, world_rank, h, NULL, NULL);
}

void cohort_ctl_flush(cohort_peer_t *peer)
{
    while (!cohort_list_empty(&peer->ctl_pending) && peer->state == COHORT_PEER_WIRED) {
        cohort_ctl_t *m = cohort_container_of(peer->ctl_pending.next, cohort_ctl_t, link);
        cohort_list_del(&m->link);
        cohort_ctl_issue(m);
    }
}

void cohort_ctl_drop(cohort_peer_t *peer)
{
    while (!cohort_list_empty(&peer->ctl_pending)) {
        cohort_ctl_t *m = cohort_container_of(peer->ctl_pending.next, cohort_ctl_t, link);
        cohort_list_del(&m->link);
        cohort_ctl_free(m);
    }
}

static void cohort_ctl_peer_failed(cohort_peer_t *peer, cohort_status_t status, const char *why,
                                   int tell)
{
    cohort_ctl_drop(peer);
}

static const cohort_peer_observer_t cohort_ctl_observer = {.name = "control messages",
                                                           .failed = cohort_ctl_peer_failed,
                                                           .wired = cohort_ctl_flush,
                                                           .forget = cohort_ctl_drop};

void cohort_ctl_init(cohort_context_t *ctx)
{
    cohort_peer_observe(ctx, &cohort_ctl_observer);
}

void cohort_ctl_cleanup(cohort_context_t *ctx)
{
    cohort_list_t *lists[] = {&ctx->ctl_inflight, &ctx->ctl_resend};

    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        while (!cohort_list_empty(lists[i])) {
            cohort_ctl_t *m = cohort_container_of(lists[i]->next, cohort_ctl_t, link);
            cohort_list_del(&m->link);
            free(m);
        }
    }
}
