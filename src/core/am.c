/*
 * Active messages carry a fixed header (am_header.h). A message is delivered to its
 * communicator's matching engine: posted receives first (in posting order), else the
 * unexpected queue. A message for a communicator this rank has not created yet is an orphan,
 * kept by id (bounded by COHORT_ORPHAN_LIMIT) until the communicator appears. Point-to-point
 * messages carry a per-(sender, communicator) number and are matched strictly in that order.
 *
 * Nothing is copied twice: an unexpected eager message keeps UCX's own buffer
 * (UCP_AM_FLAG_PERSISTENT_DATA), and a rendezvous fetch starts inside the callback (the
 * message protocol's, proto/msg.c, through ctx->am_fetch).
 *
 * The matching sits below the communicators (comm.c), which own its queues: a message that
 * leaves a group out of step revokes it through the hook comm.c registered (ctx->comm_hooks,
 * context.h), never by name.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include "core/am.h"
#include "core/endpoint.h"
#include "core/log.h"
#include "base/time.h"

struct cohort_orphans {
    cohort_list_t msgs;
};

/* What an orphan costs against the limit at least: its bookkeeping. */
#define COHORT_ORPHAN_MIN_CHARGE 256

/* What a kept message holds back to UCX (its descriptor, its persistent data) or freed. */
static void cohort_msg_let_go(cohort_context_t *ctx, cohort_msg_t *m)
{
    if (m->desc != NULL) {
        ucp_am_data_release(ctx->worker, m->desc);
    }
    if (m->ucx_data) {
        ucp_am_data_release(ctx->worker, m->data);
    } else {
        free(m->data);
    }
}

static void cohort_msg_free(cohort_context_t *ctx, cohort_msg_t *m)
{
    cohort_msg_let_go(ctx, m);
    free(m);
}

/* @a m will never be read here: a single-copy sender waiting on it hears so. */
static void cohort_msg_unread(cohort_context_t *ctx, const cohort_msg_t *m)
{
    if ((m->hdr.flags & COHORT_HDR_SINGLE_COPY) && ctx->am_offer != NULL) {
        ctx->am_offer->unread(ctx, &m->hdr, m->desc == NULL ? m->data : NULL, m->len);
    }
}

static int cohort_xfer_matches(const cohort_xfer_t *x, const cohort_am_hdr_t *h)
{
    return x->kind == h->kind && x->tag == h->tag &&
           (x->peer == h->src || (x->peer == COHORT_ANY_SOURCE && h->kind == COHORT_MSG_P2P)) &&
           (h->kind == COHORT_MSG_P2P || x->seq == h->seq);
}

/* Hand message @a m to receive @a x (already out of the posted list). @a m stays the caller's,
 * except its rendezvous descriptor, which the fetch consumes. */
static void cohort_xfer_consume(cohort_context_t *ctx, cohort_xfer_t *x, cohort_msg_t *m)
{
    void *desc = m->desc;

    x->posted = 0;
    x->peer = m->hdr.src; /* an any-source receive becomes one from its sender here */
    if (m->hdr.kind == COHORT_MSG_P2P) {
        x->seq = m->hdr.seq; /* which message it reads, should its sender cancel it (cancel.c) */
    }
    if (m->canceled) {
        /* its sender freed it: nothing of it comes, and this side's numbers stay in step */
        cohort_xfer_finish(x, COHORT_ERR_CANCELED);
        return;
    }
    /* Always, not only under COHORT_CHECK: a member that passed another count (or root, dtype,
     * op) than this one would otherwise have its message taken for this call's, and the two
     * ends report success or wait on each other. P2P messages carry 0 on both sides. */
    if (m->hdr.fingerprint != x->fingerprint) {
        cohort_error(ctx,
                     "group 0x%016llx: operation mismatch with rank %d at collective %u step %d "
                     "(fingerprint %08x here, %08x there): members called different "
                     "collectives or arguments",
                     (unsigned long long)m->hdr.gid, m->hdr.src, m->hdr.seq, m->hdr.tag,
                     x->fingerprint, m->hdr.fingerprint);
        cohort_msg_unread(ctx, m); /* a single-copy sender holds its buffer until told */
        cohort_xfer_mismatch(x);
        return;
    }
    if (m->hdr.flags & COHORT_HDR_SINGLE_COPY) {
        if (m->desc != NULL) {
            m->desc = NULL; /* a descriptor is 32 bytes: never rendezvous from cohort */
            ucp_am_data_release(ctx->worker, desc);
        }
        if (ctx->am_offer == NULL) {
            ctx->stat_rejected++; /* nobody here offers memory: it cannot be one of ours */
            cohort_xfer_mismatch(x);
            return;
        }
        ctx->am_offer->read(ctx, x, m);
        return;
    }
    if (m->len > x->len) {
        cohort_error(ctx,
                     "group 0x%016llx: %zu bytes arrived from rank %d (tag/step %d) for a receive "
                     "of %zu bytes",
                     (unsigned long long)m->hdr.gid, m->len, m->hdr.src, m->hdr.tag, x->len);
        cohort_xfer_mismatch(x);
        return;
    }
    x->received = m->len;
    if (desc != NULL) {
        m->desc = NULL;
        if (ctx->am_fetch == NULL) {
            /* no protocol receives UCX's messages here: the data cannot be had */
            ucp_am_data_release(ctx->worker, desc);
            cohort_xfer_finish(x, COHORT_ERR_UNSUPPORTED);
            return;
        }
        ctx->am_fetch(ctx, x, desc); /* the message protocol's (proto/msg.c) */
        return;
    }
    cohort_xfer_finish(x, cohort_xfer_fill(ctx, x, m->data, m->len));
}

