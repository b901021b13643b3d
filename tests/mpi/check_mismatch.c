/* run: 2 COHORT_CHECK=1 */
/* run: 4 COHORT_CHECK=1 COHORT_TIMEOUT=20 COHORT_ALGO_ALLREDUCE=recursive_doubling */
/*
 * COHORT_CHECK=1: members that call a group's collectives with different arguments get
 * COHORT_ERR_MISMATCH (logged with the collective number, step and both fingerprints) instead
 * of garbage or a hang, and the group stays usable for the next, matching, collective.
 * Detection happens where a mismatched message is received: here even and odd ranks disagree,
 * so every pair that exchanges in the first step sees it. (A member that never receives from a
 * disagreeing one is released by COHORT_TIMEOUT only.)
 */
#include "harness.h"

int main(void)
{
    cohort_context_t *ctx = test_init();
    cohort_group_t *w = cohort_world(ctx);
    int me = cohort_world_rank(ctx), n = cohort_world_size(ctx);
    float a[8] = {1, 2, 3, 4, 5, 6, 7, 8}, b[8];
    int x = me, sum = -1;

    /* Even ranks reduce 4 elements, odd ranks 8; recursive doubling pairs 2k with 2k+1 first. */
    CHECK(n % 2 == 0);
    CHECK_STATUS(cohort_allreduce(w, a, b, me % 2 ? 8 : 4, COHORT_FLOAT32, COHORT_SUM),
                 COHORT_ERR_MISMATCH);
    /* A different op is a mismatch too. */
    CHECK_STATUS(cohort_allreduce(w, &x, &sum, 1, COHORT_INT32, me % 2 ? COHORT_MAX : COHORT_SUM),
                 COHORT_ERR_MISMATCH);

    /* Matching calls afterwards work. */
    CHECK_OK(cohort_barrier(w));
    CHECK_OK(cohort_allreduce(w, &x, &sum, 1, COHORT_INT32, COHORT_SUM));
    CHECK(sum == n * (n - 1) / 2);
    CHECK_OK(cohort_barrier(w));
    test_finish(ctx, "check_mismatch");
    return 0;
}
