/* The tools' layout helpers, on the public layout arithmetic of cohort.h alone. */
#ifndef COHORT_TOOLS_LAYOUT_TEXT_H
#define COHORT_TOOLS_LAYOUT_TEXT_H

#include <stdio.h>
#include <cohort.h>

/* "tp=8,pp=16,cp=2,ep=8,etp=8,order=tp-cp-ep-dp-pp (dp=64, edp=16)", so readers see every size
 * (etp too); truncated to len. */
static inline void cohort_tools_layout_text(const cohort_layout_spec_t *s, char *out, size_t len)
{
    int n = cohort_layout_spec_text(s, out, len);

    if (n > 0 && (size_t)n < len) {
        snprintf(out + n, len - (size_t)n, " (dp=%d, edp=%d)", cohort_layout_spec_size(s, "dp"),
                 cohort_layout_spec_size(s, "edp"));
    }
}

/* Total groups of the layout over the kinds its spec builds (cohort_layout_create). */
static inline long long cohort_tools_layout_total(const cohort_layout_spec_t *s)
{
    long long total = 0;

    for (int k = 0; k < cohort_layout_spec_kind_count(s); k++) {
        total += cohort_layout_ngroups(s, cohort_layout_spec_kind_name(s, k));
    }
    return total;
}

/* Members of group @a index of @a kind into @a members (room for the world): their number, or
 * -1 on bad input. */
static inline int cohort_tools_group_members(const cohort_layout_spec_t *s, const char *kind,
                                             int index, int *members)
{
    int n;

    if (cohort_layout_group_members(s, kind, index, members, cohort_layout_spec_size(s, "world"),
                                    &n) != COHORT_OK) {
        return -1;
    }
    return n;
}

/* Members of the group of @a kind that holds @a rank (room for the world): their number, 0 when
 * the rank is in none (embd, pos-embd), -1 on bad input. */
static inline int cohort_tools_rank_group(const cohort_layout_spec_t *s, const char *kind, int rank,
                                          int *members)
{
    int index;

    if (cohort_layout_rank_group(s, kind, rank, &index) != COHORT_OK) {
        return -1;
    }
    return index < 0 ? 0 : cohort_tools_group_members(s, kind, index, members);
}

#endif
