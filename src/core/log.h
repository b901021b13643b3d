#ifndef COHORT_LOG_H
#define COHORT_LOG_H

#include <stdarg.h>

typedef enum {
    COHORT_LOG_ERROR = 0,
    COHORT_LOG_WARN = 1,
    COHORT_LOG_INFO = 2,
    COHORT_LOG_DEBUG = 3
} cohort_log_level_t;

/* Process-wide: the level is set from COHORT_LOG at init, the rank once it is known. */
extern int cohort_log_level;
void cohort_log_set_rank(int rank);

void cohort_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cohort_vlog(int level, const char *fmt, va_list ap);

#define cohort_error(...) cohort_log(COHORT_LOG_ERROR, __VA_ARGS__)
#define cohort_warn(...)  cohort_log(COHORT_LOG_WARN, __VA_ARGS__)
#define cohort_info(...)  cohort_log(COHORT_LOG_INFO, __VA_ARGS__)
#define cohort_debug(...)                                                                          \
    do {                                                                                           \
        if (cohort_log_level >= COHORT_LOG_DEBUG)                                                  \
            cohort_log(COHORT_LOG_DEBUG, __VA_ARGS__);                                             \
    } while (0)

#endif
