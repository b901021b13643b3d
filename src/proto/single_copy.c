/* The single-copy handshake both single-copy protocols use (single_copy.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/comm.h"
#include "core/log.h"
#include "core/ctl.h"
#include "proto/msg.h"
#include "proto/protos.h"
#include "proto/single_copy.h"
#include "proto/xfer_stage.h"

/* An ACK to send from progress (never from inside a UCX callback), and the receive that
 * finishes when UCX has sent it (NULL when none waits on it). In the room's acks until handed
 * to a wired endpoint, then in its acks_sent until UCX is done with it. */
typedef struct {
    cohort_list_t link;
    int world_rank;
    cohort_am_hdr_t hdr;
    cohort_xfer_t *x;
} cohort_sc_ack_t;

cohort_sc_room_t *cohort_sc_room(const cohort_context_t *ctx)
{
    return cohort_proto_ctx(ctx, &cohort_proto_cma);
}

/* A pool rather than malloc per transfer: a ring of large messages offers one per step, and a
 * block handed back is the next one taken, still warm. It keeps as many blocks as were ever
 * lent at once, freed at cleanup. */
cohort_sc_state_t *cohort_sc_state_take(cohort_xfer_t *x)
{
    cohort_context_t *ctx = x->req->ctx;
    cohort_sc_room_t *room = cohort_sc_room(ctx);
    cohort_sc_state_t *s = x->proto_state;

    if (s != NULL) {
        return s;
    }
    if (!cohort_list_empty(&room->states_free)) {
        s = cohort_container_of(room->states_free.next, cohort_sc_state_t, pool_link);
        cohort_list_del(&s->pool_link);
        memset(s, 0, sizeof(*s));
    } else if ((s = calloc(1, sizeof(*s))) == NULL) {
        cohort_error(ctx, "out of memory for a single-copy transfer's state");
        return NULL;
    }
    cohort_list_push(&room->states_lent, &s->pool_link);
    x->proto_state = s;
    return s;
}

/* @a x's state back to the pool: it is no longer a single copy's (finished, or carried on by
 * another row). */
static void cohort_sc_state_give(cohort_xfer_t *x)
{
    cohort_sc_state_t *s = x->proto_state;

    if (s == NULL) {
        return;
    }
    cohort_list_del(&s->pool_link);
    cohort_list_push(&cohort_sc_room(x->req->ctx)->states_free, &s->pool_link);
    x->proto_state = NULL;
}

int cohort_sc_world(const cohort_xfer_t *x)
{
    int phase = cohort_sc_phase(x);

    /* An offered send held for its reader outlives its group (cohort_group_free), so it names
     * its reader itself; before the offer (CUDA IPC's claim, at post) the reader is not set
     * yet, and the group is there. */
    return (x->is_send && phase == COHORT_SC_SENT) || phase == COHORT_SC_READING
               ? cohort_sc_state(x)->reader
               : cohort_comm_world_rank(x->req->comm, x->peer);
}

size_t cohort_sc_offer(cohort_xfer_t *x, cohort_peer_t *peer, uint32_t magic, size_t len)
{
    cohort_context_t *ctx = peer->ctx;
    cohort_sc_room_t *room = cohort_sc_room(ctx);
    cohort_sc_state_t *s = cohort_sc_state_take(x);
    cohort_sc_desc_t d;

    if (s == NULL || cohort_map_put(&room->sends, room->next_token, x) != COHORT_OK) {
        cohort_sc_state_give(x);
        return 0;
    }
    memset(&d, 0, sizeof(d));
    d.magic = magic;
    /* The fault names another live process: a reader that trusted it would read from it. For
     * CMA only, whose reader checks the pid (a CUDA IPC offer names its memory by handle). */
    d.pid =
        (int32_t)(magic == COHORT_SC_CMA_MAGIC && cohort_fault(ctx, COHORT_FAULT_PID) ? getppid()
                                                                                      : getpid());
    d.addr = (uint64_t)(uintptr_t)x->buf;
    d.len = x->len;
    d.token = room->next_token++;
    memcpy(s->desc, &d, sizeof(d));
    s->token = d.token;
    s->state = COHORT_SC_SENT;
    s->reader = peer->rank;
    x->req->readers++;
    x->hdr[2] |= COHORT_HDR_SINGLE_COPY;
    return len;
}

