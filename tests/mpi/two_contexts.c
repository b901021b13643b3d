/* run: 2 */
/* run: 3 COHORT_PMIX_PLUGIN=fence */
/*
 * Two contexts in one process are independent: each publishes under its own PMIx key, has its
 * own worker, groups, counters and log settings, and their collectives interleave without
 * crossing. Before, both published under one key and derived one world id: they cross-talked
 * and hung.
 */
#include "harness.h"

int main(void)
{
    cohort_context_t *a = test_init(), *b = NULL;
    cohort_group_t *wa = cohort_world(a), *wb;
    cohort_request_t *ra, *rb;
    cohort_stats_t sa, sb;
    int me = cohort_world_rank(a), n = cohort_world_size(a);
    int va = me, vb = 100 * me, oa = 0, ob = 0;

    CHECK_OK(cohort_init(&b));
    wb = cohort_world(b);
    CHECK(cohort_world_rank(b) == me && cohort_world_size(b) == n);
    /* The same tag and members in two contexts: two groups that never meet. */
    CHECK(cohort_group_id(wa) == cohort_group_id(wb));
    CHECK_OK(cohort_iallreduce(wa, &va, &oa, 1, COHORT_INT32, COHORT_SUM, &ra));
    CHECK_OK(cohort_iallreduce(wb, &vb, &ob, 1, COHORT_INT32, COHORT_SUM, &rb));
    CHECK_OK(cohort_wait(rb));
    CHECK_OK(cohort_wait(ra));
    cohort_request_free(ra);
    cohort_request_free(rb);
    CHECK(oa == n * (n - 1) / 2 && ob == 100 * n * (n - 1) / 2);
    /* Point-to-point on one context only: the other's counters do not move. */
    CHECK_OK(cohort_stats(b, &sb));
    if (n > 1) {
        int v = me;
        CHECK_OK(cohort_send(wa, &v, 1, COHORT_INT32, (me + 1) % n, 9));
        CHECK_OK(cohort_recv(wa, &v, 1, COHORT_INT32, (me + n - 1) % n, 9));
        CHECK(v == (me + n - 1) % n);
    }
    CHECK_OK(cohort_stats(a, &sa));
    {
        cohort_stats_t sb2;
        CHECK_OK(cohort_stats(b, &sb2));
        CHECK(sb2.messages_sent == sb.messages_sent);
    }
    CHECK_OK(cohort_barrier(wb));
    CHECK_OK(cohort_finalize(b));
    /* The first context goes on after the second is gone. */
    CHECK_OK(cohort_allreduce(wa, COHORT_IN_PLACE, &va, 1, COHORT_INT32, COHORT_MAX));
    CHECK(va == n - 1);
    test_finish(a, "two_contexts");
    return 0;
}
