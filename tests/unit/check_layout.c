/*
 * Unit tests of the Megatron-style layout arithmetic (src/group/layout_gen.c): hand-worked
 * layouts, Megatron's own documented examples, every parse error, a brute-force oracle over
 * small worlds and every order, and the 16,384-rank layout the design quotes.
 */
#include <check.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group/layout_gen.h"

#define ERRLEN 256

static cohort_layout_spec_t parse_ok(const char *spec, int world)
{
    cohort_layout_spec_t s;
    char err[ERRLEN] = "sentinel";
    cohort_status_t st = cohort_layout_gen_parse(spec, world, &s, err, sizeof(err));

    ck_assert_msg(st == COHORT_OK, "spec '%s' world %d: %d (%s)", spec ? spec : "(null)", world, st,
                  err);
    ck_assert_str_eq(err, "");
    return s;
}

/* Groups of @a kind must be exactly @a expect (ngroups rows of gsize), in Megatron's order, and
 * rank_group must give each member's row. */
static void expect_groups(const cohort_layout_spec_t *s, const char *kind, int ngroups, int gsize,
                          const int *expect)
{
    int *m = malloc(sizeof(int) * (size_t)s->world);
    int g, i, n;

    ck_assert_ptr_nonnull(m);
    ck_assert_msg(cohort_layout_ngroups(s, kind) == ngroups, "%s: %d groups, expected %d", kind,
                  cohort_layout_ngroups(s, kind), ngroups);
    ck_assert_int_eq(cohort_layout_group_size(s, kind), gsize);
    for (g = 0; g < ngroups; g++) {
        n = cohort_layout_gen_members(s, kind, g, m);
        ck_assert_msg(n == gsize, "%s group %d: %d members, expected %d", kind, g, n, gsize);
        for (i = 0; i < gsize; i++) {
            ck_assert_msg(m[i] == expect[g * gsize + i], "%s group %d member %d: %d, expected %d",
                          kind, g, i, m[i], expect[g * gsize + i]);
        }
        for (i = 0; i < gsize; i++) {
            int r = expect[g * gsize + i], j;

            ck_assert_int_eq(cohort_layout_gen_rank_group(s, kind, r, m), gsize);
            for (j = 0; j < gsize; j++) {
                ck_assert_msg(m[j] == expect[g * gsize + j], "%s of rank %d: member %d is %d", kind,
                              r, j, m[j]);
            }
        }
    }
    ck_assert_int_eq(cohort_layout_gen_members(s, kind, ngroups, m), -1);
    free(m);
}

/* Every rank in exactly one group of each kind (embd/pos-embd: at most one), and rank_group
 * agrees with group_members. */
static void check_partition(const cohort_layout_spec_t *s)
{
    int *m = malloc(sizeof(int) * (size_t)s->world);
    int *m2 = malloc(sizeof(int) * (size_t)s->world);
    int *owner = malloc(sizeof(int) * (size_t)s->world);
    int k, g, i, n, r;

    ck_assert_ptr_nonnull(m);
    ck_assert_ptr_nonnull(m2);
    ck_assert_ptr_nonnull(owner);
    for (k = 0; cohort_layout_gen_kinds[k] != NULL; k++) {
        const char *kind = cohort_layout_gen_kinds[k];
        int partial = strcmp(kind, "embd") == 0 || strcmp(kind, "pos-embd") == 0;
        int ng = cohort_layout_ngroups(s, kind), gs = cohort_layout_group_size(s, kind);
        int covered = 0;

        ck_assert_int_gt(ng, 0);
        for (i = 0; i < s->world; i++) {
            owner[i] = -1;
        }
        for (g = 0; g < ng; g++) {
            n = cohort_layout_gen_members(s, kind, g, m);
            ck_assert_int_eq(n, gs);
            for (i = 0; i < n; i++) {
                /* plain tests in the hot loops: a passing ck_assert costs a write to the
                 * forked runner, millions of them take seconds */
                if (m[i] < 0 || m[i] >= s->world || owner[m[i]] != -1) {
                    ck_abort_msg("%s group %d: rank %d out of range or already in group %d", kind,
                                 g, m[i], m[i] < 0 || m[i] >= s->world ? -2 : owner[m[i]]);
                }
                owner[m[i]] = g;
                covered++;
            }
        }
        ck_assert_int_eq(covered, partial ? ng * gs : s->world);
        for (r = 0; r < s->world; r++) {
            n = cohort_layout_gen_rank_group(s, kind, r, m);
            if (owner[r] < 0) {
                if (!partial || n != 0) {
                    ck_abort_msg("%s: rank %d in no group, rank_group says %d", kind, r, n);
                }
                continue;
            }
            if (n != gs || cohort_layout_gen_members(s, kind, owner[r], m2) != gs ||
                memcmp(m, m2, sizeof(int) * (size_t)gs) != 0) {
                ck_abort_msg("%s: rank_group(%d) is not group %d", kind, r, owner[r]);
            }
        }
    }
    free(m);
    free(m2);
    free(owner);
}

/* ------------------------------------------------------------------------------------------ */

