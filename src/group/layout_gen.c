/*
 * Parsing and validating a layout spec against a world size: the keys, their checks and
 * one-line errors, and Megatron's own checks on the pair of RankGenerators. The groups are
 * computed in layout_kind.c.
 */
#include "layout_gen.h"

#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

enum {
    DIM_TP = COHORT_LAYOUT_DIM_TP,
    DIM_PP = COHORT_LAYOUT_DIM_PP,
    DIM_DP = COHORT_LAYOUT_DIM_DP,
    DIM_EP = COHORT_LAYOUT_DIM_EP,
    DIM_CP = COHORT_LAYOUT_DIM_CP,
    DIM_COUNT = COHORT_LAYOUT_DIM_COUNT
};
const char *const cohort_layout_dim_names[COHORT_LAYOUT_DIM_COUNT] = {"tp", "pp", "dp", "ep", "cp"};
#define dim_names cohort_layout_dim_names

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

/* ------------------------------------------------------------------------------------------ */
/* Parsing                                                                                      */
/* ------------------------------------------------------------------------------------------ */

enum { KEY_TP, KEY_PP, KEY_CP, KEY_EP, KEY_ETP, KEY_ORDER, KEY_HCP, KEY_DOPT, KEY_EMBD, KEY_COUNT };
static const char *const key_names[KEY_COUNT] = {"tp",    "pp",  "cp",   "ep",  "etp",
                                                 "order", "hcp", "dopt", "embd"};

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

/* hcp=2x4: hierarchical_context_parallel_sizes, innermost level first. */
static cohort_status_t layout_parse_hcp(const char *v, size_t len, int *sizes, int *n, char *err,
                                        size_t errlen)
{
    size_t start = 0, end;
    cohort_status_t status;

    *n = 0;
    for (;;) {
        for (end = start; end < len && v[end] != 'x'; end++) {
        }
        if (*n == COHORT_LAYOUT_MAX_HCP) {
            layout_err(err, errlen, "hcp '%.*s' has more than %d levels",
                       len > SHOW ? SHOW : (int)len, v, COHORT_LAYOUT_MAX_HCP);
            return COHORT_ERR_INVALID_ARG;
        }
        if (end == start) {
            layout_err(err, errlen, "hcp '%.*s' has an empty size (expected e.g. hcp=2x4)",
                       len > SHOW ? SHOW : (int)len, v);
            return COHORT_ERR_INVALID_ARG;
        }
        status = layout_parse_size("hcp", v + start, end - start, &sizes[*n], err, errlen);
        if (status != COHORT_OK) {
            return status;
        }
        (*n)++;
        if (end == len) {
            return COHORT_OK;
        }
        start = end + 1;
    }
}

/* embd=first+last+3: the pipeline stages holding the word embeddings. */
static cohort_status_t layout_parse_embd(const char *v, size_t len, int *first, int *last,
                                         int *extra, int *nextra, char *err, size_t errlen)
{
    int shown = len > SHOW ? SHOW : (int)len;
    size_t start = 0, end, i;

    *first = *last = 0;
    *nextra = 0;
    for (;;) {
        long long stage = 0;

        for (end = start; end < len && v[end] != '+'; end++) {
        }
        if (end - start == 5 && strncmp(v + start, "first", 5) == 0) {
            *first = 1;
        } else if (end - start == 4 && strncmp(v + start, "last", 4) == 0) {
            *last = 1;
        } else {
            for (i = start; i < end && isdigit((unsigned char)v[i]); i++) {
                stage = stage > INT_MAX ? stage : stage * 10 + (v[i] - '0');
            }
            if (end == start || i != end) {
                layout_err(err, errlen, "embd '%.*s': '%.*s' is not first, last or a stage number",
                           shown, v, (end - start) > SHOW ? SHOW : (int)(end - start), v + start);
                return COHORT_ERR_INVALID_ARG;
            }
            if (*nextra == COHORT_LAYOUT_MAX_EMBD) {
                layout_err(err, errlen, "embd '%.*s' names more than %d stages", shown, v,
                           COHORT_LAYOUT_MAX_EMBD);
                return COHORT_ERR_INVALID_ARG;
            }
            extra[(*nextra)++] = stage > INT_MAX ? INT_MAX : (int)stage;
        }
        if (end == len) {
            return COHORT_OK;
        }
        start = end + 1;
    }
}

