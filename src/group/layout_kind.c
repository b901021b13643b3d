/*
 * Megatron-style layout arithmetic: the rank groups of megatron/core/parallel_state.py's two
 * RankGenerators and of the groups initialize_model_parallel() derives from them, computed per
 * group instead of for the whole world.
 *
 * Megatron numbers ranks by an order of parallel dimensions, the first varying fastest:
 * rank = sum(coord[i] * stride[i]) with stride[i] = size[0] * ... * size[i-1]. A group of token
 * "a-b" holds the ranks that agree on every dimension outside {a, b}; its members are listed
 * with the first masked dimension fastest, and the groups are numbered the same way over the
 * unmasked dimensions (generate_masked_orthogonal_rank_groups). Megatron builds one generator
 * for the dense layers (tp, cp, dp, pp; ep = 1) and one for the expert layers (etp, ep, edp,
 * pp; cp = 1) over the same order string.
 *
 * Every other kind is a function of one such "base" group:
 * - sub-groups (hierarchical cp, the partial data-parallel groups of distributed-optimizer
 *   instances): the base group's members, position p = l*s*u + j*u + v for l < L, j < s,
 *   v < u, form L*u sub-groups of s members (member j), numbered (l, v) with v fastest; this
 *   is create_hierarchical_groups()' "(l s u) -> (l u) s", and plain contiguous chunks are
 *   u = 1;
 * - a selection: the embedding groups hold some positions (stages) of each pipeline group;
 * - a merge: a distributed-optimizer instance is `merge` consecutive expert tp-ep-pp groups,
 *   their member lists concatenated.
 */
#include "layout_gen.h"

#include <stdio.h>
#include <string.h>

typedef enum { GEN_DENSE, GEN_EXPERT } layout_gen_t;

typedef enum {
    DERIVE_NONE,       /* the base group itself */
    DERIVE_EMBD,       /* the spec's embedding stages of each pp group */
    DERIVE_POS_EMBD,   /* the first stage of each pp group */
    DERIVE_HCP,        /* one level of hierarchical cp, inside each cp group */
    DERIVE_INTRA_DPCP, /* dp-cp split into dopt contiguous parts */
    DERIVE_INTRA_EDP,  /* expert dp split into dopt contiguous parts */
    DERIVE_INTER_EDP,  /* expert dp: the members at the same place of each part */
    DERIVE_INSTANCE    /* dopt instances: edp/dopt expert tp-ep-pp groups each */
} layout_derive_t;

typedef struct {
    const char *kind;
    layout_gen_t gen;
    const char *token; /* the base group: the argument Megatron passes to get_ranks() */
    layout_derive_t derive;
} layout_named_t;

/* The 16 kinds every layout builds come first, in cohort_layout_gen_kinds' order. */
static const layout_named_t named_table[] = {
    {"tp", GEN_DENSE, "tp", DERIVE_NONE},
    {"pp", GEN_DENSE, "pp", DERIVE_NONE},
    {"dp", GEN_DENSE, "dp", DERIVE_NONE},
    {"cp", GEN_DENSE, "cp", DERIVE_NONE},
    {"dp-cp", GEN_DENSE, "dp-cp", DERIVE_NONE},
    {"tp-pp", GEN_DENSE, "tp-pp", DERIVE_NONE},
    {"tp-cp", GEN_DENSE, "tp-cp", DERIVE_NONE},
    {"tp-dp", GEN_DENSE, "tp-dp", DERIVE_NONE},
    {"tp-dp-cp", GEN_DENSE, "tp-dp-cp", DERIVE_NONE},
    {"embd", GEN_DENSE, "pp", DERIVE_EMBD},
    {"pos-embd", GEN_DENSE, "pp", DERIVE_POS_EMBD},
    {"ep", GEN_EXPERT, "ep", DERIVE_NONE},
    {"etp", GEN_EXPERT, "tp", DERIVE_NONE},
    {"etp-ep", GEN_EXPERT, "tp-ep", DERIVE_NONE},
    {"etp-ep-pp", GEN_EXPERT, "tp-ep-pp", DERIVE_NONE},
    {"edp", GEN_EXPERT, "dp", DERIVE_NONE},
    /* built when the spec asks for them (dopt=N); computable always */
    {"intra-dp-cp", GEN_DENSE, "dp-cp", DERIVE_INTRA_DPCP},
    {"intra-edp", GEN_EXPERT, "dp", DERIVE_INTRA_EDP},
    {"inter-edp", GEN_EXPERT, "dp", DERIVE_INTER_EDP},
    {"dopt-instance", GEN_EXPERT, "tp-ep-pp", DERIVE_INSTANCE},
};
#define NNAMED ((int)(sizeof(named_table) / sizeof(named_table[0])))
#define NBUILT 16