/* Keep a message the callback only lends us: UCX's persistent eager buffer or its rendezvous
 * descriptor stay UCX's (the callback then answers INPROGRESS); other data is copied. */
static cohort_msg_t *cohort_msg_keep(cohort_context_t *ctx, const cohort_msg_t *lent,
                                     int persistent)
{
    cohort_msg_t *m;

    if (cohort_fault(ctx, COHORT_FAULT_MSG_KEEP) || (m = malloc(sizeof(*m))) == NULL) {
        return NULL;
    }
    *m = *lent;
    cohort_list_init(&m->link);
    if (m->desc == NULL && m->len > 0 && !persistent) {
        m->data = malloc(m->len);
        if (m->data == NULL) {
            free(m);
            return NULL;
        }
        memcpy(m->data, lent->data, m->len);
        m->ucx_data = 0;
    } else if (m->desc == NULL && m->len > 0) {
        m->ucx_data = 1;
    } else if (m->desc == NULL) {
        m->data = NULL;
        m->ucx_data = 0;
    }
    return m;
}

/* A message could not be kept: members are out of step now, so the communicator says so. */
static void cohort_msg_lost(cohort_comm_t *c, const cohort_msg_t *m)
{
    const cohort_am_hdr_t *h = &m->hdr;
    size_t len = m->len;

    cohort_msg_unread(c->ctx, m);
    cohort_error(c->ctx,
                 "out of memory keeping a %zu-byte message from rank %d of group 0x%016llx:"
                 " the group is revoked",
                 len, h->src, (unsigned long long)h->gid);
    c->ctx->comm_hooks->revoke(c, COHORT_ERR_NO_MEMORY, "a message was dropped for lack of memory");
}

/* Whether collective message @a h names a call this member posted with another fingerprint.
 * The agreement's messages (COHORT_CHECK, the CUDA IPC vote) carry 0 and are not looked at. */
static int cohort_coll_msg_odd(const cohort_comm_t *c, const cohort_am_hdr_t *h)
{
    uint32_t back = c->coll_seq - h->seq;

    return h->kind == COHORT_MSG_COLL && h->fingerprint != 0 && back >= 1 &&
           back <= COHORT_COMM_RECENT &&
           c->recent_fingerprint[h->seq % COHORT_COMM_RECENT] != h->fingerprint;
}

static void cohort_coll_msg_mismatch(cohort_comm_t *c, const cohort_am_hdr_t *h)
{
    cohort_error(c->ctx,
                 "group 0x%016llx: a message of collective %u (step %d) from rank %d carries "
                 "fingerprint %08x, called here with %08x: members called different collectives "
                 "or arguments",
                 (unsigned long long)c->id, h->seq, h->tag, h->src, h->fingerprint,
                 c->recent_fingerprint[h->seq % COHORT_COMM_RECENT]);
    c->ctx->comm_hooks->revoke(c, COHORT_ERR_MISMATCH, "a message of another call arrived");
}

