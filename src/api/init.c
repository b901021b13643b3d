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
    char err[512];

    if (ctx_p == NULL) {
        cohort_error(NULL, "cohort_init: ctx is NULL");
        return COHORT_ERR_INVALID_ARG;
    }
    status = cohort_context_create(&ctx);
    if (status != COHORT_OK) {
        return status;
    }
    status = cohort_coll_config(ctx, err, sizeof(err));
    if (status != COHORT_OK) {
        cohort_error(ctx, "cohort_init: %s", err);
        goto err_destroy;
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
    cohort_context_destroy(ctx);
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
    cohort_context_destroy(ctx);
    return COHORT_OK;
}
