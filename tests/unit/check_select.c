/* Selection as data: the default rules at their boundaries, and COHORT_ALGO_<COLL> overrides
 * (one name, or size ranges of names) with the defaults catching what they leave out. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "coll/coll.h"
#include "core/context.h"
#include "mem/gpu.h"

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

/* The algorithm for the case, and in *vote the one a vote would take instead (or NULL). */
static const cohort_coll_algo_t *select_at(cohort_coll_type_t coll, size_t bytes, int gsize,
                                           int node, const cohort_coll_algo_t **vote)
{
    cohort_coll_args_t a;

    memset(&a, 0, sizeof(a));
    a.coll = coll;
    a.count = bytes;
    a.esize = 1;
    return cohort_coll_select(&ctx, &a, gsize, node, vote);
}

/* @a node_local: every member on one node, single copy possible (2: but not shm, as under
 * COHORT_CHECK=1). No vote in any of these cases. */
static const char *pick_at(cohort_coll_type_t coll, size_t bytes, int gsize, int node_local)
{
    const cohort_coll_algo_t *vote = NULL, *algo;

    algo = select_at(coll, bytes, gsize,
                     node_local == 2 ? COHORT_NODE_DIRECT
                     : node_local    ? COHORT_NODE_DIRECT | COHORT_NODE_SHM
                                     : 0,
                     &vote);
    ck_assert_ptr_null(vote);
    return algo->name;
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
        const cohort_coll_algo_t *vote;

        memset(&r, 0, sizeof(r));
        memset(&a, 0, sizeof(a));
        a.coll = COHORT_COLL_ALLREDUCE;
        a.count = 64u << 20;
        a.esize = 1;
        r.req.ctx = &ctx;
        r.req.state = &r.base;
        r.base.algo = cohort_coll_select(&ctx, &a, 8, 0, &vote);
        ck_assert_str_eq(r.base.algo->name, "ring");
        ck_assert_uint_eq(cohort_coll_knob(&r.req, 0), 1u << 20);
        ck_assert_uint_eq(cohort_coll_knob(&r.req, 1), 8);
    }
}
END_TEST

#define KIB ((size_t)1024)
#define MIB (KIB * KIB)
#define ANY SIZE_MAX

/* The default rules as they stood in select.c as a C table, before they were written in the
 * COHORT_ALGO_ syntax: what the text must parse back into, rule for rule (with CUDA IPC's row,
 * which was asked before the table, first for every collective but barrier). */
