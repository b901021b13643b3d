/*
 * Transfers: one message sent or received on behalf of a request. A send goes out when its
 * communicator has made its first-use step and its peer is wired; until then it waits on the
 * communicator's or the peer's list, and progress moves it on. Nothing here blocks.
 */
#include <stdlib.h>
#include <string.h>
#include "core/am.h"
#include "core/endpoint.h"
#include "core/log.h"
#include "core/ctl.h"

void cohort_xfer_ucx_param(cohort_xfer_t *x, ucp_request_param_t *param)
{
    memset(param, 0, sizeof(*param));
    param->op_attr_mask =
        UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    param->user_data = x;
    param->memory_type =
        x->mem_type == COHORT_MEM_CUDA ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
}

int cohort_xfer_ucx_started(cohort_xfer_t *x, void *r)
{
    if (UCS_PTR_IS_ERR(r)) {
        cohort_xfer_finish(x, cohort_ucs_status(UCS_PTR_STATUS(r)));
        return 0;
    }
    if (r == NULL) {
        if (!x->req->ctx->proto_ops->sent(x)) {
            cohort_xfer_finish(x, COHORT_OK); /* a single copy ends with the receiver's ACK */
        }
        return 0;
    }
    x->ucx_req = r;
    x->req->inflight++;
    return 1;
}

/* Device data goes through a page-locked bounce where it must (staging, the protocol layer's
 * step, core/proto_ops.h); a request that may carry none, or a transfer that holds no bounce,
 * never calls it. */
static cohort_status_t cohort_xfer_stage(cohort_xfer_t *x)
{
    return x->req->device ? x->req->ctx->proto_ops->stage(x) : COHORT_OK;
}

static cohort_status_t cohort_xfer_unstage(cohort_xfer_t *x, cohort_status_t status)
{
    return x->stage != NULL ? x->req->ctx->proto_ops->unstage(x, status) : status;
}

void cohort_xfer_copy_wait(cohort_xfer_t *x)
{
    x->waiting = 1;
    cohort_list_push(&x->req->ctx->copying, &x->link);
}

cohort_status_t cohort_xfer_fill(cohort_context_t *ctx, cohort_xfer_t *x, const void *data,
                                 size_t len)
{
    if (len == 0) {
        return COHORT_OK;
    }
    if (x->mem_type == COHORT_MEM_CUDA) {
        return cohort_gpu_copy(ctx, x->buf, data, len);
    }
    memcpy(x->buf, data, len);
    return COHORT_OK;
}

void cohort_xfer_finish(cohort_xfer_t *x, cohort_status_t status)
{
    cohort_request_t *req = x->req;

    if (x->stage != NULL && !x->done && req->ctx->proto_ops->drain(x, &status)) {
        return; /* finished again once its data is on the device */
    }
    if (x->ucx_req == NULL) {
        cohort_list_del(&x->req_link);
    }
    status = cohort_xfer_unstage(x, status);
    if (x->done) {
        return;
    }
    req->ctx->proto_ops->finish(x);
    x->done = 1;
    x->status = status;
    if (x->is_send && x->kind == COHORT_MSG_P2P && status != COHORT_OK &&
        status != COHORT_ERR_CANCELED && req->comm != NULL) {
        /* Its sequence number is used up: the receiver would hold every later message from us. A
         * cancelled one's receiver was told (cancel.c), and its numbers stay in step. */
        req->ctx->comm_hooks->revoke(req->comm, status, "a point-to-point send failed");
    }
    if (req->ops->progress == NULL) {
        cohort_request_complete(req, status);
    } else {
        cohort_request_wake(req);
    }
}

void cohort_xfer_mismatch(cohort_xfer_t *x)
{
    cohort_comm_t *c = x->req->comm;

    cohort_xfer_finish(x, COHORT_ERR_MISMATCH);
    /* Found by this transfer alone, unlike a mismatch the members agreed on (COHORT_CHECK's
     * round): in a collective the sender and the members waiting on this rank's next steps do
     * not know, and are out of step with it. They are told, and MISMATCH is what every member
     * gets. A point-to-point receive too small for its message is its own error, as in MPI:
     * both sides spent their numbers, nobody waits on a step not taken. */
    if (c != NULL && x->kind != COHORT_MSG_P2P) {
        c->ctx->comm_hooks->revoke(c, COHORT_ERR_MISMATCH, "a transfer found a mismatch");
    }
}

