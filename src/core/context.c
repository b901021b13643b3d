/* A context's life: made (configuration, the exchange plugin, UCX through ucx.c, the engine's
 * tables), checked on every call, and destroyed; the set of live contexts of the process. */
#include <pthread.h>
#include <stddef.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/am.h"
#include "core/address_card.h"
#include "core/comm.h"
#include "core/context.h"
#include "core/endpoint.h"
#include "core/exchange_user.h"
#include "core/guard.h"
#include "core/log.h"
#include "core/notify.h"
#include "core/plugin.h"
#include "core/progress.h"
#include "core/request.h"
#include "base/time.h"
#include "core/ucx.h"

extern char **environ;

/* Memory finds its part of a context at the context's own address (mem/room.h). */
_Static_assert(offsetof(struct cohort_context, mem) == 0,
               "the memory room must be the context's first member");

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

static void cohort_context_plugin_log(void *arg, int level, const char *fmt, va_list ap)
{
    cohort_vlog(cohort_ctx_log(arg), level, fmt, ap);
}

static void cohort_context_free(cohort_context_t *ctx)
{
    if (ctx->coll_free != NULL) {
        ctx->coll_free(ctx->coll);
    }
    cohort_arena_close(ctx->arena);
    ctx->arena = NULL;
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

/* The verb @a proto lacks, or NULL when it has them all (the engine calls them unchecked). */
static const char *cohort_proto_ops_missing(const cohort_proto_ops_t *proto)
{
    const struct {
        const char *verb;
        int present;
    } verbs[] = {
        {"init", proto->init != NULL},         {"cleanup", proto->cleanup != NULL},
        {"stage", proto->stage != NULL},       {"start", proto->start != NULL},
        {"progress", proto->progress != NULL}, {"sent", proto->sent != NULL},
        {"cancel", proto->cancel != NULL},     {"finish", proto->finish != NULL},
        {"payload", proto->payload != NULL},   {"drain", proto->drain != NULL},
        {"unstage", proto->unstage != NULL},
    };

    for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
        if (!verbs[i].present) {
            return verbs[i].verb;
        }
    }
    return NULL;
}

