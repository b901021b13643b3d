/* cohort_init / cohort_finalize: the one place that composes the layers — the engine, the
 * collective layer's configuration, the world group, layouts. */
#include "coll/coll.h"
#include "core/context.h"
#include "core/log.h"
#include "core/progress.h"
#include "group/group.h"

void cohort_layout_free_all(cohort_context_t *ctx);

cohort_status_t cohort_init(cohort_context_t **ctx_p)
{
    cohort_context_t *ctx;
    cohort_status_t status;

    if (ctx_p == NULL) {
        cohort_error(NULL, "cohort_init: ctx is NULL");
        return COHORT_ERR_INVALID_ARG;
    }
    /* The collective layer's settings are read before anything connects. */
    status = cohort_context_create(&ctx, cohort_coll_config);
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

cohort_status_t cohort_finalize(cohort_context_t *ctx)
{
    if (ctx == NULL) {
        return COHORT_OK;
    }
    if (cohort_context_check(ctx, "cohort_finalize: ctx") != COHORT_OK) {
        return COHORT_ERR_INVALID_ARG;
    }
    cohort_layout_free_all(ctx);
    cohort_group_free_all(ctx);
    return cohort_context_destroy(ctx);
}