static const struct {
    cohort_coll_type_t coll;
    int min_n, max_n, pow2, total;
    size_t lo, hi;
    const char *name;
} reference[] = {
    {COHORT_COLL_BARRIER, 0, 0, -1, 0, 0, ANY, "shm"},
    {COHORT_COLL_BARRIER, 0, 0, -1, 0, 0, ANY, "dissemination"},
    {COHORT_COLL_BCAST, 0, 0, -1, 0, 0, ANY, "cuda_ipc"},
    {COHORT_COLL_BCAST, 2, 2, -1, 0, 64 * KIB, ANY, "direct"},
    {COHORT_COLL_BCAST, 0, 0, -1, 0, 0, ANY, "shm"},
    {COHORT_COLL_BCAST, 0, 0, -1, 0, 64 * KIB, ANY, "direct"},
    {COHORT_COLL_BCAST, 17, 0, -1, 0, MIB, ANY, "scatter_allgather"},
    {COHORT_COLL_BCAST, 0, 0, -1, 0, 0, ANY, "knomial"},
    {COHORT_COLL_REDUCE, 0, 0, -1, 0, 0, ANY, "cuda_ipc"},
    {COHORT_COLL_REDUCE, 0, 0, -1, 0, 0, 64 * KIB, "shm"},
    {COHORT_COLL_REDUCE, 0, 0, -1, 0, 0, ANY, "knomial"},
    {COHORT_COLL_ALLREDUCE, 0, 0, -1, 0, 0, ANY, "cuda_ipc"},
    {COHORT_COLL_ALLREDUCE, 0, 0, -1, 0, 0, 64 * KIB, "shm"},
    {COHORT_COLL_ALLREDUCE, 0, 0, -1, 0, 64 * KIB, ANY, "direct"},
    {COHORT_COLL_ALLREDUCE, 0, 4, -1, 0, 0, 128 * KIB + 1, "recursive_doubling"},
    {COHORT_COLL_ALLREDUCE, 5, 0, -1, 0, 0, 8 * KIB + 1, "recursive_doubling"},
    {COHORT_COLL_ALLREDUCE, 0, 0, 0, 0, 0, 512 * KIB + 1, "recursive_doubling"},
    {COHORT_COLL_ALLREDUCE, 0, 0, 1, 0, 0, 4 * MIB, "rabenseifner"},
    {COHORT_COLL_ALLREDUCE, 0, 0, -1, 0, 0, ANY, "ring"},
    {COHORT_COLL_ALLGATHER, 0, 0, -1, 0, 0, ANY, "cuda_ipc"},
    {COHORT_COLL_ALLGATHER, 2, 2, -1, 0, 0, 4 * KIB + 1, "shm"},
    {COHORT_COLL_ALLGATHER, 3, 0, -1, 0, 0, 16 * KIB + 1, "shm"},
    {COHORT_COLL_ALLGATHER, 0, 0, -1, 0, 4 * KIB + 1, ANY, "direct"},
    {COHORT_COLL_ALLGATHER, 2, 2, -1, 0, 0, ANY, "ring"},
    {COHORT_COLL_ALLGATHER, 0, 0, -1, 1, MIB, ANY, "ring"},
    {COHORT_COLL_ALLGATHER, 0, 0, -1, 0, 0, ANY, "bruck"},
    {COHORT_COLL_REDUCE_SCATTER, 0, 0, -1, 0, 0, ANY, "cuda_ipc"},
    {COHORT_COLL_REDUCE_SCATTER, 0, 0, -1, 0, 0, ANY, "shm"},
    {COHORT_COLL_REDUCE_SCATTER, 0, 0, -1, 0, 16 * KIB, ANY, "direct"},
    {COHORT_COLL_REDUCE_SCATTER, 0, 0, 1, 1, 0, MIB + 1, "recursive_halving"},
    {COHORT_COLL_REDUCE_SCATTER, 0, 0, 0, 1, 0, 16 * KIB + 1, "recursive_halving"},
    {COHORT_COLL_REDUCE_SCATTER, 0, 0, -1, 0, 0, ANY, "ring"},
    {COHORT_COLL_ALLTOALL, 0, 0, -1, 0, 0, ANY, "cuda_ipc"},
    {COHORT_COLL_ALLTOALL, 2, 2, -1, 0, 0, 8 * KIB + 1, "shm"},
    {COHORT_COLL_ALLTOALL, 3, 0, -1, 0, 0, ANY, "shm"},
    {COHORT_COLL_ALLTOALL, 0, 0, -1, 0, 16 * KIB, 256 * KIB + 1, "direct"},
    {COHORT_COLL_ALLTOALL, 5, 0, -1, 1, 0, 16 * KIB + 1, "bruck"},
    {COHORT_COLL_ALLTOALL, 0, 0, -1, 0, 0, ANY, "pairwise"},
};

/* The defaults are text in the COHORT_ALGO_ syntax, read by the parser the environment goes
 * through: every rule comes back as the table had it, in order. */
START_TEST(test_default_rules_parse)
{
    char *env[] = {NULL};
    size_t at = 0;

    ck_assert_int_eq(setup_env(env), COHORT_OK);
    for (int c = 0; c < COHORT_COLL_LAST; c++) {
        int n;
        const cohort_coll_rule_t *r = cohort_coll_default_rules(&ctx, (cohort_coll_type_t)c, &n);

        ck_assert_int_gt(n, 0);
        for (int i = 0; i < n; i++, at++) {
            ck_assert_uint_lt(at, sizeof(reference) / sizeof(reference[0]));
            ck_assert_int_eq(r[i].coll, reference[at].coll);
            ck_assert_int_eq(r[i].algo->coll, reference[at].coll);
            ck_assert_msg(
                strcmp(r[i].algo->name, reference[at].name) == 0 &&
                    r[i].min_n == reference[at].min_n && r[i].max_n == reference[at].max_n &&
                    r[i].pow2 == reference[at].pow2 && r[i].total == reference[at].total &&
                    r[i].lo == reference[at].lo && r[i].hi == reference[at].hi,
                "rule %zu: %s n=%d-%d pow2 %d total %d %zu-%zu, expected %s", at, r[i].algo->name,
                r[i].min_n, r[i].max_n, r[i].pow2, r[i].total, r[i].lo, r[i].hi,
                reference[at].name);
        }
    }
    ck_assert_uint_eq(at, sizeof(reference) / sizeof(reference[0]));
}
END_TEST

