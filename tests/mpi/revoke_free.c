/* run: 3 COHORT_TIMEOUT=20 */
/*
 * A group revoked here and freed at once still tells its members. Rank 0 aborts one group and
 * frees it with no progress in between; it frees a send on a second group, aborts that group
 * and frees it at once. (Freeing the send alone no longer revokes its group: since issue 39 it
 * tells its receiver, COHORT_ERR_CANCELED, and the group stays usable.) Ranks 1 and 2 wait in a barrier on each: both return
 * COHORT_ERR_REVOKED. Before, the REVOKE messages waited for rank 0's next progress pass,
 * and freeing the group dropped them: the others waited for ever (or until COHORT_TIMEOUT).
 */
#include "harness.h"

int main(void)
{
    cohort_context_t *ctx = test_init();
    int me = cohort_world_rank(ctx), all[3] = {0, 1, 2};
    size_t n = 1 << 20; /* not sent at once: rendezvous, or a single copy the receiver makes */
    int *x = calloc(n, sizeof(int));
    cohort_group_t *g1, *g2;
    cohort_request_t *r;

    CHECK(cohort_world_size(ctx) == 3 && x != NULL);
    CHECK_OK(cohort_group_create(ctx, "aborted", all, 3, &g1));
    CHECK_OK(cohort_group_create(ctx, "send-freed", all, 3, &g2));
    CHECK_OK(cohort_barrier(cohort_world(ctx)));
    if (me == 0) {
        CHECK_OK(cohort_group_abort(g1));
        CHECK_OK(cohort_group_free(g1));
        CHECK_OK(cohort_isend(g2, x, n, COHORT_INT32, 1, 3, &r));
        cohort_request_free(r);
        CHECK_OK(cohort_group_abort(g2));
        CHECK_OK(cohort_group_free(g2));
    } else {
        CHECK_STATUS(cohort_barrier(g1), COHORT_ERR_REVOKED);
        CHECK_STATUS(cohort_barrier(g2), COHORT_ERR_REVOKED);
        CHECK_OK(cohort_group_free(g1));
        CHECK_OK(cohort_group_free(g2));
    }
    CHECK_OK(cohort_barrier(cohort_world(ctx)));
    free(x);
    test_finish(ctx, "revoke_free");
    return 0;
}
