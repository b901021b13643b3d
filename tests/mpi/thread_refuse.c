/* run: 3 */
/* run: 2 */
/*
 * Two threads of one rank on the *same* group: the call that comes in while the other thread is
 * inside a call on that group is refused (a group is used by one thread at a time, cohort.h),
 * and the refusal reaches every member (issue 39, item 3): the group is revoked with
 * COHORT_ERR_MISMATCH at once, told to the others, so that nobody waits in a call this rank
 * never made. Two threads on *different* groups of the context both go on.
 *
 * Rank 0's thread A sits in an allreduce on group "a", which the other ranks join only after
 * their allreduce on group "b". Rank 0's main thread calls that allreduce on "a" too while A is
 * inside: one of the two calls is refused (INVALID_ARG; the main thread's, unless the machine
 * held A back for the whole 100 ms, then A's) and the other returns MISMATCH. The main thread
 * then runs its allreduce on "b" while A may still be inside "a": it completes (before issue 39
 * it was refused too). The other ranks: "b" works, "a" is MISMATCH (at the latest on the call
 * after the one rank 0 had joined before the refusal), never a hang.
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
    if (a_status == COHORT_OK) {
        a_status = COHORT_ERR_UCX; /* it cannot complete: the others are not in it */
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
        cohort_status_t mine;
        CHECK(pthread_create(&a, NULL, thread_a, NULL) == 0);
        while (!atomic_load(&a_inside)) {
            usleep(1000);
        }
        /* A takes the group right after its flag, and cannot leave its call before the others
         * joined "a", which they do only after "b" ended for them. */
        usleep(100000);
        mine = cohort_allreduce(ga, &v, &sum, 1, COHORT_INT32, COHORT_SUM);
        /* the other group of the context works meanwhile */
        CHECK_OK(test_one_allreduce(gb));
        CHECK(pthread_join(a, NULL) == 0);
        /* one refused, the other's call ended by the revocation the refusal made */
        CHECK((mine == COHORT_ERR_INVALID_ARG && a_status == COHORT_ERR_MISMATCH) ||
              (mine == COHORT_ERR_MISMATCH && a_status == COHORT_ERR_INVALID_ARG));
        if (mine != COHORT_ERR_INVALID_ARG) {
            fprintf(stderr, "thread_refuse: thread A came in late; the roles were swapped\n");
        }
        CHECK_STATUS(test_one_allreduce(ga), COHORT_ERR_MISMATCH);
    } else {
        cohort_status_t st;
        CHECK_OK(test_one_allreduce(gb));
        /* Rank 0's call inside "a" had given its part before the refusal: where the algorithm
         * needs nothing more of it (a shared segment), this one call may still complete here.
         * The next one needs rank 0, whose group is revoked: MISMATCH, never a hang. */
        st = test_one_allreduce(ga);
        CHECK(st == COHORT_OK || st == COHORT_ERR_MISMATCH);
        if (st == COHORT_OK) {
            CHECK_STATUS(test_one_allreduce(ga), COHORT_ERR_MISMATCH);
        }
    }
    CHECK_OK(test_one_allreduce(gb)); /* the other group still works */
    CHECK_OK(cohort_group_free(gb));
    CHECK_OK(cohort_group_free(ga));
    CHECK_OK(cohort_barrier(w));
    test_finish(ctx, "thread_refuse");
    return 0;
}
