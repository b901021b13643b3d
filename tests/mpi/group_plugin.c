/* run: 4 --retry-on-timeout COHORT_PMIX_PLUGIN=group */
/*
 * The group plugin over a server that constructs PMIx groups (PRRTE, with the plugins built on
 * the server's PMIx: tests/launch/prrte.sh): several overlapping groups, each constructed over
 * its members at first use and carrying an allreduce; one freed and made again (a destruct,
 * then a new construct); finalize succeeds, so every destruct did. The plugin itself checks
 * that each construct gave a context id no live group holds, and fails the group otherwise.
 *
 * TEST_GROUP_PLUGIN says what the launcher must do: "works" (prrte.sh with matching PMIx),
 * "refused" (init must fail with COHORT_ERR_UNSUPPORTED: a server without groups, or a client
 * whose PMIx version differs from the server's), unset: either (make check under Open MPI
 * 4.1's mpirun, which refuses).
 */
#include <string.h>
#include <unistd.h>
#include "harness.h"

static void sum_check(cohort_group_t *g)
{
    int n = cohort_group_size(g), expect = 0;
    int v = cohort_group_world_rank(g, cohort_group_rank(g)) + 1;

    for (int i = 0; i < n; i++) {
        expect += cohort_group_world_rank(g, i) + 1;
    }
    CHECK_OK(cohort_allreduce(g, COHORT_IN_PLACE, &v, 1, COHORT_INT32, COHORT_SUM));
    CHECK(v == expect);
}

/* Every rank walks every group in the same order; members make it and use it. */
static cohort_group_t *make_use(cohort_context_t *ctx, const char *tag, const int *ranks, int n)
{
    cohort_group_t *g = NULL;
    int me = cohort_world_rank(ctx), member = 0;

    for (int i = 0; i < n; i++) {
        member |= ranks[i] == me;
    }
    CHECK_STATUS(cohort_group_create(ctx, tag, ranks, n, &g),
                 member ? COHORT_OK : COHORT_ERR_NOT_MEMBER);
    if (g != NULL) {
        sum_check(g);
    }
    return g;
}

int main(void)
{
    const char *expect = getenv("TEST_GROUP_PLUGIN");
    cohort_context_t *ctx = NULL;
    cohort_status_t status = cohort_init(&ctx);
    cohort_group_t *gs[16];
    int ng = 0, n, all[64];

    if (status == COHORT_ERR_UNSUPPORTED && (expect == NULL || strcmp(expect, "works") != 0)) {
        CHECK(ctx == NULL);
        printf("group_plugin: passed (the group plugin refused here, as it must be)\n");
        /* Not at once: Open MPI 4.1's PMIx server now and then leaves a rank that is still in
         * PMIx_Init unanswered when the others have already come and gone (seen 3 times in 13
         * runs, that rank's stack in PMIx_Init, never in cohort; 1 in 65 with this pause, then
         * after every rank had passed: hence also --retry-on-timeout). */
        sleep(2);
        return 0;
    }
    if (expect != NULL && strcmp(expect, "refused") == 0) {
        fprintf(stderr, "group_plugin: cohort_init returned %s; expected COHORT_ERR_UNSUPPORTED\n",
                cohort_strerror(status));
        return 1;
    }
    CHECK_OK(status);
    test_rank = cohort_world_rank(ctx);
    n = cohort_world_size(ctx);
    CHECK(n >= 4 && n <= 64);
    for (int i = 0; i < n; i++) {
        all[i] = i;
    }

    sum_check(cohort_world(ctx));
    /* Pairs, halves, the evens, a group of everyone made again under another tag: overlapping
     * groups, so a rank holds several live context ids at once. */
    for (int i = 0; i + 1 < n; i += 2) {
        int pair[2] = {i, i + 1};
        gs[ng] = make_use(ctx, "pair", pair, 2);
        ng += gs[ng] != NULL;
    }
    gs[ng] = make_use(ctx, "low", all, n / 2);
    ng += gs[ng] != NULL;
    gs[ng] = make_use(ctx, "high", all + n / 2, n - n / 2);
    ng += gs[ng] != NULL;
    {
        int evens[32], ne = 0;
        for (int r = 0; r < n; r += 2) {
            evens[ne++] = r;
        }
        gs[ng] = make_use(ctx, "evens", evens, ne);
        ng += gs[ng] != NULL;
    }
    gs[ng] = make_use(ctx, "everyone", all, n);
    ng += gs[ng] != NULL;
    CHECK(ng <= 16);

    /* Free "everyone" (its destruct starts) and make it again: a new construct, a new id. */
    {
        uint64_t old = cohort_group_id(gs[ng - 1]);
        CHECK_OK(cohort_group_free(gs[--ng]));
        gs[ng] = make_use(ctx, "everyone", all, n);
        CHECK(cohort_group_id(gs[ng]) != old);
        ng++;
    }
    /* The first groups again, after the others: still usable. */
    for (int i = 0; i < ng; i++) {
        sum_check(gs[i]);
    }
    CHECK_OK(cohort_barrier(cohort_world(ctx)));
    /* Half the groups freed here, the rest by finalize: every destruct must succeed. */
    for (int i = 0; i < ng; i += 2) {
        CHECK_OK(cohort_group_free(gs[i]));
    }
    test_finish(ctx, "group_plugin");
    return 0;
}
