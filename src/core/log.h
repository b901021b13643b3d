/* Logging, per context: the level comes from that context's COHORT_LOG, the prefix from its
 * rank, so two contexts in one process log independently. */
#ifndef COHORT_LOG_H
#define COHORT_LOG_H

#include <stdarg.h>
#include "cohort.h"

typedef enum {
    COHORT_LOG_ERROR = 0,
    COHORT_LOG_WARN = 1,
    COHORT_LOG_INFO = 2,
    COHORT_LOG_DEBUG = 3
} cohort_log_level_t;

typedef struct {
    int level; /* cohort_log_level_t; messages above it are dropped */
    int rank;  /* -1 until known */
} cohort_log_cfg_t;

/* A context's log settings; defaults (warn, no rank) for NULL, so bad-handle errors, which
 * have no context to speak of, still print. */
const cohort_log_cfg_t *cohort_ctx_log(const cohort_context_t *ctx);
int cohort_log_enabled(const cohort_context_t *ctx, int level);

void cohort_log(const cohort_log_cfg_t *lg, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void cohort_vlog(const cohort_log_cfg_t *lg, int level, const char *fmt, va_list ap);

#define cohort_error(ctx, ...) cohort_log(cohort_ctx_log(ctx), COHORT_LOG_ERROR, __VA_ARGS__)
#define cohort_warn(ctx, ...)  cohort_log(cohort_ctx_log(ctx), COHORT_LOG_WARN, __VA_ARGS__)
#define cohort_info(ctx, ...)  cohort_log(cohort_ctx_log(ctx), COHORT_LOG_INFO, __VA_ARGS__)
#define cohort_debug(ctx, ...)                                                                     \
    do {                                                                                           \
        if (cohort_log_enabled((ctx), COHORT_LOG_DEBUG))                                           \
            cohort_log(cohort_ctx_log(ctx), COHORT_LOG_DEBUG, __VA_ARGS__);                        \
    } while (0)

#endif