const char *const cohort_layout_gen_kinds[] = {
    "tp",   "pp",       "dp", "cp",  "dp-cp",  "tp-pp",     "tp-cp", "tp-dp", "tp-dp-cp",
    "embd", "pos-embd", "ep", "etp", "etp-ep", "etp-ep-pp", "edp",   NULL,
};

static const char *const hcp_names[COHORT_LAYOUT_MAX_HCP] = {"hcp0", "hcp1", "hcp2",
                                                             "hcp3", "hcp4", "hcp5"};

/* One generator's view of one token: sizes and strides per order position, and the mask. */
typedef struct {
    int n;
    int size[COHORT_LAYOUT_MAX_DIMS];
    int stride[COHORT_LAYOUT_MAX_DIMS];
    int masked[COHORT_LAYOUT_MAX_DIMS];
    int gsize;   /* members per group */
    int ngroups; /* world / gsize */
} layout_geom_t;

/* A kind resolved against a spec. */
typedef struct {
    layout_gen_t gen;
    unsigned dims; /* bit per COHORT_LAYOUT_DIM_* of the base token */
    layout_derive_t derive;
    int level; /* DERIVE_HCP */
    layout_geom_t base;
    int per, s, u; /* sub-groups: per base group, members each, and the inner stride */
    int merge;     /* DERIVE_INSTANCE: base groups per group */
    int gsize, ngroups;
} layout_shape_t;

/* ------------------------------------------------------------------------------------------ */
/* Orthogonal groups of one generator                                                           */
/* ------------------------------------------------------------------------------------------ */

/* The spec was validated by cohort_layout_gen_parse(); this only guards against a hand-made one. */
static int layout_geom_init(const cohort_layout_spec_t *s, layout_gen_t gen, unsigned dims,
                            layout_geom_t *g)
{
    const int *sizes;
    long long prod = 1;
    unsigned found = 0;
    int i, d;

    if (s->norder <= 0 || s->norder > COHORT_LAYOUT_MAX_DIMS || s->world <= 0 || dims == 0) {
        return -1;
    }
    sizes = (gen == GEN_DENSE) ? s->dense_size : s->expert_size;
    g->n = s->norder;
    g->gsize = 1;
    for (i = 0; i < g->n; i++) {
        d = s->order_dim[i];
        if (sizes[i] <= 0 || d < 0 || d >= COHORT_LAYOUT_DIM_COUNT) {
            return -1;
        }
        g->size[i] = sizes[i];
        g->stride[i] = (int)prod;
        g->masked[i] = (dims >> d) & 1u;
        found |= (unsigned)g->masked[i] << d;
        if (g->masked[i]) {
            g->gsize *= sizes[i];
        }
        prod *= sizes[i];
        if (prod > s->world) {
            return -1;
        }
    }
    if (prod != s->world || found != dims) {
        return -1;
    }
    g->ngroups = s->world / g->gsize;
    return 0;
}

/* The rank of group @a index's member 0: its unmasked coordinates, first fastest. */
static int layout_geom_base(const layout_geom_t *g, int index)
{
    int base = 0, rest = index, i;

    for (i = 0; i < g->n; i++) {
        if (!g->masked[i]) {
            base += (rest % g->size[i]) * g->stride[i];
            rest /= g->size[i];
        }
    }
    return base;
}

/* Member @a m of group @a index, in Megatron's order: first masked dimension fastest. */
static int layout_geom_member(const layout_geom_t *g, int index, int m)
{
    int rank = layout_geom_base(g, index), i;

    for (i = 0; i < g->n; i++) {
        if (g->masked[i]) {
            rank += (m % g->size[i]) * g->stride[i];
            m /= g->size[i];
        }
    }
    return rank;
}