/* Send @a x is no longer offered: its reader answered, or the data goes another way. */
static void cohort_sc_unsent(cohort_xfer_t *x)
{
    cohort_map_del(&cohort_sc_room(x->req->ctx)->sends, cohort_sc_state(x)->token);
    cohort_sc_state(x)->token = 0;
    cohort_sc_state(x)->state = COHORT_SC_NONE;
    x->req->readers--;
}

static cohort_sc_ack_t *cohort_sc_answer_to(cohort_context_t *ctx, int world_rank, uint64_t token,
                                            cohort_status_t status, uint32_t rtoken)
{
    cohort_sc_room_t *room = cohort_sc_room(ctx);
    cohort_sc_ack_t *a = calloc(1, sizeof(*a));

    if (a == NULL) {
        /* The sender then waits on us until its peer or its timeout fails it. */
        cohort_error(ctx, "out of memory answering a single-copy transfer from world rank %d",
                     world_rank);
        return NULL;
    }
    a->world_rank = world_rank;
    a->hdr.kind = COHORT_MSG_SINGLE_COPY_ACK;
    a->hdr.gid = token;
    a->hdr.status = (uint32_t)status;
    a->hdr.seq = rtoken;
    a->hdr.src = ctx->rank;
    a->hdr.wsrc = ctx->rank;
    a->hdr.tag = -1;
    cohort_list_push(&room->acks, &a->link);
    return a;
}

static cohort_sc_ack_t *cohort_sc_answer(cohort_context_t *ctx, const cohort_msg_t *m,
                                         uint64_t token, cohort_status_t status, uint32_t rtoken)
{
    return cohort_sc_answer_to(ctx, m->hdr.wsrc, token, status, rtoken);
}

/* A message of @a h with @a len bytes of @a data is dropped unread (its group revoked or freed
 * here, an orphan over the limit): when it is a single-copy descriptor, its sender is told it
 * will not be read, so that it can give its buffer back. */
static void cohort_sc_dropped(cohort_context_t *ctx, const cohort_am_hdr_t *h, const void *data,
                              size_t len)
{
    cohort_sc_desc_t d;

    if (!(h->flags & COHORT_HDR_SINGLE_COPY) || data == NULL ||
        (len != sizeof(d) && len != sizeof(cohort_sc_ipc_desc_t))) {
        return;
    }
    memcpy(&d, data, sizeof(d));
    if (d.magic == COHORT_SC_CMA_MAGIC || d.magic == COHORT_SC_IPC_MAGIC) {
        /* Its sender holds the buffer until a reader answers: this one never will read it. */
        cohort_sc_answer_to(ctx, h->wsrc, d.token, COHORT_ERR_REVOKED, 0);
    }
}

/* This rank cannot copy the sender's data (the row said why): ask world rank @a world_rank
 * for the data instead. */
static void cohort_sc_refused(cohort_context_t *ctx, cohort_xfer_t *x, int world_rank,
                              uint64_t token)
{
    cohort_sc_room_t *room = cohort_sc_room(ctx);
    uint32_t rtoken = room->next_rtoken++;

    if (rtoken == 0 || cohort_map_put(&room->recvs, rtoken, x) != COHORT_OK) {
        cohort_xfer_finish(x, COHORT_ERR_NO_MEMORY);
        cohort_sc_answer_to(ctx, world_rank, token, COHORT_ERR_NO_MEMORY, 0);
        return;
    }
    cohort_sc_state(x)->token = rtoken;
    cohort_sc_state(x)->state = COHORT_SC_WANT_DATA;
    cohort_sc_answer_to(ctx, world_rank, token, COHORT_ERR_UNSUPPORTED, rtoken);
}

/* Receive @a x has read its data, or cannot (@a status, @a why): it is answered for. */
static void cohort_sc_read_over(cohort_context_t *ctx, cohort_xfer_t *x, int world_rank,
                                uint64_t token, uint64_t len, cohort_status_t status,
                                const char *why)
{
    cohort_sc_ack_t *a;

    if (status == COHORT_ERR_UNSUPPORTED) {
        if (x->proto->read_refused != NULL) {
            x->proto->read_refused(ctx, world_rank, why);
        }
        cohort_sc_refused(ctx, x, world_rank, token);
        return;
    }
    if (status != COHORT_OK) {
        cohort_xfer_finish(x, status);
        if (status != COHORT_ERR_PEER_FAILED) {
            cohort_sc_answer_to(ctx, world_rank, token, status, 0);
        }
        return;
    }
    x->received = len;
    a = cohort_sc_answer_to(ctx, world_rank, token, COHORT_OK, 0);
    if (a == NULL) {
        cohort_xfer_finish(x, COHORT_OK);
        return;
    }
    a->x = x;
    cohort_sc_state(x)->state = COHORT_SC_ACKING;
}