void cohort_am_coll_posted(cohort_comm_t *c, uint32_t seq, uint32_t fingerprint)
{
    cohort_list_t *pos, *tmp;

    c->recent_fingerprint[seq % COHORT_COMM_RECENT] = fingerprint;
    cohort_list_for_each(pos, tmp, &c->unexpected)
    {
        cohort_msg_t *m = cohort_container_of(pos, cohort_msg_t, link);
        if (m->hdr.seq == seq && cohort_coll_msg_odd(c, &m->hdr)) {
            cohort_coll_msg_mismatch(c, &m->hdr); /* drops the queue: m is gone */
            return;
        }
    }
}

/* Match one in-order message. @a m is lent (lent = 1: from the callback, kept only by copy) or
 * owned (queued before; freed once consumed). @return 1 when a lent message's UCX memory was
 * kept. */
static int cohort_match(cohort_comm_t *c, cohort_msg_t *m, int lent, int persistent)
{
    cohort_context_t *ctx = c->ctx;
    cohort_list_t *pos, *tmp;
    cohort_msg_t *kept;

    cohort_list_for_each(pos, tmp, &c->posted)
    {
        cohort_xfer_t *x = cohort_container_of(pos, cohort_xfer_t, link);
        if (cohort_xfer_matches(x, &m->hdr)) {
            cohort_list_del(&x->link);
            cohort_xfer_consume(ctx, x, m);
            if (!lent) {
                cohort_msg_free(ctx, m);
            }
            return 0;
        }
    }
    if (cohort_coll_msg_odd(c, &m->hdr)) {
        /* It may match nothing ever (a bcast whose members disagree on the root): said now. */
        cohort_msg_unread(ctx, m);
        cohort_coll_msg_mismatch(c, &m->hdr);
        if (!lent) {
            cohort_msg_free(ctx, m);
        }
        return 0;
    }
    if (!lent) {
        cohort_list_push(&c->unexpected, &m->link);
        return 0;
    }
    kept = cohort_msg_keep(ctx, m, persistent);
    if (kept == NULL) {
        cohort_msg_lost(c, m);
        return 0;
    }
    cohort_list_push(&c->unexpected, &kept->link);
    return kept->desc != NULL || kept->ucx_data;
}

/* Deliver one message to its communicator, in per-sender order for point-to-point. */
static int cohort_deliver(cohort_comm_t *c, cohort_msg_t *m, int lent, int persistent)
{
    cohort_list_t *pos, *tmp;
    int src = m->hdr.src, kept = 0, again;

    if (src >= c->size || cohort_comm_world_rank(c, src) != m->hdr.wsrc) {
        /* Not from the member it claims to be: a foreign or corrupted sender. Nothing of it is
         * believed, and nothing is wired to it. */
        c->ctx->stat_rejected++;
        cohort_debug(c->ctx,
                     "group 0x%016llx: message from world rank %d as group rank %d of %d "
                     "dropped: not that member",
                     (unsigned long long)c->id, m->hdr.wsrc, src, c->size);
        if (!lent) {
            cohort_msg_free(c->ctx, m);
        }
        return 0;
    }
    if (c->ctx->am_kinds[m->hdr.kind] != NULL && c->ctx->am_kinds[m->hdr.kind]->member != NULL) {
        c->ctx->am_kinds[m->hdr.kind]->member(c, &m->hdr);
        if (!lent) {
            cohort_msg_free(c->ctx, m);
        }
        return 0;
    }
    if (c->error != COHORT_OK) {
        /* Revoked: nothing will match it, and keeping it would leak a message per step of
         * every collective the other members still run. */
        c->ctx->orphans_dropped++;
        cohort_msg_unread(c->ctx, m);
        if (!lent) {
            cohort_msg_free(c->ctx, m);
        }
        return 0;
    }
    if (m->hdr.kind != COHORT_MSG_P2P) {
        return cohort_match(c, m, lent, persistent);
    }
    if (!m->canceled && cohort_cancel_early(c, &m->hdr)) {
        cohort_msg_tombstone(c->ctx, m, lent);
    }
    if (cohort_comm_p2p_seqs(c) != COHORT_OK) {
        cohort_msg_lost(c, m);
        if (!lent) {
            cohort_msg_free(c->ctx, m);
        }
        return 0;
    }
    if (m->hdr.seq != c->recv_seq[src]) {
        cohort_msg_t *h = lent ? cohort_msg_keep(c->ctx, m, persistent) : m;
        if (h == NULL) {
            cohort_msg_lost(c, m);
            return 0;
        }
        cohort_list_push(&c->held, &h->link);
        return lent && (h->desc != NULL || h->ucx_data);
    }
    kept = cohort_match(c, m, lent, persistent);
    c->recv_seq[src]++;
    /* Messages from this source that overtook this one can go now. */
    do {
        again = 0;
        cohort_list_for_each(pos, tmp, &c->held)
        {
            cohort_msg_t *h = cohort_container_of(pos, cohort_msg_t, link);
            if (h->hdr.src == src && h->hdr.seq == c->recv_seq[src]) {
                cohort_list_del(&h->link);
                cohort_match(c, h, 0, 0);
                c->recv_seq[src]++;
                again = 1;
                break;
            }
        }
    } while (again);
    return kept;
}

