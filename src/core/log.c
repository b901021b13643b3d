/* A context's log settings (the line is written by base/log.c). */
#include "core/context.h"
#include "core/log.h"

const cohort_log_cfg_t *cohort_ctx_log(const cohort_context_t *ctx)
{
    return ctx != NULL ? &ctx->log : &cohort_log_defaults;
}

int cohort_log_enabled(const cohort_context_t *ctx, int level)
{
    return level <= cohort_ctx_log(ctx)->level;
}
