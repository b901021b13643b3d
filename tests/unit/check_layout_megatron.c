/*
 * The layout groups beyond the 16 named kinds, through the public arithmetic of cohort.h:
 * tokens of either decomposition ("expert:tp-ep", "dense:dp-cp"), hierarchical cp (hcp=),
 * distributed-optimizer instances (dopt=) and the embedding rule (embd=). Hand-worked layouts
 * (Megatron's create_hierarchical_groups docstring among them), every new parse error, and a
 * brute-force comparison of every token of both decompositions, and of the derived kinds,
 * against an independent construction over many specs.
 */
#include <check.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cohort.h>

#define MAXW 64

static cohort_layout_spec_t *parse_ok(const char *text, int world)
{
    cohort_layout_spec_t *s = NULL;
    char err[256] = "sentinel";

    ck_assert_msg(cohort_layout_spec_parse(text, world, &s, err, sizeof(err)) == COHORT_OK,
                  "%s at %d: %s", text, world, err);
    return s;
}

/* The groups of @a kind must be exactly @a expect (ngroups rows of gsize), in this order, and
 * every member's rank_group must name its row. */
static void expect_groups(const cohort_layout_spec_t *s, const char *kind, int ngroups, int gsize,
                          const int *expect)
{
    int m[MAXW], n, index;

    ck_assert_msg(cohort_layout_ngroups(s, kind) == ngroups, "%s: %d groups, expected %d", kind,
                  cohort_layout_ngroups(s, kind), ngroups);
    ck_assert_int_eq(cohort_layout_group_size(s, kind), gsize);
    for (int g = 0; g < ngroups; g++) {
        ck_assert_int_eq(cohort_layout_group_members(s, kind, g, m, MAXW, &n), COHORT_OK);
        ck_assert_int_eq(n, gsize);
        for (int i = 0; i < gsize; i++) {
            ck_assert_msg(m[i] == expect[g * gsize + i], "%s group %d member %d: %d, expected %d",
                          kind, g, i, m[i], expect[g * gsize + i]);
            ck_assert_int_eq(cohort_layout_rank_group(s, kind, m[i], &index), COHORT_OK);
            ck_assert_msg(index == g, "%s: rank %d in group %d, expected %d", kind, m[i], index, g);
        }
    }
    ck_assert_int_eq(cohort_layout_group_members(s, kind, ngroups, m, MAXW, &n),
                     COHORT_ERR_INVALID_ARG);
}

static int spec_has_kind(const cohort_layout_spec_t *s, const char *kind)
{
    for (int i = 0; i < cohort_layout_spec_kind_count(s); i++) {
        if (strcmp(cohort_layout_spec_kind_name(s, i), kind) == 0) {
            return 1;
        }
    }
    return 0;
}

/* create_hierarchical_groups()' docstring: 16 ranks, sizes [2, 2, 4]. */
START_TEST(test_hcp_megatron_docstring)
{
    static const int l0[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    static const int l1[] = {0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15};
    static const int l2[] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};
    cohort_layout_spec_t *s = parse_ok("cp=16,hcp=2x2x4", 16);

    ck_assert_int_eq(cohort_layout_spec_size(s, "hcp"), 3);
    expect_groups(s, "hcp0", 8, 2, l0);
    expect_groups(s, "hcp1", 8, 2, l1);
    expect_groups(s, "hcp2", 4, 4, l2);
    ck_assert_int_eq(cohort_layout_ngroups(s, "hcp3"), 0);
    ck_assert(spec_has_kind(s, "hcp2") && !spec_has_kind(s, "hcp3"));
    ck_assert_int_eq(cohort_layout_spec_kind_count(s), cohort_layout_kind_count() + 3);
    cohort_layout_spec_free(s);
}
END_TEST

/* tp=2, cp=4 on 16 ranks: cp groups [0,2,4,6] [1,3,5,7] [8,10,12,14] [9,11,13,15], each split
 * by hcp=2x2 first into neighbours, then into strided pairs. */
