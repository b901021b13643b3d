/* run: 2 COHORT_TIMEOUT=30 */
/* run: 4 COHORT_TIMEOUT=30 */
/* run: 4 COHORT_TIMEOUT=30 COHORT_CMA=off POST_FAIL_COLL=bcast */
/*
 * A local failure at post revokes the group and tells the others (the error rule). The last
 * rank's second collective on a group fails at its post (COHORT_FAULT=post:2@<last>, as if
 * staging ran out of memory): it gets COHORT_ERR_NO_MEMORY; every other member, which posted
 * the same call and waits for it, gets COHORT_ERR_REVOKED, and so does every later call on that
 * group on every member. Before, the failing rank returned without a word and without spending
 * the call's number: the others waited until COHORT_TIMEOUT (TIMEOUT here, a hang without it),
 * and its next call would have taken their number. Each wait is bounded by COHORT_TIMEOUT
 * (30 s): a revocation that never comes is a TIMEOUT, not a hang. A fresh group then works.
 * POST_FAIL_COLL=bcast: a bcast whose root is the failing rank instead of an allreduce.
 */
#include <string.h>
#include "harness.h"

static cohort_status_t one_call(cohort_group_t *g, int bcast, int root, float *buf, size_t n)
{
    return bcast ? cohort_bcast(g, buf, n, COHORT_FLOAT32, root)
                 : cohort_allreduce(g, COHORT_IN_PLACE, buf, n, COHORT_FLOAT32, COHORT_SUM);
}

int main(void)
{
    cohort_context_t *ctl = test_init(), *ctx = NULL;
    int n = cohort_world_size(ctl), me = cohort_world_rank(ctl), last = n - 1;
    const char *which = getenv("POST_FAIL_COLL");
    int bcast = which != NULL && strcmp(which, "bcast") == 0;
    int *all = malloc(sizeof(int) * (size_t)n);
    size_t count = 1 << 16;
    float *buf = malloc(count * sizeof(float));
    cohort_group_t *g, *side, *again;
    char fault[64];
    cohort_status_t st;

    CHECK(all != NULL && buf != NULL);
    for (int k = 0; k < n; k++) {
        all[k] = k;
    }
    snprintf(fault, sizeof(fault), "post:2@%d", last);
    setenv("COHORT_FAULT", fault, 1);
    CHECK_OK(cohort_init(&ctx));
    unsetenv("COHORT_FAULT");
    CHECK_OK(cohort_group_create(ctx, "post", all, n, &g));
    CHECK_OK(cohort_group_create(ctx, "side", all, n, &side));

    /* the first call: right everywhere */
    for (size_t i = 0; i < count; i++) {
        buf[i] = (float)(me + 1);
    }
    CHECK_OK(one_call(g, bcast, last, buf, count));
    CHECK(buf[count - 1] == (bcast ? (float)(last + 1) : (float)(n * (n + 1) / 2)));
    /* Every member done with the first before the last posts the second: the revocation fails
     * whatever is in flight on the group, and a bcast's root finishes before the members its
     * data goes through (seen: rank 2 got REVOKED from the first bcast at 4 ranks with CMA off).
     * On the other context, whose collectives do not pass the fault point. */
    CHECK_OK(cohort_barrier(cohort_world(ctl)));

    /* the second: fails at the last rank's post */
    st = one_call(g, bcast, last, buf, count);
    if (me == last) {
        CHECK_STATUS(st, COHORT_ERR_NO_MEMORY);
    } else {
        CHECK_STATUS(st, COHORT_ERR_REVOKED);
    }
    /* every member, the failing one too, keeps progressing this context until all are here */
    CHECK_OK(cohort_barrier(side));
    CHECK_STATUS(one_call(g, bcast, last, buf, count), COHORT_ERR_REVOKED);
    CHECK_OK(cohort_group_free(g));

    /* a fresh group over the same members goes on */
    CHECK_OK(cohort_group_create(ctx, "again", all, n, &again));
    for (size_t i = 0; i < count; i++) {
        buf[i] = (float)(me + 1);
    }
    CHECK_OK(one_call(again, bcast, last, buf, count));
    CHECK(buf[0] == (bcast ? (float)(last + 1) : (float)(n * (n + 1) / 2)));
    CHECK_OK(cohort_group_free(again));
    CHECK_OK(cohort_group_free(side));
    CHECK_OK(cohort_finalize(ctx));
    free(buf);
    free(all);
    CHECK_OK(cohort_finalize(ctl));
    printf("rank %d: post_fail: passed\n", me);
    return 0;
}
