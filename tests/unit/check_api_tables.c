/*
 * The public, context-free parts of cohort.h, through the shared library as an application
 * links it: layout arithmetic, the algorithm table, the version and the 16-bit floats. The
 * arithmetic itself is checked in depth by check_layout; here the public calls must agree with
 * it and reject bad input.
 */
#include <check.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cohort.h>

static cohort_layout_spec_t *parse_ok(const char *text, int world)
{
    cohort_layout_spec_t *s = NULL;
    char err[256] = "sentinel";

    ck_assert_msg(cohort_layout_spec_parse(text, world, &s, err, sizeof(err)) == COHORT_OK,
                  "%s at %d: %s", text, world, err);
    ck_assert_str_eq(err, "");
    ck_assert_ptr_nonnull(s);
    return s;
}

/* parallel_state.py's docstring: 16 ranks, tp=2, pp=4 gives tp groups [0,1] [2,3] ... and pp
 * groups [0,4,8,12] [1,5,9,13] ... */
START_TEST(test_layout_public_docstring)
{
    cohort_layout_spec_t *s = parse_ok("tp=2,pp=4", 16);
    int m[16], n = -1, index = -7;

    ck_assert_int_eq(cohort_layout_spec_size(s, "world"), 16);
    ck_assert_int_eq(cohort_layout_spec_size(s, "dp"), 2);
    ck_assert_int_eq(cohort_layout_spec_size(s, "edp"), 2);
    ck_assert_int_eq(cohort_layout_spec_size(s, "etp"), 2);
    ck_assert_int_eq(cohort_layout_spec_size(s, "nope"), -1);
    ck_assert_int_eq(cohort_layout_spec_size(NULL, "tp"), -1);
    ck_assert_int_eq(cohort_layout_ngroups(s, "tp"), 8);
    ck_assert_int_eq(cohort_layout_group_size(s, "pp"), 4);
    ck_assert_int_eq(cohort_layout_group_members(s, "pp", 1, m, 16, &n), COHORT_OK);
    ck_assert_int_eq(n, 4);
    ck_assert(m[0] == 1 && m[1] == 5 && m[2] == 9 && m[3] == 13);
    /* max bounds what is written, nmembers still says the size */
    m[1] = -5;
    ck_assert_int_eq(cohort_layout_group_members(s, "pp", 1, m, 1, &n), COHORT_OK);
    ck_assert_int_eq(n, 4);
    ck_assert(m[0] == 1 && m[1] == -5);
    ck_assert_int_eq(cohort_layout_group_members(s, "pp", 1, NULL, 0, &n), COHORT_OK);
    ck_assert_int_eq(n, 4);
    ck_assert_int_eq(cohort_layout_rank_group(s, "pp", 13, &index), COHORT_OK);
    ck_assert_int_eq(index, 1);
    /* embd: first and last stage of each pipeline; rank 5 is in neither */
    ck_assert_int_eq(cohort_layout_rank_group(s, "embd", 5, &index), COHORT_OK);
    ck_assert_int_eq(index, -1);
    ck_assert_int_eq(cohort_layout_rank_group(s, "embd", 13, &index), COHORT_OK);
    ck_assert_int_eq(index, 1);
    ck_assert_int_eq(cohort_layout_group_members(s, "embd", 1, m, 16, &n), COHORT_OK);
    ck_assert(n == 2 && m[0] == 1 && m[1] == 13);
    ck_assert_int_eq(cohort_layout_group_members(s, "pos-embd", 1, m, 16, &n), COHORT_OK);
    ck_assert(n == 1 && m[0] == 1);
    cohort_layout_spec_free(s);
}
END_TEST

