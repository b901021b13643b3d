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

/* @a node_local: every member on one node, single copy possible (2: but not shm, as under
 * COHORT_CHECK=1). */
static const char *pick_at(cohort_coll_type_t coll, size_t bytes, int gsize, int node_local)
{
    cohort_coll_args_t a;

    memset(&a, 0, sizeof(a));
    a.coll = coll;
    a.count = bytes;
    a.esize = 1;
    return cohort_coll_select(&ctx, &a, gsize,
                              node_local == 2 ? COHORT_NODE_DIRECT
                              : node_local    ? COHORT_NODE_DIRECT | COHORT_NODE_SHM
                                              : 0)
        ->name;
}

static const char *pick(cohort_coll_type_t coll, size_t bytes, int gsize)
{
    return pick_at(coll, bytes, gsize, 0);
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
    /* every member on this node: direct reads from the measured sizes, the others below */
    ck_assert_str_eq(pick_at(COHORT_COLL_ALLREDUCE, 64 * 1024, 4, 1), "direct");
    ck_assert_str_eq(pick_at(COHORT_COLL_ALLREDUCE, 64 * 1024 - 1, 4, 2), "recursive_doubling");
    /* small ones through the shared segment, as far as they fit its 64 KiB buffers */
    ck_assert_str_eq(pick_at(COHORT_COLL_ALLREDUCE, 512, 4, 1), "shm");
    ck_assert_str_eq(pick_at(COHORT_COLL_ALLREDUCE, 64 * 1024 - 1, 2, 1), "shm");
    ck_assert_str_eq(pick_at(COHORT_COLL_ALLREDUCE, 64 * 1024, 2, 1), "direct");
    ck_assert_str_eq(pick_at(COHORT_COLL_BARRIER, 0, 8, 1), "shm");
    ck_assert_str_eq(pick_at(COHORT_COLL_BCAST, 64 * 1024, 4, 1), "shm");
    ck_assert_str_eq(pick_at(COHORT_COLL_ALLGATHER, 4 * 1024, 2, 1), "shm");
    ck_assert_str_eq(pick_at(COHORT_COLL_ALLGATHER, 4 * 1024 + 1, 2, 1), "direct");
    ck_assert_str_eq(pick_at(COHORT_COLL_ALLGATHER, 16 * 1024, 4, 1), "shm");
    ck_assert_str_eq(pick_at(COHORT_COLL_ALLTOALL, 16 * 1024, 4, 1), "shm");
    ck_assert_str_eq(pick_at(COHORT_COLL_ALLTOALL, 16 * 1024 + 1, 4, 1), "direct");
    ck_assert_str_eq(pick_at(COHORT_COLL_REDUCE_SCATTER, 32 * 1024, 2, 1), "shm");
    ck_assert_str_eq(pick_at(COHORT_COLL_REDUCE_SCATTER, 32 * 1024 + 1, 2, 1), "direct");
    ck_assert_str_eq(pick_at(COHORT_COLL_REDUCE_SCATTER, 16 * 1024 - 1, 4, 2), "recursive_halving");
    ck_assert_str_eq(pick_at(COHORT_COLL_ALLREDUCE, 512, 65, 1), "recursive_doubling");
    ck_assert_str_eq(pick_at(COHORT_COLL_ALLREDUCE, 512, 4, 0), "recursive_doubling");
    ck_assert_str_eq(pick_at(COHORT_COLL_ALLREDUCE, 512, 4, 2), "recursive_doubling");
    /* without the segment (COHORT_CHECK=1) only the reading ones: the writers need its fence */
    ck_assert_str_eq(pick_at(COHORT_COLL_ALLREDUCE, 1u << 20, 4, 2), "rabenseifner");
    ck_assert_str_eq(pick_at(COHORT_COLL_REDUCE_SCATTER, 1u << 20, 4, 2), "direct");
    ck_assert_str_eq(pick_at(COHORT_COLL_ALLTOALL, 32 * 1024, 4, 2), "direct");
    ck_assert_str_eq(pick_at(COHORT_COLL_ALLREDUCE, 1u << 20, 65, 1), "ring");
    ck_assert_str_eq(pick_at(COHORT_COLL_ALLREDUCE, 64u << 20, 8, 1), "direct");
    ck_assert_str_eq(pick_at(COHORT_COLL_ALLGATHER, 16 * 1024, 2, 1), "direct");
    ck_assert_str_eq(pick_at(COHORT_COLL_ALLGATHER, 4 * 1024, 2, 2), "ring");
    ck_assert_str_eq(pick_at(COHORT_COLL_REDUCE_SCATTER, 64 * 1024, 4, 1), "direct");
    ck_assert_str_eq(pick_at(COHORT_COLL_BCAST, 64 * 1024 + 1, 4, 1), "direct");
    ck_assert_str_eq(pick_at(COHORT_COLL_BCAST, 64 * 1024 + 1, 4, 2), "knomial");
    ck_assert_str_eq(pick_at(COHORT_COLL_BCAST, 64 * 1024 - 1, 4, 2), "knomial");
    ck_assert_str_eq(pick_at(COHORT_COLL_ALLTOALL, 16u << 20, 4, 1), "pairwise");
    ck_assert_str_eq(pick_at(COHORT_COLL_ALLTOALL, 32 * 1024, 4, 1), "direct");
    ck_assert_str_eq(pick_at(COHORT_COLL_ALLTOALL, 256 * 1024, 4, 1), "direct");
    ck_assert_str_eq(pick_at(COHORT_COLL_ALLTOALL, 256 * 1024 + 1, 4, 1), "pairwise");
    ck_assert_str_eq(pick_at(COHORT_COLL_BCAST, 64 * 1024, 2, 1), "direct");
    ck_assert_str_eq(pick_at(COHORT_COLL_BCAST, 64 * 1024 - 1, 2, 1), "shm");
    /* a group of one, or nothing to move: declined */
    ck_assert_str_eq(pick_at(COHORT_COLL_ALLREDUCE, 1u << 20, 1, 1), "rabenseifner");
    ck_assert_str_eq(pick_at(COHORT_COLL_ALLGATHER, 0, 4, 1), "bruck");
    ck_assert_str_eq(pick_at(COHORT_COLL_ALLREDUCE, 0, 4, 1), "recursive_doubling");
    ck_assert_str_eq(pick(COHORT_COLL_REDUCE_SCATTER, 4096, 3), "recursive_halving");
    ck_assert_str_eq(pick(COHORT_COLL_REDUCE_SCATTER, 8192, 3), "ring");
    ck_assert_str_eq(pick(COHORT_COLL_REDUCE, 1u << 30, 5), "knomial");
}
END_TEST

