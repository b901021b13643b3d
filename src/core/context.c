/* The engine part of a context: configuration, the exchange plugin, the UCX worker. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/am.h"
#include "proto/proto.h"
#include "core/comm.h"
#include "core/context.h"
#include "core/endpoint.h"
#include "core/guard.h"
#include "core/log.h"
#include "core/notify.h"
#include "core/plugin.h"
#include "core/progress.h"
#include "core/request.h"
#include "core/time.h"

extern char **environ;

/* A lookup must be bounded even when the user set no COHORT_TIMEOUT. */
#define COHORT_DEFAULT_PMIX_TIMEOUT_S 300.0

/* The live contexts of this process. A context handle cannot check itself once freed, so this
 * small set is the one thing the process shares between contexts; it says nothing about how
 * they work, and a mutex keeps it safe for contexts on different threads. A context's own
 * block is never given back (cohort_context_free): its address is never a new context's, so a
 * finalized handle is always recognised, and the fork and thread checks can still read it. */
static pthread_mutex_t cohort_live_lock = PTHREAD_MUTEX_INITIALIZER;
static cohort_map_t cohort_live_contexts;
static int cohort_contexts_made;
static cohort_list_t cohort_retired = {&cohort_retired, &cohort_retired};

cohort_status_t cohort_context_check(const cohort_context_t *ctx, const char *what)
{
    int live;

    if (ctx == NULL) {
        cohort_error(NULL, "%s is NULL", what);
        return COHORT_ERR_INVALID_ARG;
    }
    pthread_mutex_lock(&cohort_live_lock);
    live = cohort_map_get(&cohort_live_contexts, (uint64_t)(uintptr_t)ctx) == ctx;
    pthread_mutex_unlock(&cohort_live_lock);
    if (!live) {
        cohort_error(NULL, "%s %p is not a live cohort context (finalized, or never made)", what,
                     (const void *)ctx);
        return COHORT_ERR_INVALID_ARG;
    }
    return cohort_guard_check(ctx, what);
}

cohort_status_t cohort_context_enter(cohort_context_t *ctx, const char *what)
{
    cohort_status_t status = cohort_context_check(ctx, what);

    return status != COHORT_OK ? status : cohort_guard_enter(ctx, what);
}

int cohort_fault(cohort_context_t *ctx, cohort_fault_point_t point)
{
    if (ctx->cfg.fault_point != (int)point ||
        (ctx->cfg.fault_rank >= 0 && ctx->cfg.fault_rank != ctx->rank)) {
        return 0;
    }
    if (++ctx->fault_count != ctx->cfg.fault_nth) {
        return 0;
    }
    cohort_warn(ctx, "COHORT_FAULT: failing pass %d through this point on purpose",
                ctx->fault_count);
    return 1;
}

double cohort_context_bound(const cohort_context_t *ctx, double fallback_s)
{
    return ctx->cfg.timeout_s > 0 ? ctx->cfg.timeout_s : fallback_s;
}

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
    case UCS_ERR_SHMEM_SEGMENT: /* a send into the segment of a peer that died after publishing */
    case UCS_ERR_IO_ERROR:
        return COHORT_ERR_PEER_FAILED;
    default:
        return COHORT_ERR_UCX;
    }
}

static void cohort_context_plugin_log(void *arg, int level, const char *fmt, va_list ap)
{
    cohort_vlog(cohort_ctx_log(arg), level, fmt, ap);
}

/* Whether UCX_TLS lets UCX load a transport with one of these names (unset, or "^..." which
 * only takes some away, lets it load all). */
static int cohort_ucx_tls_may_use(const char *const *names, size_t n)
{
    const char *tls = getenv("UCX_TLS");
    int uses = tls == NULL || tls[0] == '^';

    for (size_t i = 0; !uses && i < n; i++) {
        uses = strstr(tls, names[i]) != NULL;
    }
    return uses;
}

/* One setting on cohort's own UCX configuration, never the process environment; @a otherwise
 * says what the user gets when UCX refuses it. */
static void cohort_ucx_set(cohort_context_t *ctx, ucp_config_t *config, const char *key,
                           const char *value, const char *otherwise)
{
    ucs_status_t ucs = ucp_config_modify(config, key, value);

    if (ucs != UCS_OK) {
        cohort_warn(ctx, "cannot set UCX's %s=%s (%s): %s", key, value, ucs_status_string(ucs),
                    otherwise);
    }
}

