/* clang-format off */
/* run: 3 COHORT_TIMEOUT=20 COHORT_ALGO_BARRIER=dissemination COHORT_ALGO_BCAST=knomial */
/* run: 3 COHORT_TIMEOUT=20 COHORT_ALGO_BARRIER=dissemination COHORT_ALGO_BCAST=knomial COHORT_CMA=off */
/* run: 3 COHORT_TIMEOUT=20 COHORT_ALGO_BCAST=knomial */
/* clang-format on */
/*
 * One error rule: a failure the members did not agree on revokes the group and tells the
 * others, so nobody waits for ever.
 * 1. Rank 0 posts a barrier on group "freed" and frees the group with it outstanding. Ranks 1
 *    and 2 then wait in that group's barrier: both get COHORT_ERR_REVOKED. Before, the free
 *    set the group's error before cancelling, so the revocation was never sent: rank 2 waited
 *    for rank 0's second round until COHORT_TIMEOUT (TIMEOUT, not REVOKED).
 * 2. A count mismatch found by one transfer: a bcast from rank 0 (the tree, on messages) where
 *    rank 1 passes half the count, small (eager) and large (single copy; rendezvous with
 *    COHORT_CMA=off). Rank 1's receive finds the message too long and gets
 *    COHORT_ERR_MISMATCH, and then every member's barrier on that group does too. Before, such
 *    a MISMATCH was rank 1's alone (it shared the status of an agreed one, which leaves the
 *    group usable): ranks 0 and 2 went on as if nothing happened (their barrier succeeded).
 * 3. Rank 0 posts a 4 MiB receive from rank 1 on group "recv-freed" and frees the group with
 *    it outstanding; rank 1 then sends it 4 MiB on that group (single copy; rendezvous with
 *    COHORT_CMA=off). Rank 1's send ends (REVOKED, or OK where the message reached rank 0 and
 *    was dropped there) instead of waiting for a receiver that is gone, and rank 0's buffer,
 *    handed back by the free, is never written (its pattern intact after rank 1 is done).
 * Each wait is bounded by COHORT_TIMEOUT (20 s): a revocation that never comes is a TIMEOUT,
 * not a hang. The barriers go by messages (dissemination), then by the default (the shared
 * segment: rank 0's free takes its segment away, which its peers see too).
 */
#include <string.h>
#include "harness.h"

/* Group "freed": rank 0 leaves with its barrier outstanding. */
static void test_free_outstanding(cohort_context_t *ctx, int me, const int *all)
{
    cohort_group_t *g;
    cohort_request_t *r;

    CHECK_OK(cohort_group_create(ctx, "freed", all, 3, &g));
    CHECK_OK(cohort_barrier(cohort_world(ctx)));
    if (me == 0) {
        CHECK_OK(cohort_ibarrier(g, &r));
        CHECK_OK(cohort_group_free(g));
        CHECK_STATUS(cohort_wait(r), COHORT_ERR_REVOKED);
        cohort_request_free(r);
        /* after the free: the others' barrier below starts once rank 0 has left the group */
        CHECK_OK(cohort_barrier(cohort_world(ctx)));
        return;
    }
    CHECK_OK(cohort_barrier(cohort_world(ctx)));
    CHECK_STATUS(cohort_barrier(g), COHORT_ERR_REVOKED);
    CHECK_OK(cohort_group_free(g));
}

/* Group "recv-freed": rank 0 leaves with a large receive outstanding. */
static void test_free_recv(cohort_context_t *ctx, int me, const int *all)
{
    size_t n = 4u << 20;
    unsigned char *buf = malloc(n);
    cohort_group_t *g;
    cohort_request_t *r;
    cohort_status_t st;

    CHECK(buf != NULL);
    memset(buf, me == 0 ? 0x5a : 0xc3, n);
    CHECK_OK(cohort_group_create(ctx, "recv-freed", all, 3, &g));
    CHECK_OK(cohort_barrier(cohort_world(ctx)));
    if (me == 0) {
        CHECK_OK(cohort_irecv(g, buf, n, COHORT_UINT8, 1, 7, &r));
        CHECK_OK(cohort_group_free(g));
        CHECK_STATUS(cohort_wait(r), COHORT_ERR_REVOKED);
        cohort_request_free(r);
    }
    CHECK_OK(cohort_barrier(cohort_world(ctx)));
    if (me == 1) {
        st = cohort_send(g, buf, n, COHORT_UINT8, 0, 7);
        if (st != COHORT_OK && st != COHORT_ERR_REVOKED) {
            fprintf(stderr, "rank 1: send to a freed receive returned %s\n", cohort_strerror(st));
            CHECK(0);
        }
    }
    if (me != 0) {
        CHECK_OK(cohort_group_free(g));
    }
    /* rank 1's send is over: nothing may land in rank 0's buffer from now on either */
    CHECK_OK(cohort_barrier(cohort_world(ctx)));
    CHECK_OK(cohort_barrier(cohort_world(ctx)));
    if (me == 0) {
        for (size_t i = 0; i < n; i++) {
            if (buf[i] != 0x5a) {
                fprintf(stderr, "rank 0: byte %zu of a freed receive written (0x%02x)\n", i,
                        buf[i]);
                CHECK(0);
            }
        }
    }
    free(buf);
}

/* A bcast from rank 0 of 2n ints, where rank 1 passes n: rank 1's receive finds the message
 * too long; every member of the group hears of it. */
static void test_mismatch(cohort_context_t *ctx, int me, const int *all, const char *tag, size_t n)
{
    int *buf = calloc(2 * n, sizeof(int));
    cohort_group_t *g;
    cohort_status_t st;

    CHECK(buf != NULL);
    CHECK_OK(cohort_group_create(ctx, tag, all, 3, &g));
    CHECK_OK(cohort_barrier(g));
    st = cohort_bcast(g, buf, me == 1 ? n : 2 * n, COHORT_INT32, 0);
    /* ranks 0 and 2 may be done before rank 1 says anything */
    if (!(st == COHORT_ERR_MISMATCH || (me != 1 && st == COHORT_OK))) {
        fprintf(stderr, "rank %d: bcast of %zu ints returned %s\n", me, n, cohort_strerror(st));
        CHECK(0);
    }
    CHECK_STATUS(cohort_barrier(g), COHORT_ERR_MISMATCH);
    CHECK_OK(cohort_group_free(g));
    /* rank 1's notices go out from its progress: the world barrier gives it some */
    CHECK_OK(cohort_barrier(cohort_world(ctx)));
    free(buf);
}

int main(void)
{
    cohort_context_t *ctx = test_init();
    int me = cohort_world_rank(ctx), all[3] = {0, 1, 2};

    CHECK(cohort_world_size(ctx) == 3);
    test_free_outstanding(ctx, me, all);
    test_free_recv(ctx, me, all);
    test_mismatch(ctx, me, all, "mismatch-eager", 4);
    /* 256 KiB received: one segment of the tree's pipeline (1 MiB), single copy or rendezvous */
    test_mismatch(ctx, me, all, "mismatch-large", 1u << 16);
    CHECK_OK(cohort_barrier(cohort_world(ctx)));
    test_finish(ctx, "error_rule");
    return 0;
}
