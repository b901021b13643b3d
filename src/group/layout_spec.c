/*
 * The public face of a parsed layout spec (cohort.h, "Layout arithmetic"): on the heap, its
 * sizes and its text. Parsing is layout_gen.c, the groups layout_kind.c.
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
               {"dopt", spec ? spec->dopt : 0},   {"hcp", spec ? spec->nhcp : 0},
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

/* Where the next piece of text goes, and the room it has, once @a n bytes were wanted. */
static char *layout_text_at(char *buf, size_t len, int n)
{
    return (size_t)n < len ? buf + n : NULL;
}

static size_t layout_text_room(size_t len, int n)
{
    return (size_t)n < len ? len - (size_t)n : 0;
}

int cohort_layout_spec_text(const cohort_layout_spec_t *spec, char *buf, size_t len)
{
    char order[COHORT_LAYOUT_MAX_DIMS * 4 + 1] = "";
    size_t used = 0;
    int n;

    if (spec == NULL || (buf == NULL && len > 0)) {
        return -1;
    }
    for (int i = 0; i < spec->norder_given; i++) {
        used += (size_t)snprintf(order + used, sizeof(order) - used, "%s%s", i ? "-" : "",
                                 spec->order[i]);
    }
    n = snprintf(buf, len, "tp=%d,pp=%d,cp=%d,ep=%d,etp=%d,order=%s", spec->tp, spec->pp, spec->cp,
                 spec->ep, spec->etp, order);
    /* the refining keys only when given, so a plain spec reads as it always did */
    for (int i = 0; i < spec->nhcp; i++) {
        n += snprintf(layout_text_at(buf, len, n), layout_text_room(len, n), "%s%d",
                      i ? "x" : ",hcp=", spec->hcp[i]);
    }
    if (spec->dopt_given) {
        n +=
            snprintf(layout_text_at(buf, len, n), layout_text_room(len, n), ",dopt=%d", spec->dopt);
    }
    if (!spec->embd_default) {
        const char *sep = ",embd=";

        if (spec->embd_first) {
            n += snprintf(layout_text_at(buf, len, n), layout_text_room(len, n), "%sfirst", sep);
            sep = "+";
        }
        if (spec->embd_last) {
            n += snprintf(layout_text_at(buf, len, n), layout_text_room(len, n), "%slast", sep);
            sep = "+";
        }
        for (int i = 0; i < spec->nembd; i++) {
            int stage = spec->embd[i];

            if ((spec->embd_first && stage == 0) || (spec->embd_last && stage == spec->pp - 1)) {
                continue;
            }
            n +=
                snprintf(layout_text_at(buf, len, n), layout_text_room(len, n), "%s%d", sep, stage);
            sep = "+";
        }
    }
    return n;
}