cohort_status_t cohort_sc_copy_test(cohort_context_t *ctx, cohort_xfer_t *x)
{
    cohort_status_t status;

    if (cohort_sc_state(x)->ticket == 0) {
        return COHORT_OK;
    }
    status = cohort_gpu_copy_test(ctx, cohort_sc_state(x)->ticket);
    if (status != COHORT_INPROGRESS) {
        cohort_sc_state(x)->ticket = 0;
    }
    return status;
}

void cohort_sc_copy_wait(cohort_context_t *ctx, cohort_xfer_t *x)
{
    if (cohort_sc_state(x)->ticket != 0) {
        (void)cohort_gpu_copy_finish(ctx, cohort_sc_state(x)->ticket);
        cohort_sc_state(x)->ticket = 0;
    }
}

/* Receive @a x (READING, on no list) stops reading: what the read holds is let go of. */
static void cohort_sc_read_end(cohort_context_t *ctx, cohort_xfer_t *x)
{
    x->proto->read_stop(ctx, x);
    cohort_sc_state(x)->state = COHORT_SC_NONE;
}

/* Before the first byte of receive @a x (READING, on no list) is read: the pid its descriptor
 * names must be the one its world rank (the state's reader) published (core/address_card.h), or
 * another process's memory would be read. A card not here yet is asked for only with @a may_ask
 * (from progress; not inside UCX's callback or a post). @return 1: read on; 0: its card is on its
 * way, nothing read; -1: it is over (finished, its sender answered). */
static int cohort_sc_pid_ok(cohort_context_t *ctx, cohort_xfer_t *x, int may_ask)
{
    cohort_sc_state_t *s = cohort_sc_state(x);
    int world = s->reader;
    cohort_peer_t *peer;
    cohort_status_t status;
    cohort_sc_desc_t d;

    if (s->pid_ok) {
        return 1;
    }
    /* Copied now: a lookup that fails below finishes the receive, and its state goes back. */
    memcpy(&d, s->desc, sizeof(d));
    peer = cohort_peer_get(ctx, world);
    if (peer != NULL && peer->pid == 0) {
        if (!may_ask) {
            return 0;
        }
        if (!ctx->finalizing) {
            cohort_peer_want(peer); /* its ACK goes there next: one lookup for both */
        }
    }
    status = peer == NULL ? COHORT_ERR_NO_MEMORY : cohort_peer_pid_check(peer, d.pid);
    if (cohort_sc_phase(x) != COHORT_SC_READING) {
        return -1; /* given up on in there: its lookup failed, which revoked its group */
    }
    if (status == COHORT_INPROGRESS) {
        return 0;
    }
    if (status == COHORT_OK) {
        s->pid_ok = 1;
        return 1;
    }
    cohort_sc_read_end(ctx, x);
    if (status != COHORT_ERR_MISMATCH) {
        cohort_sc_read_over(ctx, x, world, d.token, d.len, status, NULL);
        return -1;
    }
    cohort_error(ctx,
                 "a single-copy offer of %llu bytes from world rank %d names process %d, but "
                 "world rank %d published process %d: COHORT_ERR_MISMATCH, nothing read from it",
                 (unsigned long long)d.len, world, (int)d.pid, world, (int)peer->pid);
    cohort_xfer_mismatch(x);
    /* As for a length that does not fit: the sender finishes (a collective's through the
     * revocation); both numbers are used up, nobody waits on a step not taken. */
    cohort_sc_answer_to(ctx, world, d.token, COHORT_OK, 0);
    return -1;
}

/* The next chunk of receive @a x (READING, on no list), its pid checked first (@a may_ask:
 * cohort_sc_pid_ok). @return 1 when it is still reading, 2 while it waits for its sender's
 * card, 0 when it is over. */
