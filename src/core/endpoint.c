#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/am.h"
#include "core/endpoint.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/time.h"

cohort_status_t cohort_ucs_status(ucs_status_t status)
{
    switch (status) {
    case UCS_OK:
        return COHORT_OK;
    case UCS_INPROGRESS:
        return COHORT_INPROGRESS;
    case UCS_ERR_NO_MEMORY:
        return COHORT_ERR_NO_MEMORY;
    case UCS_ERR_INVALID_PARAM:
        return COHORT_ERR_INVALID_ARG;
    case UCS_ERR_UNSUPPORTED:
        return COHORT_ERR_UNSUPPORTED;
    case UCS_ERR_TIMED_OUT:
        return COHORT_ERR_TIMEOUT;
    case UCS_ERR_CANCELED:
        return COHORT_ERR_REVOKED;
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_NOT_CONNECTED:
    case UCS_ERR_REJECTED:
        return COHORT_ERR_PEER_FAILED;
    default:
        return COHORT_ERR_UCX;
    }
}

static void cohort_endpoint_error_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    cohort_context_t *ctx = arg;

    for (int r = 0; r < ctx->size; r++) {
        if (ctx->peers[r].ep == ep) {
            if (ctx->peers[r].state != COHORT_PEER_FAILED) {
                ctx->peers[r].state = COHORT_PEER_FAILED;
                /* Quiet when nothing waited on the peer: a peer that finalized normally
                 * also closes its side. cohort_am_fail_peer logs when operations fail. */
                cohort_debug("endpoint to rank %d failed: %s", r, ucs_status_string(status));
                cohort_am_fail_peer(ctx, r, ucs_status_string(status));
            }
            return;
        }
    }
}

/* Fetch a peer's address while keeping our own worker progressing: peers wiring to us need
 * their wireup answered, and a rank blocked inside PMIx would stall them all. Only UCX is
 * progressed (not cohort's queues): this runs inside a send, maybe inside a collective. */
static cohort_status_t cohort_endpoint_lookup(cohort_context_t *ctx, int rank, void **addr,
                                              size_t *len)
{
    cohort_pmix_lookup_t *op;
    cohort_status_t status = ctx->plugin->lookup_start(ctx->pmix, rank, &op);
    double idle_since = cohort_time_now();

    while (status == COHORT_OK) {
        status = ctx->plugin->lookup_test(op, addr, len);
        if (status != COHORT_INPROGRESS) {
            return status;
        }
        status = COHORT_OK;
        if (ucp_worker_progress(ctx->worker) > 0) {
            idle_since = cohort_time_now();
        } else {
            cohort_progress_idle(ctx, cohort_time_now() - idle_since, 0.001);
        }
    }
    return status;
}

cohort_status_t cohort_endpoint_get(cohort_context_t *ctx, int rank, ucp_ep_h *ep_p)
{
    cohort_peer_t *peer = &ctx->peers[rank];
    ucp_ep_params_t params;
    void *addr = NULL;
    size_t len = 0;
    ucs_status_t ucs;
    cohort_status_t status;
    double start, looked_up;

    if (peer->state == COHORT_PEER_WIRED) {
        *ep_p = peer->ep;
        return COHORT_OK;
    }
    if (peer->state == COHORT_PEER_FAILED) {
        return COHORT_ERR_PEER_FAILED;
    }

    start = cohort_time_now();
    if (rank == ctx->rank) {
        /* Our own address is at hand: no lookup for sends to self. */
        addr = ctx->address;
    } else {
        status = cohort_endpoint_lookup(ctx, rank, &addr, &len);
        peer->lookups++;
        ctx->stat_lookups++;
        if (status != COHORT_OK) {
            cohort_error("cannot wire rank %d: its address lookup failed (%s)", rank,
                         cohort_strerror(status));
            return status;
        }
    }

    looked_up = cohort_time_now();
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                        UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.address = addr;
    params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb = cohort_endpoint_error_cb;
    params.err_handler.arg = ctx;
    ucs = ucp_ep_create(ctx->worker, &params, &peer->ep);
    if (addr != ctx->address) {
        free(addr);
    }
    if (ucs != UCS_OK) {
        cohort_error("ucp_ep_create to rank %d failed: %s", rank, ucs_status_string(ucs));
        peer->ep = NULL;
        return cohort_ucs_status(ucs);
    }
    peer->state = COHORT_PEER_WIRED;
    peer->wire_us = (float)((cohort_time_now() - start) * 1e6);
    ctx->stat_endpoints++;
    cohort_debug("wired rank %d in %.1f us (address lookup %.1f us, ucp_ep_create %.1f us)", rank,
                 peer->wire_us, (looked_up - start) * 1e6, (cohort_time_now() - looked_up) * 1e6);
    *ep_p = peer->ep;
    return COHORT_OK;
}

