/* run: 2 COHORT_TIMEOUT=20 */
/* run: 3 UCX_TLS=tcp,self COHORT_TIMEOUT=20 */
/*
 * Finalize says goodbye to peers that only sent to us. Every other rank sends rank 0 a small
 * message; rank 0 receives them, sends nothing, holds no endpoint to anyone, and finalizes.
 * The others then wait on a receive from rank 0: it must end because rank 0 said goodbye
 * (PEER_FAILED, "finalized"), and nobody may count rank 0 as failed. Without the goodbye the
 * receive waits until COHORT_TIMEOUT over shared memory, and over tcp rank 0's connection
 * closing is taken for its death (peers_failed = 1). The peers heard from are remembered on
 * their own entries, not in a bitmap over the world (DESIGN rule 7).
 */
#include "harness.h"

int main(void)
{
    cohort_context_t *ctx = test_init();
    cohort_group_t *w = cohort_world(ctx);
    int me = cohort_world_rank(ctx), n = cohort_world_size(ctx), v = 0, failed[1];
    cohort_stats_t st;
    cohort_request_t *r;

    CHECK(n >= 2);
    if (me == 0) {
        for (int src = 1; src < n; src++) {
            CHECK_OK(cohort_recv(w, &v, 1, COHORT_INT32, src, 1));
            CHECK(v == 100 + src);
        }
        /* Only heard from them: the case finalize wires endpoints for. */
        CHECK(cohort_wired_peers(ctx, NULL, 0) == 0);
        CHECK_OK(cohort_finalize(ctx));
        printf("bye_listener: passed\n");
        return 0;
    }
    v = 100 + me;
    CHECK_OK(cohort_send(w, &v, 1, COHORT_INT32, 0, 1));
    CHECK_OK(cohort_irecv(w, &v, 1, COHORT_INT32, 0, 2, &r));
    CHECK_STATUS(cohort_wait(r), COHORT_ERR_PEER_FAILED);
    cohort_request_free(r);
    CHECK_OK(cohort_stats(ctx, &st));
    if (st.peers_failed != 0 || cohort_failed_ranks(ctx, failed, 1) != 0) {
        fprintf(stderr, "rank %d: rank 0's finalize was taken for a failure\n", me);
        return 1;
    }
    CHECK_OK(cohort_finalize(ctx));
    return 0;
}