static int cohort_sc_step(cohort_context_t *ctx, cohort_xfer_t *x, int may_ask)
{
    const char *why = NULL;
    cohort_status_t status;
    cohort_sc_desc_t d;
    int ok = cohort_sc_pid_ok(ctx, x, may_ask);

    if (ok <= 0) {
        return ok == 0 ? 2 : 0;
    }
    status = x->proto->read_step(ctx, x, &why);
    if (status == COHORT_INPROGRESS) {
        return 1;
    }
    if (cohort_sc_phase(x) != COHORT_SC_READING) {
        /* given up on inside the step: its sender died there, which revoked its group */
        return 0;
    }
    memcpy(&d, cohort_sc_state(x)->desc, sizeof(d));
    cohort_sc_read_end(ctx, x);
    cohort_sc_read_over(ctx, x, cohort_sc_state(x)->reader, d.token, d.len, status, why);
    return 0;
}

/* Receive @a x matched the descriptor message @a m: read the data (in chunks, from progress),
 * or ask for it. */
static void cohort_sc_read(cohort_context_t *ctx, cohort_xfer_t *x, const cohort_msg_t *m)
{
    cohort_sc_ipc_desc_t full;
    cohort_sc_desc_t d;
    cohort_sc_state_t *s;
    int ipc = m->len == sizeof(full);

    if (m->desc != NULL || (m->len != sizeof(d) && !ipc)) {
        ctx->stat_rejected++;
        cohort_error(ctx, "a single-copy descriptor of %zu bytes from world rank %d dropped",
                     m->len, m->hdr.wsrc);
        cohort_xfer_mismatch(x);
        return;
    }
    memcpy(&full, m->data, m->len);
    d = full.base;
    if (d.magic != (ipc ? COHORT_SC_IPC_MAGIC : COHORT_SC_CMA_MAGIC) || d.len > x->len) {
        cohort_error(ctx,
                     "group 0x%016llx: %llu bytes offered by world rank %d (tag/step %d) for a "
                     "receive of %zu bytes",
                     (unsigned long long)m->hdr.gid, (unsigned long long)d.len, m->hdr.wsrc,
                     m->hdr.tag, x->len);
        cohort_xfer_mismatch(x);
        /* The sender finishes; the revocation tells it what went wrong. */
        cohort_sc_answer(ctx, m, d.token, COHORT_OK, 0);
        return;
    }
    s = cohort_sc_state_take(x);
    if (s == NULL) {
        /* Nothing read: the sender finishes with the same error (logged here). */
        cohort_xfer_finish(x, COHORT_ERR_NO_MEMORY);
        cohort_sc_answer(ctx, m, d.token, COHORT_ERR_NO_MEMORY, 0);
        return;
    }
    x->proto = ipc ? &cohort_proto_cuda_ipc : &cohort_proto_cma;
    /* taken zeroed: offset, ticket, pinned and mapped none, the answer COHORT_OK */
    memcpy(s->desc, &full, m->len);
    s->reader = m->hdr.wsrc;
    s->pid_ok = ipc;
    s->state = COHORT_SC_READING;
    /* Possibly inside UCX's callback, or the caller's post: one CMA chunk at most here, and
     * only when it is the whole message; a longer one is read from progress, and so is a
     * device memory's (its mapping may take the driver milliseconds the first time). */
    if (ipc || d.len > ctx->cfg.cma_chunk || cohort_sc_step(ctx, x, 0)) {
        cohort_list_push(&cohort_sc_room(ctx)->reading, &x->link);
    }
}

/* An ACK arrived (sender side). An answer for a send cancelled meanwhile finishes it now. */
static void cohort_sc_ack(cohort_context_t *ctx, const cohort_am_hdr_t *h)
{
    cohort_sc_room_t *room = cohort_sc_room(ctx);
    cohort_xfer_t *x = cohort_map_get(&room->sends, h->gid);
    cohort_status_t status = (cohort_status_t)(int32_t)h->status;
    cohort_request_t *req;

    if (x == NULL || cohort_sc_phase(x) != COHORT_SC_SENT || cohort_sc_world(x) != h->wsrc) {
        ctx->orphans_dropped++; /* for a send given up on meanwhile */
        return;
    }
    req = x->req;
    if (cohort_sc_state(x)->cancel) {
        /* cancelled while it could be read: now it is over, whatever the reader did */
        cohort_xfer_finish(x, x->status);
    } else if (status == COHORT_ERR_UNSUPPORTED && h->seq != 0) {
        cohort_peer_t *peer = cohort_peer_get(ctx, h->wsrc);
        int ipc = x->proto == &cohort_proto_cuda_ipc;
        if (peer != NULL && ipc) {
            peer->ipc_off = 1;
        } else if (peer != NULL) {
            peer->cma_off = 1;
        }
        cohort_proto_repick(ctx); /* the rows' answers for that peer changed */
        if (ipc) {
            /* it could not map our device memory: the data goes staged */
            cohort_status_t staged = cohort_xfer_stage_now(x);
            if (staged != COHORT_OK) {
                cohort_sc_unsent(x);
                cohort_xfer_finish(x, staged);
                return;
            }
        }
        /* The data follows to the receive it matched, named by the receiver's token. */
        cohort_sc_unsent(x);
        cohort_sc_state(x)->state = COHORT_SC_RESEND;
        x->hdr[1] = COHORT_MSG_SINGLE_COPY_DATA;
        x->hdr[2] = 0;
        for (int i = 0; i < 8; i++) {
            x->hdr[8 + i] = (uint8_t)((uint64_t)h->seq >> (8 * i));
        }
        cohort_list_push(&room->resend, &x->link);
        return;
    } else {
        cohort_xfer_finish(x, status);
    }
    if (req->user_freed && req->inflight == 0 && req->readers == 0) {
        cohort_request_release(req); /* freed while its reader had not answered */
    }
}