START_TEST(test_hcp_inside_cp_groups)
{
    static const int cp[] = {0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15};
    static const int l0[] = {0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15};
    static const int l1[] = {0, 4, 2, 6, 1, 5, 3, 7, 8, 12, 10, 14, 9, 13, 11, 15};
    cohort_layout_spec_t *s = parse_ok("tp=2,cp=4,hcp=2x2", 16);

    expect_groups(s, "cp", 4, 4, cp);
    expect_groups(s, "hcp0", 8, 2, l0);
    expect_groups(s, "hcp1", 8, 2, l1);
    cohort_layout_spec_free(s);
    /* one level is the cp group itself */
    s = parse_ok("tp=2,cp=4,hcp=4", 16);
    expect_groups(s, "hcp0", 4, 4, cp);
    cohort_layout_spec_free(s);
}
END_TEST

/* tp=2, dopt=2 on 16 ranks: dp = edp = 8; each data-parallel group of 8 splits into two
 * instances of 4 (intra), and the ranks at the same place of each instance pair up (inter);
 * an instance is 4 consecutive expert tp-ep-pp groups. */
START_TEST(test_dopt_hand_worked)
{
    static const int intra[] = {0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15};
    static const int inter[] = {0, 8, 2, 10, 4, 12, 6, 14, 1, 9, 3, 11, 5, 13, 7, 15};
    static const int inst[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    cohort_layout_spec_t *s = parse_ok("tp=2,dopt=2", 16);

    ck_assert_int_eq(cohort_layout_spec_size(s, "dopt"), 2);
    expect_groups(s, "intra-dp-cp", 4, 4, intra);
    expect_groups(s, "intra-edp", 4, 4, intra);
    expect_groups(s, "inter-edp", 8, 2, inter);
    expect_groups(s, "dopt-instance", 2, 8, inst);
    ck_assert(spec_has_kind(s, "intra-dp-cp") && spec_has_kind(s, "inter-edp") &&
              spec_has_kind(s, "dopt-instance"));
    cohort_layout_spec_free(s);

    /* ep=2, etp=1: expert tp-ep-pp groups are the ep pairs; dense dp-cp is the world */
    s = parse_ok("ep=2,etp=1,dopt=2", 16);
    {
        static const int dpcp[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
        static const int edp_intra[] = {0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15};

        expect_groups(s, "intra-dp-cp", 2, 8, dpcp);
        expect_groups(s, "intra-edp", 4, 4, edp_intra);
        expect_groups(s, "dopt-instance", 2, 8, dpcp);
    }
    cohort_layout_spec_free(s);

    /* dopt=1: only the instance group (the whole world, in tp-ep-pp group order) is added */
    s = parse_ok("tp=2,pp=2,dopt=1", 8);
    {
        static const int world[] = {0, 1, 4, 5, 2, 3, 6, 7};

        expect_groups(s, "dopt-instance", 1, 8, world);
        ck_assert(spec_has_kind(s, "dopt-instance") && !spec_has_kind(s, "intra-edp"));
        ck_assert_int_eq(cohort_layout_spec_kind_count(s), cohort_layout_kind_count() + 1);
    }
    cohort_layout_spec_free(s);
    s = parse_ok("tp=2,pp=2", 8);
    ck_assert_int_eq(cohort_layout_spec_kind_count(s), cohort_layout_kind_count());
    cohort_layout_spec_free(s);
}
END_TEST

/* pp=4, tp=2 on 8 ranks: pipelines [0,2,4,6] and [1,3,5,7]. */
START_TEST(test_embd_rule)
{
    static const struct {
        const char *spec;
        int gsize;
        int expect[6];
    } cases[] = {
        {"tp=2,pp=4", 2, {0, 6, 1, 7}},
        {"tp=2,pp=4,embd=first+last", 2, {0, 6, 1, 7}},
        {"tp=2,pp=4,embd=first", 1, {0, 1}},
        {"tp=2,pp=4,embd=last", 1, {6, 7}},
        {"tp=2,pp=4,embd=first+last+2", 3, {0, 4, 6, 1, 5, 7}},
        {"tp=2,pp=4,embd=2+first", 2, {0, 4, 1, 5}},
        {"tp=2,pp=4,embd=last+3+3", 1, {6, 7}},
        {"tp=2,pp=4,embd=1+2", 2, {2, 4, 3, 5}},
    };
    static const int pos[] = {0, 1};
    int index;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cohort_layout_spec_t *s = parse_ok(cases[i].spec, 8);
        char text[128];

        expect_groups(s, "embd", 2, cases[i].gsize, cases[i].expect);
        expect_groups(s, "pos-embd", 2, 1, pos);
        /* a stage outside the rule is in no group */
        for (int r = 0; r < 8; r++) {
            int in = 0;

            for (int j = 0; j < 2 * cases[i].gsize; j++) {
                in |= cases[i].expect[j] == r;
            }
            ck_assert_int_eq(cohort_layout_rank_group(s, "embd", r, &index), COHORT_OK);
            ck_assert_int_eq(index >= 0, in);
        }
        /* the text keeps the rule */
        cohort_layout_spec_text(s, text, sizeof(text));
        {
            cohort_layout_spec_t *back = parse_ok(text, 8);

            expect_groups(back, "embd", 2, cases[i].gsize, cases[i].expect);
            cohort_layout_spec_free(back);
        }
        cohort_layout_spec_free(s);
    }
    /* one stage: first and last are the same rank */
    {
        static const int one[] = {0, 1};
        cohort_layout_spec_t *s = parse_ok("embd=first+last", 2);

        expect_groups(s, "embd", 2, 1, one);
        cohort_layout_spec_free(s);
    }
}
END_TEST

START_TEST(test_tokens_hand_worked)
{
    /* tp=2, pp=2, ep=2, etp=1 on 8 ranks, default order tp-cp-ep-dp-pp */
    static const int etp_ep[] = {0, 1, 2, 3, 4, 5, 6, 7};
    static const int ep[] = {0, 1, 2, 3, 4, 5, 6, 7};
    static const int dense_dp_pp[] = {0, 2, 4, 6, 1, 3, 5, 7};
    cohort_layout_spec_t *s = parse_ok("tp=2,pp=2,ep=2,etp=1", 8);
    int m[8], m2[8], n, n2;

    expect_groups(s, "ep", 4, 2, ep);
    expect_groups(s, "expert:ep", 4, 2, ep);
    expect_groups(s, "expert:tp-ep", 4, 2, etp_ep);
    expect_groups(s, "dense:dp-pp", 2, 4, dense_dp_pp);
    expect_groups(s, "dense:pp-dp", 2, 4, dense_dp_pp);
    /* a name of size 1 in that generator: singletons */
    ck_assert_int_eq(cohort_layout_ngroups(s, "dense:ep"), 8);
    ck_assert_int_eq(cohort_layout_ngroups(s, "expert:cp"), 8);
    ck_assert_int_eq(cohort_layout_group_size(s, "expert:tp-cp"), 1);
    /* every named kind is its token */
    static const char *const same[][2] = {
        {"tp", "dense:tp"},   {"dp-cp", "dense:cp-dp"},   {"tp-dp-cp", "dense:cp-tp-dp"},
        {"etp", "expert:tp"}, {"etp-ep", "expert:ep-tp"}, {"etp-ep-pp", "expert:pp-ep-tp"},
        {"edp", "expert:dp"}, {"tp-pp", "dense:tp-pp"},
    };
    for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
        ck_assert_int_eq(cohort_layout_ngroups(s, same[i][0]),
                         cohort_layout_ngroups(s, same[i][1]));
        for (int g = 0; g < cohort_layout_ngroups(s, same[i][0]); g++) {
            ck_assert_int_eq(cohort_layout_group_members(s, same[i][0], g, m, 8, &n), COHORT_OK);
            ck_assert_int_eq(cohort_layout_group_members(s, same[i][1], g, m2, 8, &n2), COHORT_OK);
            ck_assert(n == n2 && memcmp(m, m2, sizeof(int) * (size_t)n) == 0);
        }
    }
    /* bad tokens */
    static const char *const bad[] = {"dense:",       "expert:",  "dense:tp-tp", "dense:xx",
                                      "sparse:tp",    "dense:TP", "dense:tp-",   "dense:-tp",
                                      "dense:tp--pp", "hcp0",     "Dense:tp",    "dense:etp"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(cohort_layout_ngroups(s, bad[i]) == 0, "'%s' accepted", bad[i]);
        ck_assert_int_eq(cohort_layout_group_members(s, bad[i], 0, m, 8, &n),
                         COHORT_ERR_INVALID_ARG);
        ck_assert_int_eq(cohort_layout_rank_group(s, bad[i], 0, &n), COHORT_ERR_INVALID_ARG);
    }
    cohort_layout_spec_free(s);
}
END_TEST

