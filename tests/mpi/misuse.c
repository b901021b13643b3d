/* run: singleton */
/* run: 2 */
/*
 * Misuse is a status, never a crash: COHORT_IN_PLACE where a buffer is written, freed and
 * foreign request handles, a finalized context, finalizing twice, requests freed after
 * finalize, and finalize with sends nobody receives still in flight (bounded, no UCX abort).
 * Each was a crash or a hang before (SIGSEGV at 0x1, glibc double-free aborts, a UCX assertion
 * in ucp_worker_destroy).
 */
#include <string.h>
#include <time.h>
#include "harness.h"

#define BIG (16u << 20)

static void in_place_misuse(cohort_group_t *w)
{
    const float *ip = COHORT_IN_PLACE;
    float v[4] = {1, 2, 3, 4};
    cohort_request_t *r = NULL;
    int n = cohort_group_size(w);
    float *all = calloc((size_t)n * 4, sizeof(float));

    CHECK(all != NULL);
    CHECK_STATUS(cohort_allreduce(w, v, (void *)ip, 4, COHORT_FLOAT32, COHORT_SUM),
                 COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_iallreduce(w, ip, (void *)ip, 4, COHORT_FLOAT32, COHORT_SUM, &r),
                 COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_allgather(w, v, (void *)ip, 4, COHORT_FLOAT32), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_alltoall(w, all, (void *)ip, 4, COHORT_FLOAT32), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_reduce(w, v, (void *)ip, 4, COHORT_FLOAT32, COHORT_SUM, 0),
                 COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_reduce_scatter(w, all, (void *)ip, 4, COHORT_FLOAT32, COHORT_SUM),
                 COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_bcast(w, (void *)ip, 4, COHORT_FLOAT32, 0), COHORT_ERR_INVALID_ARG);
    CHECK(r == NULL);
    /* Still in step: nothing was posted, so the group works. */
    CHECK_OK(cohort_allreduce(w, COHORT_IN_PLACE, v, 4, COHORT_FLOAT32, COHORT_SUM));
    CHECK(v[0] == (float)n && v[3] == (float)(4 * n));
    free(all);
}

static void request_misuse(cohort_group_t *w)
{
    cohort_request_t *r = NULL;
    int v = 0, done = 0;
    char junk[512];

    CHECK_OK(cohort_ibarrier(w, &r));
    CHECK_OK(cohort_wait(r));
    cohort_request_free(r);
    CHECK_STATUS(cohort_wait(r), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_test(r, &done), COHORT_ERR_INVALID_ARG);
    cohort_request_free(r); /* a second free: logged, ignored */
    memset(junk, 0x5a, sizeof(junk));
    CHECK_STATUS(cohort_wait((cohort_request_t *)junk), COHORT_ERR_INVALID_ARG);
    cohort_request_free((cohort_request_t *)junk);
    /* A receive nobody sends to, freed: cancelled, and the pool reuses the block. */
    CHECK_OK(cohort_irecv(w, &v, 1, COHORT_INT32, 0, 77, &r));
    CHECK_OK(cohort_test(r, &done));
    CHECK(done == 0);
    cohort_request_free(r);
}

int main(void)
{
    cohort_context_t *ctx = test_init(), *gone;
    cohort_group_t *w = cohort_world(ctx), *g = NULL;
    cohort_layout_t *layout = NULL;
    cohort_request_t *kept = NULL, *freed = NULL, *recv = NULL;
    int me = cohort_world_rank(ctx), n = cohort_world_size(ctx), done = 0, self[1];
    unsigned char *big = malloc(BIG);
    double t0;

    CHECK(big != NULL);
    memset(big, 1, BIG);
    in_place_misuse(w);
    request_misuse(w);

    /* Finalize with large sends to self in flight that nobody receives (one kept, one freed)
     * and a receive nobody satisfies: it returns promptly and cleanly. */
    self[0] = me;
    CHECK_OK(cohort_group_create(ctx, "self", self, 1, &g));
    CHECK_OK(cohort_isend(g, big, BIG, COHORT_UINT8, 0, 1, &kept));
    CHECK_OK(cohort_isend(g, big, BIG, COHORT_UINT8, 0, 2, &freed));
    CHECK_OK(cohort_irecv(g, big, 1, COHORT_UINT8, 0, 3, &recv));
    CHECK_OK(cohort_test(kept, &done));
    t0 = test_now();
    cohort_request_free(freed); /* bounded: the receiver (us) never asks for the data */
    /* waited for: the free to return (a minute, for load) */
    CHECK(test_now() - t0 < 60.0);
    CHECK_OK(cohort_barrier(w));
    gone = ctx;
    t0 = test_now();
    CHECK_OK(cohort_finalize(ctx));
    printf("rank %d: finalize with 16 MiB in flight took %.3f s\n", me, test_now() - t0);
    CHECK(test_now() - t0 < 60.0); /* waited for: finalize to return (as above) */

    /* The context is gone: its handles say so instead of touching freed memory. */
    CHECK_STATUS(cohort_finalize(gone), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_group_create(gone, "late", self, 1, &g), COHORT_ERR_INVALID_ARG);
    CHECK(g == NULL);
    CHECK_STATUS(cohort_layout_create(gone, "tp=1", &layout), COHORT_ERR_INVALID_ARG);
    CHECK(cohort_world_rank(gone) == -1 && cohort_world(gone) == NULL);
    /* Requests the user still holds were cancelled and detached: they report that, and
     * freeing them after finalize is fine. */
    CHECK_STATUS(cohort_wait(kept), COHORT_ERR_REVOKED);
    CHECK_STATUS(cohort_test(recv, &done), COHORT_ERR_REVOKED);
    CHECK(done == 1);
    cohort_request_free(kept);
    cohort_request_free(recv);
    free(big);
    if (me == 0) {
        printf("misuse: passed (%d ranks)\n", n);
    }
    return 0;
}
