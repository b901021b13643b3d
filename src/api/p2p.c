/* Point-to-point within a group: one transfer per request. */
#include <stdio.h>
#include <string.h>
#include "core/am.h"
#include "core/context.h"
#include "core/guard.h"
#include "core/log.h"
#include "core/progress.h"
#include "base/time.h"
#include "group/group.h"
#include "proto/proto.h"
#include "base/dtype.h"

static void cohort_p2p_describe(const cohort_request_t *req, char *buf, size_t len)
{
    const cohort_comm_t *c = req->comm;

    int peer = req->xfer.peer;
    char how[160] = "";

    if (req->xfer.proto != NULL) {
        /* what its protocol waits for (a single copy's reader, say) */
        how[0] = ' ';
        how[1] = '(';
        cohort_proto_describe(&req->xfer, how + 2, sizeof(how) - 3);
        strcat(how, ")");
    }
    snprintf(buf, len, "%s group rank %d (world %d) tag %d, %zu bytes, on group '%s' 0x%016llx%s%s",
             req->xfer.is_send ? "send to" : "receive from", peer,
             c && peer >= 0 ? cohort_comm_world_rank(c, peer) : -1, req->xfer.tag, req->xfer.len,
             c ? c->label : "?", (unsigned long long)(c ? c->id : 0),
             req->xfer.is_send || req->xfer.proto != NULL ? "" : ": not yet heard from it", how);
}

/* Done when its one transfer is: no progress step of its own. */
static const cohort_request_ops_t cohort_p2p_ops = {
    .name = "p2p",
    .describe = cohort_p2p_describe,
};

/* A request for one transfer. Its buffer may be device memory: the transfer layer looks, and
 * stages it where UCX takes none (proto/xfer_stage.c). */
