#include <stdio.h>
#include "core/context.h"
#include "core/log.h"

static const cohort_log_cfg_t cohort_log_defaults = {COHORT_LOG_WARN, -1};

const cohort_log_cfg_t *cohort_ctx_log(const cohort_context_t *ctx)
{
    return ctx != NULL ? &ctx->log : &cohort_log_defaults;
}

int cohort_log_enabled(const cohort_context_t *ctx, int level)
{
    return level <= cohort_ctx_log(ctx)->level;
}

void cohort_vlog(const cohort_log_cfg_t *lg, int level, const char *fmt, va_list ap)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    char line[1024];

    if (lg == NULL) {
        lg = &cohort_log_defaults;
    }
    if (level > lg->level) {
        return;
    }
    /* One write per line so that lines of different ranks do not interleave. */
    vsnprintf(line, sizeof(line), fmt, ap);
    if (lg->rank >= 0) {
        fprintf(stderr, "cohort[%d] %s: %s\n", lg->rank, names[level & 3], line);
    } else {
        fprintf(stderr, "cohort %s: %s\n", names[level & 3], line);
    }
}

void cohort_log(const cohort_log_cfg_t *lg, int level, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    cohort_vlog(lg, level, fmt, ap);
    va_end(ap);
}