/* Index of the group holding @a rank: its unmasked coordinates, first fastest. */
static int layout_geom_index(const layout_geom_t *g, int rank)
{
    int index = 0, mult = 1, i;

    for (i = 0; i < g->n; i++) {
        if (!g->masked[i]) {
            index += ((rank / g->stride[i]) % g->size[i]) * mult;
            mult *= g->size[i];
        }
    }
    return index;
}

/* Position of @a rank in its group: its masked coordinates, first fastest. */
static int layout_geom_position(const layout_geom_t *g, int rank)
{
    int pos = 0, mult = 1, i;

    for (i = 0; i < g->n; i++) {
        if (g->masked[i]) {
            pos += ((rank / g->stride[i]) % g->size[i]) * mult;
            mult *= g->size[i];
        }
    }
    return pos;
}

/* ------------------------------------------------------------------------------------------ */
/* Kinds                                                                                        */
/* ------------------------------------------------------------------------------------------ */

/* "tp-ep" -> dim bits; every name at most once, any order (Megatron's mask ignores it). */
static int layout_token_dims(const char *t, unsigned *dims)
{
    const char *dash;
    size_t len;
    int d;

    *dims = 0;
    for (;; t = dash + 1) {
        dash = strchr(t, '-');
        len = dash ? (size_t)(dash - t) : strlen(t);
        for (d = 0; d < COHORT_LAYOUT_DIM_COUNT; d++) {
            if (strlen(cohort_layout_dim_names[d]) == len &&
                strncmp(cohort_layout_dim_names[d], t, len) == 0) {
                break;
            }
        }
        if (d == COHORT_LAYOUT_DIM_COUNT || (*dims >> d) & 1u) {
            return -1;
        }
        *dims |= 1u << d;
        if (dash == NULL) {
            return 0;
        }
    }
}

static const layout_named_t *layout_named_find(const char *kind)
{
    for (int i = 0; i < NNAMED; i++) {
        if (strcmp(named_table[i].kind, kind) == 0) {
            return &named_table[i];
        }
    }
    return NULL;
}

/* Resolve @a kind against @a s: 0, or -1 when the kind is unknown or does not fit the spec. */
static int layout_shape_init(const cohort_layout_spec_t *s, const char *kind, layout_shape_t *sh)
{
    const layout_named_t *nk;
    int n = s->dopt > 0 ? s->dopt : 1, l, i;

    if (kind == NULL) {
        return -1;
    }
    memset(sh, 0, sizeof(*sh));
    nk = layout_named_find(kind);
    if (nk != NULL) {
        sh->gen = nk->gen;
        sh->derive = nk->derive;
        if (layout_token_dims(nk->token, &sh->dims) != 0) {
            return -1;
        }
    } else if (strncmp(kind, "dense:", 6) == 0 || strncmp(kind, "expert:", 7) == 0) {
        sh->gen = kind[0] == 'd' ? GEN_DENSE : GEN_EXPERT;
        sh->derive = DERIVE_NONE;
        if (layout_token_dims(strchr(kind, ':') + 1, &sh->dims) != 0) {
            return -1;
        }
    } else if (strncmp(kind, "hcp", 3) == 0 && kind[3] >= '0' && kind[3] <= '9' &&
               kind[4] == '\0' && kind[3] - '0' < s->nhcp) {
        sh->gen = GEN_DENSE;
        sh->derive = DERIVE_HCP;
        sh->level = kind[3] - '0';
        sh->dims = 1u << COHORT_LAYOUT_DIM_CP;
    } else {
        return -1;
    }
    if (layout_geom_init(s, sh->gen, sh->dims, &sh->base) != 0) {
        return -1;
    }

    /* the plain case: one sub-group per base group, all of it */
    sh->per = 1;
    sh->s = sh->base.gsize;
    sh->u = 1;
    switch (sh->derive) {
    case DERIVE_NONE:
        break;
    case DERIVE_EMBD:
    case DERIVE_POS_EMBD:
        sh->gsize = sh->derive == DERIVE_POS_EMBD ? 1 : s->nembd;
        sh->ngroups = sh->base.ngroups;
        return sh->gsize > 0 ? 0 : -1;
    case DERIVE_HCP:
        sh->u = 1;
        for (i = 0; i < sh->level; i++) {
            sh->u *= s->hcp[i];
        }
        sh->s = s->hcp[sh->level];
        l = sh->base.gsize / (sh->u * sh->s);
        if (l <= 0 || l * sh->u * sh->s != sh->base.gsize) {
            return -1;
        }
        sh->per = l * sh->u;
        break;
    case DERIVE_INTRA_DPCP:
    case DERIVE_INTRA_EDP:
        if (sh->base.gsize % n != 0) {
            return -1;
        }
        sh->s = sh->base.gsize / n;
        sh->per = n;
        break;
    case DERIVE_INTER_EDP:
        if (sh->base.gsize % n != 0) {
            return -1;
        }
        sh->s = n;
        sh->u = sh->base.gsize / n;
        sh->per = sh->u;
        break;
    case DERIVE_INSTANCE:
        if (sh->base.ngroups % n != 0) {
            return -1;
        }
        sh->merge = sh->base.ngroups / n;
        sh->gsize = sh->base.gsize * sh->merge;
        sh->ngroups = n;
        return 0;
    }
    sh->gsize = sh->s;
    sh->ngroups = sh->base.ngroups * sh->per;
    return 0;
}

