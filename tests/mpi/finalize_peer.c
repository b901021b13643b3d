/* run: 2 */
/* run: 2 UCX_TLS=tcp,self */
/* run: 4 UCX_TLS=tcp,self */
/*
 * A normal finalize is not a failure. In each of 50 rounds (a fresh context each, so a fresh
 * PMIx key and fresh endpoints), every other rank sends rank 0 a small message, a rendezvous-
 * sized one and another small one, then finalizes at once; rank 0 receives the last one only
 * after its sender is gone. Over tcp a finalizing peer closes its connection, which UCX
 * reports as an endpoint error: before goodbye messages, rank 0 took the peer as failed and
 * refused the receive ("that peer has failed") in 30-70% of runs.
 */
#include <string.h>
#include <time.h>
#include "harness.h"

#define ROUNDS 50
#define BIG    (256 * 1024)

int main(void)
{
    static unsigned char big[BIG];
    /* Holds the PMIx connection across the rounds (PMIx is initialized once per process). */
    cohort_context_t *holder = test_init();
    int world_rank = test_rank;

    for (int round = 0; round < ROUNDS; round++) {
        cohort_context_t *ctx = test_init();
        cohort_group_t *w = cohort_world(ctx);
        int me = cohort_world_rank(ctx), n = cohort_world_size(ctx);
        int32_t a, c;

        if (me != 0) {
            a = round * 1000 + me;
            c = -a;
            memset(big, (unsigned char)(round + me), sizeof(big));
            CHECK_OK(cohort_send(w, &a, 1, COHORT_INT32, 0, 1));
            CHECK_OK(cohort_send(w, big, sizeof(big), COHORT_UINT8, 0, 2));
            CHECK_OK(cohort_send(w, &c, 1, COHORT_INT32, 0, 3));
            CHECK_OK(cohort_finalize(ctx));
            continue;
        }
        for (int src = 1; src < n; src++) {
            CHECK_OK(cohort_recv(w, &a, 1, COHORT_INT32, src, 1));
            CHECK(a == round * 1000 + src);
            CHECK_OK(cohort_recv(w, big, sizeof(big), COHORT_UINT8, src, 2));
            CHECK(big[0] == (unsigned char)(round + src) &&
                  big[BIG - 1] == (unsigned char)(round + src));
        }
        /* The senders are finalizing now. Correctness does not depend on this pause; it makes
         * "the sender is already gone" the usual case rather than a race. */
        nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
        for (int src = 1; src < n; src++) {
            CHECK_OK(cohort_recv(w, &c, 1, COHORT_INT32, src, 3));
            CHECK(c == -(round * 1000 + src));
        }
        CHECK_OK(cohort_finalize(ctx));
    }
    CHECK_OK(cohort_finalize(holder));
    if (world_rank == 0) {
        printf("finalize_peer: passed (%d rounds)\n", ROUNDS);
    }
    return 0;
}
