/* Logging with no context: see log.h. */
#include <stdio.h>
#include "base/log.h"

const cohort_log_cfg_t cohort_log_defaults = {COHORT_LOG_WARN, -1};

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