/* Member @a m (< gsize) of group @a g (< ngroups). */
static int layout_shape_member(const cohort_layout_spec_t *s, const layout_shape_t *sh, int g,
                               int m)
{
    int q;

    switch (sh->derive) {
    case DERIVE_EMBD:
        return layout_geom_member(&sh->base, g, s->embd[m]);
    case DERIVE_POS_EMBD:
        return layout_geom_member(&sh->base, g, 0);
    case DERIVE_INSTANCE:
        return layout_geom_member(&sh->base, g * sh->merge + m / sh->base.gsize,
                                  m % sh->base.gsize);
    default:
        q = g % sh->per;
        return layout_geom_member(&sh->base, g / sh->per,
                                  (q / sh->u) * sh->s * sh->u + m * sh->u + q % sh->u);
    }
}

/* The group holding @a rank, or -1 when it is in none. */
static int layout_shape_index(const cohort_layout_spec_t *s, const layout_shape_t *sh, int rank)
{
    int b = layout_geom_index(&sh->base, rank), p, i;

    switch (sh->derive) {
    case DERIVE_EMBD:
        p = layout_geom_position(&sh->base, rank);
        for (i = 0; i < s->nembd; i++) {
            if (s->embd[i] == p) {
                return b;
            }
        }
        return -1;
    case DERIVE_POS_EMBD:
        return layout_geom_position(&sh->base, rank) == 0 ? b : -1;
    case DERIVE_INSTANCE:
        return b / sh->merge;
    default:
        p = layout_geom_position(&sh->base, rank);
        return b * sh->per + (p / (sh->s * sh->u)) * sh->u + p % sh->u;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Internal calls                                                                               */
/* ------------------------------------------------------------------------------------------ */

int cohort_layout_gen_kind_valid(const char *kind)
{
    for (int i = 0; kind != NULL && i < NBUILT; i++) {
        if (strcmp(named_table[i].kind, kind) == 0) {
            return 1;
        }
    }
    return 0;
}

int cohort_layout_gen_members(const cohort_layout_spec_t *s, const char *kind, int index,
                              int *members)
{
    layout_shape_t sh;

    if (s == NULL || members == NULL || layout_shape_init(s, kind, &sh) != 0 || index < 0 ||
        index >= sh.ngroups) {
        return -1;
    }
    for (int m = 0; m < sh.gsize; m++) {
        members[m] = layout_shape_member(s, &sh, index, m);
    }
    return sh.gsize;
}

int cohort_layout_gen_rank_group(const cohort_layout_spec_t *s, const char *kind, int rank,
                                 int *members)
{
    layout_shape_t sh;
    int g;

    if (s == NULL || members == NULL || layout_shape_init(s, kind, &sh) != 0 || rank < 0 ||
        rank >= s->world) {
        return -1;
    }
    g = layout_shape_index(s, &sh, rank);
    if (g < 0) {
        return 0;
    }
    for (int m = 0; m < sh.gsize; m++) {
        members[m] = layout_shape_member(s, &sh, g, m);
    }
    return sh.gsize;
}

int cohort_layout_gen_canonical(const cohort_layout_spec_t *s, const char *kind, char *out,
                                size_t len)
{
    layout_shape_t sh;
    size_t used;

    if (len > 0) {
        out[0] = '\0';
    }
    if (s == NULL || layout_shape_init(s, kind, &sh) != 0) {
        return -1;
    }
    if (strchr(kind, ':') == NULL) {
        snprintf(out, len, "%s", kind);
        return 0;
    }
    /* a token: its names in the spec's order */
    used = (size_t)snprintf(out, len, "%s:", sh.gen == GEN_DENSE ? "dense" : "expert");
    for (int i = 0, first = 1; i < s->norder && used < len; i++) {
        if (sh.base.masked[i]) {
            used += (size_t)snprintf(out + used, len - used, "%s%s", first ? "" : "-", s->order[i]);
            first = 0;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Public calls (cohort.h)                                                                      */
/* ------------------------------------------------------------------------------------------ */

int cohort_layout_ngroups(const cohort_layout_spec_t *s, const char *kind)
{
    layout_shape_t sh;

    if (s == NULL || layout_shape_init(s, kind, &sh) != 0) {
        return 0;
    }
    return sh.ngroups;
}

int cohort_layout_group_size(const cohort_layout_spec_t *s, const char *kind)
{
    layout_shape_t sh;

    if (s == NULL || layout_shape_init(s, kind, &sh) != 0) {
        return 0;
    }
    return sh.gsize;
}

cohort_status_t cohort_layout_group_members(const cohort_layout_spec_t *s, const char *kind,
                                            int index, int *members, int max, int *nmembers)
{
    layout_shape_t sh;

    if (s == NULL || nmembers == NULL || max < 0 || (members == NULL && max > 0) ||
        layout_shape_init(s, kind, &sh) != 0 || index < 0 || index >= sh.ngroups) {
        return COHORT_ERR_INVALID_ARG;
    }
    for (int m = 0; m < sh.gsize && m < max; m++) {
        members[m] = layout_shape_member(s, &sh, index, m);
    }
    *nmembers = sh.gsize;
    return COHORT_OK;
}

cohort_status_t cohort_layout_rank_group(const cohort_layout_spec_t *s, const char *kind, int rank,
                                         int *index)
{
    layout_shape_t sh;

    if (s == NULL || index == NULL || layout_shape_init(s, kind, &sh) != 0 || rank < 0 ||
        rank >= s->world) {
        return COHORT_ERR_INVALID_ARG;
    }
    *index = layout_shape_index(s, &sh, rank);
    return COHORT_OK;
}

int cohort_layout_kind_count(void)
{
    return NBUILT;
}

const char *cohort_layout_kind_name(int index)
{
    return index >= 0 && index < NBUILT ? named_table[index].kind : NULL;
}

/* The kinds a layout of this spec builds: the 16, then hcp<L> per level given, then the
 * distributed-optimizer kinds (the partial data-parallel ones only when dopt > 1, as Megatron
 * builds them only then). */
static int layout_spec_kinds(const cohort_layout_spec_t *s, const char **out, int max)
{
    int n = 0;

    for (int i = 0; i < NBUILT; i++, n++) {
        if (n < max) {
            out[n] = named_table[i].kind;
        }
    }
    for (int l = 0; l < s->nhcp; l++, n++) {
        if (n < max) {
            out[n] = hcp_names[l];
        }
    }
    for (int i = NBUILT; i < NNAMED && s->dopt_given; i++) {
        if (named_table[i].derive == DERIVE_INSTANCE || s->dopt > 1) {
            if (n < max) {
                out[n] = named_table[i].kind;
            }
            n++;
        }
    }
    return n;
}

int cohort_layout_spec_kind_count(const cohort_layout_spec_t *spec)
{
    return spec == NULL ? 0 : layout_spec_kinds(spec, NULL, 0);
}

const char *cohort_layout_spec_kind_name(const cohort_layout_spec_t *spec, int index)
{
    const char *names[NNAMED + COHORT_LAYOUT_MAX_HCP];

    if (spec == NULL || index < 0 ||
        index >= layout_spec_kinds(spec, names, NNAMED + COHORT_LAYOUT_MAX_HCP)) {
        return NULL;
    }
    return names[index];
}
