/*
 * The algorithm table and default selection. COHORT_ALGO_<COLLECTIVE>=<name> forces one.
 */
#include <stdio.h>
#include <string.h>
#include "coll/coll.h"

extern const cohort_coll_algo_t cohort_barrier_dissemination;

static const cohort_coll_algo_t *const cohort_algos[] = {
    &cohort_barrier_dissemination,
    NULL,
};

static const cohort_coll_algo_t *cohort_coll_find(cohort_coll_type_t coll, const char *name)
{
    for (int i = 0; cohort_algos[i] != NULL; i++) {
        if (cohort_algos[i]->coll == coll && strcmp(cohort_algos[i]->name, name) == 0) {
            return cohort_algos[i];
        }
    }
    return NULL;
}

const cohort_coll_algo_t *cohort_coll_select(const cohort_config_t *cfg,
                                             const cohort_coll_args_t *args, int gsize)
{
    const cohort_coll_algo_t *forced;

    if (cfg->algo[args->coll][0] != '\0') {
        forced = cohort_coll_find(args->coll, cfg->algo[args->coll]);
        if (forced != NULL) { /* names were checked at init */
            return forced;
        }
    }
    switch (args->coll) {
    case COHORT_COLL_BARRIER:
        return &cohort_barrier_dissemination;
    default:
        return NULL;
    }
}

cohort_status_t cohort_coll_config_check(const cohort_config_t *cfg, char *err, size_t errlen)
{
    for (int c = 0; c < COHORT_COLL_LAST; c++) {
        size_t used;

        if (cfg->algo[c][0] == '\0' || cohort_coll_find(c, cfg->algo[c]) != NULL) {
            continue;
        }
        used = (size_t)snprintf(err, errlen, "COHORT_ALGO_%s=%s: unknown algorithm; valid:",
                                cohort_coll_env_names[c], cfg->algo[c]);
        for (int i = 0; cohort_algos[i] != NULL && used < errlen; i++) {
            if ((int)cohort_algos[i]->coll == c) {
                used += (size_t)snprintf(err + used, errlen - used, " %s", cohort_algos[i]->name);
            }
        }
        return COHORT_ERR_INVALID_ARG;
    }
    return COHORT_OK;
}

void cohort_coll_print_algos(FILE *f)
{
    fprintf(f, "%-3s %-15s %-22s %s\n", "id", "collective", "name", "description");
    for (int i = 0; cohort_algos[i] != NULL; i++) {
        fprintf(f, "%-3d %-15s %-22s %s\n", i, cohort_coll_names[cohort_algos[i]->coll],
                cohort_algos[i]->name, cohort_algos[i]->description);
    }
}
