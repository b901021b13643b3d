/*
 * Active messages carry a fixed header (am_header.h). A message is delivered to its group's
 * matching engine: posted receives first (in posting order), else the unexpected queue. A
 * message for a group this rank has not created yet waits in the context's orphan list until
 * the group appears. Point-to-point messages carry a per-(sender, group) number and are
 * matched strictly in that order, whatever order UCX delivers them in.
 */
#include <stdlib.h>
#include <string.h>
#include "core/am.h"
#include "core/endpoint.h"
#include "core/log.h"
#include "group/group.h"

static ucs_memory_type_t cohort_xfer_ucs_mem_type(const cohort_xfer_t *x)
{
    return x->mem_type == COHORT_MEM_CUDA ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
}

static void cohort_xfer_finish(cohort_xfer_t *x, cohort_status_t status)
{
    if (x->done) {
        return;
    }
    x->done = 1;
    x->status = status;
    if (x->req->type != COHORT_REQ_COLL) {
        cohort_request_complete(x->req, status);
    }
}

/* UCX operation completion, for both sends and rendezvous receives. */
static void cohort_xfer_ucx_done(void *ucx_req, ucs_status_t ucs, void *user_data)
{
    cohort_xfer_t *x = user_data;
    cohort_request_t *req = x->req;

    x->ucx_req = NULL;
    ucp_request_free(ucx_req);
    if (ucs != UCS_OK && ucs != UCS_ERR_CANCELED) {
        /* req->group, not x->group: a freed group clears the former. */
        cohort_error("%s rank %d of group 0x%016llx failed: %s",
                     x->is_send ? "send to" : "receive from", x->peer,
                     (unsigned long long)(req->group ? req->group->gid : 0),
                     ucs_status_string(ucs));
    }
    cohort_xfer_finish(x, cohort_ucs_status(ucs));
    req->inflight--;
    if (req->user_freed && req->inflight == 0) {
        cohort_request_release(req);
    }
}

static void cohort_xfer_ucx_recv_done(void *ucx_req, ucs_status_t ucs, size_t length,
                                      void *user_data)
{
    cohort_xfer_ucx_done(ucx_req, ucs, user_data);
}

static void cohort_msg_free(cohort_context_t *ctx, cohort_msg_t *m)
{
    if (m->desc != NULL) {
        ucp_am_data_release(ctx->worker, m->desc);
    }
    free(m->data);
    free(m);
}

static int cohort_xfer_matches(const cohort_xfer_t *x, const cohort_am_hdr_t *h)
{
    return x->kind == h->kind && x->peer == h->src && x->tag == h->tag &&
           (h->kind == COHORT_MSG_P2P || x->seq == h->seq);
}

static void cohort_rndv_start(cohort_context_t *ctx, cohort_xfer_t *x)
{
    ucp_request_param_t param;
    void *desc = x->rndv_desc;
    void *r;

    x->rndv_desc = NULL;
    memset(&param, 0, sizeof(param));
    param.op_attr_mask =
        UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    param.cb.recv_am = cohort_xfer_ucx_recv_done;
    param.user_data = x;
    param.memory_type = cohort_xfer_ucs_mem_type(x);
    r = ucp_am_recv_data_nbx(ctx->worker, desc, x->buf, x->received, &param);
    if (UCS_PTR_IS_ERR(r)) {
        cohort_error("fetching %zu bytes from rank %d failed: %s", x->received, x->peer,
                     ucs_status_string(UCS_PTR_STATUS(r)));
        cohort_xfer_finish(x, cohort_ucs_status(UCS_PTR_STATUS(r)));
    } else if (r == NULL) {
        cohort_xfer_finish(x, COHORT_OK);
    } else {
        x->ucx_req = r;
        x->req->inflight++;
    }
}

/* Hand message @a m to receive @a x (already out of the posted list). @a m stays the caller's,
 * except its rendezvous descriptor, which moves to @a x. */
