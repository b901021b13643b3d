/* Logging with no context: a line goes to stderr when its level is within the settings' level,
 * prefixed with the settings' rank once it is known. Every room logs through this; the engine
 * adds the per-context part (core/log.h: a context's settings, cohort_error(ctx, ...) and the
 * like), and memory hands its functions the context's settings by pointer (mem/room.h). */
#ifndef COHORT_BASE_LOG_H
#define COHORT_BASE_LOG_H

#include <stdarg.h>

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

/* What a line is logged with when there are no settings (NULL): warn, no rank, so errors that
 * have no context to speak of (a bad handle) still print. */
extern const cohort_log_cfg_t cohort_log_defaults;

/* Write one line at @a level under @a lg (NULL: cohort_log_defaults). */
void cohort_log(const cohort_log_cfg_t *lg, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void cohort_vlog(const cohort_log_cfg_t *lg, int level, const char *fmt, va_list ap);

#endif