START_TEST(test_layout_public_bad_input)
{
    cohort_layout_spec_t *s = parse_ok("tp=2", 8), *untouched = (cohort_layout_spec_t *)&s;
    cohort_layout_spec_t *out = untouched;
    char err[256];
    int m[8], n = 99, index = 99;

    ck_assert_int_eq(cohort_layout_spec_parse("tp=3", 8, &out, err, sizeof(err)),
                     COHORT_ERR_INVALID_ARG);
    ck_assert_ptr_eq(out, untouched);
    ck_assert(strstr(err, "does not divide") != NULL);
    ck_assert_int_eq(cohort_layout_spec_parse("tp=2", 0, &out, NULL, 0), COHORT_ERR_INVALID_ARG);
    ck_assert_int_eq(cohort_layout_spec_parse("tp=2", 8, NULL, err, sizeof(err)),
                     COHORT_ERR_INVALID_ARG);
    ck_assert_ptr_eq(out, untouched);
    ck_assert_int_eq(cohort_layout_ngroups(s, "mp"), 0);
    ck_assert_int_eq(cohort_layout_ngroups(NULL, "tp"), 0);
    ck_assert_int_eq(cohort_layout_group_size(s, NULL), 0);
    ck_assert_int_eq(cohort_layout_group_members(s, "tp", 4, m, 8, &n), COHORT_ERR_INVALID_ARG);
    ck_assert_int_eq(cohort_layout_group_members(s, "tp", -1, m, 8, &n), COHORT_ERR_INVALID_ARG);
    ck_assert_int_eq(cohort_layout_group_members(s, "tp", 0, NULL, 8, &n), COHORT_ERR_INVALID_ARG);
    ck_assert_int_eq(cohort_layout_group_members(s, "tp", 0, m, -1, &n), COHORT_ERR_INVALID_ARG);
    ck_assert_int_eq(cohort_layout_group_members(s, "tp", 0, m, 8, NULL), COHORT_ERR_INVALID_ARG);
    ck_assert_int_eq(n, 99);
    ck_assert_int_eq(cohort_layout_rank_group(s, "tp", 8, &index), COHORT_ERR_INVALID_ARG);
    ck_assert_int_eq(cohort_layout_rank_group(s, "tp", -1, &index), COHORT_ERR_INVALID_ARG);
    ck_assert_int_eq(cohort_layout_rank_group(s, "zz", 0, &index), COHORT_ERR_INVALID_ARG);
    ck_assert_int_eq(cohort_layout_rank_group(s, "tp", 0, NULL), COHORT_ERR_INVALID_ARG);
    ck_assert_int_eq(index, 99);
    ck_assert_int_eq(cohort_layout_spec_text(NULL, err, sizeof(err)), -1);
    ck_assert_ptr_null(cohort_layout_kind_name(-1));
    ck_assert_ptr_null(cohort_layout_kind_name(cohort_layout_kind_count()));
    cohort_layout_spec_free(s);
    cohort_layout_spec_free(NULL);
}
END_TEST

/* The text is complete and parses back to the same groups; every kind partitions the world
 * (embd, pos-embd: the ranks they hold) and rank_group inverts group_members. */
START_TEST(test_layout_public_roundtrip)
{
    static const char *const specs[] = {"tp=2,pp=2,cp=2,ep=2,etp=1", "pp=4,order=tp-pp-dp",
                                        "tp=4,ep=4,etp=1,order=tp-cp-ep-dp-pp",
                                        /* ep left out: the text must not append it, or the
                                         * order no longer ends with pp and cannot be read */
                                        "tp=2,pp=2,cp=2,order=tp-cp-dp-pp"};

    for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
        cohort_layout_spec_t *s = parse_ok(specs[i], 32), *back;
        char text[256];
        int len = cohort_layout_spec_text(s, text, sizeof(text)), m[32], m2[32];

        ck_assert_int_eq(len, (int)strlen(text));
        ck_assert_int_eq(cohort_layout_spec_text(s, text, 4), len); /* snprintf-style */
        cohort_layout_spec_text(s, text, sizeof(text));
        back = parse_ok(text, 32);
        ck_assert_int_gt(cohort_layout_kind_count(), 0);
        for (int k = 0; k < cohort_layout_kind_count(); k++) {
            const char *kind = cohort_layout_kind_name(k);
            int seen[32] = {0}, ng = cohort_layout_ngroups(s, kind), slots = 0;

            ck_assert_int_eq(ng, cohort_layout_ngroups(back, kind));
            for (int g = 0; g < ng; g++) {
                int n, n2, index;

                ck_assert_int_eq(cohort_layout_group_members(s, kind, g, m, 32, &n), COHORT_OK);
                ck_assert_int_eq(cohort_layout_group_members(back, kind, g, m2, 32, &n2),
                                 COHORT_OK);
                ck_assert_int_eq(n, cohort_layout_group_size(s, kind));
                ck_assert(n == n2 && memcmp(m, m2, sizeof(int) * (size_t)n) == 0);
                for (int j = 0; j < n; j++) {
                    ck_assert_int_eq(seen[m[j]]++, 0);
                    ck_assert_int_eq(cohort_layout_rank_group(s, kind, m[j], &index), COHORT_OK);
                    ck_assert_int_eq(index, g);
                }
                slots += n;
            }
            if (strcmp(kind, "embd") != 0 && strcmp(kind, "pos-embd") != 0) {
                ck_assert_int_eq(slots, 32);
            }
        }
        cohort_layout_spec_free(back);
        cohort_layout_spec_free(s);
    }
}
END_TEST

