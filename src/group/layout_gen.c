/*
 * Megatron-style layout arithmetic: the rank groups of megatron/core/parallel_state.py's two
 * RankGenerators, computed per group instead of for the whole world.
 *
 * Megatron numbers ranks by an order of parallel dimensions, the first varying fastest:
 * rank = sum(coord[i] * stride[i]) with stride[i] = size[0] * ... * size[i-1]. A group of token
 * "a-b" holds the ranks that agree on every dimension outside {a, b}; its members are listed
 * with the first masked dimension fastest, and the groups are numbered the same way over the
 * unmasked dimensions (generate_masked_orthogonal_rank_groups). Megatron builds one generator
 * for the dense layers (tp, cp, dp, pp; ep = 1) and one for the expert layers (etp, ep, edp,
 * pp; cp = 1) over the same order string.
 */
#include "layout_gen.h"

#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Megatron's name_to_size order, which is also the order missing names are appended in. */
enum { DIM_TP, DIM_PP, DIM_DP, DIM_EP, DIM_CP, DIM_COUNT };
static const char *const dim_names[DIM_COUNT] = {"tp", "pp", "dp", "ep", "cp"};

typedef enum { GEN_DENSE, GEN_EXPERT } layout_gen_t;
typedef enum { EMBD_NONE, EMBD_FIRST_LAST, EMBD_FIRST } layout_embd_t;

typedef struct {
    const char *kind;
    layout_gen_t gen;
    const char *token; /* the argument Megatron passes to get_ranks() */
    layout_embd_t embd;
} layout_kind_t;

static const layout_kind_t kind_table[] = {
    {"tp", GEN_DENSE, "tp", EMBD_NONE},
    {"pp", GEN_DENSE, "pp", EMBD_NONE},
    {"dp", GEN_DENSE, "dp", EMBD_NONE},
    {"cp", GEN_DENSE, "cp", EMBD_NONE},
    {"dp-cp", GEN_DENSE, "dp-cp", EMBD_NONE},
    {"tp-pp", GEN_DENSE, "tp-pp", EMBD_NONE},
    {"tp-cp", GEN_DENSE, "tp-cp", EMBD_NONE},
    {"tp-dp", GEN_DENSE, "tp-dp", EMBD_NONE},
    {"tp-dp-cp", GEN_DENSE, "tp-dp-cp", EMBD_NONE},
    {"embd", GEN_DENSE, "pp", EMBD_FIRST_LAST},
    {"pos-embd", GEN_DENSE, "pp", EMBD_FIRST},
    {"ep", GEN_EXPERT, "ep", EMBD_NONE},
    {"etp", GEN_EXPERT, "tp", EMBD_NONE},
    {"etp-ep", GEN_EXPERT, "tp-ep", EMBD_NONE},
    {"etp-ep-pp", GEN_EXPERT, "tp-ep-pp", EMBD_NONE},
    {"edp", GEN_EXPERT, "dp", EMBD_NONE},
};
#define NKINDS ((int)(sizeof(kind_table) / sizeof(kind_table[0])))

const char *const cohort_layout_gen_kinds[] = {
    "tp",   "pp",       "dp", "cp",  "dp-cp",  "tp-pp",     "tp-cp", "tp-dp", "tp-dp-cp",
    "embd", "pos-embd", "ep", "etp", "etp-ep", "etp-ep-pp", "edp",   NULL,
};

/* One generator's view of one token: sizes and strides per order position, and the mask. */
typedef struct {
    int n;
    int size[COHORT_LAYOUT_MAX_DIMS];
    int stride[COHORT_LAYOUT_MAX_DIMS];
    int masked[COHORT_LAYOUT_MAX_DIMS];
    int gsize;   /* members per group */
    int ngroups; /* world / gsize */
} layout_geom_t;

static void layout_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void layout_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    char *p;

    if (err == NULL || errlen == 0) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    /* one line, whatever the user's text held */
    for (p = err; *p != '\0'; p++) {
        if (iscntrl((unsigned char)*p)) {
            *p = '?';
        }
    }
}