/* The data a refused single copy asked for arrived (receiver side). @a data is eager data or,
 * with @a rndv, UCX's descriptor (then fetched). */
static void cohort_sc_data(cohort_context_t *ctx, const cohort_am_hdr_t *h, void *data, size_t len,
                           int rndv)
{
    cohort_sc_room_t *room = cohort_sc_room(ctx);
    cohort_xfer_t *x = cohort_map_get(&room->recvs, h->gid);

    if (x == NULL || cohort_sc_phase(x) != COHORT_SC_WANT_DATA || cohort_sc_world(x) != h->wsrc ||
        len > x->len) {
        ctx->orphans_dropped++; /* for a receive given up on meanwhile */
        return;
    }
    cohort_map_del(&room->recvs, cohort_sc_state(x)->token);
    cohort_sc_state(x)->token = 0;
    cohort_sc_state(x)->state = COHORT_SC_NONE;
    x->received = len;
    if (rndv) {
        cohort_proto_msg_fetch(ctx, x, data);
        return;
    }
    cohort_xfer_finish(x, cohort_xfer_fill(ctx, x, data, len));
}

void cohort_sc_forget(cohort_xfer_t *x)
{
    cohort_context_t *ctx = x->req->ctx;
    cohort_sc_room_t *room = cohort_sc_room(ctx);
    cohort_sc_state_t *s = cohort_sc_state(x);
    int phase = cohort_sc_phase(x);

    if (s == NULL) {
        return; /* never offered nor read (a claim, a fallback), or given back already */
    }
    if (phase == COHORT_SC_SENT) {
        cohort_sc_unsent(x);
    } else if (phase == COHORT_SC_WANT_DATA) {
        cohort_map_del(&room->recvs, s->token);
    } else if (phase == COHORT_SC_RESEND) {
        cohort_list_del(&x->link);
    } else if (phase == COHORT_SC_READING) {
        cohort_sc_desc_t d;
        /* Given up on mid-read (cancelled, freed, its group revoked): nothing more is read into
         * its buffer, and its sender, which holds its own until told, is told. */
        memcpy(&d, s->desc, sizeof(d));
        cohort_list_del(&x->link);
        cohort_sc_read_end(ctx, x);
        cohort_sc_answer_to(ctx, s->reader, d.token, (cohort_status_t)s->answer, 0);
    } else if (phase == COHORT_SC_ACKING) {
        cohort_list_t *pos, *tmp;
        cohort_list_t *lists[] = {&room->acks, &room->acks_sent};
        /* Given up on (cancelled, freed): its ACK still goes, the sender waits for it. */
        for (int i = 0; i < 2; i++) {
            cohort_list_for_each(pos, tmp, lists[i])
            {
                cohort_sc_ack_t *a = cohort_container_of(pos, cohort_sc_ack_t, link);
                if (a->x == x) {
                    a->x = NULL;
                }
            }
        }
    }
    s->state = COHORT_SC_NONE;
    s->token = 0;
    /* A send UCX has not completed yet may still read its descriptor from the state (an ACK
     * can be handled before the send's own completion): the state goes back when UCX is done
     * (cohort_sc_sent). Should UCX fail that send instead, the block stays lent until cleanup. */
    if (x->ucx_req == NULL) {
        cohort_sc_state_give(x);
    }
}

