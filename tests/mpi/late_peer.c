/* run: 3 */
/* run: 3 COHORT_PMIX_PLUGIN=fence */
/* run: 2 COHORT_PROGRESS=block */
/*
 * Nothing blocks: the last rank calls cohort_init late, while the others have a nonblocking
 * allreduce and a nonblocking send to it in flight. Posting them and every cohort_test call
 * must return without it (the address lookup, and with the fence plugin the first-use fence,
 * advance in the background), and the operations complete once the late rank arrives. Before
 * background wiring, the first send ran the lookup to completion inside the post.
 *
 * No clock decides it: the late rank starts only once every other rank has posted both and
 * called cohort_test TESTS_BEFORE times without it (each says so in a file). A post or a test
 * that waited for the late rank would never let it start: it gives up after a minute, saying
 * what it waited for. The longest call is printed, not asserted (a benchmark's measure).
 */
#include <sched.h>
#include <time.h>
#include <unistd.h>
#include "harness.h"

#define TESTS_BEFORE 20
#define PATIENCE_S   60.0

/* Where world rank @a r says it has posted and tested without the late rank. */
static void posted_path(char *buf, size_t len, int r)
{
    const char *ns = getenv("PMIX_NAMESPACE");

    snprintf(buf, len, "/tmp/cohort-late_peer.%s.%d", ns != NULL ? ns : "none", r);
}

static void wait_for_the_others(int n)
{
    double start = test_now();
    char path[512];

    for (int r = 0; r < n - 1; r++) {
        posted_path(path, sizeof(path), r);
        while (access(path, F_OK) != 0) {
            if (test_now() - start > PATIENCE_S) {
                fprintf(stderr,
                        "late rank: waited %.0f s for rank %d to post and test without me: a "
                        "post or a cohort_test waits for a late peer\n",
                        PATIENCE_S, r);
                exit(1);
            }
            usleep(10000);
        }
        unlink(path);
    }
}

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
        wait_for_the_others(atoi(size));
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
    if (!late) {
        /* Calls that must return without the late rank: then it may start. */
        for (int i = 0; i < TESTS_BEFORE; i++) {
            double t0 = test_now();
            int d = 1;

            CHECK_OK(cohort_test(reqs[0], &d));
            CHECK(d == 0); /* the late rank's part cannot be here */
            if (test_now() - t0 > longest) {
                longest = test_now() - t0;
            }
            calls++;
        }
        {
            char path[512];
            FILE *f;

            posted_path(path, sizeof(path), me);
            f = fopen(path, "w");
            CHECK(f != NULL);
            fclose(f);
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
        CHECK(test_now() - start < PATIENCE_S); /* waited for: both operations to complete */
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
