/*
 * The protocol table, and the protocol layer the engine calls it through: the verbs of
 * core/proto_ops.h, which src/api hands the context (cohort_proto_layer, at the end). A new
 * protocol is a file and a row here. The rows are tried in order: the single copies first
 * (one copy instead of two or three, where the peer is on this node), the UCX message last
 * (it carries anything UCX takes).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/am.h"
#include "core/endpoint.h"
#include "core/log.h"
#include "proto/proto.h"
#include "proto/protos.h"
#include "proto/xfer_stage.h"

static const cohort_proto_t *const cohort_protos[] = {
    &cohort_proto_cuda_ipc,
    &cohort_proto_cma,
    &cohort_proto_msg,
};

#define COHORT_NPROTOS (sizeof(cohort_protos) / sizeof(cohort_protos[0]))

/* The table's state per context (ctx->protos): each row's own, and the generation of the
 * choices cached in the peers (cohort_proto_start; 0 is never one, so a new peer has none). */
typedef struct {
    uint32_t epoch;
    void *rows[COHORT_NPROTOS];
} cohort_proto_room_t;

/* A cached choice that no row takes (device data UCX cannot carry, not staged). */
#define COHORT_PROTO_PICK_NONE 0xff

static void cohort_proto_peer_failed(cohort_peer_t *peer, cohort_status_t status, const char *why,
                                     int tell)
{
    for (size_t i = 0; i < COHORT_NPROTOS; i++) {
        if (cohort_protos[i]->abort != NULL) {
            cohort_protos[i]->abort(peer->ctx, peer->rank, status);
        }
    }
}

static const cohort_peer_observer_t cohort_proto_observer = {.name = "protocols",
                                                             .failed = cohort_proto_peer_failed};

static cohort_status_t cohort_proto_init(cohort_context_t *ctx)
{
    cohort_proto_room_t *room = calloc(1, sizeof(*room));

    /* Every row's state is there before any row's init runs, so that a row may use another's
     * (CUDA IPC rides on CMA's queues), and cleanup meets only rows that were set up. */
    for (size_t i = 0; room != NULL && i < COHORT_NPROTOS; i++) {
        if (cohort_protos[i]->ctx_size > 0 &&
            (room->rows[i] = calloc(1, cohort_protos[i]->ctx_size)) == NULL) {
            for (size_t j = 0; j < i; j++) {
                free(room->rows[j]);
            }
            free(room);
            room = NULL;
        }
    }
    if (room == NULL) {
        cohort_error(ctx, "cohort_init: out of memory for the protocols' state");
        return COHORT_ERR_NO_MEMORY;
    }
    room->epoch = 1;
    ctx->protos = room;
    for (size_t i = 0; i < COHORT_NPROTOS; i++) {
        if (cohort_protos[i]->init != NULL) {
            cohort_protos[i]->init(ctx);
        }
    }
    cohort_peer_observe(ctx, &cohort_proto_observer);
    return COHORT_OK;
}

static void cohort_proto_cleanup(cohort_context_t *ctx)
{
    cohort_proto_room_t *room = ctx->protos;

    if (room == NULL) {
        return;
    }
    for (size_t i = 0; i < COHORT_NPROTOS; i++) {
        if (cohort_protos[i]->cleanup != NULL) {
            cohort_protos[i]->cleanup(ctx);
        }
    }
    for (size_t i = 0; i < COHORT_NPROTOS; i++) {
        free(room->rows[i]);
    }
    free(room);
    ctx->protos = NULL;
}

void *cohort_proto_ctx(const cohort_context_t *ctx, const cohort_proto_t *row)
{
    const cohort_proto_room_t *room = ctx->protos;

    for (size_t i = 0; i < COHORT_NPROTOS; i++) {
        if (cohort_protos[i] == row) {
            return room->rows[i];
        }
    }
    return NULL;
}

int cohort_proto_claim(cohort_xfer_t *x)
{
    for (size_t i = 0; i < COHORT_NPROTOS; i++) {
        if (cohort_protos[i]->claim != NULL && cohort_protos[i]->claim(x)) {
            return 1;
        }
    }
    return 0;
}

/* Which cached choice send @a x has: its memory type and size class, -1 when it is not a
 * plain send (claimed at post, or the resend of data a single copy refused, whose header says
 * so: those ask the rows each time). */