int cohort_sc_sent(cohort_xfer_t *x)
{
    if (x->done) {
        cohort_sc_state_give(x); /* finished while UCX still sent its descriptor */
        return 0;
    }
    return cohort_sc_phase(x) == COHORT_SC_SENT; /* the receiver's ACK finishes it */
}

int cohort_sc_cancel(cohort_xfer_t *x, cohort_status_t status)
{
    if (cohort_sc_phase(x) == COHORT_SC_READING) {
        /* The engine finishes it now (cohort_sc_forget stops the read). Its sender is done
         * as a rendezvous sender whose receive was freed mid-fetch is; with the group revoked,
         * it hears REVOKED, as from a receiver that dropped the descriptor unread. */
        cohort_comm_t *c = x->req->comm;
        cohort_sc_state(x)->answer =
            c != NULL && c->error != COHORT_OK ? COHORT_ERR_REVOKED : COHORT_OK;
        return 0;
    }
    if (cohort_sc_phase(x) != COHORT_SC_SENT) {
        return 0;
    }
    /* Its descriptor is out: a process on this node may be reading the buffer now. It ends
     * when that reader answers (read, or dropped unread: the revocation that comes with a
     * cancel tells it) or dies, not before. */
    if (!cohort_sc_state(x)->cancel) {
        cohort_sc_state(x)->cancel = 1;
        x->status = status;
        /* Its sequence number is used up, and the revocation is what tells the reader to drop it; a
         * point-to-point send freed by its user told its reader itself (core/cancel.c), and
         * the group stays in order. */
        if (x->req->comm != NULL && status != COHORT_ERR_CANCELED) {
            cohort_comm_revoke(x->req->comm, status, "a single-copy send was cancelled");
        }
    }
    return 1;
}

const void *cohort_sc_payload(const cohort_xfer_t *x, size_t *len)
{
    if (!x->is_send || cohort_sc_phase(x) != COHORT_SC_SENT) {
        return NULL;
    }
    *len = sizeof(cohort_sc_state(x)->desc);
    return cohort_sc_state(x)->desc;
}

void cohort_sc_describe(const cohort_xfer_t *x, char *buf, size_t len)
{
    static const char *const what[] = {
        [COHORT_SC_NONE] = "copied",
        [COHORT_SC_SENT] = "offered: waiting for its reader's answer",
        [COHORT_SC_WANT_DATA] = "refused here: waiting for the data",
        [COHORT_SC_RESEND] = "refused by its reader: the data goes next",
        [COHORT_SC_ACKING] = "copied: its answer waits for an endpoint",
    };

    if (cohort_sc_phase(x) == COHORT_SC_READING) {
        cohort_sc_desc_t d;
        memcpy(&d, cohort_sc_state(x)->desc, sizeof(d));
        if (!cohort_sc_state(x)->pid_ok) {
            snprintf(buf, len,
                     "%s single copy with world rank %d: waiting for its card (its pid, through "
                     "PMIx) before reading %llu bytes",
                     x->proto->name, cohort_sc_world(x), (unsigned long long)d.len);
            return;
        }
        snprintf(buf, len, "%s single copy with world rank %d, reading: %llu of %llu bytes in",
                 x->proto->name, cohort_sc_world(x), (unsigned long long)cohort_sc_state(x)->off,
                 (unsigned long long)d.len);
        return;
    }
    snprintf(buf, len, "%s single copy with world rank %d, %s", x->proto->name, cohort_sc_world(x),
             cohort_sc_phase(x) <= COHORT_SC_ACKING ? what[cohort_sc_phase(x)] : "?");
}

static void cohort_sc_fail_map(cohort_context_t *ctx, cohort_map_t *map,
                               const cohort_proto_t *proto, int world_rank, cohort_status_t status)
{
    cohort_xfer_t *victims[64];
    int n;

    /* Collected first: finishing a transfer deletes it from the map being walked. */
    do {
        n = 0;
        for (size_t i = 0; i < map->cap && n < 64; i++) {
            cohort_xfer_t *x = map->vals[i];
            if (map->keys[i] != 0 && x != NULL && x->proto == proto &&
                cohort_sc_world(x) == world_rank) {
                victims[n++] = x;
            }
        }
        cohort_request_t *reqs[64];
        int nreqs = 0;
        for (int i = 0; i < n; i++) {
            int j = 0;
            while (j < nreqs && reqs[j] != victims[i]->req) {
                j++;
            }
            if (j == nreqs) {
                reqs[nreqs++] = victims[i]->req;
            }
        }
        for (int i = 0; i < n; i++) {
            cohort_xfer_finish(victims[i], status);
        }
        /* A send freed while its reader had not answered: the reader is dead, so it is over. */
        for (int j = 0; j < nreqs; j++) {
            if (reqs[j]->user_freed && reqs[j]->inflight == 0 && reqs[j]->readers == 0) {
                cohort_request_release(reqs[j]);
            }
        }
    } while (n == 64);
}

