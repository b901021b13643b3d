/*
 * The UCX message protocol: the caller's bytes go in one active message, eager or rendezvous
 * as UCX decides by size. The receiver's engine matches it (core/am.c) and copies eager data
 * in; a rendezvous message's data is fetched here (cohort_proto_msg_fetch, which the engine
 * calls through ctx->am_fetch once matched), so both sides of the protocol are in this file.
 * It carries anything UCX takes: host memory, and device memory where UCX has a CUDA
 * transport. It is also how the single-copy protocols send their descriptors
 * (cohort_proto_msg_send) and receive data they asked for.
 */
#include <stdio.h>
#include "base/time.h"
#include "core/am.h"
#include "core/endpoint.h"
#include "core/log.h"
#include "proto/msg.h"
#include "proto/protos.h"

static void cohort_proto_msg_sent(void *ucx_req, ucs_status_t ucs, void *user_data)
{
    cohort_xfer_ucx_complete(ucx_req, ucs, user_data);
}

void cohort_proto_msg_send(cohort_xfer_t *x, cohort_peer_t *peer, const void *data, size_t len,
                           int host)
{
    cohort_request_t *req = x->req;
    cohort_context_t *ctx = req->ctx;
    ucp_request_param_t param;
    void *r;

    cohort_xfer_ucx_param(x, &param);
    param.cb.send = cohort_proto_msg_sent;
    if (host) {
        param.memory_type = UCS_MEMORY_TYPE_HOST;
    }
    r = ucp_am_send_nbx(peer->ep, COHORT_AM_ID, x->hdr, sizeof(x->hdr), data, len, &param);
    ctx->stat_msgs++;
    if (UCS_PTR_IS_ERR(r)) {
        cohort_error(ctx, "send of %zu bytes to rank %d of group 0x%016llx failed: %s", x->len,
                     x->peer, (unsigned long long)(req->comm ? req->comm->id : 0),
                     ucs_status_string(UCS_PTR_STATUS(r)));
    }
    if (r == NULL) {
        cohort_peer_sent(peer); /* done at once: UCX needed no wireup first */
    }
    if (cohort_xfer_ucx_started(x, r)) {
        x->ucx_peer = peer;
        peer->inflight++;
    } else if (UCS_PTR_IS_ERR(r) &&
               cohort_ucs_status(UCS_PTR_STATUS(r)) == COHORT_ERR_PEER_FAILED &&
               peer->state == COHORT_PEER_WIRED) {
        cohort_peer_lost(peer, UCS_PTR_STATUS(r)); /* a live peer on this node is no failure */
    }
}

static void cohort_proto_msg_fetched(void *ucx_req, ucs_status_t ucs, size_t length,
                                     void *user_data)
{
    cohort_xfer_ucx_complete(ucx_req, ucs, user_data);
}

void cohort_proto_msg_fetch(cohort_context_t *ctx, cohort_xfer_t *x, void *desc)
{
    cohort_request_t *req = x->req;
    const cohort_peer_t *from =
        req->comm != NULL && x->peer >= 0
            ? cohort_peer_get(ctx, cohort_comm_world_rank(req->comm, x->peer))
            : NULL;
    ucp_request_param_t param;
    void *r;

    if (from != NULL && from->state == COHORT_PEER_FAILED) {
        /* Its data went with it, and a fetch asked of the endpoint UCX made for a sender it
         * lost may never end (UCX cannot cancel it; the worker's destruction meets it). */
        cohort_debug(ctx, "not fetching %zu bytes from world rank %d: it failed", x->received,
                     from->rank);
        ucp_am_data_release(ctx->worker, desc);
        cohort_xfer_finish(x, COHORT_ERR_PEER_FAILED);
        return;
    }
    cohort_xfer_ucx_param(x, &param);
    param.cb.recv_am = cohort_proto_msg_fetched;
    x->since = cohort_time_now(); /* a fetch that lasts is watched from here (notify.c) */
    r = ucp_am_recv_data_nbx(ctx->worker, desc, x->buf, x->received, &param);
    if (UCS_PTR_IS_ERR(r)) {
        cohort_error(ctx, "fetching %zu bytes from rank %d failed: %s", x->received, x->peer,
                     ucs_status_string(UCS_PTR_STATUS(r)));
    }
    cohort_xfer_ucx_started(x, r);
}

/* The engine hands it the rendezvous messages it matches. */
static void cohort_proto_msg_init(cohort_context_t *ctx)
{
    cohort_am_fetch_set(ctx, cohort_proto_msg_fetch);
}

/* Anything UCX takes: not device memory where UCX has no CUDA transport (staged, or claimed
 * by a protocol that could not carry it after all). */
static int cohort_proto_msg_select(cohort_xfer_t *x, cohort_peer_t *peer)
{
    return x->mem_type == COHORT_MEM_HOST || x->req->ctx->mem.ucx_mem_cuda;
}

static void cohort_proto_msg_start(cohort_xfer_t *x, cohort_peer_t *peer)
{
    x->proto = &cohort_proto_msg;
    cohort_proto_msg_send(x, peer, x->buf, x->len, 0);
}

static void cohort_proto_msg_describe(const cohort_xfer_t *x, char *buf, size_t len)
{
    snprintf(buf, len, "%s", x->ucx_req != NULL ? "a message UCX is sending" : "a message");
}

const cohort_proto_t cohort_proto_msg = {
    .name = "message",
    .select = cohort_proto_msg_select,
    .start = cohort_proto_msg_start,
    .describe = cohort_proto_msg_describe,
    .init = cohort_proto_msg_init,
};
