/* Megatron-style layout arithmetic: pure, no context, no communication. */
#ifndef COHORT_LAYOUT_GEN_H
#define COHORT_LAYOUT_GEN_H

#include "cohort.h"

#define COHORT_LAYOUT_MAX_DIMS 6

/* The public cohort_layout_spec_t (opaque in cohort.h); internal code holds it by value. */
struct cohort_layout_spec {
    int world;
    int tp, pp, cp, ep, etp, dp, edp;
    /* The order after Megatron's completion: names the spec left out are appended (they all
     * have size 1), so norder is always 5, e.g. {"tp","cp","ep","dp","pp"}. The dense and the
     * expert generator share it, as they do in Megatron; only the sizes differ. */
    int norder;
    char order[COHORT_LAYOUT_MAX_DIMS][4];
    /* sizes per order position: dense (tp, pp, dp, cp, ep=1) and expert (etp, pp, edp, cp=1, ep) */
    int dense_size[COHORT_LAYOUT_MAX_DIMS];
    int expert_size[COHORT_LAYOUT_MAX_DIMS];
};

/**
 * Parse and validate a spec against a world size. On error returns COHORT_ERR_INVALID_ARG and
 * writes a one-line reason into err (when err != NULL); on success err is set to "".
 * @param [in]  spec   "tp=2,pp=4,cp=1,ep=2,etp=1,order=tp-cp-ep-dp-pp"; every key optional
 *                     (NULL or "" means all defaults).
 * @param [out] out    set only on success.
 * @note Pure; thread-safe.
 */
cohort_status_t cohort_layout_gen_parse(const char *spec, int world, cohort_layout_spec_t *out,
                                        char *err, size_t errlen);

/** @return 1 when kind is one of the known kinds, else 0. */
int cohort_layout_gen_kind_valid(const char *kind);

/** The known kinds, NULL-terminated, in a stable order. */
extern const char *const cohort_layout_gen_kinds[];

/* cohort_layout_ngroups() and cohort_layout_group_size() are public (cohort.h) and
 * implemented in layout_gen.c; embd has 2 members (1 when pp == 1), pos-embd 1. */

/**
 * Members of group @a index of @a kind (0 <= index < ngroups), in Megatron's order.
 * @param [out] members  at least s->world entries.
 * @return number of members, or -1 on bad input.
 */
int cohort_layout_gen_members(const cohort_layout_spec_t *s, const char *kind, int index,
                              int *members);

/**
 * Members of the group of @a kind that contains world rank @a rank.
 * @return number of members; 0 when rank belongs to no group of that kind (embd, pos-embd);
 *         -1 on bad input.
 */
int cohort_layout_gen_rank_group(const cohort_layout_spec_t *s, const char *kind, int rank,
                                 int *members);

#endif