START_TEST(test_new_keys_bad)
{
    static const struct {
        const char *spec;
        int world;
        const char *msg;
    } bad[] = {
        {"cp=2,hcp=2x2", 8, "hcp sizes multiply to 4, not to cp = 2"},
        {"cp=4,hcp=2", 8, "hcp sizes multiply to 2, not to cp = 4"},
        {"hcp=2", 8, "hcp sizes multiply to 2, not to cp = 1"},
        {"cp=4,hcp=0x4", 8, "hcp must be > 0, got 0"},
        {"cp=4,hcp=2xx2", 8, "hcp '2xx2' has an empty size (expected e.g. hcp=2x4)"},
        {"cp=4,hcp=2x", 8, "hcp '2x' has an empty size (expected e.g. hcp=2x4)"},
        {"cp=4,hcp=2*2", 8, "hcp = '2*2' is not a number"},
        {"cp=1,hcp=1x1x1x1x1x1x1", 8, "hcp '1x1x1x1x1x1x1' has more than 6 levels"},
        {"cp=2,hcp=2,hcp=2", 8, "duplicate key 'hcp'"},
        {"tp=2,dopt=4", 12, "dopt = 4 does not divide dp*cp = 6"},
        {"ep=4,etp=1,dopt=8", 16, "dopt = 8 does not divide the expert dp = 4"},
        {"dopt=0", 8, "dopt must be > 0, got 0"},
        {"dopt=", 8, "malformed item 'dopt=': dopt has no value"},
        {"pp=4,embd=4", 8, "embd stage 4 is not below pp = 4"},
        {"pp=4,embd=first+", 8, "embd 'first+': '' is not first, last or a stage number"},
        {"pp=4,embd=middle", 8, "embd 'middle': 'middle' is not first, last or a stage number"},
        {"pp=4,embd=-1", 8, "embd '-1': '-1' is not first, last or a stage number"},
        {"pp=4,embd=First", 8, "embd 'First': 'First' is not first, last or a stage number"},
        {"pp=4,embd=first,last", 8, "malformed item 'last': expected key=value"},
        {"pp=4,embd=99999999999", 8, "embd stage 2147483647 is not below pp = 4"},
    };
    cohort_layout_spec_t *untouched = (cohort_layout_spec_t *)&bad, *out;
    char err[256];

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        out = untouched;
        ck_assert_msg(cohort_layout_spec_parse(bad[i].spec, bad[i].world, &out, err, sizeof(err)) ==
                          COHORT_ERR_INVALID_ARG,
                      "'%s' accepted", bad[i].spec);
        ck_assert_ptr_eq(out, untouched);
        ck_assert_msg(strcmp(err, bad[i].msg) == 0, "'%s': got '%s', expected '%s'", bad[i].spec,
                      err, bad[i].msg);
    }
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* Brute force: an independent construction                                                    */
/* ------------------------------------------------------------------------------------------ */

