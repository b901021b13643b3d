#include <stdio.h>
#include "core/log.h"

int cohort_log_level = COHORT_LOG_WARN;
static int cohort_log_rank = -1;

void cohort_log_set_rank(int rank)
{
    cohort_log_rank = rank;
}

void cohort_vlog(int level, const char *fmt, va_list ap)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    char line[1024];

    if (level > cohort_log_level) {
        return;
    }
    /* One write per line so that lines of different ranks do not interleave. */
    vsnprintf(line, sizeof(line), fmt, ap);
    if (cohort_log_rank >= 0) {
        fprintf(stderr, "cohort[%d] %s: %s\n", cohort_log_rank, names[level & 3], line);
    } else {
        fprintf(stderr, "cohort %s: %s\n", names[level & 3], line);
    }
}

void cohort_log(int level, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    cohort_vlog(level, fmt, ap);
    va_end(ap);
}
