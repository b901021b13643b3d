/* run: 2 */
/* run: 8 */
/* run: 5 COHORT_PROGRESS=block */
/* run: 3 COHORT_PROGRESS=spin */
/* run: 5 COHORT_ALGO_BARRIER=dissemination */
/*
 * Nobody leaves a barrier before the last member has entered it. One rank at a time is made
 * late (it spins before entering); every rank records when it left, and all ranks share one
 * clock (one node), so a leave before the late entry is a broken barrier. Covers the world,
 * subgroups of every size down to one, and nonblocking barriers outstanding together.
 *
 * Every member on one node takes the shared segment's barrier (shm, the default there); the
 * message-based one (dissemination, what groups spanning nodes take) runs when forced, at 5
 * ranks (rounds of distance 1, 2, 4 wrapping around a group that is not a power of two).
 */
#include <string.h>
#include <time.h>
#include "harness.h"

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void spin(double s)
{
    double end = now() + s;

    while (now() < end) {
    }
}

/* Rank `late` of g enters after a delay; everyone checks their exit against its entry. */
static void check_barrier(cohort_group_t *g, int late)
{
    int n = cohort_group_size(g), me = cohort_group_rank(g);
    double entered = 0, left, t_late = 0;

    if (me == late) {
        spin(0.02);
        entered = now();
    }
    CHECK_OK(cohort_barrier(g));
    left = now();
    /* Learn the late rank's entry time: it sends it to everyone after the barrier. */
    if (me == late) {
        for (int r = 0; r < n; r++) {
            if (r != me) {
                CHECK_OK(cohort_send(g, &entered, 1, COHORT_FLOAT64, r, 77));
            }
        }
    } else {
        CHECK_OK(cohort_recv(g, &t_late, 1, COHORT_FLOAT64, late, 77));
        if (left < t_late) {
            fprintf(stderr, "rank %d left the barrier %.6f s before rank %d entered\n", test_rank,
                    t_late - left, late);
            exit(1);
        }
    }
}

int main(void)
{
    cohort_context_t *ctx = test_init();
    cohort_group_t *w = cohort_world(ctx);
    int n = cohort_world_size(ctx), me = cohort_world_rank(ctx);
    int *ranks = malloc(sizeof(int) * (size_t)n);

    CHECK(ranks != NULL);
    for (int late = 0; late < n; late++) {
        check_barrier(w, late);
    }
    /* Subgroups of the first k ranks, reversed order, k = 1..n. */
    for (int k = 1; k <= n; k++) {
        cohort_group_t *g = NULL;
        for (int i = 0; i < k; i++) {
            ranks[i] = k - 1 - i;
        }
        cohort_status_t st = cohort_group_create(ctx, "prefix", ranks, k, &g);
        CHECK(st == (me < k ? COHORT_OK : COHORT_ERR_NOT_MEMBER));
        if (g != NULL) {
            check_barrier(g, k - 1);
            CHECK_OK(cohort_group_free(g));
        }
    }
    /* Several nonblocking barriers outstanding at once, waited in reverse order. */
    {
        cohort_request_t *r[5];
        for (int i = 0; i < 5; i++) {
            CHECK_OK(cohort_ibarrier(w, &r[i]));
        }
        for (int i = 4; i >= 0; i--) {
            CHECK_OK(cohort_wait(r[i]));
            cohort_request_free(r[i]);
        }
    }
    /* Many small barriers in a row: must not pile up state. */
    for (int i = 0; i < 500; i++) {
        CHECK_OK(cohort_barrier(w));
    }
    free(ranks);
    test_finish(ctx, "barrier");
    return 0;
}