/* Shared-memory transports drop out of PEER error-handling mode unless told they may stay:
 * measured here, that costs 3-16x (tcp/lo instead of sysv). UCX 1.13 takes the setting for
 * both (posix and sysv share the "MM_" sub-table) through ucp_config_modify as MM_ERROR_HANDLING
 * (the POSIX_/SYSV_ spellings are environment-only there). A user's own UCX_*_ERROR_HANDLING
 * wins. */
static void cohort_context_ucx_shm(cohort_context_t *ctx, ucp_config_t *config)
{
    static const char *const shm[] = {"all", "sm", "shm", "mm", "posix", "sysv"};

    if (getenv("UCX_POSIX_ERROR_HANDLING") != NULL || getenv("UCX_SYSV_ERROR_HANDLING") != NULL ||
        getenv("UCX_MM_ERROR_HANDLING") != NULL) {
        return;
    }
    if (!cohort_ucx_tls_may_use(shm, sizeof(shm) / sizeof(shm[0]))) {
        return; /* UCX would warn about a setting for transports it was told not to load */
    }
    cohort_ucx_set(ctx, config, "MM_ERROR_HANDLING", "y", "peers on this node may use tcp");
}

/* UCX's tcp transport connects with a blocking connect() by default: wiring a peer behind a
 * cut link then stopped this rank for the kernel's SYN retries (about 2 minutes), every group
 * it is in with it (measured in tests/launch/linkcut.sh). The engine never blocks, so the
 * connect does not either. A user's own UCX_TCP_CONN_NB wins. */
static void cohort_context_ucx_tcp(cohort_context_t *ctx, ucp_config_t *config)
{
    static const char *const tcp[] = {"all", "tcp"};

    if (getenv("UCX_TCP_CONN_NB") != NULL || !cohort_ucx_tls_may_use(tcp, 2)) {
        return;
    }
    /* the tcp iface table holds it at top level, without the TCP_ its environment name has */
    cohort_ucx_set(ctx, config, "CONN_NB", "y",
                   "wiring a peer that does not answer may stop this rank for minutes");
}

/* Keepalive is what turns a dead peer into an endpoint error; UCX's 20 s default made
 * survivors wait 20-40 s (measured). A user's own UCX_KEEPALIVE_INTERVAL wins. */
static void cohort_context_ucx_keepalive(cohort_context_t *ctx, ucp_config_t *config)
{
    char value[32];

    if (ctx->cfg.keepalive_s <= 0 || getenv("UCX_KEEPALIVE_INTERVAL") != NULL) {
        return;
    }
    snprintf(value, sizeof(value), "%.6fs", ctx->cfg.keepalive_s);
    cohort_ucx_set(ctx, config, "KEEPALIVE_INTERVAL", value,
                   "a dead peer may take 20 s or more to show");
}