static void cohort_xfer_consume(cohort_context_t *ctx, cohort_xfer_t *x, cohort_msg_t *m,
                                int in_callback)
{
    x->posted = 0;
    if (ctx->cfg.check && m->hdr.fp != x->fp) {
        cohort_error("group 0x%016llx: operation mismatch with rank %d at collective %u step %d "
                     "(fingerprint %08x here, %08x there): members called different "
                     "collectives or arguments",
                     (unsigned long long)m->hdr.gid, m->hdr.src, m->hdr.seq, m->hdr.tag, x->fp,
                     m->hdr.fp);
        cohort_xfer_finish(x, COHORT_ERR_MISMATCH);
        return;
    }
    if (m->len > x->len) {
        cohort_error("group 0x%016llx: %zu bytes arrived from rank %d (tag/step %d) for a receive "
                     "of %zu bytes",
                     (unsigned long long)m->hdr.gid, m->len, m->hdr.src, m->hdr.tag, x->len);
        cohort_xfer_finish(x, COHORT_ERR_MISMATCH);
        return;
    }
    x->received = m->len;
    if (m->desc != NULL) {
        x->rndv_desc = m->desc;
        m->desc = NULL;
        if (in_callback) {
            /* UCX does not expect a fetch from inside its own callback: defer. */
            cohort_list_push(&ctx->rndv_ready, &x->link);
        } else {
            cohort_rndv_start(ctx, x);
        }
        return;
    }
    if (m->len > 0) {
        memcpy(x->buf, m->data, m->len);
    }
    cohort_xfer_finish(x, COHORT_OK);
}

/* Copy a borrowed message; its rendezvous descriptor moves to the copy. */
static cohort_msg_t *cohort_msg_clone(cohort_msg_t *m)
{
    cohort_msg_t *c = malloc(sizeof(*c));

    if (c == NULL) {
        return NULL;
    }
    *c = *m;
    c->data = NULL;
    if (m->desc == NULL && m->len > 0) {
        c->data = malloc(m->len);
        if (c->data == NULL) {
            free(c);
            return NULL;
        }
        memcpy(c->data, m->data, m->len);
    }
    m->desc = NULL;
    return c;
}

/* Keep a message: @a owned says whether @a m is already ours, else it is copied. When memory
 * runs out the message is lost, and logged. */
static void cohort_msg_keep(cohort_list_t *list, cohort_msg_t *m, int owned)
{
    cohort_msg_t *c = owned ? m : cohort_msg_clone(m);

    if (c == NULL) {
        cohort_error("out of memory queueing a %zu-byte message from rank %d", m->len, m->hdr.src);
        return;
    }
    cohort_list_push(list, &c->link);
}

/* Match one in-order message; an owned message is freed once consumed. */
static void cohort_match(cohort_group_t *g, cohort_msg_t *m, int owned, int in_callback)
{
    cohort_context_t *ctx = g->ctx;
    cohort_list_t *pos, *tmp;

    cohort_list_for_each(pos, tmp, &g->posted)
    {
        cohort_xfer_t *x = cohort_container_of(pos, cohort_xfer_t, link);
        if (cohort_xfer_matches(x, &m->hdr)) {
            cohort_list_del(&x->link);
            cohort_xfer_consume(ctx, x, m, in_callback);
            if (owned) {
                cohort_msg_free(ctx, m);
            }
            return;
        }
    }
    cohort_msg_keep(&g->unexpected, m, owned);
}

static cohort_status_t cohort_group_p2p_seqs(cohort_group_t *g)
{
    if (g->send_seq == NULL) {
        g->send_seq = calloc((size_t)g->size, sizeof(uint32_t));
        g->recv_seq = calloc((size_t)g->size, sizeof(uint32_t));
        if (g->send_seq == NULL || g->recv_seq == NULL) {
            free(g->send_seq);
            free(g->recv_seq);
            g->send_seq = g->recv_seq = NULL;
            return COHORT_ERR_NO_MEMORY;
        }
    }
    return COHORT_OK;
}

static void cohort_deliver(cohort_group_t *g, cohort_msg_t *m, int owned, int in_callback)
{
    cohort_list_t *pos, *tmp;
    int src = m->hdr.src;
    int again;

    if (src < 0 || src >= g->size) {
        cohort_error("group 0x%016llx: message from rank %d of a group of %d dropped",
                     (unsigned long long)g->gid, src, g->size);
        if (owned) {
            cohort_msg_free(g->ctx, m);
        }
        return;
    }
    if (m->hdr.kind != COHORT_MSG_P2P) {
        cohort_match(g, m, owned, in_callback);
        return;
    }
    if (cohort_group_p2p_seqs(g) != COHORT_OK) {
        cohort_error("out of memory: message from rank %d dropped", src);
        if (owned) {
            cohort_msg_free(g->ctx, m);
        }
        return;
    }
    if (m->hdr.seq != g->recv_seq[src]) {
        cohort_msg_keep(&g->held, m, owned);
        return;
    }
    cohort_match(g, m, owned, in_callback);
    g->recv_seq[src]++;
    /* Messages from this source that overtook this one can go now. */
    do {
        again = 0;
        cohort_list_for_each(pos, tmp, &g->held)
        {
            cohort_msg_t *h = cohort_container_of(pos, cohort_msg_t, link);
            if (h->hdr.src == src && h->hdr.seq == g->recv_seq[src]) {
                cohort_list_del(&h->link);
                cohort_match(g, h, 1, in_callback);
                g->recv_seq[src]++;
                again = 1;
                break;
            }
        }
    } while (again);
}