/* parallel_state.py, initialize_model_parallel() docstring: 16 GPUs, tp=2, pp=4. */
START_TEST(test_megatron_docstring_16)
{
    cohort_layout_spec_t s = parse_ok("tp=2,pp=4", 16);
    static const int tp[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    static const int pp[] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};
    static const int dp[] = {0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15};
    static const int embd[] = {0, 12, 1, 13, 2, 14, 3, 15};
    static const int pos[] = {0, 1, 2, 3};
    static const int tp_pp[] = {0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15};
    static const int tp_dp[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    static const int single[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

    ck_assert_int_eq(s.dp, 2);
    ck_assert_int_eq(s.etp, 2);
    ck_assert_int_eq(s.edp, 2);
    ck_assert_int_eq(s.norder, 5);
    ck_assert_str_eq(s.order[0], "tp");
    ck_assert_str_eq(s.order[1], "cp");
    ck_assert_str_eq(s.order[2], "ep");
    ck_assert_str_eq(s.order[3], "dp");
    ck_assert_str_eq(s.order[4], "pp");
    expect_groups(&s, "tp", 8, 2, tp);
    expect_groups(&s, "pp", 4, 4, pp);
    expect_groups(&s, "dp", 8, 2, dp);
    expect_groups(&s, "dp-cp", 8, 2, dp);
    expect_groups(&s, "cp", 16, 1, single);
    expect_groups(&s, "tp-pp", 2, 8, tp_pp);
    expect_groups(&s, "tp-dp", 4, 4, tp_dp);
    expect_groups(&s, "tp-dp-cp", 4, 4, tp_dp);
    expect_groups(&s, "tp-cp", 8, 2, tp);
    expect_groups(&s, "embd", 4, 2, embd);
    expect_groups(&s, "pos-embd", 4, 1, pos);
    expect_groups(&s, "ep", 16, 1, single);
    expect_groups(&s, "etp", 8, 2, tp);
    expect_groups(&s, "etp-ep", 8, 2, tp);
    expect_groups(&s, "etp-ep-pp", 2, 8, tp_pp);
    expect_groups(&s, "edp", 8, 2, dp);
    check_partition(&s);
}
END_TEST

/* generate_masked_orthogonal_rank_groups() docstrings: sizes [tp, dp, pp] = [2, 3, 4], and
 * 8 GPUs in order tp-pp-dp with every size 2. */
START_TEST(test_megatron_docstring_masked)
{
    cohort_layout_spec_t s = parse_ok("tp=2,pp=4,order=tp-dp-pp", 24);
    static const int dp24[] = {0,  2,  4,  1,  3,  5,  6,  8,  10, 7,  9,  11,
                               12, 14, 16, 13, 15, 17, 18, 20, 22, 19, 21, 23};
    static const int dp8[] = {0, 4, 1, 5, 2, 6, 3, 7};
    static const int pp8[] = {0, 2, 1, 3, 4, 6, 5, 7};
    int m[24];

    ck_assert_int_eq(s.dp, 3);
    expect_groups(&s, "dp", 8, 3, dp24);
    ck_assert_int_eq(cohort_layout_gen_members(&s, "dp", 7, m), 3);
    ck_assert_int_eq(m[0], 19); /* "dp_group[7] = [19, 21, 23]" */
    check_partition(&s);

    s = parse_ok("tp=2,pp=2,order=tp-pp-dp", 8);
    ck_assert_int_eq(s.dp, 2);
    expect_groups(&s, "dp", 4, 2, dp8); /* "[[0, 4], [1, 5], [2, 6], [3, 7]]" */
    expect_groups(&s, "pp", 4, 2, pp8);
    expect_groups(&s, "edp", 4, 2, dp8);
    check_partition(&s);
}
END_TEST

/* World 16, tp=2, pp=2, cp=2, ep=2 (etp = tp = 2): dp = 2, edp = 2. Worked by hand.
 * Dense strides in order tp-cp-ep-dp-pp: tp 1, cp 2, (ep 4, size 1), dp 4, pp 8.
 * Expert sizes tp 2, cp 1, ep 2, dp 2, pp 2, strides 1, 2, 2, 4, 8. */
START_TEST(test_cp_ep_16)
{
    cohort_layout_spec_t s = parse_ok("tp=2,pp=2,cp=2,ep=2", 16);
    static const int tp[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    static const int cp[] = {0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15};
    static const int dp[] = {0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15};
    static const int dp_cp[] = {0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15};
    static const int pp[] = {0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15};
    static const int pos[] = {0, 1, 2, 3, 4, 5, 6, 7};
    static const int tp_pp[] = {0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15};
    static const int tp_cp[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    static const int tp_dp[] = {0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15};
    static const int tp_dp_cp[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    static const int ep[] = {0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15};
    static const int etp_ep[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    static const int etp_ep_pp[] = {0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15};
    static const int edp[] = {0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15};

    ck_assert_int_eq(s.dp, 2);
    ck_assert_int_eq(s.edp, 2);
    expect_groups(&s, "tp", 8, 2, tp);
    expect_groups(&s, "cp", 8, 2, cp);
    expect_groups(&s, "dp", 8, 2, dp);
    expect_groups(&s, "dp-cp", 4, 4, dp_cp);
    expect_groups(&s, "pp", 8, 2, pp);
    expect_groups(&s, "embd", 8, 2, pp);
    expect_groups(&s, "pos-embd", 8, 1, pos);
    expect_groups(&s, "tp-pp", 4, 4, tp_pp);
    expect_groups(&s, "tp-cp", 4, 4, tp_cp);
    expect_groups(&s, "tp-dp", 4, 4, tp_dp);
    expect_groups(&s, "tp-dp-cp", 2, 8, tp_dp_cp);
    expect_groups(&s, "ep", 8, 2, ep);
    expect_groups(&s, "etp", 8, 2, tp);
    expect_groups(&s, "etp-ep", 4, 4, etp_ep);
    expect_groups(&s, "etp-ep-pp", 2, 8, etp_ep_pp);
    expect_groups(&s, "edp", 8, 2, edp);
    check_partition(&s);
}
END_TEST

/* World 16, tp=2, pp=2, cp=2, ep=4, etp=1: edp = 16 / (1*4*2) = 2. Expert sizes in order:
 * tp 1, cp 1, ep 4, dp 2, pp 2, strides 1, 1, 1, 4, 8. */
START_TEST(test_etp_differs)
{
    cohort_layout_spec_t s = parse_ok("tp=2,pp=2,cp=2,ep=4,etp=1", 16);
    static const int ep[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    static const int single[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    static const int edp[] = {0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15};
    static const int etp_ep_pp[] = {0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15};

    ck_assert_int_eq(s.etp, 1);
    ck_assert_int_eq(s.edp, 2);
    expect_groups(&s, "ep", 4, 4, ep);
    expect_groups(&s, "etp", 16, 1, single);
    expect_groups(&s, "etp-ep", 4, 4, ep);
    expect_groups(&s, "etp-ep-pp", 2, 8, etp_ep_pp);
    expect_groups(&s, "edp", 8, 2, edp);
    check_partition(&s);
}
END_TEST

/* pp == 1: the embedding group is the rank alone. */
START_TEST(test_pp1_embd)
{
    cohort_layout_spec_t s = parse_ok("tp=2", 4);
    int m[4], r;

    ck_assert_int_eq(cohort_layout_ngroups(&s, "embd"), 4);
    ck_assert_int_eq(cohort_layout_group_size(&s, "embd"), 1);
    for (r = 0; r < 4; r++) {
        ck_assert_int_eq(cohort_layout_gen_rank_group(&s, "embd", r, m), 1);
        ck_assert_int_eq(m[0], r);
        ck_assert_int_eq(cohort_layout_gen_rank_group(&s, "pos-embd", r, m), 1);
        ck_assert_int_eq(m[0], r);
    }
    check_partition(&s);

    /* pp = 3: the middle stage has no embedding group */
    s = parse_ok("pp=3", 3);
    ck_assert_int_eq(cohort_layout_gen_rank_group(&s, "embd", 0, m), 2);
    ck_assert_int_eq(m[0], 0);
    ck_assert_int_eq(m[1], 2);
    ck_assert_int_eq(cohort_layout_gen_rank_group(&s, "embd", 1, m), 0);
    ck_assert_int_eq(cohort_layout_gen_rank_group(&s, "embd", 2, m), 2);
    ck_assert_int_eq(cohort_layout_gen_rank_group(&s, "pos-embd", 2, m), 0);
    ck_assert_int_eq(cohort_layout_gen_rank_group(&s, "pos-embd", 0, m), 1);
    ck_assert_int_eq(m[0], 0);
}
END_TEST

START_TEST(test_defaults_and_lenient_input)
{
    cohort_layout_spec_t s = parse_ok("", 8);

    ck_assert_int_eq(s.tp, 1);
    ck_assert_int_eq(s.pp, 1);
    ck_assert_int_eq(s.cp, 1);
    ck_assert_int_eq(s.ep, 1);
    ck_assert_int_eq(s.etp, 1);
    ck_assert_int_eq(s.dp, 8);
    ck_assert_int_eq(s.edp, 8);
    s = parse_ok(NULL, 8);
    ck_assert_int_eq(s.dp, 8);
    s = parse_ok(" tp = 2 , pp=2 ", 8);
    ck_assert_int_eq(s.tp, 2);
    ck_assert_int_eq(s.dp, 2);
    s = parse_ok("tp=2,pp=2,cp=2,ep=2,etp=1,order=tp-cp-ep-dp-pp", 16);
    ck_assert_int_eq(s.edp, 4);
    /* Megatron lower-cases the order */
    s = parse_ok("tp=2,order=TP-Cp-ep-DP-pp", 8);
    ck_assert_str_eq(s.order[0], "tp");
    ck_assert_str_eq(s.order[3], "dp");
    /* names left out are appended in Megatron's name_to_size order: tp, pp, dp, ep, cp */
    s = parse_ok("tp=2,pp=2,order=pp-tp", 4);
    ck_assert_int_eq(s.norder, 5);
    ck_assert_str_eq(s.order[0], "pp");
    ck_assert_str_eq(s.order[1], "tp");
    ck_assert_str_eq(s.order[2], "dp");
    ck_assert_str_eq(s.order[3], "ep");
    ck_assert_str_eq(s.order[4], "cp");
    /* order pp-tp: pp varies fastest, so tp groups are [0,2], [1,3] */
    {
        static const int tp[] = {0, 2, 1, 3};
        static const int pp[] = {0, 1, 2, 3};
        expect_groups(&s, "tp", 2, 2, tp);
        expect_groups(&s, "pp", 2, 2, pp);
        check_partition(&s);
    }
}
END_TEST

typedef struct {
    const char *spec;
    int world;
    const char *msg; /* expected exactly, or as a substring when it starts with '~' */
} bad_spec_t;

static const bad_spec_t bad_specs[] = {
    /* sizes that do not divide the world */
    {"tp=3,pp=4", 16, "tp*pp*cp = 12 does not divide world size 16"},
    {"tp=2,cp=3", 16, "tp*pp*cp = 6 does not divide world size 16"},
    {"tp=2,ep=3", 16, "etp*ep*pp = 6 does not divide world size 16"},
    {"tp=2,pp=3,ep=2", 18, "etp*ep*pp = 12 does not divide world size 18"},
    {"tp=2,pp=2,etp=3", 16, "etp*ep*pp = 6 does not divide world size 16"},
    {"tp=32", 16, "tp*pp*cp exceeds world size 16"},
    {"tp=65536,pp=65536,cp=65536", 16, "tp*pp*cp exceeds world size 16"},
    {"ep=32", 16, "etp*ep*pp exceeds world size 16"},
    /* keys */
    {"xx=1", 16, "unknown key 'xx' (known: tp pp cp ep etp order hcp dopt embd)"},
    {"tp=2,TP=2", 16, "~unknown key 'TP'"},
    {"t\np=2", 16, "unknown key 't?p' (known: tp pp cp ep etp order hcp dopt embd)"},
    {"dp=2", 16, "unknown key 'dp': dp is derived from the world size"},
    {"tp=2,tp=2", 16, "duplicate key 'tp'"},
    {"order=tp-pp,order=tp-pp", 16, "duplicate key 'order'"},
    {"etp=1,pp=2,etp=1", 16, "duplicate key 'etp'"},
    /* sizes <= 0 */
    {"tp=0", 16, "tp must be > 0, got 0"},
    {"pp=-2", 16, "pp must be > 0, got '-2'"},
    {"cp=-0", 16, "cp must be > 0, got 0"},
    {"ep=0", 16, "ep must be > 0, got 0"},
    {"etp=-1", 16, "etp must be > 0, got '-1'"},
    /* not numbers */
    {"tp=abc", 16, "tp = 'abc' is not a number"},
    {"tp=2x", 16, "tp = '2x' is not a number"},
    {"tp=1.5", 16, "tp = '1.5' is not a number"},
    {"tp=-", 16, "tp = '-' is not a number"},
    {"tp=2 2", 16, "tp = '2 2' is not a number"},
    {"pp=0x10", 16, "pp = '0x10' is not a number"},
    {"tp=99999999999", 16, "tp = '99999999999' is too large"},
    /* order */
    {"order=tp-xx-pp", 16, "order 'tp-xx-pp' has unknown name 'xx' (known: tp pp dp cp ep)"},
    {"order=tp-etp-pp", 16, "~unknown name 'etp'"},
    {"order=tp-pp-tp", 16, "order 'tp-pp-tp' names 'tp' twice"},
    {"order=tp-cp-ep-dp-pp-tp", 16, "~names 'tp' twice"},
    {"order=tp--pp", 16, "order 'tp--pp' has an empty name"},
    {"order=-tp", 16, "order '-tp' has an empty name"},
    {"order=tp-", 16, "order 'tp-' has an empty name"},
    {"cp=2,order=tp-dp-pp", 16, "order leaves out cp, whose size is 2 (not 1)"},
    {"ep=2,order=tp-cp-dp-pp", 16, "order leaves out ep, whose size is 2 (not 1)"},
    {"pp=2,order=tp-cp-ep-dp", 16, "order leaves out pp, whose size is 2 (not 1)"},
    {"order=tp-cp-ep-pp", 16, "order leaves out dp, whose size is 16 (not 1)"},
    /* Megatron's checks on the pair of generators */
    {"tp=2,pp=2,cp=2,order=tp-pp-cp-ep-dp", 16,
     "order must end with pp when pp > 1 and expert dp (4) differs from dp (2)"},
    {"tp=2,pp=2,cp=2,ep=2,order=cp-pp-tp-ep-dp", 16,
     "order puts 2 dense but 1 expert ranks below pp: the dense and expert pipeline groups "
     "would differ"},
    /* malformed */
    {"tp", 16, "malformed item 'tp': expected key=value"},
    {"tp=2;pp=2", 16, "tp = '2;pp=2' is not a number"},
    {"tp=2,", 16, "malformed spec 'tp=2,': empty item"},
    {",tp=2", 16, "malformed spec ',tp=2': empty item"},
    {"tp=2,,pp=2", 16, "malformed spec 'tp=2,,pp=2': empty item"},
    {",", 16, "malformed spec ',': empty item"},
    {"=2", 16, "malformed item '=2': missing key"},
    {"tp=", 16, "malformed item 'tp=': tp has no value"},
    {"order=", 16, "malformed item 'order=': order has no value"},
    {"order", 16, "malformed item 'order': expected key=value"},
    /* world */
    {"tp=1", 0, "world size must be > 0, got 0"},
    {"tp=1", -4, "world size must be > 0, got -4"},
};

START_TEST(test_bad_spec)
{
    const bad_spec_t *b = &bad_specs[_i];
    cohort_layout_spec_t s, before;
    char err[ERRLEN];
    cohort_status_t st;

    memset(&s, 0x5a, sizeof(s));
    before = s;
    strcpy(err, "untouched");
    st = cohort_layout_gen_parse(b->spec, b->world, &s, err, sizeof(err));
    ck_assert_msg(st == COHORT_ERR_INVALID_ARG, "'%s' world %d: status %d", b->spec, b->world, st);
    ck_assert_msg(strchr(err, '\n') == NULL && err[0] != '\0', "'%s': message '%s'", b->spec, err);
    if (b->msg[0] == '~') {
        ck_assert_msg(strstr(err, b->msg + 1) != NULL, "'%s': '%s' lacks '%s'", b->spec, err,
                      b->msg + 1);
    } else {
        ck_assert_msg(strcmp(err, b->msg) == 0, "'%s': got '%s', expected '%s'", b->spec, err,
                      b->msg);
    }
    ck_assert_mem_eq(&s, &before, sizeof(s)); /* output set only on success */
    /* a NULL or short err buffer is fine */
    ck_assert_int_eq(cohort_layout_gen_parse(b->spec, b->world, &s, NULL, 0),
                     COHORT_ERR_INVALID_ARG);
    ck_assert_int_eq(cohort_layout_gen_parse(b->spec, b->world, &s, err, 8),
                     COHORT_ERR_INVALID_ARG);
    ck_assert_int_le(strlen(err), 7);
}
END_TEST

START_TEST(test_bad_calls)
{
    cohort_layout_spec_t s = parse_ok("tp=2,pp=2", 8);
    int m[8];
    char err[ERRLEN];

    ck_assert_int_eq(cohort_layout_gen_parse("tp=2", 8, NULL, err, sizeof(err)),
                     COHORT_ERR_INVALID_ARG);
    ck_assert_int_eq(cohort_layout_gen_kind_valid("tp"), 1);
    ck_assert_int_eq(cohort_layout_gen_kind_valid("etp-ep-pp"), 1);
    ck_assert_int_eq(cohort_layout_gen_kind_valid("mp"), 0);
    ck_assert_int_eq(cohort_layout_gen_kind_valid("TP"), 0);
    ck_assert_int_eq(cohort_layout_gen_kind_valid(""), 0);
    ck_assert_int_eq(cohort_layout_gen_kind_valid(NULL), 0);
    ck_assert_int_eq(cohort_layout_ngroups(&s, "mp"), 0);
    ck_assert_int_eq(cohort_layout_ngroups(NULL, "tp"), 0);
    ck_assert_int_eq(cohort_layout_ngroups(&s, NULL), 0);
    ck_assert_int_eq(cohort_layout_group_size(&s, "mp"), 0);
    ck_assert_int_eq(cohort_layout_gen_members(&s, "mp", 0, m), -1);
    ck_assert_int_eq(cohort_layout_gen_members(&s, "tp", -1, m), -1);
    ck_assert_int_eq(cohort_layout_gen_members(&s, "tp", 4, m), -1);
    ck_assert_int_eq(cohort_layout_gen_members(&s, "tp", 0, NULL), -1);
    ck_assert_int_eq(cohort_layout_gen_members(NULL, "tp", 0, m), -1);
    ck_assert_int_eq(cohort_layout_gen_rank_group(&s, "mp", 0, m), -1);
    ck_assert_int_eq(cohort_layout_gen_rank_group(&s, "tp", -1, m), -1);
    ck_assert_int_eq(cohort_layout_gen_rank_group(&s, "tp", 8, m), -1);
    ck_assert_int_eq(cohort_layout_gen_rank_group(&s, "tp", 0, NULL), -1);
    ck_assert_int_eq(cohort_layout_gen_rank_group(NULL, "tp", 0, m), -1);
    /* a hand-made spec that does not multiply out to the world is refused, not trusted */
    s.world = 16;
    ck_assert_int_eq(cohort_layout_ngroups(&s, "tp"), 0);
    ck_assert_int_eq(cohort_layout_gen_rank_group(&s, "tp", 0, m), -1);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* Oracle: Megatron's groups, restated. A rank's coordinates are its mixed-radix digits in the  */
/* order (first fastest); the group of token T holding r is every rank agreeing with r outside  */
/* T. Megatron lists members first-masked-fastest, which is ascending, and numbers groups the   */
/* same way over the unmasked digits, which is ascending by smallest member.                    */
/* ------------------------------------------------------------------------------------------ */

enum { O_TP, O_PP, O_DP, O_EP, O_CP, O_N };
static const char *const o_names[O_N] = {"tp", "pp", "dp", "ep", "cp"};

typedef struct {
    int world, n;
    int dim[O_N];  /* order, completed */
    int size[O_N]; /* per order position */
} oracle_gen_t;

static void oracle_coords(const oracle_gen_t *g, int r, int *c)
{
    int i;

    for (i = 0; i < g->n; i++) {
        c[i] = r % g->size[i];
        r /= g->size[i];
    }
}

/* ranks sharing r's digits outside token (dims flags), ascending */
static int oracle_group(const oracle_gen_t *g, const int *in_token, int r, int *out)
{
    int cr[O_N], cq[O_N], q, i, n = 0;

    oracle_coords(g, r, cr);
    for (q = 0; q < g->world; q++) {
        oracle_coords(g, q, cq);
        for (i = 0; i < g->n; i++) {
            if (!in_token[g->dim[i]] && cq[i] != cr[i]) {
                break;
            }
        }
        if (i == g->n) {
            out[n++] = q;
        }
    }
    return n;
}

typedef struct {
    const char *kind;
    int expert;
    int token[O_N]; /* flags by O_* */
    int embd;       /* 0 none, 1 first+last, 2 first */
} oracle_kind_t;

static const oracle_kind_t oracle_kinds[] = {
    {"tp", 0, {[O_TP] = 1}, 0},
    {"pp", 0, {[O_PP] = 1}, 0},
    {"dp", 0, {[O_DP] = 1}, 0},
    {"cp", 0, {[O_CP] = 1}, 0},
    {"dp-cp", 0, {[O_DP] = 1, [O_CP] = 1}, 0},
    {"tp-pp", 0, {[O_TP] = 1, [O_PP] = 1}, 0},
    {"tp-cp", 0, {[O_TP] = 1, [O_CP] = 1}, 0},
    {"tp-dp", 0, {[O_TP] = 1, [O_DP] = 1}, 0},
    {"tp-dp-cp", 0, {[O_TP] = 1, [O_DP] = 1, [O_CP] = 1}, 0},
    {"embd", 0, {[O_PP] = 1}, 1},
    {"pos-embd", 0, {[O_PP] = 1}, 2},
    {"ep", 1, {[O_EP] = 1}, 0},
    {"etp", 1, {[O_TP] = 1}, 0},
    {"etp-ep", 1, {[O_TP] = 1, [O_EP] = 1}, 0},
    {"etp-ep-pp", 1, {[O_TP] = 1, [O_EP] = 1, [O_PP] = 1}, 0},
    {"edp", 1, {[O_DP] = 1}, 0},
};
#define N_ORACLE_KINDS ((int)(sizeof(oracle_kinds) / sizeof(oracle_kinds[0])))

static int oracle_kind_group(const oracle_gen_t *dense, const oracle_gen_t *expert,
                             const oracle_kind_t *k, int r, int *out)
{
    int n = oracle_group(k->expert ? expert : dense, k->token, r, out);

    if (k->embd == 0) {
        return n;
    }
    if (k->embd == 2 || n == 1) {
        n = 1;
    } else {
        out[1] = out[n - 1];
        n = 2;
    }
    return (out[0] == r || (n == 2 && out[1] == r)) ? n : 0;
}

/* All 120 orders of the five names. */
static void oracle_permute(int *perm, int k, char orders[][32], int *n)
{
    int i, t;

    if (k == O_N) {
        snprintf(orders[(*n)++], 32, "%s-%s-%s-%s-%s", o_names[perm[0]], o_names[perm[1]],
                 o_names[perm[2]], o_names[perm[3]], o_names[perm[4]]);
        return;
    }
    for (i = k; i < O_N; i++) {
        t = perm[k], perm[k] = perm[i], perm[i] = t;
        oracle_permute(perm, k + 1, orders, n);
        t = perm[k], perm[k] = perm[i], perm[i] = t;
    }
}

/* Checks one spec against the oracle, validity included. @return 1 when the spec is valid. */
static int oracle_check(int W, int tp, int pp, int cp, int ep, int etp, int etp_given,
                        const char *order)
{
    oracle_gen_t dense, expert;
    int given[O_N], ngiven = 0, in[O_N] = {0}, dsz[O_N], esz[O_N];
    int ok = 1, i, r, k, g, ng, prev;
    int m[64], x[64];
    const char *p;
    char spec[96], err[ERRLEN];
    cohort_layout_spec_t s;
    cohort_status_t st;

    if (etp_given) {
        snprintf(spec, sizeof(spec), "tp=%d,pp=%d,cp=%d,ep=%d,etp=%d,order=%s", tp, pp, cp, ep, etp,
                 order);
    } else {
        snprintf(spec, sizeof(spec), "tp=%d,pp=%d,cp=%d,ep=%d,order=%s", tp, pp, cp, ep, order);
    }
    st = cohort_layout_gen_parse(spec, W, &s, err, sizeof(err));

    /* Megatron's validity, restated: divisibility, RankGenerator's order completion, and
     * initialize_model_parallel()'s two assertions, the second checked by brute force */
    if (W % (tp * pp * cp) != 0 || W % (etp * ep * pp) != 0) {
        if (st != COHORT_ERR_INVALID_ARG) {
            ck_abort_msg("%s world %d accepted", spec, W);
        }
        return 0;
    }
    dsz[O_TP] = tp, dsz[O_PP] = pp, dsz[O_DP] = W / (tp * pp * cp), dsz[O_EP] = 1, dsz[O_CP] = cp;
    esz[O_TP] = etp, esz[O_PP] = pp, esz[O_DP] = W / (etp * ep * pp), esz[O_EP] = ep, esz[O_CP] = 1;
    for (p = order; *p != '\0'; p += (*p == '-')) {
        for (k = 0; k < O_N && strncmp(p, o_names[k], 2) != 0; k++) {
        }
        given[ngiven++] = k;
        in[k] = 1;
        p += 2;
    }
    dense.world = expert.world = W;
    dense.n = expert.n = O_N;
    for (i = 0; i < ngiven; i++) {
        dense.dim[i] = given[i];
    }
    for (k = 0; k < O_N; k++) {
        if (!in[k]) {
            ok = ok && dsz[k] == 1 && esz[k] == 1;
            dense.dim[i++] = k;
        }
    }
    for (i = 0; i < O_N; i++) {
        expert.dim[i] = dense.dim[i];
        dense.size[i] = dsz[dense.dim[i]];
        expert.size[i] = esz[expert.dim[i]];
    }
    ok = ok && (given[ngiven - 1] == O_PP || pp == 1 || esz[O_DP] == dsz[O_DP]);
    for (r = 0; r < W && ok; r++) {
        int pt[O_N] = {[O_PP] = 1};
        int n1 = oracle_group(&dense, pt, r, m), n2 = oracle_group(&expert, pt, r, x);

        ok = n1 == n2 && memcmp(m, x, sizeof(int) * (size_t)n1) == 0;
    }
    if ((st == COHORT_OK) != ok) {
        ck_abort_msg("%s world %d: status %d (%s), oracle says %s", spec, W, st, err,
                     ok ? "valid" : "invalid");
    }
    if (!ok) {
        return 0;
    }

    for (i = 0; i < O_N; i++) {
        if (strcmp(s.order[i], o_names[dense.dim[i]]) != 0) {
            ck_abort_msg("%s: order[%d] = %s, expected %s", spec, i, s.order[i],
                         o_names[dense.dim[i]]);
        }
    }
    for (k = 0; k < N_ORACLE_KINDS; k++) {
        const oracle_kind_t *ok_ = &oracle_kinds[k];

        for (r = 0; r < W; r++) {
            int n1 = oracle_kind_group(&dense, &expert, ok_, r, x);
            int n2 = cohort_layout_gen_rank_group(&s, ok_->kind, r, m);

            if (n1 != n2 || memcmp(m, x, sizeof(int) * (size_t)n1) != 0) {
                ck_abort_msg("%s world %d %s rank %d: %d members, oracle %d, or they differ", spec,
                             W, ok_->kind, r, n2, n1);
            }
        }
        ng = cohort_layout_ngroups(&s, ok_->kind);
        for (g = 0, prev = -1; g < ng; g++) {
            int n = cohort_layout_gen_members(&s, ok_->kind, g, m);

            /* groups are numbered by their smallest member */
            if (n <= 0 || m[0] <= prev || oracle_kind_group(&dense, &expert, ok_, m[0], x) != n ||
                memcmp(m, x, sizeof(int) * (size_t)n) != 0) {
                ck_abort_msg("%s world %d %s group %d differs from the oracle", spec, W, ok_->kind,
                             g);
            }
            prev = m[0];
        }
    }
    return 1;
}

START_TEST(test_oracle_sweep)
{
    static const int worlds[] = {8, 12, 16, 24};
    static const char *const short_orders[] = {"tp-dp-pp", "tp-pp-dp", "pp-tp",
                                               "dp-pp",    "tp-cp-pp", "ep-tp-dp-pp"};
    char orders[120 + 8][32];
    int perm[O_N] = {0, 1, 2, 3, 4}, norders = 0, nshort, combo = 0;
    int w, tp, pp, cp, ep, e, o, valid = 0, tried = 0;

    oracle_permute(perm, 0, orders, &norders);
    ck_assert_int_eq(norders, 120);
    nshort = (int)(sizeof(short_orders) / sizeof(short_orders[0]));
    for (o = 0; o < nshort; o++) {
        snprintf(orders[norders + o], 32, "%s", short_orders[o]);
    }
    for (w = 0; w < 4; w++) {
        for (tp = 1; tp <= 4; tp++) {
            for (pp = 1; pp <= 4; pp++) {
                for (cp = 1; cp <= 4; cp++) {
                    for (ep = 1; ep <= 4; ep++) {
                        for (e = 0; e < 3; e++, combo++) {
                            /* every short order, and a rotating eighth of the full ones */
                            for (o = 0; o < norders + nshort; o++) {
                                if (o < norders && o % 8 != combo % 8) {
                                    continue;
                                }
                                tried++;
                                valid += oracle_check(worlds[w], tp, pp, cp, ep, e ? e : tp, e != 0,
                                                      orders[o]);
                            }
                        }
                    }
                }
            }
        }
    }
    ck_assert_int_eq(tried, 64512);
    ck_assert_int_gt(valid, 1000); /* 10,137 at the time of writing */
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* The design's 16,384-rank layout                                                              */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
    const char *kind;
    int ngroups;
} count_t;

static void check_scale(const char *spec, const count_t *expect, long total_groups)
{
    enum { W = 16384 };
    cohort_layout_spec_t s = parse_ok(spec, W);
    static int m[W], m2[W], owner[W];
    static unsigned char per_rank[W];
    long total = 0, members = 0;
    int k, g, i, n, r;

    memset(per_rank, 0, sizeof(per_rank));
    for (k = 0; cohort_layout_gen_kinds[k] != NULL; k++) {
        const char *kind = cohort_layout_gen_kinds[k];
        int ng = cohort_layout_ngroups(&s, kind), gs = cohort_layout_group_size(&s, kind);

        ck_assert_str_eq(kind, expect[k].kind);
        ck_assert_msg(ng == expect[k].ngroups, "%s: %d groups of %s, expected %d", spec, ng, kind,
                      expect[k].ngroups);
        total += ng;
        members += (long)ng * gs;

        /* all groups: each rank at most once, every rank once except embd/pos-embd */
        for (i = 0; i < W; i++) {
            owner[i] = -1;
        }
        for (g = 0; g < ng; g++) {
            n = cohort_layout_gen_members(&s, kind, g, m);
            if (n != gs) {
                ck_abort_msg("%s group %d: %d members, expected %d", kind, g, n, gs);
            }
            for (i = 0; i < n; i++) {
                if (m[i] < 0 || m[i] >= W || owner[m[i]] != -1) {
                    ck_abort_msg("%s group %d: rank %d out of range or seen before", kind, g, m[i]);
                }
                owner[m[i]] = g;
                per_rank[m[i]]++;
            }
        }
        /* a sample of ranks (and the edges): rank_group is that group, holding the rank once */
        for (r = 0; r < W; r += (r < 64 || r > W - 64) ? 1 : 97) {
            int seen = 0;

            n = cohort_layout_gen_rank_group(&s, kind, r, m);
            if (owner[r] < 0) {
                if (n != 0) {
                    ck_abort_msg("%s: rank %d is in no group, rank_group says %d", kind, r, n);
                }
                continue;
            }
            for (i = 0; i < n; i++) {
                seen += (m[i] == r);
            }
            if (n != gs || seen != 1 || cohort_layout_gen_members(&s, kind, owner[r], m2) != gs ||
                memcmp(m, m2, sizeof(int) * (size_t)gs) != 0) {
                ck_abort_msg("%s: rank_group(%d) is not group %d holding it once", kind, r,
                             owner[r]);
            }
        }
    }
    ck_assert_int_eq(expect[k].kind == NULL, 1);
    ck_assert_int_eq(total, total_groups);
    /* 14 kinds hold every rank; embd adds the first and last stage, pos-embd the first */
    for (r = 0; r < W; r++) {
        int stage = r / (W / s.pp); /* pp is the last (slowest) dimension */
        int want = 14 + (stage == 0 || stage == s.pp - 1) + (stage == 0);
        if (per_rank[r] != want) {
            ck_abort_msg("rank %d in %d groups, expected %d", r, per_rank[r], want);
        }
    }
    ck_assert_int_eq(members, 14L * W + 2L * (W / s.pp) + (W / s.pp));
}

START_TEST(test_scale_16384)
{
    /* etp defaults to tp = 8: dp = 64, edp = 16384 / (8*8*16) = 16 */
    static const count_t etp8[] = {
        {"tp", 2048},       {"pp", 1024},    {"dp", 256},   {"cp", 8192},     {"dp-cp", 128},
        {"tp-pp", 128},     {"tp-cp", 1024}, {"tp-dp", 32}, {"tp-dp-cp", 16}, {"embd", 1024},
        {"pos-embd", 1024}, {"ep", 2048},    {"etp", 2048}, {"etp-ep", 256},  {"etp-ep-pp", 16},
        {"edp", 1024},      {NULL, 0},
    };
    /* etp=1: edp = 16384 / (1*8*16) = 128; the 35,632 DESIGN.md quotes */
    static const count_t etp1[] = {
        {"tp", 2048},       {"pp", 1024},    {"dp", 256},    {"cp", 8192},     {"dp-cp", 128},
        {"tp-pp", 128},     {"tp-cp", 1024}, {"tp-dp", 32},  {"tp-dp-cp", 16}, {"embd", 1024},
        {"pos-embd", 1024}, {"ep", 2048},    {"etp", 16384}, {"etp-ep", 2048}, {"etp-ep-pp", 128},
        {"edp", 128},       {NULL, 0},
    };

    check_scale("tp=8,pp=16,cp=2,ep=8", etp8, 20288);
    check_scale("tp=8,pp=16,cp=2,ep=8,etp=1", etp1, 35632);
}
END_TEST

static Suite *layout_suite(void)
{
    Suite *s = suite_create("layout");
    TCase *tc = tcase_create("layout");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_megatron_docstring_16);
    tcase_add_test(tc, test_megatron_docstring_masked);
    tcase_add_test(tc, test_cp_ep_16);
    tcase_add_test(tc, test_etp_differs);
    tcase_add_test(tc, test_pp1_embd);
    tcase_add_test(tc, test_defaults_and_lenient_input);
    tcase_add_loop_test(tc, test_bad_spec, 0, (int)(sizeof(bad_specs) / sizeof(bad_specs[0])));
    tcase_add_test(tc, test_bad_calls);
    tcase_add_test(tc, test_oracle_sweep);
    tcase_add_test(tc, test_scale_16384);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(layout_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