void cohort_xfer_ucx_complete(void *ucx_req, ucs_status_t ucs, cohort_xfer_t *x)
{
    cohort_request_t *req = x->req;
    cohort_peer_t *peer = x->ucx_peer;
    cohort_status_t status;
    int lost;

    x->ucx_req = NULL;
    ucp_request_free(ucx_req);
    if (peer != NULL) {
        peer->inflight--;
        x->ucx_peer = NULL;
        if (ucs == UCS_OK && x->is_send) {
            cohort_peer_sent(peer);
        }
    }
    /* Quiet for a cancel: ours of a send, finalize's forced closes under a fetch. */
    if (ucs != UCS_OK && (ucs != UCS_ERR_CANCELED || (!x->is_send && !req->ctx->finalizing)) &&
        !x->done) {
        cohort_error(req->ctx, "%s rank %d of group 0x%016llx failed: %s",
                     x->is_send ? "send to" : "fetch from", x->peer,
                     (unsigned long long)(req->comm ? req->comm->id : 0), ucs_status_string(ucs));
    }
    /* cohort never cancels a rendezvous fetch (UCX cannot): one that ends cancelled lost the
     * endpoint it ran on (UCX's for the sender, failed or closed), which is the sender's
     * failure as far as this transfer knows, not a revocation nobody announced. */
    status =
        ucs == UCS_ERR_CANCELED && !x->is_send ? COHORT_ERR_PEER_FAILED : cohort_ucs_status(ucs);
    if (x->canceling && status != COHORT_ERR_PEER_FAILED) {
        /* freed by its sender: UCX let go of its buffer, read or dropped by the receiver */
        status = COHORT_ERR_CANCELED;
    }
    /* UCX may fail the send before it fails the endpoint (or never, over shared memory). A
     * live peer on this node lost only its connection (cohort_peer_lost): the transfer failed
     * in the transport, and the peer is no failure. */
    lost = peer != NULL && status == COHORT_ERR_PEER_FAILED && peer->state == COHORT_PEER_WIRED;
    if (lost && cohort_peer_alive(peer)) {
        status = COHORT_ERR_UCX;
    }
    req->inflight--;
    if (ucs == UCS_OK && req->ctx->proto_ops->sent(x)) {
        /* The descriptor went out; the receiver's ACK finishes the send. */
        if (req->user_freed && req->inflight == 0) {
            cohort_request_release(req);
        }
        return;
    }
    cohort_xfer_finish(x, status);
    if (lost && peer->state == COHORT_PEER_WIRED) {
        cohort_peer_lost(peer, ucs);
    } else if (!x->is_send && status == COHORT_ERR_PEER_FAILED && req->comm != NULL &&
               x->peer >= 0) {
        /* A fetch failed on UCX's endpoint for its sender, which may be this rank's only word
         * of a death (it may hold no endpoint to it). Not proof: a live sender that closed
         * its endpoint by force fails the fetch too. So the sender is watched (wired, as a
         * long wait does, notify.c): an endpoint of ours fails, naming it, only if it died. */
        cohort_peer_watch(cohort_peer_get(req->ctx, cohort_comm_world_rank(req->comm, x->peer)));
    }
    if (req->user_freed && req->inflight == 0) {
        cohort_request_release(req);
    }
}

static void cohort_xfer_setup(cohort_request_t *req, cohort_xfer_t *x, int is_send, int peer,
                              uint8_t kind, uint32_t seq, int32_t tag, uint32_t fingerprint,
                              void *buf, size_t len)
{
    memset(x, 0, sizeof(*x));
    cohort_list_init(&x->link);
    cohort_list_init(&x->req_link);
    x->req = req;
    x->is_send = is_send;
    x->peer = peer;
    x->kind = kind;
    x->seq = seq;
    x->tag = tag;
    x->fingerprint = fingerprint;
    x->buf = buf;
    x->len = len;
}

void cohort_xfer_issue(cohort_xfer_t *x, cohort_peer_t *peer)
{
    /* the protocol layer that carries it (core/proto_ops.h) */
    peer->ctx->proto_ops->start(x, peer);
}