/* Dimension names as cohort_layout_spec_size() knows them, per generator. */
static const char *const dims[5] = {"tp", "pp", "dp", "ep", "cp"};

typedef struct {
    int world, n;
    int dim[5];  /* dimension index per order position */
    int size[5]; /* its size */
} oracle_t;

static void oracle_init(oracle_t *o, const cohort_layout_spec_t *s, int expert)
{
    char text[256], *order;
    int sz[5], seen[5] = {0};

    sz[0] = cohort_layout_spec_size(s, expert ? "etp" : "tp");
    sz[1] = cohort_layout_spec_size(s, "pp");
    sz[2] = cohort_layout_spec_size(s, expert ? "edp" : "dp");
    sz[3] = expert ? cohort_layout_spec_size(s, "ep") : 1;
    sz[4] = expert ? 1 : cohort_layout_spec_size(s, "cp");
    o->world = cohort_layout_spec_size(s, "world");
    /* the order as the spec's text gives it, completed as RankGenerator does: the names left
     * out appended in name_to_size order (tp, pp, dp, ep, cp) */
    cohort_layout_spec_text(s, text, sizeof(text));
    order = strstr(text, "order=") + 6;
    o->n = 0;
    for (char *t = strtok(order, "-,"); t != NULL && o->n < 5; t = strtok(NULL, "-,")) {
        for (int d = 0; d < 5; d++) {
            if (strcmp(t, dims[d]) == 0) {
                o->dim[o->n] = d;
                o->size[o->n++] = sz[d];
                seen[d] = 1;
            }
        }
    }
    for (int d = 0; d < 5; d++) {
        if (!seen[d]) {
            ck_assert_int_eq(sz[d], 1);
            o->dim[o->n] = d;
            o->size[o->n++] = 1;
        }
    }
    ck_assert_int_eq(o->n, 5);
}