static int cohort_proto_pick_key(const cohort_xfer_t *x, const cohort_context_t *ctx)
{
    if (x->proto != NULL || x->hdr[1] != x->kind ||
        (x->kind != COHORT_MSG_P2P && x->kind != COHORT_MSG_COLL)) {
        return -1;
    }
    return (x->mem_type == COHORT_MEM_CUDA) * 2 + (x->len >= ctx->cfg.cma_min);
}

static void cohort_proto_start(cohort_xfer_t *x, cohort_peer_t *peer)
{
    cohort_context_t *ctx = peer->ctx;
    cohort_proto_room_t *room = ctx->protos;
    int key = cohort_proto_pick_key(x, ctx);
    size_t i = 0;

    /* UCX caches its protocol choice per key the same way (ucp_proto_select). */
    if (key >= 0 && peer->proto_epoch != room->epoch) {
        memset(peer->proto_pick, 0, sizeof(peer->proto_pick));
        peer->proto_epoch = room->epoch;
    }
    if (key >= 0 && peer->proto_pick[key] != 0) {
        i = peer->proto_pick[key] == COHORT_PROTO_PICK_NONE ? COHORT_NPROTOS
                                                            : (size_t)peer->proto_pick[key] - 1;
    } else {
        while (i < COHORT_NPROTOS && !cohort_protos[i]->select(x, peer)) {
            i++;
        }
        if (key >= 0) {
            peer->proto_pick[key] = i < COHORT_NPROTOS ? (uint8_t)(i + 1) : COHORT_PROTO_PICK_NONE;
            cohort_debug(ctx, "protocol for world rank %d, %s memory, %s %zu bytes: %s", peer->rank,
                         x->mem_type == COHORT_MEM_CUDA ? "device" : "host",
                         x->len >= ctx->cfg.cma_min ? "from" : "below", ctx->cfg.cma_min,
                         i < COHORT_NPROTOS ? cohort_protos[i]->name : "none");
        }
    }
    if (i < COHORT_NPROTOS) {
        x->proto = cohort_protos[i];
        cohort_protos[i]->start(x, peer);
        return;
    }
    /* device data neither offered through CUDA IPC nor staged (logged) */
    cohort_xfer_finish(x, COHORT_ERR_CUDA);
}

void cohort_proto_repick(cohort_context_t *ctx)
{
    cohort_proto_room_t *room = ctx->protos;

    /* 0 is skipped: it is a new peer's, which has no choice yet */
    room->epoch = room->epoch == UINT32_MAX ? 1 : room->epoch + 1;
}

static int cohort_proto_progress(cohort_context_t *ctx)
{
    int n = 0;

    for (size_t i = 0; i < COHORT_NPROTOS; i++) {
        if (cohort_protos[i]->progress != NULL) {
            n += cohort_protos[i]->progress(ctx);
        }
    }
    /* then the staging copies that are over: their sends go to a row, receives finish */
    return n + cohort_xfer_stage_progress(ctx);
}

static int cohort_proto_sent(cohort_xfer_t *x)
{
    return x->proto != NULL && x->proto->sent != NULL && x->proto->sent(x);
}

static int cohort_proto_cancel(cohort_xfer_t *x, cohort_status_t status)
{
    return x->proto != NULL && x->proto->cancel != NULL && x->proto->cancel(x, status);
}

static void cohort_proto_finish(cohort_xfer_t *x)
{
    if (x->proto != NULL && x->proto->finish != NULL) {
        x->proto->finish(x);
    }
}

static const void *cohort_proto_payload(const cohort_xfer_t *x, size_t *len)
{
    if (x->proto != NULL && x->proto->payload != NULL) {
        const void *p = x->proto->payload(x, len);
        if (p != NULL) {
            return p;
        }
    }
    *len = x->len;
    return x->buf;
}

void cohort_proto_describe(const cohort_xfer_t *x, char *buf, size_t len)
{
    if (x->proto == NULL) {
        snprintf(buf, len, "%s", x->is_send ? "not started" : "a message");
        return;
    }
    x->proto->describe(x, buf, len);
}

const cohort_proto_ops_t cohort_proto_layer = {
    .name = "protocols",
    .init = cohort_proto_init,
    .cleanup = cohort_proto_cleanup,
    .stage = cohort_xfer_stage_post,
    .start = cohort_proto_start,
    .progress = cohort_proto_progress,
    .sent = cohort_proto_sent,
    .cancel = cohort_proto_cancel,
    .finish = cohort_proto_finish,
    .payload = cohort_proto_payload,
    .drain = cohort_xfer_stage_drain,
    .unstage = cohort_xfer_stage_release,
};
