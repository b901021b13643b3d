/* cohort_init / cohort_finalize: configuration, the exchange plugin, the UCX worker. */
#include <stdlib.h>
#include <string.h>
#include "coll/coll.h"
#include "core/am.h"
#include "core/context.h"
#include "core/endpoint.h"
#include "core/log.h"
#include "core/plugin.h"
#include "core/progress.h"
#include "core/time.h"
#include "group/group.h"

extern char **environ;

/* A lookup must be bounded even when the user set no COHORT_TIMEOUT. */
#define COHORT_DEFAULT_PMIX_TIMEOUT_S 300.0

void cohort_layout_free_all(cohort_context_t *ctx);

static void cohort_context_plugin_log(int level, const char *fmt, va_list ap)
{
    cohort_vlog(level, fmt, ap);
}

/* Shared-memory transports drop out of PEER error-handling mode unless told they may stay:
 * measured here, that costs 3-16x (tcp/lo instead of sysv + cma). These are transport
 * settings, which UCX 1.13 reads from the environment when it opens its interfaces:
 * ucp_config_modify() only stores them and warns "invalid configurations". So they go into
 * the environment, unless the user set them. */
static void cohort_context_ucx_defaults(void)
{
    static const char *const keep_shm[] = {"UCX_POSIX_ERROR_HANDLING", "UCX_SYSV_ERROR_HANDLING"};

    for (size_t i = 0; i < sizeof(keep_shm) / sizeof(keep_shm[0]); i++) {
        if (setenv(keep_shm[i], "y", 0) != 0) {
            cohort_warn("cannot set %s=y: shared memory may be unused", keep_shm[i]);
        }
    }
}

static cohort_status_t cohort_context_ucx_init(cohort_context_t *ctx)
{
    ucp_params_t params;
    ucp_worker_params_t wparams;
    ucp_config_t *config;
    ucs_status_t ucs;

    cohort_context_ucx_defaults();
    ucs = ucp_config_read(NULL, NULL, &config);
    if (ucs != UCS_OK) {
        cohort_error("ucp_config_read failed: %s", ucs_status_string(ucs));
        return cohort_ucs_status(ucs);
    }

    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                        UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
    params.features = UCP_FEATURE_AM;
    /* Wakeup support narrows the transports UCX may pick: ask for it only to block. */
    if (ctx->cfg.progress == COHORT_PROGRESS_BLOCK) {
        params.features |= UCP_FEATURE_WAKEUP;
    }
    params.mt_workers_shared = 0;
    /* A rank wires only the peers of its own groups, a handful: tell UCX so. */
    params.estimated_num_eps = 16;
    ucs = ucp_init(&params, config, &ctx->ucp);
    ucp_config_release(config);
    if (ucs != UCS_OK) {
        cohort_error("ucp_init failed: %s", ucs_status_string(ucs));
        return cohort_ucs_status(ucs);
    }

    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    ucs = ucp_worker_create(ctx->ucp, &wparams, &ctx->worker);
    if (ucs != UCS_OK) {
        cohort_error("ucp_worker_create failed: %s", ucs_status_string(ucs));
        goto err_cleanup;
    }
    ucs = ucp_worker_get_address(ctx->worker, &ctx->address, &ctx->address_len);
    if (ucs != UCS_OK) {
        cohort_error("ucp_worker_get_address failed: %s", ucs_status_string(ucs));
        goto err_destroy_worker;
    }
    ctx->event_fd = -1;
    if (ctx->cfg.progress == COHORT_PROGRESS_BLOCK) {
        ucs = ucp_worker_get_efd(ctx->worker, &ctx->event_fd);
        if (ucs != UCS_OK) {
            cohort_error("COHORT_PROGRESS=block: ucp_worker_get_efd failed: %s",
                         ucs_status_string(ucs));
            goto err_release_address;
        }
    }
    if (cohort_am_register(ctx) != COHORT_OK) {
        ucs = UCS_ERR_IO_ERROR;
        goto err_release_address;
    }
    return COHORT_OK;

err_release_address:
    ucp_worker_release_address(ctx->worker, ctx->address);
    ctx->address = NULL;
err_destroy_worker:
    ucp_worker_destroy(ctx->worker);
    ctx->worker = NULL;
err_cleanup:
    ucp_cleanup(ctx->ucp);
    ctx->ucp = NULL;
    return cohort_ucs_status(ucs);
}

static void cohort_context_ucx_cleanup(cohort_context_t *ctx)
{
    if (ctx->address != NULL) {
        ucp_worker_release_address(ctx->worker, ctx->address);
    }
    if (ctx->worker != NULL) {
        ucp_worker_destroy(ctx->worker);
    }
    if (ctx->ucp != NULL) {
        ucp_cleanup(ctx->ucp);
    }
}

