/* cohort_init / cohort_finalize: the one place that composes the layers — the engine, the
 * protocol layer it moves bytes with, the collective layer's configuration, the world group,
 * layouts. */
#include "coll/coll.h"
#include "core/context.h"
#include "core/exchange_user.h"
#include "core/guard.h"
#include "core/log.h"
#include "core/progress.h"
#include "group/group.h"
#include "proto/proto.h"

void cohort_layout_free_all(cohort_context_t *ctx);

/* Both ways in: @a ex NULL is PMIx's (or a singleton's), else the caller's store. */
static cohort_status_t cohort_init_with(const cohort_exchange_t *ex, cohort_context_t **ctx_p,
                                        const char *what)
{
    cohort_context_t *ctx;
    cohort_status_t status;

    if (ctx_p == NULL) {
        cohort_error(NULL, "%s: ctx is NULL", what);
        return COHORT_ERR_INVALID_ARG;
    }
    /* The collective layer's settings are read before anything connects; the engine moves
     * bytes only through the protocol layer it is handed here (core/proto_ops.h). */
    status = cohort_context_create(&ctx, cohort_coll_config, &cohort_proto_layer, ex);
    if (status != COHORT_OK) {
        return status;
    }
    status = cohort_group_create_world(ctx, &ctx->world);
    if (status != COHORT_OK) {
        goto err_destroy;
    }
    cohort_info(ctx, "rank %d of %d, exchange plugin %s, progress %s", ctx->rank, ctx->size,
                ctx->singleton ? "none (singleton)" : ctx->plugin->name,
                cohort_progress_mode_name(ctx->cfg.progress));
    *ctx_p = ctx;
    return COHORT_OK;

err_destroy:
    cohort_group_free_all(ctx);
    (void)cohort_context_destroy(ctx);
    return status;
}

cohort_status_t cohort_init(cohort_context_t **ctx_p)
{
    return cohort_init_with(NULL, ctx_p, "cohort_init");
}

cohort_status_t cohort_init_exchange(const cohort_exchange_t *ex, cohort_context_t **ctx_p)
{
    if (cohort_exchange_user_check(ex) != COHORT_OK) {
        return COHORT_ERR_INVALID_ARG;
    }
    return cohort_init_with(ex, ctx_p, "cohort_init_exchange");
}

cohort_status_t cohort_finalize(cohort_context_t *ctx)
{
    cohort_status_t status;

    if (ctx == NULL) {
        return COHORT_OK;
    }
    /* In a fork child this refuses before anything of the parent's is touched. */
    if (cohort_context_enter(ctx, "cohort_finalize: ctx") != COHORT_OK) {
        return COHORT_ERR_INVALID_ARG;
    }
    /* A thread waiting in a blocking call on it holds its requests and groups: finalize would
     * free them under it. */
    if (cohort_guard_others(ctx) > 0) {
        cohort_error(ctx, "cohort_finalize: %d other thread(s) are inside calls on this context; "
                          "finalize once they returned",
                     cohort_guard_others(ctx));
        cohort_guard_leave(ctx);
        return COHORT_ERR_INVALID_ARG;
    }
    /* Freeing the groups below waits, letting the context go: a call another thread makes
     * meanwhile is refused instead of starting on a group about to be freed. */
    cohort_guard_close(ctx);
    cohort_layout_free_all(ctx);
    cohort_group_free_all(ctx);
    status = cohort_context_destroy(ctx);
    cohort_guard_leave(ctx); /* the context's block outlives it (core/context.c) */
    return status;
}

cohort_group_t *cohort_world(cohort_context_t *ctx)
{
    return cohort_context_check(ctx, "cohort_world: ctx") == COHORT_OK
               ? cohort_group_handle(ctx->world)
               : NULL;
}