int cohort_am_deliver(cohort_comm_t *c, cohort_msg_t *m, int lent, int persistent)
{
    return cohort_deliver(c, m, lent, persistent);
}

void cohort_msg_tombstone(cohort_context_t *ctx, cohort_msg_t *m, int lent)
{
    cohort_msg_unread(ctx, m); /* a single-copy sender hears "not read" */
    if (!lent) {
        cohort_msg_let_go(ctx, m);
    }
    /* Lent: UCX's callback lets go of them when it sees nothing kept (am_recv_cb). */
    m->desc = NULL;
    m->data = NULL;
    m->ucx_data = 0;
    m->len = 0;
    m->hdr.flags = 0;
    m->canceled = 1;
}

cohort_msg_t *cohort_am_orphan_find(cohort_context_t *ctx, uint64_t gid, int src, uint32_t seq)
{
    cohort_orphans_t *o = cohort_map_get(&ctx->orphans, gid);
    cohort_list_t *pos;

    if (o == NULL) {
        return NULL;
    }
    for (pos = o->msgs.next; pos != &o->msgs; pos = pos->next) {
        cohort_msg_t *m = cohort_container_of(pos, cohort_msg_t, link);
        if (m->hdr.kind == COHORT_MSG_P2P && m->hdr.src == src && m->hdr.seq == seq) {
            return m;
        }
    }
    return NULL;
}

static int cohort_orphan_keep(cohort_context_t *ctx, cohort_msg_t *lent, int persistent);

void cohort_am_orphan_keep_hdr(cohort_context_t *ctx, const cohort_am_hdr_t *h)
{
    cohort_msg_t m;

    memset(&m, 0, sizeof(m));
    m.hdr = *h;
    (void)cohort_orphan_keep(ctx, &m, 0);
}

static cohort_status_t cohort_am_match_unexpected(cohort_comm_t *c, cohort_xfer_t *x)
{
    cohort_context_t *ctx = c->ctx;
    cohort_list_t *pos, *tmp;
    cohort_peer_t *peer;

    cohort_list_for_each(pos, tmp, &c->unexpected)
    {
        cohort_msg_t *m = cohort_container_of(pos, cohort_msg_t, link);
        if (cohort_xfer_matches(x, &m->hdr)) {
            cohort_list_del(&m->link);
            cohort_xfer_consume(ctx, x, m);
            cohort_msg_free(ctx, m);
            return COHORT_OK;
        }
    }
    /* Nothing queued from it: a peer that left or failed will send nothing more. */
    peer = x->peer == COHORT_ANY_SOURCE
               ? NULL
               : cohort_map_get(&ctx->peers, (uint64_t)cohort_comm_world_rank(c, x->peer) + 1);
    if (peer != NULL && (peer->state == COHORT_PEER_LEFT || peer->state == COHORT_PEER_FAILED)) {
        cohort_error(ctx, "receive from rank %d of group 0x%016llx: that peer has %s", x->peer,
                     (unsigned long long)c->id,
                     peer->state == COHORT_PEER_LEFT ? "finalized" : "failed");
        cohort_list_del(&x->req_link);
        return COHORT_ERR_PEER_FAILED;
    }
    x->posted = 1;
    x->since = cohort_time_now();
    cohort_list_push(&c->posted, &x->link);
    return COHORT_OK;
}

/* Posting a receive is matching it: the transfer is set up below (xfer.c), then it takes a
 * message that came first from the communicator's unexpected queue, or waits on the posted
 * list, both here. */
