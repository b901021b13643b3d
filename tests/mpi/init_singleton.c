/* run: singleton */
/* run: singleton COHORT_PROGRESS=block */
/*
 * Started without a launcher, a program is a world of one: init succeeds at once, groups,
 * point-to-point to self and barriers work, and nothing is looked up through PMIx.
 */
#include <string.h>
#include "harness.h"

int main(void)
{
    cohort_context_t *ctx = test_init();
    cohort_group_t *world = cohort_world(ctx), *g = NULL;
    cohort_stats_t st;
    int zero = 0, peers[4];
    int v = 7, got = 0;
    cohort_request_t *rr;

    CHECK(cohort_world_size(ctx) == 1);
    CHECK(cohort_world_rank(ctx) == 0);
    CHECK(cohort_group_size(world) == 1 && cohort_group_rank(world) == 0);
    CHECK_OK(cohort_stats(ctx, &st));
    CHECK(strcmp(st.pmix_plugin, "singleton") == 0);
    CHECK_OK(cohort_barrier(world));
    CHECK_OK(cohort_group_create(ctx, "solo", &zero, 1, &g));
    CHECK_OK(cohort_barrier(g));
    CHECK(cohort_wired_peers(ctx, peers, 4) == 0);

    CHECK_OK(cohort_irecv(g, &got, 1, COHORT_INT32, 0, 3, &rr));
    CHECK_OK(cohort_send(g, &v, 1, COHORT_INT32, 0, 3));
    CHECK_OK(cohort_wait(rr));
    cohort_request_free(rr);
    CHECK(got == 7);
    CHECK(cohort_wired_peers(ctx, peers, 4) == 1 && peers[0] == 0);
    CHECK_OK(cohort_stats(ctx, &st));
    CHECK(st.pmix_lookups == 0);
    CHECK_OK(cohort_group_free(g));
    test_finish(ctx, "init_singleton");
    return 0;
}