START_TEST(test_overrides)
{
    char *one[] = {"COHORT_ALGO_ALLREDUCE=ring", NULL};
    char *direct[] = {"COHORT_ALGO_ALLTOALL=direct", NULL};
    char *ranges[] = {"COHORT_ALGO_ALLREDUCE=0-64k:recursive_doubling,64k-1m:rabenseifner", NULL};

    ck_assert_int_eq(setup_env(one), COHORT_OK);
    ck_assert_str_eq(pick(COHORT_COLL_ALLREDUCE, 8, 2), "ring");
    ck_assert_str_eq(pick(COHORT_COLL_ALLREDUCE, 1u << 30, 64), "ring");
    ck_assert_str_eq(pick(COHORT_COLL_BCAST, 8, 2), "knomial");
    /* a user's rule comes before the node-only defaults */
    ck_assert_str_eq(pick_at(COHORT_COLL_ALLREDUCE, 16u << 20, 2, 1), "ring");

    ck_assert_int_eq(setup_env(direct), COHORT_OK);
    ck_assert_str_eq(pick_at(COHORT_COLL_ALLTOALL, 8, 2, 1), "direct");
    /* named, but the members are not all on this node: the defaults */
    ck_assert_str_eq(pick_at(COHORT_COLL_ALLTOALL, 8, 2, 0), "pairwise");

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
        {"COHORT_ALGO_ALLREDUCE_RING_WINDOW=0", "COHORT_ALGO_ALLREDUCE_RING_WINDOW"},
        {"COHORT_ALGO_ALLREDUCE_RING_WINDOW=17", "from 1 to 16"},
        {"COHORT_ALGO_ALLREDUCE_RING_WINDOW=4k", "a count"},
        {"COHORT_ALGO_ALLREDUCE_RING_SEGMENT=12", "bytes"},
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *env[] = {(char *)bad[i][0], NULL};
        ck_assert_int_eq(setup_env(env), COHORT_ERR_INVALID_ARG);
        ck_assert_msg(strstr(err, bad[i][1]) != NULL, "'%s' gave '%s'", bad[i][0], err);
        ck_assert_msg(strstr(err, "COHORT_ALGO_") != NULL, "'%s' gave '%s'", bad[i][0], err);
    }
}
END_TEST

/* Tuning parameters: defaults from the table, values from the environment, shown publicly. */
START_TEST(test_knobs)
{
    char *env[] = {"COHORT_ALGO_ALLREDUCE_RING_SEGMENT=1m", "COHORT_ALGO_ALLREDUCE_RING_WINDOW=8",
                   NULL};
    cohort_algo_param_t p;
    int ring = -1;

    for (int i = 0; i < cohort_algo_count(); i++) {
        cohort_algo_info_t info;
        ck_assert_int_eq(cohort_algo_info(i, &info), COHORT_OK);
        if (strcmp(info.collective, "allreduce") == 0 && strcmp(info.name, "ring") == 0) {
            ring = i;
        }
    }
    ck_assert_int_ge(ring, 0);
    ck_assert_int_eq(cohort_algo_param_count(ring), 2);
    ck_assert_int_eq(cohort_algo_param_info(ring, 0, &p), COHORT_OK);
    ck_assert_str_eq(p.env, "COHORT_ALGO_ALLREDUCE_RING_SEGMENT");
    ck_assert_uint_eq(p.default_value, 256 * 1024);
    ck_assert_int_eq(cohort_algo_param_info(ring, 2, &p), COHORT_ERR_INVALID_ARG);
    ck_assert_int_eq(cohort_algo_param_count(-1), 0);

    ck_assert_int_eq(setup_env(env), COHORT_OK);
    {
        /* A request block with the ring's state base is all cohort_coll_knob reads. */
        struct {
            cohort_request_t req;
            cohort_coll_base_t base;
        } r;
        cohort_coll_args_t a;

        memset(&r, 0, sizeof(r));
        memset(&a, 0, sizeof(a));
        a.coll = COHORT_COLL_ALLREDUCE;
        a.count = 64u << 20;
        a.esize = 1;
        r.req.ctx = &ctx;
        r.req.state = &r.base;
        r.base.algo = cohort_coll_select(&ctx, &a, 8, 0);
        ck_assert_str_eq(r.base.algo->name, "ring");
        ck_assert_uint_eq(cohort_coll_knob(&r.req, 0), 1u << 20);
        ck_assert_uint_eq(cohort_coll_knob(&r.req, 1), 8);
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
    tcase_add_test(tc, test_knobs);
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