cohort_status_t cohort_xfer_recv(cohort_request_t *req, cohort_xfer_t *x, int peer, uint8_t kind,
                                 uint32_t seq, int32_t tag, uint32_t fingerprint, void *buf,
                                 size_t len)
{
    cohort_status_t status;

    status = cohort_xfer_recv_start(req, x, peer, kind, seq, tag, fingerprint, buf, len);
    if (status != COHORT_OK) {
        return status;
    }
    status = cohort_am_match_unexpected(req->comm, x);
    /* refused (its peer is gone): nothing will finish it, so its bounce goes back now */
    return status == COHORT_OK ? COHORT_OK : cohort_xfer_recv_refused(x, status);
}

static void cohort_am_bye(cohort_context_t *ctx, const cohort_am_hdr_t *h, void *data, size_t len,
                          int rndv)
{
    int world_rank = h->wsrc;
    cohort_peer_t *peer;

    if (world_rank < 0 || world_rank >= ctx->size ||
        (peer = cohort_peer_get(ctx, world_rank)) == NULL) {
        return;
    }
    cohort_peer_left(peer, "its goodbye");
}

/* Keep an orphan, within COHORT_ORPHAN_LIMIT. @return 1 when UCX memory was kept. */
static int cohort_orphan_keep(cohort_context_t *ctx, cohort_msg_t *lent, int persistent)
{
    cohort_orphans_t *o = cohort_map_get(&ctx->orphans, lent->hdr.gid);
    cohort_poison_mark_t mark = cohort_poison_get(&ctx->poisoned, lent->hdr.gid);
    size_t charge = lent->len > COHORT_ORPHAN_MIN_CHARGE && lent->desc == NULL
                        ? lent->len
                        : COHORT_ORPHAN_MIN_CHARGE;
    cohort_msg_t *m;

    if (mark != COHORT_POISON_NONE) {
        /* For a group freed here (nobody will take it) or one that already lost a message. */
        ctx->orphans_dropped++;
        cohort_msg_unread(ctx, lent);
        return 0;
    }
    if (ctx->orphan_bytes + charge > ctx->cfg.orphan_bytes) {
        ctx->orphans_dropped++;
        cohort_msg_unread(ctx, lent);
        cohort_error(ctx,
                     "dropped a message for group 0x%016llx, not created here: messages for "
                     "groups not created yet exceed COHORT_ORPHAN_LIMIT (%zu bytes); that "
                     "group will be revoked if it is created",
                     (unsigned long long)lent->hdr.gid, ctx->cfg.orphan_bytes);
        cohort_poison_dropped(&ctx->poisoned, lent->hdr.gid);
        return 0;
    }
    if (o == NULL) {
        o = malloc(sizeof(*o));
        if (o == NULL || cohort_map_put(&ctx->orphans, lent->hdr.gid, o) != COHORT_OK) {
            free(o);
            cohort_msg_unread(ctx, lent);
            cohort_poison_dropped(&ctx->poisoned, lent->hdr.gid);
            return 0;
        }
        cohort_list_init(&o->msgs);
    }
    m = cohort_msg_keep(ctx, lent, persistent);
    if (m == NULL) {
        cohort_error(ctx, "out of memory keeping a message for group 0x%016llx, not created here",
                     (unsigned long long)lent->hdr.gid);
        cohort_msg_unread(ctx, lent);
        cohort_poison_dropped(&ctx->poisoned, lent->hdr.gid);
        return 0;
    }
    m->charge = charge;
    ctx->orphan_bytes += charge;
    cohort_list_push(&o->msgs, &m->link);
    return m->desc != NULL || m->ucx_data;
}

/* A peer that sent us something is told at finalize that we leave, even one we hold no
 * endpoint to (its endpoint to us would otherwise fail, which it would take for our death).
 * A flag on its entry: what this costs grows with the peers heard from, not with the world. */
static void cohort_am_heard(cohort_context_t *ctx, int world_rank)
{
    cohort_peer_t *peer;

    if (world_rank < 0 || world_rank == ctx->rank) {
        return;
    }
    peer = cohort_peer_get(ctx, world_rank);
    if (peer != NULL) {
        peer->heard = 1; /* else out of memory: that peer may take our finalize for a failure */
    }
}

