/*
 * The protocol table and the engine's calls through it. A new protocol is a file and a row
 * here. The rows are tried in order: the single copies first (one copy instead of two or
 * three, where the peer is on this node), the UCX message last (it carries anything UCX
 * takes).
 */
#include <stdio.h>
#include <stdlib.h>
#include "core/am.h"
#include "core/endpoint.h"
#include "core/log.h"
#include "proto/proto.h"
#include "proto/protos.h"

static const cohort_proto_t *const cohort_protos[] = {
    &cohort_proto_cuda_ipc,
    &cohort_proto_cma,
    &cohort_proto_msg,
};

#define COHORT_NPROTOS (sizeof(cohort_protos) / sizeof(cohort_protos[0]))

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

cohort_status_t cohort_proto_init(cohort_context_t *ctx)
{
    void **rows = calloc(COHORT_NPROTOS, sizeof(*rows));

    /* Every row's state is there before any row's init runs, so that a row may use another's
     * (CUDA IPC rides on CMA's queues), and cleanup meets only rows that were set up. */
    for (size_t i = 0; rows != NULL && i < COHORT_NPROTOS; i++) {
        if (cohort_protos[i]->ctx_size > 0 &&
            (rows[i] = calloc(1, cohort_protos[i]->ctx_size)) == NULL) {
            for (size_t j = 0; j < i; j++) {
                free(rows[j]);
            }
            free(rows);
            rows = NULL;
        }
    }
    if (rows == NULL) {
        cohort_error(ctx, "cohort_init: out of memory for the protocols' state");
        return COHORT_ERR_NO_MEMORY;
    }
    ctx->protos = rows;
    for (size_t i = 0; i < COHORT_NPROTOS; i++) {
        if (cohort_protos[i]->init != NULL) {
            cohort_protos[i]->init(ctx);
        }
    }
    cohort_peer_observe(ctx, &cohort_proto_observer);
    return COHORT_OK;
}

void cohort_proto_cleanup(cohort_context_t *ctx)
{
    void **rows = ctx->protos;

    if (rows == NULL) {
        return;
    }
    for (size_t i = 0; i < COHORT_NPROTOS; i++) {
        if (cohort_protos[i]->cleanup != NULL) {
            cohort_protos[i]->cleanup(ctx);
        }
    }
    for (size_t i = 0; i < COHORT_NPROTOS; i++) {
        free(rows[i]);
    }
    free(rows);
    ctx->protos = NULL;
}

void *cohort_proto_ctx(const cohort_context_t *ctx, const cohort_proto_t *row)
{
    void **rows = ctx->protos;

    for (size_t i = 0; i < COHORT_NPROTOS; i++) {
        if (cohort_protos[i] == row) {
            return rows[i];
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

void cohort_proto_start(cohort_xfer_t *x, cohort_peer_t *peer)
{
    for (size_t i = 0; i < COHORT_NPROTOS; i++) {
        if (cohort_protos[i]->select(x, peer)) {
            x->proto = cohort_protos[i];
            cohort_protos[i]->start(x, peer);
            return;
        }
    }
    /* device data neither offered through CUDA IPC nor staged (logged) */
    cohort_xfer_finish(x, COHORT_ERR_CUDA);
}

int cohort_proto_progress(cohort_context_t *ctx)
{
    int n = 0;

    for (size_t i = 0; i < COHORT_NPROTOS; i++) {
        if (cohort_protos[i]->progress != NULL) {
            n += cohort_protos[i]->progress(ctx);
        }
    }
    return n;
}

int cohort_proto_sent(cohort_xfer_t *x)
{
    return x->proto != NULL && x->proto->sent != NULL && x->proto->sent(x);
}

int cohort_proto_cancel(cohort_xfer_t *x, cohort_status_t status)
{
    return x->proto != NULL && x->proto->cancel != NULL && x->proto->cancel(x, status);
}

void cohort_proto_finish(cohort_xfer_t *x)
{
    if (x->proto != NULL && x->proto->finish != NULL) {
        x->proto->finish(x);
    }
}

const void *cohort_proto_payload(const cohort_xfer_t *x, size_t *len)
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