void cohort_sc_fail_peer(cohort_context_t *ctx, const cohort_proto_t *proto, int world_rank,
                         cohort_status_t status)
{
    cohort_sc_room_t *room = cohort_sc_room(ctx);
    cohort_list_t *pos, *tmp;

    cohort_sc_fail_map(ctx, &room->sends, proto, world_rank, status);
    cohort_sc_fail_map(ctx, &room->recvs, proto, world_rank, status);
    /* Receives reading from it: failed, nobody to answer. From the start after each, since
     * finishing one may finish others (its group revoked). */
restart:
    cohort_list_for_each(pos, tmp, &room->reading)
    {
        cohort_xfer_t *x = cohort_container_of(pos, cohort_xfer_t, link);
        if (x->proto == proto && cohort_sc_state(x)->reader == world_rank) {
            cohort_list_del(&x->link);
            cohort_sc_read_end(ctx, x);
            cohort_xfer_finish(x, status);
            goto restart;
        }
    }
}

/* The ACK has left (or cannot go): its receive, if still wanted, is done. */
static void cohort_sc_ack_sent(void *arg)
{
    cohort_sc_ack_t *a = arg;
    cohort_xfer_t *x = a->x;

    cohort_list_del(&a->link);
    if (x != NULL) {
        cohort_sc_state(x)->state = COHORT_SC_NONE;
        cohort_xfer_finish(x, COHORT_OK);
    }
    free(a);
}

int cohort_sc_progress(cohort_context_t *ctx)
{
    cohort_sc_room_t *room = cohort_sc_room(ctx);
    cohort_list_t *pos, *tmp;
    int n = 0;

    if (cohort_list_empty(&room->acks) && cohort_list_empty(&room->resend) &&
        cohort_list_empty(&room->reading)) {
        return 0;
    }
    if (!cohort_list_empty(&room->reading)) {
        cohort_list_t todo;
        /* One chunk per receive per call. From a list of our own: a step whose sender turns
         * out dead fails that peer, which may finish other receives (taken off either list). */
        cohort_list_init(&todo);
        cohort_list_splice(&room->reading, &todo);
        while (!cohort_list_empty(&todo)) {
            cohort_xfer_t *x = cohort_container_of(todo.next, cohort_xfer_t, link);
            int r;
            cohort_list_del(&x->link);
            r = cohort_sc_step(ctx, x, 1);
            if (r != 0) {
                cohort_list_push(&room->reading, &x->link);
            }
            /* A chunk read, or a device copy awaited: not idle (no sleep on the fd). A card
             * awaited is PMIx's to answer: the wait may nap, and let its server run. */
            n += r != 2;
        }
    }

    cohort_list_for_each(pos, tmp, &room->acks)
    {
        cohort_sc_ack_t *a = cohort_container_of(pos, cohort_sc_ack_t, link);
        cohort_peer_t *peer = cohort_peer_get(ctx, a->world_rank);

        if (peer != NULL && !ctx->finalizing) {
            cohort_peer_want(peer);
        }
        if (peer != NULL && peer->state == COHORT_PEER_LOOKING_UP) {
            continue; /* its receive stays unfinished, so that whoever waits on it progresses */
        }
        n++;
        if (peer != NULL && peer->state == COHORT_PEER_WIRED) {
            /* Finished only when UCX has sent it: a new endpoint's first message may wait for
             * its wireup, which needs this rank's progress. */
            cohort_list_del(&a->link);
            cohort_list_push(&room->acks_sent, &a->link);
            cohort_ctl_send_then(ctx, a->world_rank, &a->hdr, cohort_sc_ack_sent, a);
        } else {
            cohort_sc_ack_sent(a); /* nobody to tell: the data is here all the same */
        }
    }
    while (!cohort_list_empty(&room->resend)) {
        cohort_xfer_t *x = cohort_container_of(room->resend.next, cohort_xfer_t, link);
        cohort_list_del(&x->link);
        /* The data goes as a message now (its header says so): no single copy's any more. */
        cohort_sc_state_give(x);
        cohort_xfer_route(x);
        n++;
    }
    return n;
}