static ucs_status_t cohort_am_recv_cb(void *arg, const void *header, size_t header_length,
                                      void *data, size_t length, const ucp_am_recv_param_t *param)
{
    cohort_context_t *ctx = arg;
    cohort_comm_t *c;
    cohort_msg_t m;
    int rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
    int persistent = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA) != 0;
    const cohort_am_kind_t *kind;
    int kept;

    memset(&m, 0, sizeof(m));
    if (cohort_am_hdr_decode(header, header_length, &m.hdr) != 0 || m.hdr.wsrc >= ctx->size ||
        m.hdr.kind >= COHORT_AM_KINDS ||
        (ctx->am_kinds[m.hdr.kind] != NULL && ctx->am_kinds[m.hdr.kind]->header_only &&
         length != 0)) {
        ctx->stat_rejected++;
        const uint8_t *b = header;
        cohort_error(ctx,
                     "dropped a message with a malformed %zu-byte header (kind %u, flags %u, "
                     "%zu bytes of data)",
                     header_length, header_length > 2 ? b[1] : 0, header_length > 2 ? b[2] : 0,
                     length);
        return UCS_OK; /* for a rendezvous message, UCX releases the descriptor */
    }
    if (m.hdr.kind != COHORT_MSG_BYE) {
        cohort_am_heard(ctx, m.hdr.wsrc);
    }
    kind = ctx->am_kinds[m.hdr.kind];
    if (kind != NULL && kind->ctl != NULL) {
        /* A fetch that starts consumes UCX's descriptor; otherwise UCX releases it. */
        kind->ctl(ctx, &m.hdr, data, length, rndv);
        return UCS_OK;
    }
    m.len = length;
    if (rndv) {
        m.desc = data;
    } else {
        m.data = data;
    }
    c = cohort_map_get(&ctx->comms, m.hdr.gid);
    kept =
        c != NULL ? cohort_deliver(c, &m, 1, persistent) : cohort_orphan_keep(ctx, &m, persistent);
    /* A rendezvous descriptor a fetch consumed is UCX's business now; one we keep, or a
     * persistent eager buffer we keep, stays alive until we release it. */
    if (rndv && m.desc == NULL) {
        return UCS_OK;
    }
    return kept ? UCS_INPROGRESS : UCS_OK;
}

void cohort_am_kind_set(cohort_context_t *ctx, uint8_t kind, const cohort_am_kind_t *handler)
{
    assert(kind < COHORT_AM_KINDS && ctx->am_kinds[kind] == NULL);
    ctx->am_kinds[kind] = handler;
}

void cohort_am_offer_set(cohort_context_t *ctx, const cohort_am_offer_t *offer)
{
    assert(ctx->am_offer == NULL);
    ctx->am_offer = offer;
}

void cohort_am_fetch_set(cohort_context_t *ctx, cohort_am_fetch_t fetch)
{
    assert(ctx->am_fetch == NULL);
    ctx->am_fetch = fetch;
}

static const cohort_am_kind_t cohort_am_bye_kind = {.header_only = 0, .ctl = cohort_am_bye};

static void cohort_am_peer_failed(cohort_peer_t *peer, cohort_status_t status, const char *why,
                                  int tell)
{
    cohort_am_fail_peer(peer->ctx, peer->rank, status, why, 0);
}

static void cohort_am_peer_left(cohort_peer_t *peer, const char *why)
{
    cohort_am_fail_peer(peer->ctx, peer->rank, COHORT_ERR_PEER_FAILED, why, 1);
}

static const cohort_peer_observer_t cohort_am_observer = {
    .name = "receives", .failed = cohort_am_peer_failed, .left = cohort_am_peer_left};

void cohort_am_init(cohort_context_t *ctx)
{
    cohort_am_kind_set(ctx, COHORT_MSG_BYE, &cohort_am_bye_kind);
    cohort_peer_observe(ctx, &cohort_am_observer);
    cohort_cancel_init(ctx);
}

cohort_status_t cohort_am_register(cohort_context_t *ctx)
{
    ucp_am_handler_param_t param;
    ucs_status_t ucs;

    memset(&param, 0, sizeof(param));
    param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                       UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
    param.id = COHORT_AM_ID;
    param.flags = UCP_AM_FLAG_WHOLE_MSG | UCP_AM_FLAG_PERSISTENT_DATA;
    param.cb = cohort_am_recv_cb;
    param.arg = ctx;
    ucs = ucp_worker_set_am_recv_handler(ctx->worker, &param);
    if (ucs != UCS_OK) {
        cohort_error(ctx, "ucp_worker_set_am_recv_handler failed: %s", ucs_status_string(ucs));
        return cohort_ucs_status(ucs);
    }
    return COHORT_OK;
}

