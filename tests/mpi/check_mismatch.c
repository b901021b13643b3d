/* run: 2 COHORT_CHECK=1 */
/* run: 4 COHORT_CHECK=1 COHORT_TIMEOUT=20 COHORT_ALGO_ALLREDUCE=recursive_doubling */
/* run: 5 COHORT_CHECK=1 COHORT_TIMEOUT=20 */
/*
 * COHORT_CHECK=1: members that call a group's collective with different arguments all get
 * COHORT_ERR_MISMATCH (logged, naming the field), never a quiet success, a hang or wrong data,
 * and the group stays usable for the next, matching, collective. The members agree on the
 * arguments before any data moves, so a member that would never receive an odd message is
 * told too: a bcast where half the members name another root returns MISMATCH everywhere
 * (it used to succeed on two members and time out on the others).
 */
#include <string.h>
#include "harness.h"

int main(void)
{
    cohort_context_t *ctx = test_init();
    cohort_group_t *w = cohort_world(ctx);
    int me = cohort_world_rank(ctx), n = cohort_world_size(ctx);
    float a[8] = {1, 2, 3, 4, 5, 6, 7, 8}, b[8];
    int x = me, sum = -1, odd = me == n - 1; /* one member differs: the last */
    double d = 0;

    /* count */
    memset(b, 0, sizeof(b));
    CHECK_STATUS(cohort_allreduce(w, a, b, odd ? 8 : 4, COHORT_FLOAT32, COHORT_SUM),
                 COHORT_ERR_MISMATCH);
    CHECK(b[0] == 0); /* nothing moved */
    /* op */
    CHECK_STATUS(cohort_allreduce(w, &x, &sum, 1, COHORT_INT32, odd ? COHORT_MAX : COHORT_SUM),
                 COHORT_ERR_MISMATCH);
    CHECK(sum == -1);
    /* dtype (same size: an int32 and a float32 would otherwise add up as garbage) */
    CHECK_STATUS(cohort_allreduce(w, a, b, 2, odd ? COHORT_INT32 : COHORT_FLOAT32, COHORT_SUM),
                 COHORT_ERR_MISMATCH);
    /* root: half the members name another one */
    CHECK_STATUS(cohort_bcast(w, &d, 1, COHORT_FLOAT64, me < n / 2 ? 0 : n - 1),
                 COHORT_ERR_MISMATCH);
    /* collective: one member calls a barrier where the others reduce */
    if (odd) {
        CHECK_STATUS(cohort_barrier(w), COHORT_ERR_MISMATCH);
    } else {
        CHECK_STATUS(cohort_allreduce(w, &x, &sum, 1, COHORT_INT32, COHORT_SUM),
                     COHORT_ERR_MISMATCH);
    }

    /* Matching calls afterwards work. */
    CHECK_OK(cohort_barrier(w));
    CHECK_OK(cohort_allreduce(w, &x, &sum, 1, COHORT_INT32, COHORT_SUM));
    CHECK(sum == n * (n - 1) / 2);
    d = me == 1 % n ? 2.5 : 0;
    CHECK_OK(cohort_bcast(w, &d, 1, COHORT_FLOAT64, 1 % n));
    CHECK(d == 2.5);
    CHECK_OK(cohort_barrier(w));
    test_finish(ctx, "check_mismatch");
    return 0;
}
