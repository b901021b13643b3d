/*
 * Closing endpoints while the context runs: a failed peer's at the next progress pass, and the
 * endpoint a live peer's lost connection left behind (cohort_peer_drop) before wiring it again.
 * Always by force, and never a live peer's current endpoint: the peer would take the reset for
 * this rank's death. Wiring (endpoint.c), the transfers and progress call down into it; it calls
 * nothing of the engine back. Finalize's polite close of every endpoint, after a goodbye to
 * each wired peer, is endpoint_finalize.c.
 */
#include <assert.h>
#include <string.h>
#include "core/endpoint.h"

static void cohort_peer_closed(void *ucx_req, ucs_status_t ucs, void *user_data)
{
    cohort_context_t *ctx = user_data;

    ctx->closing--;
    ucp_request_free(ucx_req);
}

/* Close @a ep by force; a request it returns frees itself in the callback, and finalize waits
 * for it (closing). */
static void cohort_ep_close_force(cohort_context_t *ctx, ucp_ep_h ep)
{
    ucp_request_param_t param;

    memset(&param, 0, sizeof(param));
    param.op_attr_mask =
        UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.flags = UCP_EP_CLOSE_FLAG_FORCE;
    param.cb.send = cohort_peer_closed;
    param.user_data = ctx;
    ctx->closing += UCS_PTR_IS_PTR(ucp_ep_close_nbx(ep, &param));
}

void cohort_peer_close_dropped(cohort_peer_t *peer)
{
    if (peer->dropped_ep != NULL) {
        cohort_ep_close_force(peer->ctx, peer->dropped_ep);
        peer->dropped_ep = NULL;
    }
}

void cohort_peer_drop(cohort_peer_t *peer)
{
    assert(peer->state == COHORT_PEER_WIRED && peer->dropped_ep == NULL);
    peer->dropped_ep = peer->ep;
    peer->ep = NULL;
    peer->state = COHORT_PEER_NONE;
    cohort_peer_close_dropped(peer);
}

int cohort_peer_close_failed(cohort_context_t *ctx)
{
    int n = 0;

    while (!cohort_list_empty(&ctx->to_close)) {
        cohort_peer_t *peer = cohort_container_of(ctx->to_close.next, cohort_peer_t, close_link);

        cohort_list_del(&peer->close_link);
        cohort_list_init(&peer->close_link);
        if (peer->dropped_ep != NULL) {
            cohort_peer_close_dropped(peer);
            n++;
        }
        if (peer->ep == NULL || peer->state != COHORT_PEER_FAILED) {
            continue;
        }
        cohort_ep_close_force(ctx, peer->ep);
        peer->ep = NULL;
        n++;
    }
    return n;
}