/* Coordinate of @a rank along dimension @a d. */
static int oracle_coord(const oracle_t *o, int rank, int d)
{
    for (int i = 0; i < o->n; i++) {
        if (o->dim[i] == d) {
            return rank % o->size[i];
        }
        rank /= o->size[i];
    }
    return -1;
}

/* The groups of a mask, as Megatron defines them: ranks that agree outside the mask, ascending
 * (first masked dimension fastest is ascending rank order); groups ordered by smallest member.
 * Returns the number of groups; groups[g * gsize + j]. */
static int oracle_groups(const oracle_t *o, unsigned mask, int *groups, int *gsize)
{
    int owner[MAXW], ng = 0, n;

    for (int r = 0; r < o->world; r++) {
        owner[r] = -1;
    }
    *gsize = 0;
    for (int r = 0; r < o->world; r++) {
        if (owner[r] >= 0) {
            continue;
        }
        n = 0;
        for (int x = r; x < o->world; x++) {
            int same = 1;

            for (int d = 0; d < 5 && same; d++) {
                same = ((mask >> d) & 1u) || oracle_coord(o, x, d) == oracle_coord(o, r, d);
            }
            if (same) {
                owner[x] = ng;
                groups[ng * o->world + n++] = x; /* rows of world entries while sizes settle */
            }
        }
        ck_assert(*gsize == 0 || *gsize == n);
        *gsize = n;
        ng++;
    }
    /* compact the rows */
    for (int g = 0; g < ng; g++) {
        memmove(groups + g * *gsize, groups + g * o->world, sizeof(int) * (size_t)*gsize);
    }
    return ng;
}