void cohort_am_adopt(cohort_comm_t *c)
{
    cohort_context_t *ctx = c->ctx;
    cohort_orphans_t *o = cohort_map_get(&ctx->orphans, c->id);

    if (cohort_poison_take(&ctx->poisoned, c->id) == COHORT_POISON_DROPPED) {
        cohort_error(ctx,
                     "group 0x%016llx: messages sent to it before it was created here were "
                     "dropped (COHORT_ORPHAN_LIMIT): it is revoked",
                     (unsigned long long)c->id);
        c->ctx->comm_hooks->revoke(c, COHORT_ERR_REVOKED, "messages for it were dropped");
    }
    if (o == NULL) {
        return;
    }
    cohort_map_del(&ctx->orphans, c->id);
    while (!cohort_list_empty(&o->msgs)) {
        cohort_msg_t *m = cohort_container_of(o->msgs.next, cohort_msg_t, link);
        cohort_list_del(&m->link);
        ctx->orphan_bytes -= m->charge;
        cohort_deliver(c, m, 0, 0);
    }
    free(o);
}

static void cohort_msg_list_free(cohort_context_t *ctx, cohort_list_t *list)
{
    while (!cohort_list_empty(list)) {
        cohort_msg_t *m = cohort_container_of(list->next, cohort_msg_t, link);
        cohort_list_del(&m->link);
        cohort_msg_free(ctx, m);
    }
}

void cohort_am_comm_drop(cohort_comm_t *c)
{
    cohort_list_t *lists[] = {&c->unexpected, &c->held};

    for (int i = 0; i < 2; i++) {
        cohort_list_t *pos, *tmp;
        cohort_list_for_each(pos, tmp, lists[i])
        {
            cohort_msg_unread(c->ctx, cohort_container_of(pos, cohort_msg_t, link));
        }
        cohort_msg_list_free(c->ctx, lists[i]);
    }
}

void cohort_am_comm_cleanup(cohort_comm_t *c)
{
    cohort_am_comm_drop(c);
    cohort_cancel_cleanup(c);
    /* Later messages for it are dropped on arrival instead of kept as orphans. */
    cohort_poison_freed(&c->ctx->poisoned, c->id);
}

void cohort_am_orphans_cleanup(cohort_context_t *ctx)
{
    for (size_t i = 0; i < ctx->orphans.cap; i++) {
        cohort_orphans_t *o = ctx->orphans.vals[i];
        if (ctx->orphans.keys[i] != 0 && o != NULL) {
            cohort_msg_list_free(ctx, &o->msgs);
            free(o);
        }
    }
    cohort_map_cleanup(&ctx->orphans);
    ctx->orphan_bytes = 0;
}

void cohort_am_say_recv_failed(cohort_context_t *ctx, int level, const cohort_comm_t *c, int peer,
                               const char *why)
{
    cohort_log(cohort_ctx_log(ctx), level,
               "group 0x%016llx: receive from rank %d (world %d) failed: %s",
               (unsigned long long)c->id, peer, cohort_comm_world_rank(c, peer), why);
}

void cohort_am_fail_peer(cohort_context_t *ctx, int world_rank, cohort_status_t status,
                         const char *why, int left)
{
    cohort_list_t *cpos, *ctmp, *pos, *tmp;

    cohort_list_for_each(cpos, ctmp, &ctx->comm_list)
    {
        cohort_comm_t *c = cohort_container_of(cpos, cohort_comm_t, link);
        cohort_list_for_each(pos, tmp, &c->posted)
        {
            cohort_xfer_t *x = cohort_container_of(pos, cohort_xfer_t, link);
            if (x->peer != COHORT_ANY_SOURCE && cohort_comm_world_rank(c, x->peer) == world_rank) {
                /* A peer that finalized ended in order. A receive from it that the program
                 * still waits on says so when the wait takes its status; one nobody waits on
                 * (left posted, cancelled at this rank's own finalize) says nothing, and a
                 * collective's says what its group's failure says. */
                if (left && x->req != NULL && x == &x->req->xfer) {
                    x->req->peer_left = 1;
                }
                cohort_am_say_recv_failed(ctx, left ? COHORT_LOG_DEBUG : COHORT_LOG_ERROR, c,
                                          x->peer, why);
                cohort_list_del(&x->link);
                x->posted = 0;
                cohort_xfer_finish(x, status);
            }
        }
    }
}
