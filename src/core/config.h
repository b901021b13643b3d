/* COHORT_* environment settings, parsed once at init. */
#ifndef COHORT_CONFIG_H
#define COHORT_CONFIG_H

#include "cohort.h"
#include "coll/coll_type.h"

typedef enum {
    COHORT_PROGRESS_YIELD, /* poll; sched_yield when nothing progressed (default) */
    COHORT_PROGRESS_SPIN,  /* poll only */
    COHORT_PROGRESS_BLOCK  /* sleep on the UCX worker's event fd */
} cohort_progress_mode_t;

#define COHORT_CONFIG_NAME_MAX 64
#define COHORT_CONFIG_PATH_MAX 4096

typedef struct {
    char pmix_plugin[COHORT_CONFIG_NAME_MAX]; /* default "dmodex" */
    char plugin_path[COHORT_CONFIG_PATH_MAX]; /* colon-separated; "" when unset */
    cohort_progress_mode_t progress;
    double timeout_s;                                    /* 0: no timeout */
    int check;                                           /* COHORT_CHECK: 0 or 1 */
    int log_level;                                       /* cohort_log_level_t */
    char algo[COHORT_COLL_LAST][COHORT_CONFIG_NAME_MAX]; /* "" : automatic selection */
} cohort_config_t;

/**
 * Fill @a cfg from an environment block (NULL-terminated "NAME=value" strings). Every
 * COHORT_* variable is checked: a bad value is COHORT_ERR_INVALID_ARG with @a err naming the
 * variable and what it accepts; an unknown COHORT_* name is reported in @a warn (not an error,
 * so that a program may use its own COHORT_ variables) — both are "" when there is nothing to
 * say. Algorithm names are checked later, against the algorithm table.
 */
cohort_status_t cohort_config_parse(cohort_config_t *cfg, char *const *envp, char *err,
                                    size_t errlen, char *warn, size_t warnlen);

const char *cohort_progress_mode_name(cohort_progress_mode_t mode);

#endif
