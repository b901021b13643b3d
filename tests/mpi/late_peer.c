/* run: 3 */
/* run: 3 COHORT_PMIX_PLUGIN=fence */
/* run: 2 COHORT_PROGRESS=block */
/*
 * Nothing blocks: the last rank calls cohort_init 3 s late, while the others have a
 * nonblocking allreduce and a nonblocking send to it in flight. Posting them and every
 * cohort_test call must return at once (the address lookup, and with the fence plugin the first-use
 * fence, advance in the background), and the operations complete once the late rank arrives. Before
 * background wiring, the first send ran the lookup to completion inside the post: about 3 s in one
 * call.
 */
#include <sched.h>
#include <time.h>
#include <unistd.h>
#include "harness.h"

/* Far below the 3 s the late rank takes, far above a descheduled call on 2 shared cores. */
#define MAX_TEST_CALL_S 0.5

int main(void)
{
    const char *size = getenv("OMPI_COMM_WORLD_SIZE");
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    int late = size != NULL && rank != NULL && atoi(rank) == atoi(size) - 1;
    cohort_context_t *ctx;
    cohort_group_t *w;
    cohort_request_t *reqs[2];
    double in[4], out[4], token = -1, longest = 0, start;
    int me, n, calls = 0, ndone = 0, done[2] = {0, 0};

    if (late) {
        sleep(3); /* the scenario itself: this rank is late, nothing settles here */
    }
    ctx = test_init();
    w = cohort_world(ctx);
    me = cohort_world_rank(ctx);
    n = cohort_world_size(ctx);
    for (int i = 0; i < 4; i++) {
        in[i] = me + i;
    }
    /* Posting must not block either: before, the first send ran the lookup inside the post. */
    start = test_now();
    CHECK_OK(cohort_iallreduce(w, in, out, 4, COHORT_FLOAT64, COHORT_SUM, &reqs[0]));
    longest = test_now() - start;
    if (me == n - 1) {
        CHECK_OK(cohort_irecv(w, &token, 1, COHORT_FLOAT64, 0, 5, &reqs[1]));
    } else {
        double t0 = test_now();
        token = me;
        CHECK_OK(cohort_isend(w, &token, 1, COHORT_FLOAT64, n - 1, 5 + me, &reqs[1]));
        if (test_now() - t0 > longest) {
            longest = test_now() - t0;
        }
        if (me != 0) {
            done[1] = 1; /* only rank 0's send is received; the others' sends are freed */
            ndone++;
        }
    }
    while (ndone < 2) {
        for (int i = 0; i < 2; i++) {
            double t0;
            int d = 0;

            if (done[i]) {
                continue;
            }
            t0 = test_now();
            CHECK_OK(cohort_test(reqs[i], &d));
            if (test_now() - t0 > longest) {
                longest = test_now() - t0;
            }
            calls++;
            if (d) {
                done[i] = 1;
                ndone++;
            }
        }
        CHECK(test_now() - start < 60);
        sched_yield(); /* as an application computing between tests would, on shared cores */
    }
    for (int i = 0; i < 4; i++) {
        CHECK(out[i] == (double)n * (n - 1) / 2 + (double)n * i);
    }
    if (me == n - 1) {
        CHECK(token == 0.0);
    }
    if (!late) {
        printf("rank %d: %d cohort_test calls over %.2f s, the longest call %.3f ms\n", me, calls,
               test_now() - start, longest * 1e3);
        CHECK(longest < MAX_TEST_CALL_S);
    }
    cohort_request_free(reqs[0]);
    if (me == 0 || me == n - 1) {
        cohort_request_free(reqs[1]);
    } else {
        /* Never received: freeing it cancels it (bounded), the group is revoked, nothing hangs. */
        cohort_request_free(reqs[1]);
    }
    test_finish(ctx, "late_peer");
    return 0;
}
