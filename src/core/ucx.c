/* The UCX side of a context: cohort's own UCX configuration (shared-memory error handling,
 * nonblocking tcp connects, keepalive; a user's UCX_* setting always wins), the UCX context
 * and worker, the worker's address that the exchange plugin publishes, and how UCX's statuses
 * read as cohort's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/context.h"
#include "core/log.h"
#include "core/ucx.h"

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
static void cohort_ucx_shm(cohort_context_t *ctx, ucp_config_t *config)
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
static void cohort_ucx_tcp(cohort_context_t *ctx, ucp_config_t *config)
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
static void cohort_ucx_keepalive(cohort_context_t *ctx, ucp_config_t *config)
{
    char value[32];

    if (ctx->cfg.keepalive_s <= 0 || getenv("UCX_KEEPALIVE_INTERVAL") != NULL) {
        return;
    }
    snprintf(value, sizeof(value), "%.6fs", ctx->cfg.keepalive_s);
    cohort_ucx_set(ctx, config, "KEEPALIVE_INTERVAL", value,
                   "a dead peer may take 20 s or more to show");
}

cohort_status_t cohort_ucx_open(cohort_context_t *ctx)
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
    cohort_ucx_shm(ctx, config);
    cohort_ucx_tcp(ctx, config);
    cohort_ucx_keepalive(ctx, config);

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
            ctx->mem.ucx_mem_cuda = (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
        }
    }

    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    /* Threads of the program may each call cohort (on their own groups), but every UCX call on
     * this worker and its endpoints, and every callback UCX runs (from ucp_worker_progress), is
     * made with the context lock held (core/guard.h): one thread at a time, not always the
     * same one. That is what SERIALIZED promises UCX; SINGLE would let it assume the thread
     * that made the worker is the only caller, and MULTI would add UCX's own lock to every call
     * for nothing. */
    wparams.thread_mode = UCS_THREAD_MODE_SERIALIZED;
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

void cohort_ucx_close(cohort_context_t *ctx, int keep_worker)
{
    if (ctx->address != NULL) {
        ucp_worker_release_address(ctx->worker, ctx->address);
    }
    if (keep_worker) {
        return; /* what UCX still holds stays with it */
    }
    if (ctx->worker != NULL) {
        ucp_worker_destroy(ctx->worker);
    }
    if (ctx->ucp != NULL) {
        ucp_cleanup(ctx->ucp);
    }
}