/* The public arithmetic must give exactly these groups, in this order. */
static void oracle_compare(const cohort_layout_spec_t *s, const char *kind, const int *groups,
                           int ng, int gsize, const char *what)
{
    int m[MAXW], n, index;

    if (cohort_layout_ngroups(s, kind) != ng || cohort_layout_group_size(s, kind) != gsize) {
        ck_abort_msg("%s %s: %d groups of %d, oracle %d of %d", what, kind,
                     cohort_layout_ngroups(s, kind), cohort_layout_group_size(s, kind), ng, gsize);
    }
    for (int g = 0; g < ng; g++) {
        if (cohort_layout_group_members(s, kind, g, m, MAXW, &n) != COHORT_OK || n != gsize ||
            memcmp(m, groups + g * gsize, sizeof(int) * (size_t)gsize) != 0) {
            ck_abort_msg("%s %s: group %d differs from the oracle", what, kind, g);
        }
        for (int j = 0; j < gsize; j++) {
            if (cohort_layout_rank_group(s, kind, m[j], &index) != COHORT_OK || index != g) {
                ck_abort_msg("%s %s: rank %d in group %d, oracle %d", what, kind, m[j], index, g);
            }
        }
    }
}

/* Megatron's create_hierarchical_groups(ranks, sizes) for one level, on a list: positions
 * (l s u) regrouped as (l u) s. */
static int oracle_split(const int *ranks, int len, int s_, int u, int *out)
{
    int l = len / (s_ * u), k = 0;

    for (int li = 0; li < l; li++) {
        for (int ui = 0; ui < u; ui++) {
            for (int si = 0; si < s_; si++) {
                out[k++] = ranks[li * s_ * u + si * u + ui];
            }
        }
    }
    return l * u;
}

static int oracle_check_spec(const char *text, int world)
{
    cohort_layout_spec_t *s = NULL;
    static int groups[MAXW * MAXW], sub[MAXW * MAXW];
    char err[256], kind[40], what[300];
    int ng, gsize, tokens = 0;

    if (cohort_layout_spec_parse(text, world, &s, err, sizeof(err)) != COHORT_OK) {
        return 0;
    }
    snprintf(what, sizeof(what), "%s at %d:", text, world);
    for (int expert = 0; expert < 2; expert++) {
        oracle_t o;

        oracle_init(&o, s, expert);
        for (unsigned mask = 1; mask < 32; mask++) {
            int len = snprintf(kind, sizeof(kind), "%s:", expert ? "expert" : "dense");

            /* spell the token in reverse name order: the order of names must not matter */
            for (int d = 4, first = 1; d >= 0; d--) {
                if ((mask >> d) & 1u) {
                    len += snprintf(kind + len, sizeof(kind) - (size_t)len, "%s%s",
                                    first ? "" : "-", dims[d]);
                    first = 0;
                }
            }
            ng = oracle_groups(&o, mask, groups, &gsize);
            oracle_compare(s, kind, groups, ng, gsize, what);
            tokens++;
        }

        /* derived kinds, built from the oracle's base groups as Megatron builds them */
        if (!expert) {
            int cp = cohort_layout_spec_size(s, "cp"), dopt = cohort_layout_spec_size(s, "dopt");
            int nb, bs, total = 0;

            nb = oracle_groups(&o, 1u << 4 | 1u << 2, groups, &bs); /* dp-cp */
            for (int b = 0; b < nb; b++) {
                total += oracle_split(groups + b * bs, bs, bs / dopt, 1, sub + total * (bs / dopt));
            }
            oracle_compare(s, "intra-dp-cp", sub, total, bs / dopt, what);

            nb = oracle_groups(&o, 1u << 4, groups, &bs); /* cp */
            ck_assert_int_eq(bs, cp);
            for (int level = 0, u = 1; level < cohort_layout_spec_size(s, "hcp"); level++) {
                int sz = 0;

                /* the level's size, from the ranks apart: the hcp text of the spec */
                char t[256], *h;

                cohort_layout_spec_text(s, t, sizeof(t));
                h = strstr(t, "hcp=") + 4;
                for (int i = 0; i <= level; i++) {
                    sz = (int)strtol(h, &h, 10);
                    h += (*h == 'x');
                }
                total = 0;
                for (int b = 0; b < nb; b++) {
                    total += oracle_split(groups + b * bs, bs, sz, u, sub + total * sz);
                }
                snprintf(kind, sizeof(kind), "hcp%d", level);
                oracle_compare(s, kind, sub, total, sz, what);
                u *= sz;
            }
        } else {
            int dopt = cohort_layout_spec_size(s, "dopt"), nb, bs, total = 0;

            nb = oracle_groups(&o, 1u << 2, groups, &bs); /* expert dp */
            for (int b = 0; b < nb; b++) {
                total += oracle_split(groups + b * bs, bs, bs / dopt, 1, sub + total * (bs / dopt));
            }
            oracle_compare(s, "intra-edp", sub, total, bs / dopt, what);
            total = 0;
            for (int b = 0; b < nb; b++) {
                total += oracle_split(groups + b * bs, bs, dopt, bs / dopt, sub + total * dopt);
            }
            oracle_compare(s, "inter-edp", sub, total, dopt, what);

            /* instances: consecutive tp-ep-pp groups, concatenated */
            nb = oracle_groups(&o, 1u << 0 | 1u << 3 | 1u << 1, groups, &bs);
            oracle_compare(s, "dopt-instance", groups, dopt, bs * (nb / dopt), what);
        }
    }
    ck_assert_int_eq(tokens, 62);
    cohort_layout_spec_free(s);
    return 1;
}