/* The conditions the defaults need are the user's too. */
START_TEST(test_rule_syntax)
{
    char *env[] = {"COHORT_ALGO_ALLREDUCE=n=3-5:notpow2:0-4k+1:ring,n=8:pow2:rabenseifner",
                   "COHORT_ALGO_ALLGATHER=total:0-64k:ring,n=2-inf:bruck", NULL};

    ck_assert_int_eq(setup_env(env), COHORT_OK);
    ck_assert_str_eq(pick(COHORT_COLL_ALLREDUCE, 4096, 3), "ring");
    ck_assert_str_eq(pick(COHORT_COLL_ALLREDUCE, 4096, 5), "ring");
    ck_assert_str_eq(pick(COHORT_COLL_ALLREDUCE, 4097, 3), "recursive_doubling");
    ck_assert_str_eq(pick(COHORT_COLL_ALLREDUCE, 4096, 4), "recursive_doubling");
    ck_assert_str_eq(pick(COHORT_COLL_ALLREDUCE, 4096, 6), "recursive_doubling");
    ck_assert_str_eq(pick(COHORT_COLL_ALLREDUCE, 1u << 30, 8), "rabenseifner");
    ck_assert_str_eq(pick(COHORT_COLL_ALLREDUCE, 8, 16), "recursive_doubling");
    /* 8 KiB per rank: 64 KiB in all on 8 ranks is past the range, 56 KiB on 7 is not */
    ck_assert_str_eq(pick(COHORT_COLL_ALLGATHER, 8 * 1024, 7), "ring");
    ck_assert_str_eq(pick(COHORT_COLL_ALLGATHER, 8 * 1024, 8), "bruck");
}
END_TEST

START_TEST(test_bad_rule_syntax)
{
    static const char *const bad[] = {
        "COHORT_ALGO_ALLREDUCE=n=0:ring",       "COHORT_ALGO_ALLREDUCE=n=5-3:ring",
        "COHORT_ALGO_ALLREDUCE=n=4k:ring",      "COHORT_ALGO_ALLREDUCE=n=2-8k:ring",
        "COHORT_ALGO_ALLREDUCE=n=:ring",        "COHORT_ALGO_ALLREDUCE=0-4k+:ring",
        "COHORT_ALGO_ALLREDUCE=0-4k+1k:ring",   "COHORT_ALGO_ALLREDUCE=0-inf+1:ring",
        "COHORT_ALGO_ALLREDUCE=pow:ring",       "COHORT_ALGO_ALLREDUCE=:ring",
        "COHORT_ALGO_ALLREDUCE=4k+1-4k+1:ring",
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *env[] = {(char *)bad[i], NULL};
        ck_assert_int_eq(setup_env(env), COHORT_ERR_INVALID_ARG);
        ck_assert_msg(strstr(err, "bad size range or condition") != NULL, "'%s' gave '%s'", bad[i],
                      err);
    }
}
END_TEST

/* This rank's module as selection sees it: loaded (a device, a driver) or tried and absent. */
static void fake_gpu(int present)
{
    static const cohort_gpu_module_t mod;

    ctx.mem.gpu.state = present ? COHORT_GPU_READY : COHORT_GPU_NONE;
    ctx.mem.gpu.mod = present ? &mod : NULL;
    ctx.mem.gpu.driver = present;
}

#define ALL_HERE (COHORT_NODE_SAME | COHORT_NODE_DIRECT | COHORT_NODE_SHM)

/* The case selects @a algo, and a vote for @a vote (NULL: none). */
static void expect(cohort_coll_type_t coll, size_t bytes, int gsize, int node, const char *algo,
                   const char *vote)
{
    const cohort_coll_algo_t *v = NULL, *a = select_at(coll, bytes, gsize, node, &v);

    ck_assert_msg(strcmp(a->name, algo) == 0 &&
                      (vote == NULL ? v == NULL : v != NULL && strcmp(v->name, vote) == 0),
                  "%s of %zu bytes on %d (node %d): %s, vote %s; expected %s, vote %s",
                  cohort_coll_names[coll], bytes, gsize, node, a->name, v ? v->name : "none", algo,
                  vote ? vote : "none");
    ck_assert(v == NULL || v->coll == coll);
}

