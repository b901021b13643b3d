/* Logging, per context: the level comes from that context's COHORT_LOG, the prefix from its
 * rank, so two contexts in one process log independently. The line itself is written by
 * base/log.h, which memory uses too (it has no context to ask, only the context's settings). */
#ifndef COHORT_CORE_LOG_H
#define COHORT_CORE_LOG_H

#include "cohort.h"
#include "base/log.h"

/* A context's log settings; the defaults (warn, no rank) for NULL, so bad-handle errors, which
 * have no context to speak of, still print. */
const cohort_log_cfg_t *cohort_ctx_log(const cohort_context_t *ctx);
int cohort_log_enabled(const cohort_context_t *ctx, int level);

#define cohort_error(ctx, ...) cohort_log(cohort_ctx_log(ctx), COHORT_LOG_ERROR, __VA_ARGS__)
#define cohort_warn(ctx, ...)  cohort_log(cohort_ctx_log(ctx), COHORT_LOG_WARN, __VA_ARGS__)
#define cohort_info(ctx, ...)  cohort_log(cohort_ctx_log(ctx), COHORT_LOG_INFO, __VA_ARGS__)
#define cohort_debug(ctx, ...)                                                                     \
    do {                                                                                           \
        if (cohort_log_enabled((ctx), COHORT_LOG_DEBUG))                                           \
            cohort_log(cohort_ctx_log(ctx), COHORT_LOG_DEBUG, __VA_ARGS__);                        \
    } while (0)

#endif
