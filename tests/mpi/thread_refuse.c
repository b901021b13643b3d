/* run: 3 */
/* run: 2 */
/*
 * Two threads of one rank, each with its own group of one context: the second thread's call is
 * refused (one thread at a time per context, cohort.h), and that refusal reaches every member
 * (issue 39, item 3's least): the group is revoked with COHORT_ERR_MISMATCH, told to the
 * others, so that they return from the call this rank never made instead of waiting in it.
 * Rank 0's thread A sits in an allreduce on group "a", which the other ranks join only after
 * their allreduce on group "b"; rank 0's thread B calls that allreduce on "b" while A is inside:
 * refused (INVALID_ARG) there, MISMATCH on every other member, and the group "b" is MISMATCH on
 * rank 0 afterwards too. Group "a" is untouched: A's allreduce succeeds. Before, the others
 * waited in "b" for ever (the probe: a hang at 3 ranks with no diagnostic).
 */
#include <pthread.h>
#include <stdatomic.h>
#include "harness.h"

static cohort_group_t *ga, *gb;
static atomic_int a_inside;
static cohort_status_t a_status = COHORT_INPROGRESS;

static void *thread_a(void *arg)
{
    int v = 1, sum = 0;

    atomic_store(&a_inside, 1);
    a_status = cohort_allreduce(ga, &v, &sum, 1, COHORT_INT32, COHORT_SUM);
    if (a_status == COHORT_OK && sum != cohort_group_size(ga)) {
        a_status = COHORT_ERR_MISMATCH;
    }
    (void)arg;
    return NULL;
}

int main(void)
{
    cohort_context_t *ctx = test_init();
    int me = cohort_world_rank(ctx), n = cohort_world_size(ctx), all[8];
    cohort_group_t *w = cohort_world(ctx);

    CHECK(n >= 2 && n <= 8);
    for (int i = 0; i < n; i++) {
        all[i] = i;
    }
    CHECK_OK(cohort_group_create(ctx, "a", all, n, &ga));
    CHECK_OK(cohort_group_create(ctx, "b", all, n, &gb));
    CHECK_OK(test_one_allreduce(ga)); /* both used once: first-use steps behind them */
    CHECK_OK(test_one_allreduce(gb));
    CHECK_OK(cohort_barrier(w));
    if (me == 0) {
        pthread_t a;
        int v = 1, sum = 0;
        CHECK(pthread_create(&a, NULL, thread_a, NULL) == 0);
        while (!atomic_load(&a_inside)) {
            usleep(1000);
        }
        /* A takes the context right after its flag, and cannot leave its call before the
         * others joined "a", which they do only after "b" ended for them. */
        usleep(100000);
        CHECK_STATUS(cohort_allreduce(gb, &v, &sum, 1, COHORT_INT32, COHORT_SUM),
                     COHORT_ERR_INVALID_ARG);
        CHECK(pthread_join(a, NULL) == 0);
        CHECK_OK(a_status);
        CHECK_STATUS(test_one_allreduce(gb), COHORT_ERR_MISMATCH);
    } else {
        CHECK_STATUS(test_one_allreduce(gb), COHORT_ERR_MISMATCH);
        CHECK_OK(test_one_allreduce(ga));
    }
    CHECK_OK(test_one_allreduce(ga)); /* the other group still works */
    CHECK_OK(cohort_group_free(gb));
    CHECK_OK(cohort_group_free(ga));
    CHECK_OK(cohort_barrier(w));
    test_finish(ctx, "thread_refuse");
    return 0;
}