static cohort_status_t cohort_context_world(cohort_context_t *ctx)
{
    int *ranks = malloc((size_t)ctx->size * sizeof(int));
    cohort_status_t status;

    if (ranks == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    for (int i = 0; i < ctx->size; i++) {
        ranks[i] = i;
    }
    status =
        cohort_group_create_owned(ctx, "world", ranks, ctx->size, COHORT_GROUP_WORLD, &ctx->world);
    free(ranks);
    return status;
}

cohort_status_t cohort_init(cohort_context_t **ctx_p)
{
    cohort_context_t *ctx;
    cohort_pmix_opts_t opts;
    cohort_pmix_job_t job;
    cohort_status_t status;
    char err[512], warn[512];

    if (ctx_p == NULL) {
        cohort_error("cohort_init: ctx is NULL");
        return COHORT_ERR_INVALID_ARG;
    }
    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    cohort_list_init(&ctx->group_list);
    cohort_list_init(&ctx->orphans);
    cohort_list_init(&ctx->active);
    cohort_list_init(&ctx->rndv_ready);
    cohort_list_init(&ctx->zombies);
    cohort_list_init(&ctx->layouts);
    cohort_map_init(&ctx->groups);
    cohort_map_init(&ctx->instances);

    status = cohort_config_parse(&ctx->cfg, environ, err, sizeof(err), warn, sizeof(warn));
    if (status == COHORT_OK) {
        status = cohort_coll_config_check(&ctx->cfg, err, sizeof(err));
    }
    if (status != COHORT_OK) {
        cohort_error("cohort_init: %s", err);
        goto err_free;
    }
    cohort_log_level = ctx->cfg.log_level;
    if (warn[0] != '\0') {
        cohort_warn("ignoring unknown settings: %s", warn);
    }

    status = cohort_plugin_load(ctx);
    if (status != COHORT_OK) {
        goto err_free;
    }
    opts.timeout_s = ctx->cfg.timeout_s > 0 ? ctx->cfg.timeout_s : COHORT_DEFAULT_PMIX_TIMEOUT_S;
    opts.log = cohort_context_plugin_log;
    status = ctx->plugin->init(&opts, &ctx->pmix, &job);
    if (status != COHORT_OK) {
        goto err_unload;
    }
    ctx->rank = job.rank;
    ctx->size = job.size;
    ctx->singleton = job.singleton;
    cohort_log_set_rank(ctx->rank);

    ctx->peers = calloc((size_t)ctx->size, sizeof(*ctx->peers));
    if (ctx->peers == NULL) {
        status = COHORT_ERR_NO_MEMORY;
        goto err_plugin;
    }
    status = cohort_context_ucx_init(ctx);
    if (status != COHORT_OK) {
        goto err_plugin;
    }
    if (!ctx->singleton) {
        status = ctx->plugin->publish(ctx->pmix, ctx->address, ctx->address_len);
        if (status != COHORT_OK) {
            goto err_ucx;
        }
    }
    status = cohort_context_world(ctx);
    if (status != COHORT_OK) {
        goto err_ucx;
    }
    cohort_info("rank %d of %d, exchange plugin %s, progress %s", ctx->rank, ctx->size,
                ctx->singleton ? "none (singleton)" : ctx->plugin->name,
                cohort_progress_mode_name(ctx->cfg.progress));
    *ctx_p = ctx;
    return COHORT_OK;

err_ucx:
    cohort_context_ucx_cleanup(ctx);
err_plugin:
    ctx->plugin->finalize(ctx->pmix);
err_unload:
    cohort_plugin_unload(ctx);
err_free:
    free(ctx->peers);
    cohort_map_cleanup(&ctx->groups);
    cohort_map_cleanup(&ctx->instances);
    free(ctx);
    return status;
}

/* Let sends handed to UCX by freed requests finish, within the configured bound. */
static void cohort_context_drain(cohort_context_t *ctx)
{
    double deadline = cohort_time_now() + (ctx->cfg.timeout_s > 0 ? ctx->cfg.timeout_s : 10.0);

    while (!cohort_list_empty(&ctx->zombies) && cohort_time_now() < deadline) {
        if (cohort_progress(ctx) == 0) {
            cohort_progress_idle(ctx, 1.0, 0.01);
        }
    }
    if (!cohort_list_empty(&ctx->zombies)) {
        cohort_warn("cohort_finalize: some sends did not complete; their peers may be gone");
    }
}

cohort_status_t cohort_finalize(cohort_context_t *ctx)
{
    cohort_list_t *pos, *tmp;

    if (ctx == NULL) {
        return COHORT_OK;
    }
    cohort_layout_free_all(ctx);
    cohort_list_for_each(pos, tmp, &ctx->group_list)
    {
        cohort_group_destroy(cohort_container_of(pos, cohort_group_t, link));
    }
    ctx->world = NULL;
    cohort_context_drain(ctx);
    cohort_endpoint_close_all(ctx);
    cohort_am_orphans_cleanup(ctx);
    cohort_scratch_cleanup(ctx);
    cohort_context_ucx_cleanup(ctx);
    ctx->plugin->finalize(ctx->pmix);
    cohort_plugin_unload(ctx);
    free(ctx->peers);
    cohort_map_cleanup(&ctx->groups);
    cohort_map_cleanup(&ctx->instances);
    free(ctx);
    return COHORT_OK;
}

int cohort_world_rank(const cohort_context_t *ctx)
{
    return ctx == NULL ? -1 : ctx->rank;
}

int cohort_world_size(const cohort_context_t *ctx)
{
    return ctx == NULL ? -1 : ctx->size;
}

cohort_group_t *cohort_world(cohort_context_t *ctx)
{
    return ctx == NULL ? NULL : ctx->world;
}

cohort_status_t cohort_stats(const cohort_context_t *ctx, cohort_stats_t *stats)
{
    if (ctx == NULL || stats == NULL) {
        cohort_error("cohort_stats: %s is NULL", ctx == NULL ? "ctx" : "stats");
        return COHORT_ERR_INVALID_ARG;
    }
    stats->groups_created = ctx->stat_groups;
    stats->pmix_lookups = ctx->stat_lookups;
    stats->endpoints = (uint64_t)cohort_wired_peers(ctx, NULL, 0);
    stats->messages_sent = ctx->stat_msgs;
    stats->pmix_plugin = ctx->singleton ? "singleton" : ctx->plugin->name;
    stats->progress = cohort_progress_mode_name(ctx->cfg.progress);
    return COHORT_OK;
}