static cohort_status_t cohort_context_ucx_init(cohort_context_t *ctx)
{
    ucp_params_t params;
    ucp_worker_params_t wparams;
    ucp_config_t *config;
    ucs_status_t ucs;

    ucs = ucp_config_read(NULL, NULL, &config);
    if (ucs != UCS_OK) {
        cohort_error(ctx, "ucp_config_read failed: %s", ucs_status_string(ucs));
        return cohort_ucs_status(ucs);
    }
    cohort_context_ucx_shm(ctx, config);
    cohort_context_ucx_tcp(ctx, config);
    cohort_context_ucx_keepalive(ctx, config);

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
        cohort_error(ctx, "ucp_init failed: %s", ucs_status_string(ucs));
        return cohort_ucs_status(ucs);
    }

    /* Debian's UCX 1.13 has no CUDA transport: device data is then staged through host memory
     * by the layers above, which read this. */
    {
        ucp_context_attr_t attr = {.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES};
        if (ucp_context_query(ctx->ucp, &attr) == UCS_OK) {
            ctx->ucx_mem_cuda = (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
        }
    }

    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    ucs = ucp_worker_create(ctx->ucp, &wparams, &ctx->worker);
    if (ucs != UCS_OK) {
        cohort_error(ctx, "ucp_worker_create failed: %s", ucs_status_string(ucs));
        goto err_cleanup;
    }
    ucs = ucp_worker_get_address(ctx->worker, &ctx->address, &ctx->address_len);
    if (ucs != UCS_OK) {
        cohort_error(ctx, "ucp_worker_get_address failed: %s", ucs_status_string(ucs));
        goto err_destroy_worker;
    }
    ctx->event_fd = -1;
    if (ctx->cfg.progress == COHORT_PROGRESS_BLOCK) {
        ucs = ucp_worker_get_efd(ctx->worker, &ctx->event_fd);
        if (ucs != UCS_OK) {
            cohort_error(ctx, "COHORT_PROGRESS=block: ucp_worker_get_efd failed: %s",
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

static void cohort_context_free(cohort_context_t *ctx)
{
    if (ctx->coll_free != NULL) {
        ctx->coll_free(ctx->coll);
    }
    cohort_map_cleanup(&ctx->peers);
    cohort_map_cleanup(&ctx->comms);
    cohort_map_cleanup(&ctx->orphans);
    cohort_poison_cleanup(&ctx->poisoned);
    ctx->magic = 0;
    /* Kept for the life of the process (see cohort_live_contexts): only the block itself, a few
     * KiB, everything it pointed to is gone. */
    pthread_mutex_lock(&cohort_live_lock);
    cohort_list_push(&cohort_retired, &ctx->retired_link);
    pthread_mutex_unlock(&cohort_live_lock);
}

/* A fork while another thread holds the lock would leave the child's copy locked for ever. */
static void cohort_live_prefork(void)
{
    pthread_mutex_lock(&cohort_live_lock);
}

static void cohort_live_postfork(void)
{
    pthread_mutex_unlock(&cohort_live_lock);
}

static void cohort_live_setup(void)
{
    (void)pthread_atfork(cohort_live_prefork, cohort_live_postfork, cohort_live_postfork);
}

static int cohort_context_register(cohort_context_t *ctx)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    cohort_status_t status;

    pthread_once(&once, cohort_live_setup);
    pthread_mutex_lock(&cohort_live_lock);
    status = cohort_map_put(&cohort_live_contexts, (uint64_t)(uintptr_t)ctx, ctx);
    pthread_mutex_unlock(&cohort_live_lock);
    return status;
}

static void cohort_context_unregister(cohort_context_t *ctx)
{
    pthread_mutex_lock(&cohort_live_lock);
    cohort_map_del(&cohort_live_contexts, (uint64_t)(uintptr_t)ctx);
    if (cohort_live_contexts.count == 0) {
        cohort_map_cleanup(&cohort_live_contexts);
    }
    pthread_mutex_unlock(&cohort_live_lock);
}

cohort_status_t cohort_context_create(cohort_context_t **ctx_p,
                                      cohort_context_configure_t configure)
{
    cohort_context_t *ctx;
    cohort_pmix_opts_t opts;
    cohort_pmix_job_t job;
    cohort_status_t status;
    char err[512], warn[512];

    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    ctx->magic = COHORT_CTX_MAGIC;
    cohort_guard_init(ctx);
    ctx->log.level = COHORT_LOG_WARN;
    ctx->log.rank = -1;
    cohort_list_init(&ctx->peer_list);
    cohort_list_init(&ctx->looking_up);
    cohort_list_init(&ctx->comm_list);
    cohort_list_init(&ctx->preparing);
    cohort_list_init(&ctx->ready);
    cohort_list_init(&ctx->polling);
    cohort_list_init(&ctx->copying);
    cohort_list_init(&ctx->notices);
    cohort_list_init(&ctx->cma_acks);
    cohort_list_init(&ctx->cma_acks_sent);
    cohort_list_init(&ctx->cma_resend);
    cohort_map_init(&ctx->cma_sends);
    cohort_map_init(&ctx->cma_recvs);
    ctx->cma_next = 1;
    ctx->cma_rnext = 1;
    cohort_list_init(&ctx->to_close);
    cohort_list_init(&ctx->resets);
    cohort_list_init(&ctx->ctl_inflight);
    cohort_list_init(&ctx->ctl_resend);
    cohort_list_init(&ctx->requests);
    cohort_list_init(&ctx->req_free);
    cohort_list_init(&ctx->group_list);
    cohort_list_init(&ctx->group_pool);
    cohort_map_init(&ctx->group_instances);
    cohort_list_init(&ctx->layouts);
    cohort_list_init(&ctx->layout_pool);
    cohort_map_init(&ctx->peers);
    cohort_map_init(&ctx->comms);
    cohort_map_init(&ctx->orphans);
    cohort_poison_init(&ctx->poisoned);

    status = cohort_config_parse(&ctx->cfg, environ, err, sizeof(err), warn, sizeof(warn));
    if (status != COHORT_OK) {
        cohort_error(ctx, "cohort_init: %s", err);
        goto err_free;
    }
    ctx->log.level = ctx->cfg.log_level;
    if (warn[0] != '\0') {
        cohort_warn(ctx, "ignoring unknown settings: %s", warn);
    }
    if (configure != NULL && (status = configure(ctx, err, sizeof(err))) != COHORT_OK) {
        cohort_error(ctx, "cohort_init: %s", err);
        goto err_free;
    }

    status = cohort_plugin_load(ctx);
    if (status != COHORT_OK) {
        goto err_free;
    }
    pthread_mutex_lock(&cohort_live_lock);
    ctx->instance = cohort_contexts_made++;
    pthread_mutex_unlock(&cohort_live_lock);
    opts.timeout_s = cohort_context_bound(ctx, COHORT_DEFAULT_PMIX_TIMEOUT_S);
    opts.log = cohort_context_plugin_log;
    opts.log_arg = ctx;
    opts.instance = ctx->instance;
    status = ctx->plugin->init(&opts, &ctx->pmix, &job);
    if (status != COHORT_OK) {
        goto err_unload;
    }
    ctx->rank = job.rank;
    ctx->size = job.size;
    ctx->singleton = job.singleton;
    ctx->log.rank = ctx->rank;

    /* The layers register their message kinds and peer observers; a peer's failure reaches
     * them in this order (sends waiting for it, control messages, receives, single copy,
     * communicators). */
    cohort_xfer_init(ctx);
    cohort_notify_init(ctx);
    cohort_am_init(ctx);
    cohort_proto_init(ctx);
    cohort_comm_init(ctx);
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
    status = cohort_context_register(ctx);
    if (status != COHORT_OK) {
        goto err_ucx;
    }
    *ctx_p = ctx;
    return COHORT_OK;

err_ucx:
    cohort_context_ucx_cleanup(ctx);
err_plugin:
    /* The error that brought us here is the one to report. */
    (void)ctx->plugin->finalize(ctx->pmix);
err_unload:
    cohort_plugin_unload(ctx);
err_free:
    cohort_context_free(ctx);
    return status;
}

cohort_status_t cohort_context_destroy(cohort_context_t *ctx)
{
    cohort_list_t *pos, *tmp;
    cohort_status_t status;

    ctx->finalizing = 1;
    cohort_context_unregister(ctx);
    if (ctx->stat_rejected > 0) {
        cohort_warn(ctx,
                    "finalize: %llu messages were rejected (malformed, or from a rank that "
                    "is not a member of the group they name)",
                    (unsigned long long)ctx->stat_rejected);
    }
    if (ctx->orphans_dropped > 0) {
        cohort_info(ctx,
                    "finalize: %llu messages were dropped (for groups not created here, "
                    "freed or revoked)",
                    (unsigned long long)ctx->orphans_dropped);
    }
    cohort_list_for_each(pos, tmp, &ctx->comm_list)
    {
        cohort_comm_destroy(cohort_container_of(pos, cohort_comm_t, link));
    }
    /* Requests the user still holds are cancelled and detached; UCX lets go of them below. */
    cohort_request_finalize_all(ctx);
    cohort_am_orphans_cleanup(ctx);
    cohort_endpoint_close_all(ctx);
    /* The worker goes first: once it is destroyed UCX can no longer complete into a request. */
    cohort_context_ucx_cleanup(ctx);
    cohort_notify_cleanup(ctx);
    cohort_proto_cleanup(ctx);
    cohort_request_pool_cleanup(ctx);
    cohort_scratch_cleanup(ctx);
    cohort_gpu_cleanup(ctx);
    cohort_peer_table_cleanup(ctx);
    status = ctx->plugin->finalize(ctx->pmix);
    cohort_plugin_unload(ctx);
    cohort_context_free(ctx);
    return status;
}

int cohort_world_rank(const cohort_context_t *ctx)
{
    return cohort_context_check(ctx, "cohort_world_rank: ctx") == COHORT_OK ? ctx->rank : -1;
}

int cohort_world_size(const cohort_context_t *ctx)
{
    return cohort_context_check(ctx, "cohort_world_size: ctx") == COHORT_OK ? ctx->size : -1;
}