static ucs_status_t cohort_am_recv_cb(void *arg, const void *header, size_t header_length,
                                      void *data, size_t length, const ucp_am_recv_param_t *param)
{
    cohort_context_t *ctx = arg;
    cohort_group_t *g;
    cohort_msg_t m;
    int rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;

    memset(&m, 0, sizeof(m));
    if (cohort_am_hdr_decode(header, header_length, &m.hdr) != 0) {
        cohort_error("dropped a message with a malformed %zu-byte header", header_length);
        return UCS_OK; /* for a rendezvous message, UCX releases the descriptor */
    }
    m.len = length;
    if (rndv) {
        m.desc = data;
    } else {
        m.data = data;
    }
    g = cohort_map_get(&ctx->groups, m.hdr.gid);
    if (g == NULL) {
        cohort_msg_keep(&ctx->orphans, &m, 0);
    } else {
        cohort_deliver(g, &m, 0, 1);
    }
    /* A rendezvous descriptor we kept (queued, or handed to a receive) moved out of m and must
     * stay alive; one nobody took is left to UCX to drop. */
    return rndv && m.desc == NULL ? UCS_INPROGRESS : UCS_OK;
}

cohort_status_t cohort_am_register(cohort_context_t *ctx)
{
    ucp_am_handler_param_t param;
    ucs_status_t ucs;

    memset(&param, 0, sizeof(param));
    param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                       UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
    param.id = COHORT_AM_ID;
    param.flags = UCP_AM_FLAG_WHOLE_MSG;
    param.cb = cohort_am_recv_cb;
    param.arg = ctx;
    ucs = ucp_worker_set_am_recv_handler(ctx->worker, &param);
    if (ucs != UCS_OK) {
        cohort_error("ucp_worker_set_am_recv_handler failed: %s", ucs_status_string(ucs));
        return cohort_ucs_status(ucs);
    }
    return COHORT_OK;
}

static void cohort_xfer_init(cohort_request_t *req, cohort_xfer_t *x, int is_send, int peer,
                             uint8_t kind, uint32_t seq, int32_t tag, uint32_t fp, void *buf,
                             size_t len)
{
    memset(x, 0, sizeof(*x));
    cohort_list_init(&x->link);
    x->req = req;
    x->is_send = is_send;
    x->peer = peer;
    x->kind = kind;
    x->seq = seq;
    x->tag = tag;
    x->fp = fp;
    x->buf = buf;
    x->len = len;
}

cohort_status_t cohort_xfer_send(cohort_request_t *req, cohort_xfer_t *x, int peer, uint8_t kind,
                                 uint32_t seq, int32_t tag, uint32_t fp, const void *buf,
                                 size_t len)
{
    cohort_group_t *g = req->group;
    cohort_context_t *ctx = g->ctx;
    ucp_request_param_t param;
    cohort_am_hdr_t hdr;
    cohort_status_t status;
    ucp_ep_h ep;
    void *r;

    cohort_xfer_init(req, x, 1, peer, kind, seq, tag, fp, (void *)buf, len);
    status = cohort_group_prepare(g);
    if (status != COHORT_OK) {
        return status;
    }
    status = cohort_endpoint_get(ctx, g->members[peer], &ep);
    if (status != COHORT_OK) {
        return status;
    }
    if (kind == COHORT_MSG_P2P) {
        status = cohort_group_p2p_seqs(g);
        if (status != COHORT_OK) {
            return status;
        }
        x->seq = g->send_seq[peer]++;
    }
    hdr.gid = g->gid;
    hdr.seq = x->seq;
    hdr.src = g->rank;
    hdr.tag = tag;
    hdr.fp = fp;
    hdr.kind = kind;
    cohort_am_hdr_encode(&hdr, x->hdr);

    memset(&param, 0, sizeof(param));
    param.op_attr_mask =
        UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    param.cb.send = cohort_xfer_ucx_done;
    param.user_data = x;
    param.memory_type = cohort_xfer_ucs_mem_type(x);
    r = ucp_am_send_nbx(ep, COHORT_AM_ID, x->hdr, sizeof(x->hdr), buf, len, &param);
    ctx->stat_msgs++;
    if (UCS_PTR_IS_ERR(r)) {
        cohort_error("send of %zu bytes to rank %d of group 0x%016llx failed: %s", len, peer,
                     (unsigned long long)g->gid, ucs_status_string(UCS_PTR_STATUS(r)));
        return cohort_ucs_status(UCS_PTR_STATUS(r));
    }
    if (r == NULL) {
        cohort_xfer_finish(x, COHORT_OK);
    } else {
        x->ucx_req = r;
        req->inflight++;
    }
    return COHORT_OK;
}