START_TEST(test_algo_table)
{
    int n = cohort_algo_count();
    cohort_algo_info_t info, untouched = {-5, "x", "y", "z"};
    int found_ring = 0;

    ck_assert_int_gt(n, 0);
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(cohort_algo_info(i, &info), COHORT_OK);
        ck_assert_int_eq(info.id, i);
        ck_assert(info.collective != NULL && info.name != NULL && info.description != NULL);
        ck_assert(info.name[0] != '\0' && info.description[0] != '\0');
        found_ring += strcmp(info.collective, "allreduce") == 0 && strcmp(info.name, "ring") == 0;
    }
    ck_assert_int_eq(found_ring, 1);
    /* ids are stable: the first entry is the barrier */
    ck_assert_int_eq(cohort_algo_info(0, &info), COHORT_OK);
    ck_assert_str_eq(info.collective, "barrier");
    info = untouched;
    ck_assert_int_eq(cohort_algo_info(n, &info), COHORT_ERR_INVALID_ARG);
    ck_assert_int_eq(cohort_algo_info(-1, &info), COHORT_ERR_INVALID_ARG);
    ck_assert_int_eq(info.id, -5);
    ck_assert_int_eq(cohort_algo_info(0, NULL), COHORT_ERR_INVALID_ARG);
}
END_TEST

START_TEST(test_version)
{
    char want[32];

    snprintf(want, sizeof(want), "%d.%d.", COHORT_VERSION_MAJOR, COHORT_VERSION_MINOR);
    ck_assert_ptr_nonnull(cohort_version());
    ck_assert_msg(strncmp(cohort_version(), want, strlen(want)) == 0, "%s vs header %s",
                  cohort_version(), want);
}
END_TEST

START_TEST(test_float16)
{
    ck_assert(cohort_float16_to_float(0x3c00) == 1.0f);
    ck_assert(cohort_float16_to_float(0xc000) == -2.0f);
    ck_assert(cohort_float16_to_float(0x0001) == ldexpf(1.0f, -24)); /* smallest subnormal */
    ck_assert(isinf(cohort_float16_to_float(0x7c00)));
    ck_assert(isnan(cohort_float16_to_float(0x7e00)));
    ck_assert_uint_eq(cohort_float_to_float16(65504.0f), 0x7bff);
    ck_assert_uint_eq(cohort_float_to_float16(65520.0f), 0x7c00); /* rounds to infinity */
    ck_assert_uint_eq(cohort_float_to_float16(1.0f + ldexpf(1.0f, -11)), 0x3c00); /* tie: even */
    ck_assert(cohort_bfloat16_to_float(0x3f80) == 1.0f);
    ck_assert_uint_eq(cohort_float_to_bfloat16(1.0f), 0x3f80);
    ck_assert_uint_eq(cohort_float_to_bfloat16(1.0f + ldexpf(1.0f, -8)), 0x3f80); /* tie: even */
    ck_assert_uint_eq(cohort_float_to_bfloat16(1.0f + ldexpf(3.0f, -8)), 0x3f82);
    for (unsigned h = 0; h < 0x10000; h++) {
        float f = cohort_float16_to_float((uint16_t)h);
        if (!isnan(f) && cohort_float_to_float16(f) != h) {
            ck_abort_msg("binary16 0x%04x does not round-trip", h);
        }
    }
}
END_TEST

static Suite *api_tables_suite(void)
{
    Suite *s = suite_create("api_tables");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_layout_public_docstring);
    tcase_add_test(tc, test_layout_public_bad_input);
    tcase_add_test(tc, test_layout_public_roundtrip);
    tcase_add_test(tc, test_algo_table);
    tcase_add_test(tc, test_version);
    tcase_add_test(tc, test_float16);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(api_tables_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