/* The keys that refine the groups (hcp, dopt, embd), checked against the sizes. */
static cohort_status_t layout_finish_extras(cohort_layout_spec_t *s, const int *hcp, int nhcp,
                                            int dopt, int dopt_given, int embd_first, int embd_last,
                                            const int *extra, int nextra, int embd_default,
                                            char *err, size_t errlen)
{
    long long prod = 1;
    int i, stage;

    for (i = 0; i < nhcp; i++) {
        prod = prod * hcp[i] > INT_MAX ? (long long)INT_MAX + 1 : prod * hcp[i];
        s->hcp[i] = hcp[i];
    }
    if (nhcp > 0 && prod != s->cp) {
        layout_err(err, errlen, "hcp sizes multiply to %lld, not to cp = %d", prod, s->cp);
        return COHORT_ERR_INVALID_ARG;
    }
    s->nhcp = nhcp;

    if ((s->dp * s->cp) % dopt != 0) {
        layout_err(err, errlen, "dopt = %d does not divide dp*cp = %d", dopt, s->dp * s->cp);
        return COHORT_ERR_INVALID_ARG;
    }
    if (s->edp % dopt != 0) {
        layout_err(err, errlen, "dopt = %d does not divide the expert dp = %d", dopt, s->edp);
        return COHORT_ERR_INVALID_ARG;
    }
    s->dopt = dopt;
    s->dopt_given = dopt_given;

    /* stages as positions in a pp group, ascending and distinct, as Megatron's training
     * script sorts them */
    s->embd_first = embd_first;
    s->embd_last = embd_last;
    s->embd_default = embd_default;
    s->nembd = 0;
    for (i = 0; i < nextra; i++) {
        if (extra[i] >= s->pp) {
            layout_err(err, errlen, "embd stage %d is not below pp = %d", extra[i], s->pp);
            return COHORT_ERR_INVALID_ARG;
        }
    }
    if (embd_first) {
        s->embd[s->nembd++] = 0;
    }
    if (embd_last) {
        s->embd[s->nembd++] = s->pp - 1;
    }
    for (i = 0; i < nextra; i++) {
        s->embd[s->nembd++] = extra[i];
    }
    /* insertion sort, dropping repeats (first and last are one stage when pp == 1) */
    for (i = 1, stage = 1; i < s->nembd; i++) {
        int v = s->embd[i], j = stage, dup = 0;

        for (int k = 0; k < stage; k++) {
            dup |= s->embd[k] == v;
        }
        if (dup) {
            continue;
        }
        while (j > 0 && s->embd[j - 1] > v) {
            s->embd[j] = s->embd[j - 1];
            j--;
        }
        s->embd[j] = v;
        stage++;
    }
    s->nembd = s->nembd > 0 ? stage : 0;
    return COHORT_OK;
}

cohort_status_t cohort_layout_gen_parse(const char *spec, int world, cohort_layout_spec_t *out,
                                        char *err, size_t errlen)
{
    int val[KEY_COUNT] = {1, 1, 1, 1, 0, 0, 0, 1, 0};
    int hcp[COHORT_LAYOUT_MAX_HCP], nhcp = 0;
    int embd_first = 1, embd_last = 1, embd_extra[COHORT_LAYOUT_MAX_EMBD], nembd_extra = 0;
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
                layout_err(err, errlen,
                           "unknown key '%.*s' (known: tp pp cp ep etp order hcp dopt embd)",
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
        } else if (k == KEY_HCP) {
            status = layout_parse_hcp(v, v_len, hcp, &nhcp, err, errlen);
        } else if (k == KEY_EMBD) {
            status = layout_parse_embd(v, v_len, &embd_first, &embd_last, embd_extra, &nembd_extra,
                                       err, errlen);
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
    s.norder_given = ngiven;
    for (i = 0; i < norder; i++) {
        snprintf(s.order[i], sizeof(s.order[i]), "%s", dim_names[order[i]]);
        s.order_dim[i] = order[i];
        s.dense_size[i] = dense[order[i]];
        s.expert_size[i] = expert[order[i]];
    }
    status = layout_finish_extras(&s, hcp, nhcp, val[KEY_DOPT], seen[KEY_DOPT], embd_first,
                                  embd_last, embd_extra, nembd_extra, !seen[KEY_EMBD], err, errlen);
    if (status != COHORT_OK) {
        return status;
    }
    *out = s;
    if (err != NULL && errlen > 0) {
        err[0] = '\0';
    }
    return COHORT_OK;
}