void cohort_xfer_route(cohort_xfer_t *x)
{
    cohort_request_t *req = x->req;
    cohort_context_t *ctx = req->ctx;
    cohort_peer_t *peer = cohort_peer_get(ctx, cohort_comm_world_rank(req->comm, x->peer));

    if (peer == NULL) {
        cohort_xfer_finish(x, COHORT_ERR_NO_MEMORY);
        return;
    }
    if (peer->state == COHORT_PEER_WIRED && peer->rank != ctx->rank &&
        cohort_fault(ctx, COHORT_FAULT_EP_DROP)) {
        cohort_peer_drop(peer); /* this send wires it again, below */
    }
    cohort_peer_want(peer);
    switch (peer->state) {
    case COHORT_PEER_WIRED:
        cohort_xfer_issue(x, peer);
        break;
    case COHORT_PEER_LOOKING_UP:
        x->waiting = 1;
        cohort_list_push(&peer->pending, &x->link);
        break;
    case COHORT_PEER_LEFT:
        cohort_error(ctx,
                     "send to rank %d (world %d) of group 0x%016llx: that peer has "
                     "finalized",
                     x->peer, peer->rank, (unsigned long long)req->comm->id);
        cohort_xfer_finish(x, COHORT_ERR_PEER_FAILED);
        break;
    default:
        cohort_error(ctx,
                     "send to rank %d (world %d) of group 0x%016llx: that peer has failed "
                     "(%s)",
                     x->peer, peer->rank, (unsigned long long)req->comm->id,
                     cohort_strerror(peer->error));
        cohort_xfer_finish(x, peer->error != COHORT_OK ? peer->error : COHORT_ERR_PEER_FAILED);
        break;
    }
}

cohort_status_t cohort_xfer_send(cohort_request_t *req, cohort_xfer_t *x, int peer, uint8_t kind,
                                 uint32_t seq, int32_t tag, uint32_t fingerprint, const void *buf,
                                 size_t len)
{
    cohort_comm_t *c = req->comm;
    cohort_am_hdr_t hdr;
    cohort_status_t status;

    cohort_xfer_setup(req, x, 1, peer, kind, seq, tag, fingerprint, (void *)buf, len);
    status = cohort_comm_use(c);
    if (status != COHORT_OK) {
        return status;
    }
    if (cohort_fault(req->ctx, COHORT_FAULT_SEND)) {
        return COHORT_ERR_NO_MEMORY;
    }
    status = cohort_xfer_stage(x);
    if (status != COHORT_OK) {
        return status;
    }
    if (kind == COHORT_MSG_P2P) {
        status = cohort_comm_p2p_seqs(c);
        if (status != COHORT_OK) {
            return cohort_xfer_unstage(x, status); /* the bounce back: nothing was posted */
        }
        /* Taken last: a send that fails before this point spends no number. */
        x->seq = c->send_seq[peer]++;
    }
    hdr.gid = c->id;
    hdr.seq = x->seq;
    hdr.src = c->rank;
    hdr.tag = tag;
    hdr.fingerprint = fingerprint;
    hdr.wsrc = req->ctx->rank;
    hdr.kind = kind;
    hdr.flags = 0;
    cohort_am_hdr_encode(&hdr, x->hdr);
    cohort_list_push(&req->xfers, &x->req_link);
    if (x->stage_copy != 0) {
        cohort_xfer_copy_wait(x); /* the data is on its way into the bounce */
    } else {
        cohort_xfer_post_send(x);
    }
    return COHORT_OK;
}

void cohort_xfer_post_send(cohort_xfer_t *x)
{
    cohort_comm_t *c = x->req->comm;

    if (c->state != COHORT_COMM_READY) {
        x->waiting = 1;
        cohort_list_push(&c->waiting, &x->link);
        return;
    }
    cohort_xfer_route(x);
}

cohort_status_t cohort_xfer_recv_start(cohort_request_t *req, cohort_xfer_t *x, int peer,
                                       uint8_t kind, uint32_t seq, int32_t tag,
                                       uint32_t fingerprint, void *buf, size_t len)
{
    cohort_status_t status;

    cohort_xfer_setup(req, x, 0, peer, kind, seq, tag, fingerprint, buf, len);
    status = cohort_comm_use(req->comm);
    if (status == COHORT_OK) {
        status = cohort_xfer_stage(x);
    }
    if (status != COHORT_OK) {
        return status;
    }
    cohort_list_push(&req->xfers, &x->req_link);
    return COHORT_OK;
}

