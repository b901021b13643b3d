/* Selection as data: the default rules at their boundaries, and COHORT_ALGO_<COLL> overrides
 * (one name, or size ranges of names) with the defaults catching what they leave out. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "coll/coll.h"
#include "core/context.h"

static cohort_context_t ctx;
static char err[512];

static cohort_status_t setup_env(char **env)
{
    char warn[256];
    cohort_status_t st;

    if (ctx.coll_free != NULL) {
        ctx.coll_free(ctx.coll);
    }
    memset(&ctx, 0, sizeof(ctx));
    st = cohort_config_parse(&ctx.cfg, env, err, sizeof(err), warn, sizeof(warn));
    return st != COHORT_OK ? st : cohort_coll_config(&ctx, err, sizeof(err));
}

static const char *pick(cohort_coll_type_t coll, size_t bytes, int gsize)
{
    cohort_coll_args_t a;

    memset(&a, 0, sizeof(a));
    a.coll = coll;
    a.count = bytes;
    a.esize = 1;
    return cohort_coll_select(&ctx, &a, gsize)->name;
}

START_TEST(test_defaults)
{
    char *env[] = {NULL};

    ck_assert_int_eq(setup_env(env), COHORT_OK);
    ck_assert_str_eq(pick(COHORT_COLL_BARRIER, 0, 7), "dissemination");
    /* allreduce: 128 KiB inclusive on <= 4 ranks, 8 KiB on more, 512 KiB off powers of two */
    ck_assert_str_eq(pick(COHORT_COLL_ALLREDUCE, 128 * 1024, 4), "recursive_doubling");
    ck_assert_str_eq(pick(COHORT_COLL_ALLREDUCE, 128 * 1024 + 1, 4), "rabenseifner");
    ck_assert_str_eq(pick(COHORT_COLL_ALLREDUCE, 8 * 1024, 8), "recursive_doubling");
    ck_assert_str_eq(pick(COHORT_COLL_ALLREDUCE, 8 * 1024 + 1, 8), "rabenseifner");
    ck_assert_str_eq(pick(COHORT_COLL_ALLREDUCE, 512 * 1024, 6), "recursive_doubling");
    ck_assert_str_eq(pick(COHORT_COLL_ALLREDUCE, 512 * 1024 + 1, 6), "ring");
    ck_assert_str_eq(pick(COHORT_COLL_ALLREDUCE, 4u << 20, 8), "ring");
    ck_assert_str_eq(pick(COHORT_COLL_BCAST, 1u << 20, 16), "knomial");
    ck_assert_str_eq(pick(COHORT_COLL_BCAST, 1u << 20, 17), "scatter_allgather");
    /* allgather and alltoall measure the whole: bytes x group size */
    ck_assert_str_eq(pick(COHORT_COLL_ALLGATHER, 8, 2), "ring");
    ck_assert_str_eq(pick(COHORT_COLL_ALLGATHER, 128 * 1024, 8), "ring");
    ck_assert_str_eq(pick(COHORT_COLL_ALLGATHER, 128 * 1024 - 1, 8), "bruck");
    ck_assert_str_eq(pick(COHORT_COLL_ALLTOALL, 2048, 8), "bruck");
    ck_assert_str_eq(pick(COHORT_COLL_ALLTOALL, 2049, 8), "pairwise");
    ck_assert_str_eq(pick(COHORT_COLL_ALLTOALL, 8, 4), "pairwise");
    ck_assert_str_eq(pick(COHORT_COLL_REDUCE_SCATTER, 256 * 1024, 4), "recursive_halving");
    ck_assert_str_eq(pick(COHORT_COLL_REDUCE_SCATTER, 256 * 1024 + 1, 4), "ring");
    ck_assert_str_eq(pick(COHORT_COLL_REDUCE_SCATTER, 4096, 3), "recursive_halving");
    ck_assert_str_eq(pick(COHORT_COLL_REDUCE_SCATTER, 8192, 3), "ring");
    ck_assert_str_eq(pick(COHORT_COLL_REDUCE, 1u << 30, 5), "knomial");
}
END_TEST

START_TEST(test_overrides)
{
    char *one[] = {"COHORT_ALGO_ALLREDUCE=ring", NULL};
    char *ranges[] = {"COHORT_ALGO_ALLREDUCE=0-64k:recursive_doubling,64k-1m:rabenseifner", NULL};

    ck_assert_int_eq(setup_env(one), COHORT_OK);
    ck_assert_str_eq(pick(COHORT_COLL_ALLREDUCE, 8, 2), "ring");
    ck_assert_str_eq(pick(COHORT_COLL_ALLREDUCE, 1u << 30, 64), "ring");
    ck_assert_str_eq(pick(COHORT_COLL_BCAST, 8, 2), "knomial");

    ck_assert_int_eq(setup_env(ranges), COHORT_OK);
    ck_assert_str_eq(pick(COHORT_COLL_ALLREDUCE, 64 * 1024 - 1, 16), "recursive_doubling");
    ck_assert_str_eq(pick(COHORT_COLL_ALLREDUCE, 64 * 1024, 16), "rabenseifner");
    ck_assert_str_eq(pick(COHORT_COLL_ALLREDUCE, (1u << 20) - 1, 6), "rabenseifner");
    /* past the ranges given: the defaults */
    ck_assert_str_eq(pick(COHORT_COLL_ALLREDUCE, 1u << 20, 6), "ring");
}
END_TEST

START_TEST(test_bad_overrides)
{
    static const char *const bad[][2] = {
        {"COHORT_ALGO_ALLREDUCE=0-64k:nope", "unknown algorithm"},
        {"COHORT_ALGO_ALLREDUCE=64k-0:ring", "bad size range"},
        {"COHORT_ALGO_ALLREDUCE=x-1m:ring", "bad size range"},
        {"COHORT_ALGO_ALLREDUCE=0-1q:ring", "bad size range"},
        {"COHORT_ALGO_ALLREDUCE=01m:ring", "bad size range"},
        {"COHORT_ALGO_BCAST=ring", "unknown algorithm"},
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *env[] = {(char *)bad[i][0], NULL};
        ck_assert_int_eq(setup_env(env), COHORT_ERR_INVALID_ARG);
        ck_assert_msg(strstr(err, bad[i][1]) != NULL, "'%s' gave '%s'", bad[i][0], err);
        ck_assert_msg(strstr(err, "COHORT_ALGO_") != NULL, "'%s' gave '%s'", bad[i][0], err);
    }
}
END_TEST

static Suite *select_suite(void)
{
    Suite *s = suite_create("select");
    TCase *tc = tcase_create("rules");

    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_overrides);
    tcase_add_test(tc, test_bad_overrides);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(select_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
