/*
 * What the peer table answers about itself: wired and failed ranks, a peer's node and
 * transports, the context's counters. Nothing here moves a peer between states (endpoint.h),
 * so a new query never touches wiring (endpoint.c) or closing (endpoint_close.c). Each public
 * query takes the context for its read (core/guard.h): another thread's call may be changing
 * the table, and the lock orders the two.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/endpoint.h"
#include "core/guard.h"
#include "core/log.h"

static int cohort_int_cmp(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

static int cohort_peer_is_wired(const cohort_peer_t *peer)
{
    return peer->ep != NULL;
}

static int cohort_peer_is_failed(const cohort_peer_t *peer)
{
    return peer->state == COHORT_PEER_FAILED;
}

/* The world ranks of the peers @a pick selects, ascending. */
static int cohort_peer_ranks(const cohort_context_t *ctx, int (*pick)(const cohort_peer_t *),
                             int *world_ranks, int max)
{
    const cohort_list_t *pos;
    int n = 0, *all;

    for (pos = ctx->peer_list.next; pos != &ctx->peer_list; pos = pos->next) {
        n += pick(cohort_container_of(pos, cohort_peer_t, all_link));
    }
    if (world_ranks == NULL || max <= 0 || n == 0) {
        return n;
    }
    all = malloc((size_t)n * sizeof(int));
    if (all == NULL) {
        return n;
    }
    n = 0;
    for (pos = ctx->peer_list.next; pos != &ctx->peer_list; pos = pos->next) {
        const cohort_peer_t *peer = cohort_container_of(pos, cohort_peer_t, all_link);
        if (pick(peer)) {
            all[n++] = peer->rank;
        }
    }
    qsort(all, (size_t)n, sizeof(int), cohort_int_cmp);
    memcpy(world_ranks, all, (size_t)(n < max ? n : max) * sizeof(int));
    free(all);
    return n;
}

static int cohort_wired_peers_held(const cohort_context_t *ctx, int *world_ranks, int max)
{
    return cohort_peer_ranks(ctx, cohort_peer_is_wired, world_ranks, max);
}