cohort_status_t cohort_xfer_recv_refused(cohort_xfer_t *x, cohort_status_t status)
{
    return cohort_xfer_unstage(x, status);
}

int cohort_xfer_cancel_p2p(cohort_xfer_t *x, cohort_status_t status)
{
    cohort_request_t *req = x->req;
    cohort_comm_t *c = req->comm;
    cohort_am_hdr_t h;
    int world;

    /* Only a send freed by its user (REVOKED is what the free cancels with) on a group still
     * in order; a revoked group's receivers drop what they get, and say so to a single-copy
     * sender. A timed-out send revokes as before: its receiver is told it timed out. */
    if (!x->is_send || x->kind != COHORT_MSG_P2P || status != COHORT_ERR_REVOKED || c == NULL ||
        c->error != COHORT_OK || req->timed_out) {
        return 0;
    }
    if (x->canceling) {
        return 1;
    }
    x->canceling = 1;
    world = cohort_comm_world_rank(c, x->peer);
    if (cohort_am_hdr_decode(x->hdr, sizeof(x->hdr), &h) != 0) {
        return 0;
    }
    h.kind = COHORT_MSG_CANCEL;
    h.flags = 0;
    /* Handed to a protocol: the message (or its descriptor) may be out. Else it never left,
     * and the cancel takes its place in the receiver's order. */
    h.left = x->proto != NULL;
    (void)cohort_ctl_send(req->ctx, world, &h); /* a peer gone has nothing to be told */
    if (req->ctx->proto_ops->cancel(x, COHORT_ERR_CANCELED)) {
        return 1; /* a single-copy offer: over when its reader answers */
    }
    if (x->ucx_req != NULL) {
        return 1; /* UCX still reads its buffer: over when the receiver took or dropped it */
    }
    if (x->posted || x->waiting) {
        cohort_list_del(&x->link);
        x->posted = 0;
        x->waiting = 0;
    }
    cohort_xfer_finish(x, COHORT_ERR_CANCELED);
    return 1;
}

void cohort_xfer_cancel(cohort_xfer_t *x, cohort_status_t status)
{
    if (x->done) {
        return;
    }
    if (cohort_xfer_cancel_p2p(x, status)) {
        return;
    }
    if (x->req->ctx->proto_ops->cancel(x, status)) {
        return; /* its protocol holds it until another process answers */
    }
    if (x->posted || x->waiting) {
        /* A receive leaves matching; a send not handed to UCX yet is dropped. */
        cohort_list_del(&x->link);
        x->posted = 0;
        x->waiting = 0;
    }
    cohort_xfer_finish(x, status);
}

/* A peer's endpoint is usable: the sends that waited on it go out, in the order posted. */
static void cohort_xfer_peer_wired(cohort_peer_t *peer)
{
    while (!cohort_list_empty(&peer->pending) && peer->state == COHORT_PEER_WIRED) {
        cohort_xfer_t *x = cohort_container_of(peer->pending.next, cohort_xfer_t, link);
        cohort_list_del(&x->link);
        x->waiting = 0;
        cohort_xfer_issue(x, peer);
    }
}

static void cohort_xfer_peer_failed(cohort_peer_t *peer, cohort_status_t status, const char *why,
                                    int tell)
{
    cohort_list_t *pos, *tmp;

    cohort_list_for_each(pos, tmp, &peer->pending)
    {
        cohort_xfer_t *x = cohort_container_of(pos, cohort_xfer_t, link);
        cohort_list_del(&x->link);
        x->waiting = 0;
        cohort_error(peer->ctx, "send to world rank %d failed: %s", peer->rank, why);
        cohort_xfer_finish(x, status);
    }
}

static const cohort_peer_observer_t cohort_xfer_observer = {
    .name = "sends", .failed = cohort_xfer_peer_failed, .wired = cohort_xfer_peer_wired};

void cohort_xfer_init(cohort_context_t *ctx)
{
    cohort_peer_observe(ctx, &cohort_xfer_observer);
}