/* The public ids are a contract (cohort.h: cohort_algo_info, cohort_bench algorithms): with
 * the rows in one table per collective, each row carries its id, and this pins every one to
 * its collective and name, and checks the tables: each row in its own collective's table,
 * ascending ids there (the order an unknown name's error lists them), ids 0 to count - 1 each
 * once, below COHORT_ALGOS_MAX (the knobs' room). */
START_TEST(test_tables)
{
    static const struct {
        const char *coll, *name;
    } ids[] = {{"barrier", "dissemination"},
               {"bcast", "knomial"},
               {"bcast", "scatter_allgather"},
               {"allgather", "bruck"},
               {"allgather", "ring"},
               {"alltoall", "bruck"},
               {"alltoall", "pairwise"},
               {"allreduce", "recursive_doubling"},
               {"allreduce", "ring"},
               {"allreduce", "rabenseifner"},
               {"reduce", "knomial"},
               {"reduce_scatter", "ring"},
               {"reduce_scatter", "recursive_halving"},
               {"allreduce", "direct"},
               {"reduce_scatter", "direct"},
               {"allgather", "direct"},
               {"alltoall", "direct"},
               {"bcast", "direct"},
               {"allreduce", "shm"},
               {"reduce", "shm"},
               {"reduce_scatter", "shm"},
               {"allgather", "shm"},
               {"alltoall", "shm"},
               {"bcast", "shm"},
               {"barrier", "shm"},
               {"bcast", "cuda_ipc"},
               {"reduce", "cuda_ipc"},
               {"allreduce", "cuda_ipc"},
               {"allgather", "cuda_ipc"},
               {"reduce_scatter", "cuda_ipc"},
               {"alltoall", "cuda_ipc"}};
    const cohort_coll_table_t *tables[COHORT_COLL_LAST] = {
        &cohort_barrier_table,   &cohort_bcast_table,     &cohort_reduce_table,
        &cohort_allreduce_table, &cohort_allgather_table, &cohort_reduce_scatter_table,
        &cohort_alltoall_table};
    int seen[COHORT_ALGOS_MAX] = {0}, total = 0;

    ck_assert_int_eq(cohort_algo_count(), (int)(sizeof(ids) / sizeof(ids[0])));
    for (int i = 0; i < cohort_algo_count(); i++) {
        cohort_algo_info_t info;
        ck_assert_int_eq(cohort_algo_info(i, &info), COHORT_OK);
        ck_assert_int_eq(info.id, i);
        ck_assert_str_eq(info.collective, ids[i].coll);
        ck_assert_str_eq(info.name, ids[i].name);
    }
    for (int c = 0; c < COHORT_COLL_LAST; c++) {
        ck_assert_int_eq(tables[c]->coll, c);
        for (int r = 0; r < tables[c]->nrows; r++) {
            const cohort_coll_algo_t *row = tables[c]->rows[r];
            ck_assert_int_eq(row->coll, c);
            ck_assert_int_ge(row->id, 0);
            ck_assert_int_lt(row->id, COHORT_ALGOS_MAX);
            ck_assert_int_eq(seen[row->id]++, 0);
            if (r > 0) {
                ck_assert_int_gt(row->id, tables[c]->rows[r - 1]->id);
            }
            total++;
        }
    }
    ck_assert_int_eq(total, cohort_algo_count());
    ck_assert_int_eq(cohort_algo_info(total, &(cohort_algo_info_t){0}), COHORT_ERR_INVALID_ARG);
}
END_TEST

/* CUDA IPC is a row of the table: listed, voted on from COHORT_CUDA_IPC_MIN under auto, taken
 * under on, never under off; a user's COHORT_ALGO_ rule may name it (a vote from any size) or
 * leave it out. */
