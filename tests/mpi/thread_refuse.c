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
 *
 * Then a watchdog: rank 0's thread A sits in an allreduce on group "c" that the others join only
 * after a barrier on the world that rank 0's main thread enters last; the main thread sees it
 * posted (cohort_group_info counts it), is refused cohort_finalize while A is inside
 * (INVALID_ARG: A holds the context's groups), and aborts "c" from outside: A's allreduce
 * returns REVOKED, and so do the others' calls on "c".
 */
#include <pthread.h>
#include <stdatomic.h>
#include "harness.h"

static cohort_group_t *ga, *gb, *gc;
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

static void *thread_c(void *arg)
{
    int v = 1, sum = 0;

    a_status = cohort_allreduce(gc, &v, &sum, 1, COHORT_INT32, COHORT_SUM);
    (void)arg;
    return NULL;
}

/* A watchdog thread aborts a group another thread is stuck in; finalize is refused meanwhile. */
static void watchdog(cohort_context_t *ctx, int me)
{
    int all[8], n = cohort_world_size(ctx);
    cohort_group_info_t info;

    for (int i = 0; i < n; i++) {
        all[i] = i;
    }
    CHECK_OK(cohort_group_create(ctx, "c", all, n, &gc));
    CHECK_OK(test_one_allreduce(gc)); /* first use behind it */
    CHECK_OK(cohort_barrier(cohort_world(ctx)));
    if (me == 0) {
        pthread_t c;
        CHECK(pthread_create(&c, NULL, thread_c, NULL) == 0);
        do { /* posted: A is inside, the others are not in it yet */
            CHECK_OK(cohort_group_info(gc, &info));
        } while (info.collectives < 2);
        CHECK_STATUS(cohort_finalize(ctx), COHORT_ERR_INVALID_ARG);
        CHECK_OK(cohort_group_abort(gc));
        CHECK(pthread_join(c, NULL) == 0);
        CHECK_STATUS(a_status, COHORT_ERR_REVOKED);
        CHECK_OK(cohort_barrier(cohort_world(ctx)));
    } else {
        cohort_status_t st;
        CHECK_OK(cohort_barrier(cohort_world(ctx))); /* rank 0 has aborted "c" */
        /* As with "a": a call rank 0 had given its part to may complete; the next is REVOKED. */
        st = test_one_allreduce(gc);
        CHECK(st == COHORT_OK || st == COHORT_ERR_REVOKED);
        if (st == COHORT_OK) {
            CHECK_STATUS(test_one_allreduce(gc), COHORT_ERR_REVOKED);
        }
    }
    CHECK_STATUS(test_one_allreduce(gc), COHORT_ERR_REVOKED);
    CHECK_OK(cohort_group_free(gc));
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
    watchdog(ctx, me);
    CHECK_OK(cohort_barrier(w));
    test_finish(ctx, "thread_refuse");
    return 0;
}
