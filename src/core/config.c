#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/config.h"

const char *const cohort_coll_env_names[COHORT_COLL_LAST] = {
    "BARRIER", "BCAST", "REDUCE", "ALLREDUCE", "ALLGATHER", "REDUCE_SCATTER", "ALLTOALL"};
const char *const cohort_coll_names[COHORT_COLL_LAST] = {
    "barrier", "bcast", "reduce", "allreduce", "allgather", "reduce_scatter", "alltoall"};

const char *cohort_progress_mode_name(cohort_progress_mode_t mode)
{
    switch (mode) {
    case COHORT_PROGRESS_YIELD:
        return "yield";
    case COHORT_PROGRESS_SPIN:
        return "spin";
    case COHORT_PROGRESS_BLOCK:
        return "block";
    }
    return "unknown";
}

/* Match value against a NULL-terminated list; returns the index or -1. */
static int cohort_config_choice(const char *value, const char *const *choices)
{
    for (int i = 0; choices[i] != NULL; i++) {
        if (strcmp(value, choices[i]) == 0) {
            return i;
        }
    }
    return -1;
}

static cohort_status_t cohort_config_one(cohort_config_t *cfg, const char *name, const char *value,
                                         char *err, size_t errlen, int *known)
{
    static const char *const plugins[] = {"dmodex", "fence", "global", "group", NULL};
    static const char *const modes[] = {"yield", "spin", "block", NULL};
    static const char *const levels[] = {"error", "warn", "info", "debug", NULL};
    char *end;
    int idx;

    *known = 1;
    if (strcmp(name, "COHORT_PMIX_PLUGIN") == 0) {
        if (cohort_config_choice(value, plugins) < 0) {
            snprintf(err, errlen, "COHORT_PMIX_PLUGIN=%s: expected dmodex, fence, global or group",
                     value);
            return COHORT_ERR_INVALID_ARG;
        }
        snprintf(cfg->pmix_plugin, sizeof(cfg->pmix_plugin), "%s", value);
    } else if (strcmp(name, "COHORT_PLUGIN_PATH") == 0) {
        if (strlen(value) >= sizeof(cfg->plugin_path)) {
            snprintf(err, errlen, "COHORT_PLUGIN_PATH is longer than %zu characters",
                     sizeof(cfg->plugin_path) - 1);
            return COHORT_ERR_INVALID_ARG;
        }
        snprintf(cfg->plugin_path, sizeof(cfg->plugin_path), "%s", value);
    } else if (strcmp(name, "COHORT_PROGRESS") == 0) {
        idx = cohort_config_choice(value, modes);
        if (idx < 0) {
            snprintf(err, errlen, "COHORT_PROGRESS=%s: expected yield, spin or block", value);
            return COHORT_ERR_INVALID_ARG;
        }
        cfg->progress = (cohort_progress_mode_t)idx;
    } else if (strcmp(name, "COHORT_TIMEOUT") == 0) {
        errno = 0;
        double t = strtod(value, &end);
        if (errno != 0 || end == value || *end != '\0' || !isfinite(t) || t < 0) {
            snprintf(err, errlen, "COHORT_TIMEOUT=%s: expected seconds >= 0 (0: no timeout)",
                     value);
            return COHORT_ERR_INVALID_ARG;
        }
        cfg->timeout_s = t;
    } else if (strcmp(name, "COHORT_CHECK") == 0) {
        if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0) {
            snprintf(err, errlen, "COHORT_CHECK=%s: expected 0 or 1", value);
            return COHORT_ERR_INVALID_ARG;
        }
        cfg->check = value[0] == '1';
    } else if (strcmp(name, "COHORT_LOG") == 0) {
        idx = cohort_config_choice(value, levels);
        if (idx < 0) {
            snprintf(err, errlen, "COHORT_LOG=%s: expected error, warn, info or debug", value);
            return COHORT_ERR_INVALID_ARG;
        }
        cfg->log_level = idx;
    } else if (strncmp(name, "COHORT_ALGO_", 12) == 0) {
        for (int c = 0; c < COHORT_COLL_LAST; c++) {
            if (strcmp(name + 12, cohort_coll_env_names[c]) == 0) {
                if (value[0] == '\0' || strlen(value) >= sizeof(cfg->algo[c])) {
                    snprintf(err, errlen, "%s=%s: expected an algorithm name", name, value);
                    return COHORT_ERR_INVALID_ARG;
                }
                snprintf(cfg->algo[c], sizeof(cfg->algo[c]), "%s", value);
                return COHORT_OK;
            }
        }
        snprintf(err, errlen,
                 "%s: unknown collective; expected COHORT_ALGO_ followed by BARRIER, BCAST, "
                 "REDUCE, ALLREDUCE, ALLGATHER, REDUCE_SCATTER or ALLTOALL",
                 name);
        return COHORT_ERR_INVALID_ARG;
    } else {
        *known = 0;
    }
    return COHORT_OK;
}

cohort_status_t cohort_config_parse(cohort_config_t *cfg, char *const *envp, char *err,
                                    size_t errlen, char *warn, size_t warnlen)
{
    char name[256];
    cohort_status_t status;
    size_t used = 0;
    int known;

    memset(cfg, 0, sizeof(*cfg));
    snprintf(cfg->pmix_plugin, sizeof(cfg->pmix_plugin), "dmodex");
    cfg->progress = COHORT_PROGRESS_YIELD;
    cfg->log_level = 1; /* warn */
    err[0] = '\0';
    warn[0] = '\0';

    for (; envp != NULL && *envp != NULL; envp++) {
        const char *eq = strchr(*envp, '=');
        size_t len;

        if (strncmp(*envp, "COHORT_", 7) != 0 || eq == NULL) {
            continue;
        }
        len = (size_t)(eq - *envp);
        if (len >= sizeof(name)) {
            continue;
        }
        memcpy(name, *envp, len);
        name[len] = '\0';
        status = cohort_config_one(cfg, name, eq + 1, err, errlen, &known);
        if (status != COHORT_OK) {
            return status;
        }
        if (!known && used < warnlen) {
            used += (size_t)snprintf(warn + used, warnlen - used, "%s%s", used ? ", " : "", name);
        }
    }
    return COHORT_OK;
}