START_TEST(test_cuda_ipc_rows)
{
    char *def[] = {NULL};
    char *on[] = {"COHORT_CUDA_IPC=on", NULL};
    char *off[] = {"COHORT_CUDA_IPC=off", "COHORT_ALGO_ALLREDUCE=cuda_ipc", NULL};
    char *forced[] = {"COHORT_ALGO_ALLREDUCE=cuda_ipc", NULL};
    char *other[] = {"COHORT_ALGO_ALLREDUCE=ring", NULL};
    char *ranged[] = {"COHORT_ALGO_ALLREDUCE=1m-inf:cuda_ipc,ring", NULL};
    const cohort_coll_algo_t *vote;
    int rows = 0;

    for (int i = 0; i < cohort_algo_count(); i++) {
        cohort_algo_info_t info;
        ck_assert_int_eq(cohort_algo_info(i, &info), COHORT_OK);
        if (strcmp(info.name, "cuda_ipc") == 0) {
            ck_assert_str_ne(info.collective, "barrier");
            rows++;
        }
    }
    ck_assert_int_eq(rows, 6);

    ck_assert_int_eq(setup_env(def), COHORT_OK);
    fake_gpu(1);
    for (int c = COHORT_COLL_BCAST; c < COHORT_COLL_LAST; c++) {
        ck_assert_str_ne(select_at((cohort_coll_type_t)c, 1u << 20, 4, ALL_HERE, &vote)->name,
                         "cuda_ipc");
        ck_assert_ptr_nonnull(vote);
        ck_assert_str_eq(vote->name, "cuda_ipc");
        ck_assert_int_eq(vote->coll, c);
    }
    expect(COHORT_COLL_ALLREDUCE, 1u << 20, 4, ALL_HERE, "direct", "cuda_ipc");
    expect(COHORT_COLL_ALLREDUCE, (1u << 20) - 1, 4, ALL_HERE, "direct", NULL);
    expect(COHORT_COLL_BARRIER, 1u << 20, 4, ALL_HERE, "shm", NULL);
    /* members on other nodes, a group of one, too many members, nothing to move */
    expect(COHORT_COLL_ALLREDUCE, 1u << 20, 4, 0, "rabenseifner", NULL);
    expect(COHORT_COLL_ALLREDUCE, 1u << 20, 1, ALL_HERE, "rabenseifner", NULL);
    expect(COHORT_COLL_ALLREDUCE, 1u << 20, 1000, ALL_HERE, "ring", NULL);
    expect(COHORT_COLL_ALLREDUCE, 0, 4, ALL_HERE, "recursive_doubling", NULL);
    /* every member on this node without single copy (COHORT_CMA=off): still a vote */
    expect(COHORT_COLL_ALLREDUCE, 1u << 20, 4, COHORT_NODE_SAME, "rabenseifner", "cuda_ipc");
    fake_gpu(0);
    expect(COHORT_COLL_ALLREDUCE, 1u << 20, 4, ALL_HERE, "direct", NULL);

    ck_assert_int_eq(setup_env(on), COHORT_OK);
    fake_gpu(1);
    expect(COHORT_COLL_ALLREDUCE, 8, 2, ALL_HERE, "cuda_ipc", NULL);
    expect(COHORT_COLL_ALLTOALL, 8, 3, ALL_HERE, "cuda_ipc", NULL);
    expect(COHORT_COLL_BARRIER, 8, 3, ALL_HERE, "shm", NULL);
    expect(COHORT_COLL_ALLREDUCE, 8, 2, 0, "recursive_doubling", NULL);
    fake_gpu(0);
    expect(COHORT_COLL_ALLREDUCE, 8, 2, ALL_HERE, "shm", NULL);

    /* off wins over a user's rule, which passes to the next one */
    ck_assert_int_eq(setup_env(off), COHORT_OK);
    fake_gpu(1);
    expect(COHORT_COLL_ALLREDUCE, 1u << 20, 4, ALL_HERE, "direct", NULL);

    /* named by the user: a vote at any size, the defaults choosing what runs otherwise */
    ck_assert_int_eq(setup_env(forced), COHORT_OK);
    fake_gpu(1);
    expect(COHORT_COLL_ALLREDUCE, 8, 4, ALL_HERE, "shm", "cuda_ipc");
    fake_gpu(0);
    expect(COHORT_COLL_ALLREDUCE, 8, 4, ALL_HERE, "shm", NULL);

    /* a user's rule ahead of it leaves it out; after it, chooses what runs on a no */
    ck_assert_int_eq(setup_env(other), COHORT_OK);
    fake_gpu(1);
    expect(COHORT_COLL_ALLREDUCE, 1u << 20, 4, ALL_HERE, "ring", NULL);
    ck_assert_int_eq(setup_env(ranged), COHORT_OK);
    fake_gpu(1);
    expect(COHORT_COLL_ALLREDUCE, 1u << 20, 4, ALL_HERE, "ring", "cuda_ipc");
    expect(COHORT_COLL_ALLREDUCE, 8, 4, ALL_HERE, "ring", NULL);
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
    tcase_add_test(tc, test_default_rules_parse);
    tcase_add_test(tc, test_rule_syntax);
    tcase_add_test(tc, test_bad_rule_syntax);
    tcase_add_test(tc, test_cuda_ipc_rows);
    tcase_add_test(tc, test_tables);
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
