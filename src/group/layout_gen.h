/* Megatron-style layout arithmetic: pure, no context, no communication. */
#ifndef COHORT_LAYOUT_GEN_H
#define COHORT_LAYOUT_GEN_H

#include "cohort.h"

#define COHORT_LAYOUT_MAX_DIMS 6
#define COHORT_LAYOUT_MAX_HCP  6  /* levels of hierarchical cp */
#define COHORT_LAYOUT_MAX_EMBD 16 /* pipeline stages named in an embd rule */

/* Megatron's name_to_size order, which is also the order missing names are appended in. */
enum {
    COHORT_LAYOUT_DIM_TP,
    COHORT_LAYOUT_DIM_PP,
    COHORT_LAYOUT_DIM_DP,
    COHORT_LAYOUT_DIM_EP,
    COHORT_LAYOUT_DIM_CP,
    COHORT_LAYOUT_DIM_COUNT
};
extern const char *const cohort_layout_dim_names[COHORT_LAYOUT_DIM_COUNT];

/* The public cohort_layout_spec_t (opaque in cohort.h); internal code holds it by value. */
struct cohort_layout_spec {
    int world;
    int tp, pp, cp, ep, etp, dp, edp;
    /* The order after Megatron's completion: names the spec left out are appended (they all
     * have size 1), so norder is always 5, e.g. {"tp","cp","ep","dp","pp"}. The dense and the
     * expert generator share it, as they do in Megatron; only the sizes differ. */
    int norder;
    /* how many leading names of order the spec gave: Megatron checks the order string as
     * given (before completion), so the text writes only these and reads back the same */
    int norder_given;
    char order[COHORT_LAYOUT_MAX_DIMS][4];
    int order_dim[COHORT_LAYOUT_MAX_DIMS]; /* COHORT_LAYOUT_DIM_* per position */
    /* sizes per order position: dense (tp, pp, dp, cp, ep=1) and expert (etp, pp, edp, cp=1, ep) */
    int dense_size[COHORT_LAYOUT_MAX_DIMS];
    int expert_size[COHORT_LAYOUT_MAX_DIMS];
    /* hcp=a x b x ...: hierarchical_context_parallel_sizes; nhcp == 0 when not given */
    int nhcp;
    int hcp[COHORT_LAYOUT_MAX_HCP];
    /* dopt=N: num_distributed_optimizer_instances (1 when not given) */
    int dopt;
    int dopt_given;
    /* embd=first+last+K...: the pipeline stages (positions in a pp group) holding the word
     * embeddings, ascending, distinct; embd_default when not given (first and last) */
    int nembd;
    int embd[COHORT_LAYOUT_MAX_EMBD + 2];
    int embd_first, embd_last; /* as given, for the text */
    int embd_default;
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

/** @return 1 when kind is one of the 16 named kinds, else 0. */
int cohort_layout_gen_kind_valid(const char *kind);

/** The 16 named kinds, NULL-terminated, in a stable order. */
extern const char *const cohort_layout_gen_kinds[];

/* cohort_layout_ngroups(), cohort_layout_group_size() and the other public calls are
 * implemented in layout_kind.c; they take every kind the internal calls below take: the named
 * kinds, "dense:<token>" / "expert:<token>", hcp<L>, intra-dp-cp, intra-edp, inter-edp and
 * dopt-instance. embd has one member per embedding stage, pos-embd 1. */

/**
 * Members of group @a index of @a kind (0 <= index < ngroups), in Megatron's order.
 * @param [out] members  at least cohort_layout_group_size() entries.
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

/**
 * The canonical name of @a kind for group tags, so that spellings of one group agree:
 * "dense:dp-cp" and "dense:cp-dp" give the same text. Writes "" for an unknown kind.
 * @return 0, or -1 for an unknown kind.
 */
int cohort_layout_gen_canonical(const cohort_layout_spec_t *s, const char *kind, char *out,
                                size_t len);

#endif
