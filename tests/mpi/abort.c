/* run: 4 --enable-recovery --expect-passed=3 */
/*
 * cohort_group_abort reaches every member. Rank 0 aborts a group of four while the three
 * others wait in an allreduce on it: they get COHORT_ERR_REVOKED within seconds, and rank 0's
 * own later call fails at once. Then rank 3 dies, and rank 0 aborts a second group holding
 * it: the abort returns at once although a member is dead, and the two live members waiting
 * in it are released (COHORT_ERR_REVOKED, or COHORT_ERR_PEER_FAILED when they learn of the
 * death first).
 */
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include "harness.h"

/* How long the waiting members wait to be released: a minute, whatever the load (how soon
 * is a benchmark's to measure; the times are printed). */
#define RELEASE_S 60.0

int main(void)
{
    cohort_context_t *ctx = test_init();
    int me = cohort_world_rank(ctx), all[4] = {0, 1, 2, 3}, trio[3] = {0, 1, 2};
    cohort_group_t *g1, *g2, *t;
    double t0;
    cohort_status_t st;

    CHECK(cohort_world_size(ctx) == 4);
    CHECK_OK(cohort_group_create(ctx, "first", all, 4, &g1));
    CHECK_OK(cohort_group_create(ctx, "second", all, 4, &g2));
    CHECK_OK(cohort_barrier(cohort_world(ctx)));

    if (me == 0) {
        usleep(300000);
        t0 = test_now();
        CHECK_OK(cohort_group_abort(g1));
        printf("rank 0: the abort returned after %.3f s\n", test_now() - t0);
        CHECK_STATUS(test_one_allreduce(g1), COHORT_ERR_REVOKED);
    } else {
        t0 = test_now();
        CHECK_STATUS(test_one_allreduce(g1), COHORT_ERR_REVOKED);
        CHECK(test_now() - t0 < RELEASE_S);
        printf("rank %d: released by the abort after %.2f s\n", me, test_now() - t0);
    }
    CHECK_OK(cohort_barrier(cohort_world(ctx)));

    if (me == 3) {
        kill(getpid(), SIGKILL);
    }
    if (me == 0) {
        usleep(300000);
        t0 = test_now();
        CHECK_OK(cohort_group_abort(g2));
        printf("rank 0: the abort with a member dead returned after %.3f s\n", test_now() - t0);
    } else {
        t0 = test_now();
        st = test_one_allreduce(g2);
        CHECK(st == COHORT_ERR_REVOKED || st == COHORT_ERR_PEER_FAILED);
        CHECK(test_now() - t0 < RELEASE_S);
        printf("rank %d: released (%s) after %.2f s with a member dead\n", me, cohort_strerror(st),
               test_now() - t0);
    }
    CHECK_OK(cohort_group_free(g1));
    CHECK_OK(cohort_group_free(g2));
    /* The living go on together. */
    CHECK_OK(cohort_group_create(ctx, "trio", trio, 3, &t));
    CHECK_OK(test_one_allreduce(t));
    CHECK_OK(cohort_barrier(t));
    CHECK_OK(cohort_group_free(t));
    CHECK_OK(cohort_finalize(ctx));
    printf("rank %d: rank passed\n", me);
    return 0;
}
