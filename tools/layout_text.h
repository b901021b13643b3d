/* The tools' one way to print a layout spec in full, so readers see every size (etp too). */
#ifndef COHORT_TOOLS_LAYOUT_TEXT_H
#define COHORT_TOOLS_LAYOUT_TEXT_H

#include <stdio.h>
#include "group/layout_gen.h"

/* "tp=8,pp=16,cp=2,ep=8,etp=8,order=tp-cp-ep-dp-pp (dp=64, edp=16)"; 160 bytes always fit. */
static inline void cohort_tools_layout_text(const cohort_layout_spec_t *s, char *out, size_t len)
{
    int n = snprintf(out, len, "tp=%d,pp=%d,cp=%d,ep=%d,etp=%d,order=", s->tp, s->pp, s->cp, s->ep,
                     s->etp);

    for (int i = 0; i < s->norder && n > 0 && (size_t)n < len; i++) {
        n += snprintf(out + n, len - (size_t)n, "%s%s", i ? "-" : "", s->order[i]);
    }
    if (n > 0 && (size_t)n < len) {
        snprintf(out + n, len - (size_t)n, " (dp=%d, edp=%d)", s->dp, s->edp);
    }
}

/* Total groups of the layout over every kind: what the classic way creates on every rank. */
static inline long long cohort_tools_layout_total(const cohort_layout_spec_t *s)
{
    long long total = 0;

    for (int k = 0; cohort_layout_kinds[k] != NULL; k++) {
        total += cohort_layout_ngroups(s, cohort_layout_kinds[k]);
    }
    return total;
}

#endif