cohort_status_t cohort_context_create(cohort_context_t **ctx_p,
                                      cohort_context_configure_t configure,
                                      const cohort_proto_ops_t *proto, const cohort_exchange_t *ex)
{
    cohort_context_t *ctx;
    cohort_pmix_opts_t opts;
    cohort_pmix_job_t job;
    cohort_status_t status;
    char err[512], warn[512];
    const char *missing;

    /* The composer (src/api) hands the engine its protocol layer; without one no transfer
     * could move, so this is refused before anything is made, not found at the first send. */
    if (proto == NULL) {
        cohort_error(NULL, "cohort_init: the context was given no protocol layer (the api layer "
                           "composes one in; nothing was made)");
        return COHORT_ERR_INVALID_ARG;
    }
    if ((missing = cohort_proto_ops_missing(proto)) != NULL) {
        cohort_error(NULL,
                     "cohort_init: protocol layer '%s' lacks its '%s' verb (nothing was made)",
                     proto->name != NULL ? proto->name : "(unnamed)", missing);
        return COHORT_ERR_INVALID_ARG;
    }
    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    ctx->magic = COHORT_CTX_MAGIC;
    ctx->proto_ops = proto;
    cohort_guard_init(ctx);
    ctx->log.level = COHORT_LOG_WARN;
    ctx->log.rank = -1;
    ctx->mem.log = &ctx->log;
    cohort_list_init(&ctx->peer_list);
    cohort_list_init(&ctx->looking_up);
    cohort_list_init(&ctx->comm_list);
    cohort_list_init(&ctx->preparing);
    cohort_list_init(&ctx->ready);
    cohort_list_init(&ctx->polling);
    cohort_list_init(&ctx->copying);
    cohort_list_init(&ctx->notices);
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
    /* What memory reads of the settings (it cannot read ctx->cfg): copied, as nothing changes
     * them after this; the path is the setting's own string, which lives as long. */
    ctx->mem.plugin_path = ctx->cfg.plugin_path;
    ctx->mem.cuda_off = ctx->cfg.cuda_off;
    ctx->mem.cuda_ipc_cache = ctx->cfg.cuda_ipc_cache;
    if (warn[0] != '\0') {
        cohort_warn(ctx, "ignoring unknown settings: %s", warn);
    }
    if (configure != NULL && (status = configure(ctx, err, sizeof(err))) != COHORT_OK) {
        cohort_error(ctx, "cohort_init: %s", err);
        goto err_free;
    }

    /* The caller's store is built in; PMIx's exchanges are modules (COHORT_PMIX_PLUGIN). */
    if (ex != NULL) {
        ctx->plugin = &cohort_exchange_user;
    } else if ((status = cohort_plugin_load(ctx)) != COHORT_OK) {
        goto err_free;
    }
    pthread_mutex_lock(&cohort_live_lock);
    ctx->instance = cohort_contexts_made++;
    pthread_mutex_unlock(&cohort_live_lock);
    opts.timeout_s = cohort_context_bound(ctx, COHORT_DEFAULT_PMIX_TIMEOUT_S);
    opts.log = cohort_context_plugin_log;
    opts.log_arg = ctx;
    opts.instance = ctx->instance;
    status = ex != NULL ? cohort_exchange_user_init(ex, &opts, &ctx->pmix, &job)
                        : ctx->plugin->init(&opts, &ctx->pmix, &job);
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
    status = ctx->proto_ops->init(ctx);
    if (status != COHORT_OK) {
        goto err_plugin;
    }
    cohort_comm_init(ctx);
    status = cohort_ucx_open(ctx);
    if (status != COHORT_OK) {
        goto err_protos;
    }
    /* Before the address is published: nothing reaches a worker without its handler. */
    status = cohort_am_register(ctx);
    if (status != COHORT_OK) {
        goto err_ucx;
    }
    if (!ctx->singleton) {
        cohort_arena_ref_t arena = {.fd = -1};
        size_t card_len = 0;
        void *card;

        if (ctx->cfg.shm_arena) {
            char why[160];
            cohort_arena_open(&ctx->arena, &arena, why, sizeof(why));
            if (ctx->arena == NULL) {
                cohort_info(ctx, "no shared arena (groups name their segments in /dev/shm): %s",
                            why);
            }
        }
        card =
            cohort_card_make((int32_t)getpid(), &arena, ctx->address, ctx->address_len, &card_len);
        status =
            card == NULL ? COHORT_ERR_NO_MEMORY : ctx->plugin->publish(ctx->pmix, card, card_len);
        free(card);
        if (status != COHORT_OK) {
            goto err_ucx;
        }
    }
    status = cohort_context_register(ctx);
    if (status != COHORT_OK) {
        goto err_ucx;
    }
    /* Last: UCX and the exchange plugin have loaded what they load. */
    cohort_gpu_scan_loaded(ctx);
    *ctx_p = ctx;
    return COHORT_OK;

err_ucx:
    cohort_ucx_close(ctx, 0);
err_protos:
    ctx->proto_ops->cleanup(ctx);
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
    int stuck;

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
    stuck = cohort_request_fetches(ctx, NULL, NULL);
    if (stuck > 0) {
        /* A fetch from a sender that died under it can stay on the endpoint UCX made for that
         * sender, which cohort does not hold, and UCX cannot cancel it: destroying the worker
         * meets it there and UCX aborts (ucp_ep.c:437, tests/mpi/peer_death's rndv case with
         * COHORT_CMA=off). Never progressed again, the worker writes nothing more anywhere. */
        cohort_warn(ctx,
                    "finalize: %d rendezvous fetches never ended (a sender died under them, "
                    "and UCX cannot cancel a fetch): its UCX worker is left as it is, never "
                    "progressed again, so nothing is written into their buffers",
                    stuck);
    }
    /* The worker goes first: once it is destroyed UCX can no longer complete into a request. */
    cohort_ucx_close(ctx, stuck > 0);
    cohort_notify_cleanup(ctx);
    ctx->proto_ops->cleanup(ctx);
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