static const layout_kind_t *layout_kind_find(const char *kind)
{
    int i;

    if (kind == NULL) {
        return NULL;
    }
    for (i = 0; i < NKINDS; i++) {
        if (strcmp(kind_table[i].kind, kind) == 0) {
            return &kind_table[i];
        }
    }
    return NULL;
}

int cohort_layout_gen_kind_valid(const char *kind)
{
    return layout_kind_find(kind) != NULL;
}

static int layout_order_index(const cohort_layout_spec_t *s, const char *name, size_t len)
{
    int i;

    for (i = 0; i < s->norder; i++) {
        if (strlen(s->order[i]) == len && strncmp(s->order[i], name, len) == 0) {
            return i;
        }
    }
    return -1;
}

/* The spec was validated by cohort_layout_gen_parse(); this only guards against a hand-made one. */
static int layout_geom_init(const cohort_layout_spec_t *s, const layout_kind_t *k, layout_geom_t *g)
{
    const int *sizes;
    const char *t, *dash;
    long long prod = 1;
    int i, idx;

    if (s->norder <= 0 || s->norder > COHORT_LAYOUT_MAX_DIMS || s->world <= 0) {
        return -1;
    }
    sizes = (k->gen == GEN_DENSE) ? s->dense_size : s->expert_size;
    g->n = s->norder;
    for (i = 0; i < g->n; i++) {
        if (sizes[i] <= 0) {
            return -1;
        }
        g->size[i] = sizes[i];
        g->stride[i] = (int)prod;
        g->masked[i] = 0;
        prod *= sizes[i];
        if (prod > s->world) {
            return -1;
        }
    }
    if (prod != s->world) {
        return -1;
    }

    for (t = k->token;; t = dash + 1) {
        dash = strchr(t, '-');
        idx = layout_order_index(s, t, dash ? (size_t)(dash - t) : strlen(t));
        if (idx < 0) {
            return -1;
        }
        g->masked[idx] = 1;
        if (dash == NULL) {
            break;
        }
    }

    g->gsize = 1;
    for (i = 0; i < g->n; i++) {
        if (g->masked[i]) {
            g->gsize *= g->size[i];
        }
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

/* Member @a m of the group starting at @a base, in Megatron's order: first masked dimension
 * fastest. */
static int layout_geom_member(const layout_geom_t *g, int base, int m)
{
    int rank = base, i;

    for (i = 0; i < g->n; i++) {
        if (g->masked[i]) {
            rank += (m % g->size[i]) * g->stride[i];
            m /= g->size[i];
        }
    }
    return rank;
}

static void layout_geom_members(const layout_geom_t *g, int index, int *members)
{
    int base = layout_geom_base(g, index), m;

    for (m = 0; m < g->gsize; m++) {
        members[m] = layout_geom_member(g, base, m);
    }
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

static int layout_embd_members(const layout_kind_t *k, const int *pp_members, int pp_size,
                               int *members)
{
    int first = pp_members[0], last = pp_members[pp_size - 1];

    members[0] = first;
    if (k->embd == EMBD_FIRST || pp_size == 1) {
        return 1;
    }
    members[1] = last;
    return 2;
}

int cohort_layout_ngroups(const cohort_layout_spec_t *s, const char *kind)
{
    const layout_kind_t *k = layout_kind_find(kind);
    layout_geom_t g;

    if (s == NULL || k == NULL || layout_geom_init(s, k, &g) != 0) {
        return 0;
    }
    return g.ngroups;
}

int cohort_layout_group_size(const cohort_layout_spec_t *s, const char *kind)
{
    const layout_kind_t *k = layout_kind_find(kind);
    layout_geom_t g;

    if (s == NULL || k == NULL || layout_geom_init(s, k, &g) != 0) {
        return 0;
    }
    switch (k->embd) {
    case EMBD_FIRST_LAST:
        return (g.gsize == 1) ? 1 : 2;
    case EMBD_FIRST:
        return 1;
    case EMBD_NONE:
    default:
        return g.gsize;
    }
}

int cohort_layout_gen_members(const cohort_layout_spec_t *s, const char *kind, int index,
                              int *members)
{
    const layout_kind_t *k = layout_kind_find(kind);
    layout_geom_t g;

    if (s == NULL || k == NULL || members == NULL || layout_geom_init(s, k, &g) != 0 || index < 0 ||
        index >= g.ngroups) {
        return -1;
    }
    /* embd/pos-embd are computed from the pp group into members[] itself (world entries) */
    layout_geom_members(&g, index, members);
    if (k->embd != EMBD_NONE) {
        return layout_embd_members(k, members, g.gsize, members);
    }
    return g.gsize;
}

int cohort_layout_gen_rank_group(const cohort_layout_spec_t *s, const char *kind, int rank,
                                 int *members)
{
    const layout_kind_t *k = layout_kind_find(kind);
    layout_geom_t g;
    int n;

    if (s == NULL || k == NULL || members == NULL || layout_geom_init(s, k, &g) != 0 || rank < 0 ||
        rank >= s->world) {
        return -1;
    }
    layout_geom_members(&g, layout_geom_index(&g, rank), members);
    if (k->embd == EMBD_NONE) {
        return g.gsize;
    }
    n = layout_embd_members(k, members, g.gsize, members);
    if (members[0] == rank || (n == 2 && members[1] == rank)) {
        return n;
    }
    return 0;
}

/* Group @a index of kind @a k: writes up to @a max members, returns the group's size. */
static int layout_public_members(const layout_kind_t *k, const layout_geom_t *g, int index,
                                 int *members, int max)
{
    int base = layout_geom_base(g, index), n, m;

    if (k->embd != EMBD_NONE) {
        int ends[2] = {layout_geom_member(g, base, 0), layout_geom_member(g, base, g->gsize - 1)};

        n = (k->embd == EMBD_FIRST || g->gsize == 1) ? 1 : 2;
        for (m = 0; m < n && m < max; m++) {
            members[m] = ends[m];
        }
        return n;
    }
    for (m = 0; m < g->gsize && m < max; m++) {
        members[m] = layout_geom_member(g, base, m);
    }
    return g->gsize;
}

cohort_status_t cohort_layout_group_members(const cohort_layout_spec_t *s, const char *kind,
                                            int index, int *members, int max, int *nmembers)
{
    const layout_kind_t *k = layout_kind_find(kind);
    layout_geom_t g;

    if (s == NULL || k == NULL || nmembers == NULL || max < 0 || (members == NULL && max > 0) ||
        layout_geom_init(s, k, &g) != 0 || index < 0 || index >= g.ngroups) {
        return COHORT_ERR_INVALID_ARG;
    }
    *nmembers = layout_public_members(k, &g, index, members, max);
    return COHORT_OK;
}

cohort_status_t cohort_layout_rank_group(const cohort_layout_spec_t *s, const char *kind, int rank,
                                         int *index)
{
    const layout_kind_t *k = layout_kind_find(kind);
    layout_geom_t g;
    int i, ends[2], n;

    if (s == NULL || k == NULL || index == NULL || layout_geom_init(s, k, &g) != 0 || rank < 0 ||
        rank >= s->world) {
        return COHORT_ERR_INVALID_ARG;
    }
    i = layout_geom_index(&g, rank);
    if (k->embd != EMBD_NONE) {
        n = layout_public_members(k, &g, i, ends, 2);
        if (ends[0] != rank && (n < 2 || ends[1] != rank)) {
            i = -1;
        }
    }
    *index = i;
    return COHORT_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Parsing                                                                                      */
/* ------------------------------------------------------------------------------------------ */

enum { KEY_TP, KEY_PP, KEY_CP, KEY_EP, KEY_ETP, KEY_ORDER, KEY_COUNT };
static const char *const key_names[KEY_COUNT] = {"tp", "pp", "cp", "ep", "etp", "order"};

/* How much of a user's text goes into a message. */
#define SHOW 40

static int layout_dim_find(const char *name, size_t len)
{
    int d;

    for (d = 0; d < DIM_COUNT; d++) {
        if (strlen(dim_names[d]) == len && strncasecmp(dim_names[d], name, len) == 0) {
            return d;
        }
    }
    return -1;
}

static cohort_status_t layout_parse_size(const char *key, const char *v, size_t len, int *out,
                                         char *err, size_t errlen)
{
    long long val = 0;
    size_t i = 0;
    int neg = 0;

    if (v[0] == '-' || v[0] == '+') {
        neg = (v[0] == '-');
        i = 1;
    }
    if (i == len) {
        goto err_not_number;
    }
    for (; i < len; i++) {
        if (!isdigit((unsigned char)v[i])) {
            goto err_not_number;
        }
        if (val <= INT_MAX) {
            val = val * 10 + (v[i] - '0');
        }
    }
    if (neg && val != 0) {
        layout_err(err, errlen, "%s must be > 0, got '%.*s'", key, (int)len, v);
        return COHORT_ERR_INVALID_ARG;
    }
    if (val == 0) {
        layout_err(err, errlen, "%s must be > 0, got 0", key);
        return COHORT_ERR_INVALID_ARG;
    }
    if (val > INT_MAX) {
        layout_err(err, errlen, "%s = '%.*s' is too large", key, len > SHOW ? SHOW : (int)len, v);
        return COHORT_ERR_INVALID_ARG;
    }
    *out = (int)val;
    return COHORT_OK;

err_not_number:
    layout_err(err, errlen, "%s = '%.*s' is not a number", key, len > SHOW ? SHOW : (int)len, v);
    return COHORT_ERR_INVALID_ARG;
}

/* Fills dims[] with the order's dimensions as given; *n is how many. */
static cohort_status_t layout_parse_order(const char *v, size_t len, int *dims, int *n, char *err,
                                          size_t errlen)
{
    int shown = len > SHOW ? SHOW : (int)len;
    int seen[DIM_COUNT] = {0};
    size_t start = 0, end;
    int d;

    *n = 0;
    for (;;) {
        for (end = start; end < len && v[end] != '-'; end++) {
        }
        if (end == start) {
            layout_err(err, errlen, "order '%.*s' has an empty name", shown, v);
            return COHORT_ERR_INVALID_ARG;
        }
        d = layout_dim_find(v + start, end - start);
        if (d < 0) {
            layout_err(err, errlen, "order '%.*s' has unknown name '%.*s' (known: tp pp dp cp ep)",
                       shown, v, (end - start) > SHOW ? SHOW : (int)(end - start), v + start);
            return COHORT_ERR_INVALID_ARG;
        }
        if (seen[d]) {
            layout_err(err, errlen, "order '%.*s' names '%s' twice", shown, v, dim_names[d]);
            return COHORT_ERR_INVALID_ARG;
        }
        seen[d] = 1;
        dims[(*n)++] = d;
        if (end == len) {
            return COHORT_OK;
        }
        start = end + 1;
    }
}

/* "a*b*c = N does not divide world size W"; products are formed only while they are <= world. */
static cohort_status_t layout_check_divides(const char *what, int a, int b, int c, int world,
                                            char *err, size_t errlen)
{
    long long prod = a;

    if (prod <= world) {
        prod *= b;
    }
    if (prod <= world) {
        prod *= c;
    }
    if (prod > world) {
        layout_err(err, errlen, "%s exceeds world size %d", what, world);
        return COHORT_ERR_INVALID_ARG;
    }
    if (world % prod != 0) {
        layout_err(err, errlen, "%s = %lld does not divide world size %d", what, prod, world);
        return COHORT_ERR_INVALID_ARG;
    }
    return COHORT_OK;
}

cohort_status_t cohort_layout_gen_parse(const char *spec, int world, cohort_layout_spec_t *out,
                                        char *err, size_t errlen)
{
    int val[KEY_COUNT] = {1, 1, 1, 1, 0, 0};
    int seen[KEY_COUNT] = {0};
    int order[DIM_COUNT] = {DIM_TP, DIM_CP, DIM_EP, DIM_DP, DIM_PP}; /* Megatron's default */
    int norder = DIM_COUNT, ngiven, in_order[DIM_COUNT] = {0};
    int dense[DIM_COUNT], expert[DIM_COUNT];
    const char *p, *item, *eq, *key, *v;
    size_t item_len, key_len, v_len;
    long long before_pp_dense = 1, before_pp_expert = 1;
    cohort_layout_spec_t s;
    cohort_status_t status;
    int i, k, d;

    if (out == NULL) {
        layout_err(err, errlen, "no output spec given");
        return COHORT_ERR_INVALID_ARG;
    }
    if (world <= 0) {
        layout_err(err, errlen, "world size must be > 0, got %d", world);
        return COHORT_ERR_INVALID_ARG;
    }
    if (spec == NULL) {
        spec = "";
    }

    for (p = spec; isspace((unsigned char)*p); p++) {
    }
    /* an empty spec means all defaults; after that every ',' promises another item, so
     * "tp=2," and ",tp=2" are malformed */
    if (*p == '\0') {
        p = NULL;
    }
    while (p != NULL) {
        item = p;
        for (item_len = 0; item[item_len] != '\0' && item[item_len] != ','; item_len++) {
        }
        p = (item[item_len] == ',') ? item + item_len + 1 : NULL;

        /* trim blanks around key and value: "tp = 2, pp=4" is harmless to accept */
        while (item_len > 0 && isspace((unsigned char)item[0])) {
            item++;
            item_len--;
        }
        while (item_len > 0 && isspace((unsigned char)item[item_len - 1])) {
            item_len--;
        }
        eq = memchr(item, '=', item_len);
        if (item_len == 0) {
            layout_err(err, errlen, "malformed spec '%.*s': empty item", SHOW, spec);
            return COHORT_ERR_INVALID_ARG;
        }
        if (eq == NULL) {
            layout_err(err, errlen, "malformed item '%.*s': expected key=value",
                       item_len > SHOW ? SHOW : (int)item_len, item);
            return COHORT_ERR_INVALID_ARG;
        }
        key = item;
        key_len = (size_t)(eq - item);
        while (key_len > 0 && isspace((unsigned char)key[key_len - 1])) {
            key_len--;
        }
        v = eq + 1;
        v_len = (size_t)(item + item_len - v);
        while (v_len > 0 && isspace((unsigned char)v[0])) {
            v++;
            v_len--;
        }
        if (key_len == 0) {
            layout_err(err, errlen, "malformed item '%.*s': missing key",
                       item_len > SHOW ? SHOW : (int)item_len, item);
            return COHORT_ERR_INVALID_ARG;
        }
        for (k = 0; k < KEY_COUNT; k++) {
            if (strlen(key_names[k]) == key_len && strncmp(key_names[k], key, key_len) == 0) {
                break;
            }
        }
        if (k == KEY_COUNT) {
            if (key_len == 2 && strncmp(key, "dp", 2) == 0) {
                layout_err(err, errlen, "unknown key 'dp': dp is derived from the world size");
            } else {
                layout_err(err, errlen, "unknown key '%.*s' (known: tp pp cp ep etp order)",
                           key_len > SHOW ? SHOW : (int)key_len, key);
            }
            return COHORT_ERR_INVALID_ARG;
        }
        if (seen[k]) {
            layout_err(err, errlen, "duplicate key '%s'", key_names[k]);
            return COHORT_ERR_INVALID_ARG;
        }
        seen[k] = 1;
        if (v_len == 0) {
            layout_err(err, errlen, "malformed item '%.*s': %s has no value",
                       item_len > SHOW ? SHOW : (int)item_len, item, key_names[k]);
            return COHORT_ERR_INVALID_ARG;
        }
        if (k == KEY_ORDER) {
            status = layout_parse_order(v, v_len, order, &norder, err, errlen);
        } else {
            status = layout_parse_size(key_names[k], v, v_len, &val[k], err, errlen);
        }
        if (status != COHORT_OK) {
            return status;
        }
    }

    if (!seen[KEY_ETP]) {
        val[KEY_ETP] = val[KEY_TP];
    }
    status =
        layout_check_divides("tp*pp*cp", val[KEY_TP], val[KEY_PP], val[KEY_CP], world, err, errlen);
    if (status != COHORT_OK) {
        return status;
    }
    status = layout_check_divides("etp*ep*pp", val[KEY_ETP], val[KEY_EP], val[KEY_PP], world, err,
                                  errlen);
    if (status != COHORT_OK) {
        return status;
    }

    memset(&s, 0, sizeof(s));
    s.world = world;
    s.tp = val[KEY_TP];
    s.pp = val[KEY_PP];
    s.cp = val[KEY_CP];
    s.ep = val[KEY_EP];
    s.etp = val[KEY_ETP];
    s.dp = world / (s.tp * s.pp * s.cp);
    s.edp = world / (s.etp * s.ep * s.pp);

    /* the two RankGenerators of initialize_model_parallel(): dense has ep = 1, expert cp = 1 */
    dense[DIM_TP] = s.tp;
    dense[DIM_PP] = s.pp;
    dense[DIM_DP] = s.dp;
    dense[DIM_EP] = 1;
    dense[DIM_CP] = s.cp;
    expert[DIM_TP] = s.etp;
    expert[DIM_PP] = s.pp;
    expert[DIM_DP] = s.edp;
    expert[DIM_EP] = s.ep;
    expert[DIM_CP] = 1;

    /* RankGenerator.__init__: a name left out of the order must have size 1 in that generator,
     * and is appended in name_to_size order. Both generators get the same string, so both end
     * with the same order. */
    ngiven = norder;
    for (i = 0; i < ngiven; i++) {
        in_order[order[i]] = 1;
    }
    for (d = 0; d < DIM_COUNT; d++) {
        if (in_order[d]) {
            continue;
        }
        if (dense[d] != 1 || expert[d] != 1) {
            layout_err(err, errlen, "order leaves out %s, whose size is %d (not 1)", dim_names[d],
                       dense[d] != 1 ? dense[d] : expert[d]);
            return COHORT_ERR_INVALID_ARG;
        }
        order[norder++] = d;
    }

    /* initialize_model_parallel()'s own checks on the pair of generators */
    if (order[ngiven - 1] != DIM_PP && s.pp != 1 && s.edp != s.dp) {
        layout_err(err, errlen,
                   "order must end with pp when pp > 1 and expert dp (%d) differs from dp (%d)",
                   s.edp, s.dp);
        return COHORT_ERR_INVALID_ARG;
    }
    for (i = 0; order[i] != DIM_PP; i++) {
        before_pp_dense *= dense[order[i]];
        before_pp_expert *= expert[order[i]];
    }
    if (s.pp != 1 && before_pp_dense != before_pp_expert) {
        layout_err(err, errlen,
                   "order puts %lld dense but %lld expert ranks below pp: the dense and expert "
                   "pipeline groups would differ",
                   before_pp_dense, before_pp_expert);
        return COHORT_ERR_INVALID_ARG;
    }

    s.norder = norder;
    for (i = 0; i < norder; i++) {
        snprintf(s.order[i], sizeof(s.order[i]), "%s", dim_names[order[i]]);
        s.dense_size[i] = dense[order[i]];
        s.expert_size[i] = expert[order[i]];
    }
    *out = s;
    if (err != NULL && errlen > 0) {
        err[0] = '\0';
    }
    return COHORT_OK;
}
