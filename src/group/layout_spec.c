/*
 * The public face of the layout arithmetic (cohort.h, "Layout arithmetic"): a parsed spec on
 * the heap, its sizes and text, and the list of kinds. The arithmetic itself is layout_gen.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group/layout_gen.h"

cohort_status_t cohort_layout_spec_parse(const char *spec, int world, cohort_layout_spec_t **out,
                                         char *err, size_t errlen)
{
    cohort_layout_spec_t s, *copy;
    cohort_status_t status;

    if (out == NULL) {
        if (err != NULL && errlen > 0) {
            snprintf(err, errlen, "no output spec given");
        }
        return COHORT_ERR_INVALID_ARG;
    }
    status = cohort_layout_gen_parse(spec, world, &s, err, errlen);
    if (status != COHORT_OK) {
        return status;
    }
    copy = malloc(sizeof(*copy));
    if (copy == NULL) {
        if (err != NULL && errlen > 0) {
            snprintf(err, errlen, "out of memory");
        }
        return COHORT_ERR_NO_MEMORY;
    }
    *copy = s;
    *out = copy;
    return COHORT_OK;
}

void cohort_layout_spec_free(cohort_layout_spec_t *spec)
{
    free(spec);
}

int cohort_layout_spec_size(const cohort_layout_spec_t *spec, const char *dim)
{
    const struct {
        const char *name;
        int value;
    } * d, dims[] = {
               {"world", spec ? spec->world : 0}, {"tp", spec ? spec->tp : 0},
               {"pp", spec ? spec->pp : 0},       {"cp", spec ? spec->cp : 0},
               {"ep", spec ? spec->ep : 0},       {"etp", spec ? spec->etp : 0},
               {"dp", spec ? spec->dp : 0},       {"edp", spec ? spec->edp : 0},
           };

    if (spec == NULL || dim == NULL) {
        return -1;
    }
    for (d = dims; d < dims + sizeof(dims) / sizeof(dims[0]); d++) {
        if (strcmp(d->name, dim) == 0) {
            return d->value;
        }
    }
    return -1;
}

int cohort_layout_spec_text(const cohort_layout_spec_t *spec, char *buf, size_t len)
{
    char order[COHORT_LAYOUT_MAX_DIMS * 4 + 1] = "";
    size_t used = 0;

    if (spec == NULL || (buf == NULL && len > 0)) {
        return -1;
    }
    for (int i = 0; i < spec->norder; i++) {
        used += (size_t)snprintf(order + used, sizeof(order) - used, "%s%s", i ? "-" : "",
                                 spec->order[i]);
    }
    return snprintf(buf, len, "tp=%d,pp=%d,cp=%d,ep=%d,etp=%d,order=%s", spec->tp, spec->pp,
                    spec->cp, spec->ep, spec->etp, order);
}

int cohort_layout_kind_count(void)
{
    int n = 0;

    while (cohort_layout_gen_kinds[n] != NULL) {
        n++;
    }
    return n;
}

const char *cohort_layout_kind_name(int index)
{
    if (index < 0 || index >= cohort_layout_kind_count()) {
        return NULL;
    }
    return cohort_layout_gen_kinds[index];
}