START_TEST(test_oracle_tokens_and_derived)
{
    static const char *const orders[] = {"tp-cp-ep-dp-pp", "tp-pp-dp",       "tp-dp-pp", "pp-tp-dp",
                                         "ep-tp-dp-pp",    "cp-tp-ep-dp-pp", "dp-pp"};
    static const int worlds[] = {8, 12, 16, 24, 32};
    int valid = 0, tried = 0;
    char text[160];

    for (size_t w = 0; w < sizeof(worlds) / sizeof(worlds[0]); w++) {
        for (int tp = 1; tp <= 4; tp *= 2) {
            for (int pp = 1; pp <= 4; pp *= 2) {
                for (int cp = 1; cp <= 4; cp *= 2) {
                    for (int ep = 1; ep <= 4; ep *= 2) {
                        for (int etp = 1; etp <= tp; etp *= 2) {
                            for (size_t o = 0; o < sizeof(orders) / sizeof(orders[0]); o++) {
                                int dopt = (tp + pp + cp + ep + (int)o) % 3 == 0 ? 2 : 1;
                                const char *hcp = cp == 4
                                                      ? ((tp + (int)o) % 2 ? ",hcp=2x2" : ",hcp=4")
                                                  : cp == 2 ? ",hcp=2"
                                                            : "";

                                snprintf(text, sizeof(text),
                                         "tp=%d,pp=%d,cp=%d,ep=%d,etp=%d,order=%s%s,dopt=%d", tp,
                                         pp, cp, ep, etp, orders[o], hcp, dopt);
                                tried++;
                                valid += oracle_check_spec(text, worlds[w]);
                            }
                        }
                    }
                }
            }
        }
    }
    /* enough of the sweep is valid to mean something */
    ck_assert_msg(valid > 300, "only %d of %d specs valid", valid, tried);
}
END_TEST

static Suite *layout_megatron_suite(void)
{
    Suite *s = suite_create("layout_megatron");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_hcp_megatron_docstring);
    tcase_add_test(tc, test_hcp_inside_cp_groups);
    tcase_add_test(tc, test_dopt_hand_worked);
    tcase_add_test(tc, test_embd_rule);
    tcase_add_test(tc, test_tokens_hand_worked);
    tcase_add_test(tc, test_new_keys_bad);
    tcase_add_test(tc, test_oracle_tokens_and_derived);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(layout_megatron_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