static int cohort_failed_ranks_held(const cohort_context_t *ctx, int *world_ranks, int max)
{
    return cohort_peer_ranks(ctx, cohort_peer_is_failed, world_ranks, max);
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

static cohort_status_t cohort_node_info_held(const cohort_context_t *ctx, int world_rank,
                                             cohort_node_info_t *info)
{
    cohort_status_t status = COHORT_OK;

    if (info == NULL || world_rank < 0 || world_rank >= ctx->size) {
        cohort_error(ctx, "cohort_node_info: %s",
                     info == NULL ? "info is NULL" : "rank out of range");
        return COHORT_ERR_INVALID_ARG;
    }
    info->world_rank = world_rank;
    if (ctx->plugin->node_info == NULL) {
        info->same_node = 1;
        info->node_id = 0;
        info->hostname[0] = '\0';
    } else {
        status = ctx->plugin->node_info(ctx->pmix, world_rank, &info->same_node, &info->node_id,
                                        info->hostname, sizeof(info->hostname));
    }
    return status;
}

static cohort_status_t cohort_peer_info_held(const cohort_context_t *ctx, int world_rank,
                                             cohort_peer_info_t *info)
{
    const cohort_peer_t *peer;
    cohort_node_info_t node;

    peer = cohort_map_get(&ctx->peers, (uint64_t)world_rank + 1);
    if (info == NULL || world_rank < 0 || world_rank >= ctx->size || peer == NULL ||
        peer->ep == NULL) {
        cohort_error(ctx, "cohort_peer_info: no endpoint to rank %d", world_rank);
        return COHORT_ERR_INVALID_ARG;
    }
    info->world_rank = world_rank;
    info->same_node = cohort_node_info_held(ctx, world_rank, &node) == COHORT_OK && node.same_node;
    info->wire_us = peer->wire_us;
    info->pmix_lookups = peer->lookups;
    info->lookup_retry_us = peer->retry_us;
    info->lookup_server_us = peer->server_us;
    info->lookup_poll_us = peer->poll_us;
    info->lookup_tries = peer->tries;
    info->card_us = peer->card_us;
    info->ep_create_us = peer->ep_us;
    info->first_send_us = peer->first_send_us;
    cohort_endpoint_transports(peer->ep, info->transports, sizeof(info->transports));
    return COHORT_OK;
}

static cohort_status_t cohort_stats_held(const cohort_context_t *ctx, cohort_stats_t *stats)
{
    if (stats == NULL) {
        cohort_error(ctx, "cohort_stats: stats is NULL");
        return COHORT_ERR_INVALID_ARG;
    }
    stats->groups_created = ctx->stat_groups;
    stats->pmix_lookups = ctx->stat_lookups;
    stats->endpoints = (uint64_t)cohort_wired_peers_held(ctx, NULL, 0);
    stats->messages_sent = ctx->stat_msgs;
    stats->messages_dropped = ctx->orphans_dropped;
    stats->messages_rejected = ctx->stat_rejected;
    stats->peers_failed = ctx->stat_failed;
    stats->single_copies = ctx->stat_cma;
    stats->single_copy_bytes = ctx->stat_cma_bytes;
    stats->cuda_ipc_opens = ctx->mem.stat_ipc_opens;
    stats->cuda_ipc_reuses = ctx->mem.stat_ipc_reuses;
    stats->cuda_staged_calls = ctx->stat_stage_calls;
    stats->cuda_staged_xfers = ctx->stat_stage_xfers;
    stats->cuda_ipc_calls = ctx->stat_ipc_calls;
    stats->cuda_ipc_votes = ctx->stat_ipc_votes;
    stats->pmix_plugin = ctx->singleton ? "singleton" : ctx->plugin->name;
    stats->progress = cohort_progress_mode_name(ctx->cfg.progress);
    return COHORT_OK;
}

/* The public queries: each takes the context for its read (its failure value when that is
 * refused), and gives it back with what it read. */
static cohort_context_t *cohort_peer_query(const cohort_context_t *ctx, const char *what)
{
    return cohort_context_enter((cohort_context_t *)ctx, what) == COHORT_OK
               ? (cohort_context_t *)ctx
               : NULL;
}

static int cohort_peer_answer(cohort_context_t *held, int answer)
{
    cohort_guard_leave(held);
    return answer;
}

int cohort_wired_peers(const cohort_context_t *ctx, int *world_ranks, int max)
{
    cohort_context_t *held = cohort_peer_query(ctx, "cohort_wired_peers: ctx");

    return held == NULL ? 0
                        : cohort_peer_answer(held, cohort_wired_peers_held(held, world_ranks, max));
}

int cohort_failed_ranks(const cohort_context_t *ctx, int *world_ranks, int max)
{
    cohort_context_t *held = cohort_peer_query(ctx, "cohort_failed_ranks: ctx");

    return held == NULL
               ? 0
               : cohort_peer_answer(held, cohort_failed_ranks_held(held, world_ranks, max));
}

cohort_status_t cohort_node_info(const cohort_context_t *ctx, int world_rank,
                                 cohort_node_info_t *info)
{
    cohort_context_t *held = cohort_peer_query(ctx, "cohort_node_info: ctx");

    return held == NULL ? COHORT_ERR_INVALID_ARG
                        : (cohort_status_t)cohort_peer_answer(
                              held, cohort_node_info_held(held, world_rank, info));
}

cohort_status_t cohort_peer_info(const cohort_context_t *ctx, int world_rank,
                                 cohort_peer_info_t *info)
{
    cohort_context_t *held = cohort_peer_query(ctx, "cohort_peer_info: ctx");

    return held == NULL ? COHORT_ERR_INVALID_ARG
                        : (cohort_status_t)cohort_peer_answer(
                              held, cohort_peer_info_held(held, world_rank, info));
}

cohort_status_t cohort_stats(const cohort_context_t *ctx, cohort_stats_t *stats)
{
    cohort_context_t *held = cohort_peer_query(ctx, "cohort_stats: ctx");

    return held == NULL ? COHORT_ERR_INVALID_ARG
                        : (cohort_status_t)cohort_peer_answer(held, cohort_stats_held(held, stats));
}