static void cohort_sc_ack_msg(cohort_context_t *ctx, const cohort_am_hdr_t *h, void *data,
                              size_t len, int rndv)
{
    cohort_sc_ack(ctx, h);
}

/* The receive of @a c reading message @a seq from group rank @a src, in @a list or @a map. */
static int cohort_sc_is(const cohort_xfer_t *x, const cohort_comm_t *c, int src, uint32_t seq)
{
    return !x->is_send && x->kind == COHORT_MSG_P2P && x->req->comm == c && x->peer == src &&
           x->seq == seq;
}

static void cohort_sc_cancelled(cohort_context_t *ctx, cohort_comm_t *c, int src, uint32_t seq)
{
    cohort_sc_room_t *room = cohort_sc_room(ctx);
    cohort_list_t *pos;

    for (pos = room->reading.next; pos != &room->reading; pos = pos->next) {
        cohort_xfer_t *x = cohort_container_of(pos, cohort_xfer_t, link);
        if (cohort_sc_is(x, c, src, seq)) {
            /* Between two chunks: no byte more is read (cohort_sc_forget stops the read), and
             * the sender hears CANCELED, which ends its free. */
            cohort_sc_state(x)->answer = COHORT_ERR_CANCELED;
            cohort_xfer_finish(x, COHORT_ERR_CANCELED);
            return;
        }
    }
    for (size_t i = 0; i < room->recvs.cap; i++) {
        cohort_xfer_t *x = room->recvs.vals[i];
        if (room->recvs.keys[i] != 0 && x != NULL && cohort_sc_is(x, c, src, seq)) {
            /* It asked for the data, which will not come (dropped on arrival if it does). */
            cohort_xfer_finish(x, COHORT_ERR_CANCELED);
            return;
        }
    }
    /* Read whole already (its ACK ends the send), or fetched by UCX: it ends as it would. */
}

static const cohort_am_kind_t cohort_sc_ack_kind = {.header_only = 1, .ctl = cohort_sc_ack_msg};
static const cohort_am_kind_t cohort_sc_data_kind = {.ctl = cohort_sc_data};
static const cohort_am_offer_t cohort_sc_offer_ops = {
    .read = cohort_sc_read, .unread = cohort_sc_dropped, .cancel = cohort_sc_cancelled};

void cohort_sc_init(cohort_context_t *ctx)
{
    cohort_sc_room_t *room = cohort_sc_room(ctx);

    cohort_map_init(&room->sends);
    cohort_map_init(&room->recvs);
    room->next_token = 1;
    room->next_rtoken = 1;
    cohort_list_init(&room->acks);
    cohort_list_init(&room->acks_sent);
    cohort_list_init(&room->resend);
    cohort_list_init(&room->reading);
    cohort_list_init(&room->states_free);
    cohort_list_init(&room->states_lent);
    cohort_am_kind_set(ctx, COHORT_MSG_SINGLE_COPY_ACK, &cohort_sc_ack_kind);
    cohort_am_kind_set(ctx, COHORT_MSG_SINGLE_COPY_DATA, &cohort_sc_data_kind);
    cohort_am_offer_set(ctx, &cohort_sc_offer_ops);
}

void cohort_sc_cleanup(cohort_context_t *ctx)
{
    cohort_sc_room_t *room = cohort_sc_room(ctx);
    cohort_list_t *lists[] = {&room->acks, &room->acks_sent};
    cohort_list_t *states[] = {&room->states_free, &room->states_lent};

    for (int i = 0; i < 2; i++) {
        while (!cohort_list_empty(lists[i])) {
            cohort_sc_ack_t *a = cohort_container_of(lists[i]->next, cohort_sc_ack_t, link);
            cohort_list_del(&a->link);
            free(a);
        }
    }
    /* Lent ones too: transfers a finalize left unfinished are never touched again. */
    for (int i = 0; i < 2; i++) {
        while (!cohort_list_empty(states[i])) {
            cohort_sc_state_t *st =
                cohort_container_of(states[i]->next, cohort_sc_state_t, pool_link);
            cohort_list_del(&st->pool_link);
            free(st);
        }
    }
    cohort_map_cleanup(&room->sends);
    cohort_map_cleanup(&room->recvs);
}