static cohort_status_t cohort_p2p_alloc(cohort_group_t *g, cohort_request_t **req_p)
{
    cohort_request_t *req = cohort_request_alloc(g->comm, &cohort_p2p_ops, 0);

    if (req == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    req->device = 1;
    *req_p = req;
    return COHORT_OK;
}

static cohort_status_t cohort_p2p_check(const char *fn, cohort_group_t *g, const void *buf,
                                        size_t count, cohort_dtype_t dt, int peer, int tag,
                                        cohort_request_t **req, size_t *bytes)
{
    size_t esize = cohort_dtype_size(dt);

    if (esize == 0) {
        cohort_error(g->ctx, "%s: unknown dtype %d", fn, (int)dt);
        return COHORT_ERR_INVALID_ARG;
    }
    /* COHORT_IN_PLACE means "in rbuf" to a collective; a transfer has one buffer only */
    if (buf == COHORT_IN_PLACE) {
        cohort_error(g->ctx, "%s: COHORT_IN_PLACE is not a buffer of a point-to-point call", fn);
        return COHORT_ERR_INVALID_ARG;
    }
    if (buf == NULL && count > 0) {
        cohort_error(g->ctx, "%s: buf is NULL with count %zu", fn, count);
        return COHORT_ERR_INVALID_ARG;
    }
    if (count > SIZE_MAX / esize) {
        cohort_error(g->ctx, "%s: count %zu overflows", fn, count);
        return COHORT_ERR_INVALID_ARG;
    }
    if (peer < 0 || peer >= g->comm->size) {
        cohort_error(g->ctx, "%s: peer %d is out of range for a group of %d", fn, peer,
                     g->comm->size);
        return COHORT_ERR_INVALID_ARG;
    }
    if (tag < 0) {
        cohort_error(g->ctx, "%s: tag %d is negative", fn, tag);
        return COHORT_ERR_INVALID_ARG;
    }
    if (req == NULL) {
        cohort_error(g->ctx, "%s: req is NULL", fn);
        return COHORT_ERR_INVALID_ARG;
    }
    if (g->comm->error != COHORT_OK) {
        return g->comm->error;
    }
    *bytes = count * esize;
    return COHORT_OK;
}

static cohort_status_t cohort_p2p_start(const char *fn, int is_send, cohort_group_t *g, void *buf,
                                       size_t count, cohort_dtype_t dt, int peer, int tag,
                                       cohort_request_t **req_p)
{
    cohort_request_t *req;
    cohort_status_t status;
    size_t bytes = 0;

    /* a receive may name no peer; the range check then has nothing to look at */
    int any = !is_send && peer == COHORT_ANY_SOURCE;

    status = cohort_p2p_check(fn, g, buf, count, dt, any ? 0 : peer, tag, req_p, &bytes);
    if (status != COHORT_OK) {
        return status;
    }
    status = cohort_p2p_alloc(g, &req);
    if (status != COHORT_OK) {
        return status;
    }
    if (is_send) {
        status = cohort_xfer_send(req, &req->xfer, peer, COHORT_MSG_P2P, 0, tag, 0, buf, bytes);
    } else {
        status = cohort_xfer_recv(req, &req->xfer, peer, COHORT_MSG_P2P, 0, tag, 0, buf, bytes);
    }
    if (status != COHORT_OK) {
        cohort_request_cancel(req, status);
        cohort_request_release(req);
        return status;
    }
    *req_p = req;
    return COHORT_OK;
}

/* A blocking send to this rank itself, too large to go out eagerly, completes only when it is
 * received, and only this thread could post that receive: waiting for it is waiting for ever
 * (cohort.h). Past COHORT_WATCH_S the log says so, once; COHORT_TIMEOUT, if set, then counts
 * from there (cohort_request_wait_internal). */
static void cohort_p2p_self_watch(const char *fn, cohort_group_t *g, cohort_request_t *req)
{
    cohort_context_t *ctx = g->ctx;
    double watch = ctx->cfg.watch_s, start = cohort_time_now(), idle_since = start, t;

    if (watch <= 0) {
        return;
    }
    while (!req->done && (t = cohort_time_now()) - start < watch) {
        if (cohort_progress(ctx) > 0) {
            idle_since = t;
        } else {
            cohort_progress_idle(ctx, t - idle_since, watch - (t - start));
        }
    }
    if (!req->done) {
        cohort_warn(ctx,
                    "%s: a send of %zu bytes to this rank itself (group rank %d of '%s') has "
                    "waited %.1f s (COHORT_WATCH_S): it completes only once it is received, and "
                    "that takes a receive this same thread must post (post it first with "
                    "cohort_irecv, or send with cohort_isend)",
                    fn, req->xfer.len, g->comm->rank, g->comm->label, watch);
    }
}

/* The public calls: the group's handle decoded and its context taken for the call; a
 * nonblocking one hands out a request handle, a blocking one waits on its own request. */
static cohort_status_t cohort_p2p_post(const char *fn, int is_send, cohort_group_t *handle,
                                       void *buf, size_t count, cohort_dtype_t dt, int peer,
                                       int tag, cohort_request_t **req_p)
{
    cohort_group_t *g = cohort_group_enter_call(handle, fn);
    cohort_request_t *req = NULL;
    cohort_status_t status;

    if (g == NULL) {
        return COHORT_ERR_INVALID_ARG;
    }
    status = cohort_p2p_start(fn, is_send, g, buf, count, dt, peer, tag, &req);
    if (status == COHORT_OK && req_p != NULL) {
        status = cohort_request_publish(req, req_p);
    } else if (status == COHORT_OK) {
        if (is_send && peer == g->comm->rank) {
            cohort_p2p_self_watch(fn, g, req);
        }
        status = cohort_request_wait_internal(req);
        cohort_request_free_internal(req);
    }
    cohort_group_leave(g);
    return status;
}

cohort_status_t cohort_isend(cohort_group_t *g, const void *buf, size_t count, cohort_dtype_t dt,
                             int peer, int tag, cohort_request_t **req)
{
    if (req == NULL) {
        cohort_error(NULL, "cohort_isend: req is NULL");
        return COHORT_ERR_INVALID_ARG;
    }
    return cohort_p2p_post("cohort_isend", 1, g, (void *)buf, count, dt, peer, tag, req);
}

cohort_status_t cohort_irecv(cohort_group_t *g, void *buf, size_t count, cohort_dtype_t dt,
                             int peer, int tag, cohort_request_t **req)
{
    if (req == NULL) {
        cohort_error(NULL, "cohort_irecv: req is NULL");
        return COHORT_ERR_INVALID_ARG;
    }
    return cohort_p2p_post("cohort_irecv", 0, g, buf, count, dt, peer, tag, req);
}

int cohort_request_source(const cohort_request_t *handle)
{
    const cohort_request_t *req = cohort_request_get(handle, "cohort_request_source");

    if (req == NULL || req->ops != &cohort_p2p_ops || req->xfer.is_send || !req->done) {
        return -1;
    }
    return req->xfer.peer;
}

cohort_status_t cohort_send(cohort_group_t *g, const void *buf, size_t count, cohort_dtype_t dt,
                            int peer, int tag)
{
    return cohort_p2p_post("cohort_send", 1, g, (void *)buf, count, dt, peer, tag, NULL);
}

cohort_status_t cohort_recv(cohort_group_t *g, void *buf, size_t count, cohort_dtype_t dt, int peer,
                            int tag)
{
    return cohort_p2p_post("cohort_recv", 0, g, buf, count, dt, peer, tag, NULL);
}