cohort_status_t cohort_xfer_recv(cohort_request_t *req, cohort_xfer_t *x, int peer, uint8_t kind,
                                 uint32_t seq, int32_t tag, uint32_t fp, void *buf, size_t len)
{
    cohort_group_t *g = req->group;
    cohort_context_t *ctx = g->ctx;
    cohort_list_t *pos, *tmp;
    cohort_status_t status;

    cohort_xfer_init(req, x, 0, peer, kind, seq, tag, fp, buf, len);
    status = cohort_group_prepare(g);
    if (status != COHORT_OK) {
        return status;
    }
    if (ctx->peers[g->members[peer]].state == COHORT_PEER_FAILED) {
        cohort_error("receive from rank %d of group 0x%016llx: that peer has failed", peer,
                     (unsigned long long)g->gid);
        return COHORT_ERR_PEER_FAILED;
    }
    cohort_list_for_each(pos, tmp, &g->unexpected)
    {
        cohort_msg_t *m = cohort_container_of(pos, cohort_msg_t, link);
        if (cohort_xfer_matches(x, &m->hdr)) {
            cohort_list_del(&m->link);
            cohort_xfer_consume(ctx, x, m, 0);
            cohort_msg_free(ctx, m);
            return COHORT_OK;
        }
    }
    x->posted = 1;
    cohort_list_push(&g->posted, &x->link);
    return COHORT_OK;
}

void cohort_xfer_cancel(cohort_xfer_t *x, cohort_status_t status)
{
    cohort_context_t *ctx = x->req->ctx;

    if (x->posted) {
        cohort_list_del(&x->link);
        x->posted = 0;
    }
    if (x->rndv_desc != NULL) {
        /* Matched in a callback, fetch not started yet. */
        cohort_list_del(&x->link);
        ucp_am_data_release(ctx->worker, x->rndv_desc);
        x->rndv_desc = NULL;
    }
    if (x->ucx_req != NULL && !x->is_send) {
        ucp_request_cancel(ctx->worker, x->ucx_req);
    }
    cohort_xfer_finish(x, status);
}

int cohort_am_start_rndv(cohort_context_t *ctx)
{
    int n = 0;

    while (!cohort_list_empty(&ctx->rndv_ready)) {
        cohort_xfer_t *x = cohort_container_of(ctx->rndv_ready.next, cohort_xfer_t, link);
        cohort_list_del(&x->link);
        cohort_rndv_start(ctx, x);
        n++;
    }
    return n;
}

void cohort_am_adopt(cohort_group_t *g)
{
    cohort_list_t *pos, *tmp;

    cohort_list_for_each(pos, tmp, &g->ctx->orphans)
    {
        cohort_msg_t *m = cohort_container_of(pos, cohort_msg_t, link);
        if (m->hdr.gid == g->gid) {
            cohort_list_del(&m->link);
            cohort_deliver(g, m, 1, 0);
        }
    }
}

static void cohort_msg_list_free(cohort_context_t *ctx, cohort_list_t *list)
{
    cohort_list_t *pos, *tmp;

    cohort_list_for_each(pos, tmp, list)
    {
        cohort_msg_t *m = cohort_container_of(pos, cohort_msg_t, link);
        cohort_list_del(&m->link);
        cohort_msg_free(ctx, m);
    }
}

void cohort_am_group_cleanup(cohort_group_t *g)
{
    cohort_msg_list_free(g->ctx, &g->unexpected);
    cohort_msg_list_free(g->ctx, &g->held);
}

void cohort_am_orphans_cleanup(cohort_context_t *ctx)
{
    cohort_msg_list_free(ctx, &ctx->orphans);
}

void cohort_am_fail_peer(cohort_context_t *ctx, int world_rank, const char *why)
{
    cohort_list_t *gpos, *gtmp, *pos, *tmp;

    cohort_list_for_each(gpos, gtmp, &ctx->group_list)
    {
        cohort_group_t *g = cohort_container_of(gpos, cohort_group_t, link);
        cohort_list_for_each(pos, tmp, &g->posted)
        {
            cohort_xfer_t *x = cohort_container_of(pos, cohort_xfer_t, link);
            if (g->members[x->peer] == world_rank) {
                cohort_error("group 0x%016llx: receive from rank %d (world %d) failed: %s",
                             (unsigned long long)g->gid, x->peer, world_rank, why);
                cohort_list_del(&x->link);
                x->posted = 0;
                cohort_xfer_finish(x, COHORT_ERR_PEER_FAILED);
            }
        }
    }
}
