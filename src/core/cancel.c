/*
 * A point-to-point send freed before it finished, on the receiver's side. The sender's free
 * sends COHORT_MSG_CANCEL naming the message (group, sender, number) and waits, inside the free,
 * until nobody reads its buffer any more (xfer.c: cohort_xfer_cancel_p2p). Here the message is
 * found wherever it is and answered for:
 *   - queued (held, unexpected, an orphan): emptied, its data or rendezvous descriptor let go
 *     of (UCX then ends the sender's send), a single-copy sender told "not read"; the receive
 *     that matches it later ends COHORT_ERR_CANCELED;
 *   - being read by single copy: the read stops between two chunks, the receive ends
 *     COHORT_ERR_CANCELED, and the sender is answered (the protocol's cancel hook);
 *   - being fetched by UCX's rendezvous, which cannot be stopped: it ends as it would, OK with
 *     the whole message, and that ends the sender's send too;
 *   - never sent (the sender gave up before its peer was wired): the cancel stands in for it,
 *     so every later message from that sender still matches in order.
 * The group is not revoked: both sides spent the message's number, and nobody is out of step.
 *
 * A cancel is a message kind of the matching (am.c), and reads and edits its queues; a cancel
 * lost for lack of memory revokes the group through the communicators' hook (ctx->comm_hooks).
 */
#include <stdlib.h>
#include "core/am.h"
#include "core/log.h"

/* A cancel that came before its message (UCX delivered them out of order). */
typedef struct {
    cohort_list_t link; /* in c->cancels */
    int src;
    uint32_t seq;
} cohort_cancel_t;

int cohort_cancel_early(cohort_comm_t *c, const cohort_am_hdr_t *h)
{
    cohort_list_t *pos, *tmp;

    cohort_list_for_each(pos, tmp, &c->cancels)
    {
        cohort_cancel_t *e = cohort_container_of(pos, cohort_cancel_t, link);
        if (e->src == h->src && e->seq == h->seq) {
            cohort_list_del(&e->link);
            free(e);
            return 1;
        }
    }
    return 0;
}

static cohort_msg_t *cohort_cancel_find(cohort_list_t *list, int src, uint32_t seq)
{
    cohort_list_t *pos;

    for (pos = list->next; pos != list; pos = pos->next) {
        cohort_msg_t *m = cohort_container_of(pos, cohort_msg_t, link);
        if (m->hdr.kind == COHORT_MSG_P2P && m->hdr.src == src && m->hdr.seq == seq) {
            return m;
        }
    }
    return NULL;
}

/* The cancel @a h from member h->src of @a c (checked). */
static void cohort_cancel_member(cohort_comm_t *c, const cohort_am_hdr_t *h)
{
    cohort_context_t *ctx = c->ctx;
    cohort_msg_t *m;

    if (c->error != COHORT_OK || cohort_comm_p2p_seqs(c) != COHORT_OK) {
        return; /* revoked: its queues are dropped, and every receive ended already */
    }
    cohort_debug(ctx, "group 0x%016llx: rank %d cancelled its message %u (tag %d)",
                 (unsigned long long)c->id, h->src, h->seq, h->tag);
    m = cohort_cancel_find(&c->held, h->src, h->seq);
    if (m == NULL) {
        m = cohort_cancel_find(&c->unexpected, h->src, h->seq);
    }
    if (m != NULL) {
        cohort_msg_tombstone(ctx, m, 0);
        return;
    }
    if ((int32_t)(h->seq - c->recv_seq[h->src]) >= 0) {
        /* Not here yet. */
        if (h->left == 0) {
            /* Never sent: this stands in for it, in its place in the sender's order. */
            cohort_msg_t *t = calloc(1, sizeof(*t));
            if (t == NULL) {
                cohort_error(ctx, "out of memory taking a cancelled message's place: group "
                                  "0x%016llx is revoked",
                             (unsigned long long)c->id);
                c->ctx->comm_hooks->revoke(c, COHORT_ERR_NO_MEMORY, "a cancel was lost");
                return;
            }
            cohort_list_init(&t->link);
            t->hdr = *h;
            t->hdr.kind = COHORT_MSG_P2P;
            t->hdr.fingerprint = 0;
            t->canceled = 1;
            (void)cohort_am_deliver(c, t, 0, 0);
            return;
        }
        /* On its way behind this: emptied when it arrives. */
        cohort_cancel_t *e = malloc(sizeof(*e));
        if (e == NULL) {
            /* It will be read whole instead: the sender's free waits for that. */
            cohort_error(ctx, "out of memory keeping a cancel from rank %d of group 0x%016llx",
                         h->src, (unsigned long long)c->id);
            return;
        }
        e->src = h->src;
        e->seq = h->seq;
        cohort_list_push(&c->cancels, &e->link);
        return;
    }
    /* Matched: a single-copy read still running stops; a rendezvous fetch ends on its own. */
    if (ctx->am_offer != NULL && ctx->am_offer->cancel != NULL) {
        ctx->am_offer->cancel(ctx, c, h->src, h->seq);
    }
}

static void cohort_cancel_msg(cohort_context_t *ctx, const cohort_am_hdr_t *h, void *data,
                              size_t len, int rndv)
{
    cohort_comm_t *c = cohort_map_get(&ctx->comms, h->gid);
    cohort_msg_t *m;

    if (c != NULL) {
        if (h->src >= c->size || cohort_comm_world_rank(c, h->src) != h->wsrc) {
            ctx->stat_rejected++; /* not from the member it claims to be */
            return;
        }
        cohort_cancel_member(c, h);
        return;
    }
    /* The group is not made here yet: its message waits among the orphans, or this waits
     * there behind it and is handled in its place when the group is made. */
    m = cohort_am_orphan_find(ctx, h->gid, h->src, h->seq);
    if (m != NULL) {
        cohort_msg_tombstone(ctx, m, 0);
        return;
    }
    cohort_am_orphan_keep_hdr(ctx, h);
}

static const cohort_am_kind_t cohort_cancel_kind = {
    .header_only = 1, .ctl = cohort_cancel_msg, .member = cohort_cancel_member};

void cohort_cancel_init(cohort_context_t *ctx)
{
    cohort_am_kind_set(ctx, COHORT_MSG_CANCEL, &cohort_cancel_kind);
}

void cohort_cancel_cleanup(cohort_comm_t *c)
{
    while (!cohort_list_empty(&c->cancels)) {
        cohort_cancel_t *e = cohort_container_of(c->cancels.next, cohort_cancel_t, link);
        cohort_list_del(&e->link);
        free(e);
    }
}