void cohort_endpoint_close_all(cohort_context_t *ctx)
{
    ucp_request_param_t param;
    double deadline = cohort_time_now() + (ctx->cfg.timeout_s > 0 ? ctx->cfg.timeout_s : 10.0);

    if (ctx->peers == NULL) {
        return;
    }
    for (int r = 0; r < ctx->size; r++) {
        cohort_peer_t *peer = &ctx->peers[r];
        void *req;

        if (peer->ep == NULL) {
            continue;
        }
        memset(&param, 0, sizeof(param));
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        /* A failed peer cannot acknowledge a flush: close it by force. */
        param.flags = peer->state == COHORT_PEER_FAILED ? UCP_EP_CLOSE_FLAG_FORCE : 0;
        req = ucp_ep_close_nbx(peer->ep, &param);
        if (UCS_PTR_IS_PTR(req)) {
            while (ucp_request_check_status(req) == UCS_INPROGRESS) {
                ucp_worker_progress(ctx->worker);
                if (cohort_time_now() > deadline) {
                    cohort_warn("closing the endpoint to rank %d did not finish in time", r);
                    break;
                }
            }
            ucp_request_free(req);
        }
        peer->ep = NULL;
        peer->state = COHORT_PEER_NONE;
    }
}

int cohort_wired_peers(const cohort_context_t *ctx, int *world_ranks, int max)
{
    int n = 0;

    if (ctx == NULL) {
        return 0;
    }
    for (int r = 0; r < ctx->size; r++) {
        if (ctx->peers[r].ep != NULL) {
            if (world_ranks != NULL && n < max) {
                world_ranks[n] = r;
            }
            n++;
        }
    }
    return n;
}

/* Pull "tl/dev" names out of ucp_ep_print_info's lane lines. */
static void cohort_endpoint_transports(ucp_ep_h ep, char *out, size_t outlen)
{
    char *text = NULL, *line, *save = NULL;
    size_t textlen = 0, used = 0;
    FILE *f = open_memstream(&text, &textlen);

    out[0] = '\0';
    if (f == NULL) {
        return;
    }
    ucp_ep_print_info(ep, f);
    fclose(f);
    for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        char *lane = strstr(line, "lane[");
        char *colon, *end, name[64];

        if (lane == NULL || (colon = strchr(lane, ':')) == NULL) {
            continue;
        }
        /* "lane[0]:  1:sysv/memory.0 md[1] ..." -> "sysv/memory" */
        colon++;
        while (*colon == ' ') {
            colon++;
        }
        while (*colon >= '0' && *colon <= '9') {
            colon++;
        }
        if (*colon == ':') {
            colon++;
        }
        end = colon;
        while (*end != '\0' && *end != ' ' && *end != '.' && end - colon < 63) {
            end++;
        }
        snprintf(name, sizeof(name), "%.*s", (int)(end - colon), colon);
        if (name[0] == '\0' || strstr(out, name) != NULL) {
            continue;
        }
        used += (size_t)snprintf(out + used, used < outlen ? outlen - used : 0, "%s%s",
                                 used ? " " : "", name);
        if (used >= outlen) {
            break;
        }
    }
    free(text);
}

cohort_status_t cohort_peer_info(const cohort_context_t *ctx, int world_rank,
                                 cohort_peer_info_t *info)
{
    if (ctx == NULL || info == NULL || world_rank < 0 || world_rank >= ctx->size ||
        ctx->peers[world_rank].ep == NULL) {
        cohort_error("cohort_peer_info: no endpoint to rank %d", world_rank);
        return COHORT_ERR_INVALID_ARG;
    }
    info->world_rank = world_rank;
    info->wire_us = ctx->peers[world_rank].wire_us;
    info->pmix_lookups = ctx->peers[world_rank].lookups;
    cohort_endpoint_transports(ctx->peers[world_rank].ep, info->transports,
                               sizeof(info->transports));
    return COHORT_OK;
}
