/* run: 2 TEST_THREADS=2 */
/* run: 3 TEST_THREADS=3 */
/* run: 4 TEST_THREADS=4 */
/* run: 2 TEST_THREADS=4 COHORT_PROGRESS=block */
/* run: 3 TEST_THREADS=2 COHORT_CMA=off */
/*
 * Threads on one context, each on its own group (issue 39, item 3): 2 to 4 threads per rank
 * (TEST_THREADS), thread t with group "thread<t>" over every rank, run a mixed sequence of calls
 * at the same time: allreduce (blocking and not), bcast, allgather, barrier, and a ring of
 * isend/irecv, every result checked. Each thread's sequence is the same on every rank (it
 * depends on the thread and the call's number only), so the members of a group make the same
 * calls in the same order, while the threads of a rank interleave as they will. Sizes run from
 * one element to 256 KiB, so that eager, rendezvous and single-copy transfers (COHORT_CMA=off:
 * UCX's rendezvous) run under several threads at once. 1,000 calls per thread in full mode
 * (TEST_FULL=1), 150 in quick mode. Afterwards the world group and every thread's group still
 * work from the main thread, and the context's counters are read while the threads run.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include "harness.h"

#define MAX_THREADS 4

static const size_t counts[] = {1, 3, 64, 1000, 16384, 65536};
#define NCOUNTS (sizeof(counts) / sizeof(counts[0]))

typedef struct {
    int t;
    cohort_group_t *g;
    int calls;
    int32_t *a, *b; /* 4 x the largest count: allgather's result at 4 ranks */
} thread_arg_t;

static int me, n;
static atomic_int running;

/* A value no other (rank, call, element, thread) gives. */
static int32_t val(int rank, int i, size_t k, int t)
{
    return (int32_t)(rank * 7 + i * 13 + (int)(k % 1009) * 3 + t * 101);
}

static void fail(int t, int i, const char *what, size_t k, int32_t got, int32_t want)
{
    fprintf(stderr, "rank %d: thread %d call %d: %s: element %zu is %d, expected %d\n", me, t, i,
            what, k, (int)got, (int)want);
    exit(1);
}

static void check_sum(int t, int i, const char *what, const int32_t *r, size_t count)
{
    for (size_t k = 0; k < count; k++) {
        int32_t want = 0;
        for (int q = 0; q < n; q++) {
            want += val(q, i, k, t);
        }
        if (r[k] != want) {
            fail(t, i, what, k, r[k], want);
        }
    }
}

static void one_call(thread_arg_t *arg, int i)
{
    int t = arg->t, kind = (i + t) % 6;
    size_t count = counts[(size_t)(i / 6 + t) % NCOUNTS], k;
    int32_t *a = arg->a, *b = arg->b;
    cohort_group_t *g = arg->g;
    cohort_request_t *r = NULL, *s = NULL;
    int root = (i / 6) % n, right = (me + 1) % n, left = (me + n - 1) % n;
    int tag = t * 100000 + i;

    for (k = 0; k < count; k++) {
        a[k] = val(me, i, k, t);
    }
    switch (kind) {
    case 0: /* blocking allreduce */
        CHECK_OK(cohort_allreduce(g, a, b, count, COHORT_INT32, COHORT_SUM));
        check_sum(t, i, "allreduce", b, count);
        break;
    case 1: /* bcast from a root that moves */
        if (me != root) {
            memset(a, 0xff, count * sizeof(int32_t));
        }
        CHECK_OK(cohort_bcast(g, a, count, COHORT_INT32, root));
        for (k = 0; k < count; k++) {
            if (a[k] != val(root, i, k, t)) {
                fail(t, i, "bcast", k, a[k], val(root, i, k, t));
            }
        }
        break;
    case 2: /* allgather */
        CHECK_OK(cohort_allgather(g, a, b, count, COHORT_INT32));
        for (int q = 0; q < n; q++) {
            for (k = 0; k < count; k++) {
                if (b[(size_t)q * count + k] != val(q, i, k, t)) {
                    fail(t, i, "allgather", (size_t)q * count + k, b[(size_t)q * count + k],
                         val(q, i, k, t));
                }
            }
        }
        break;
    case 3:
        CHECK_OK(cohort_barrier(g));
        break;
    case 4: /* a ring of point-to-point messages: receive from the left, send to the right */
        memset(b, 0xff, count * sizeof(int32_t));
        CHECK_OK(cohort_irecv(g, b, count, COHORT_INT32, left, tag, &r));
        CHECK_OK(cohort_isend(g, a, count, COHORT_INT32, right, tag, &s));
        CHECK_OK(cohort_wait(s));
        CHECK_OK(cohort_wait(r));
        cohort_request_free(s);
        cohort_request_free(r);
        for (k = 0; k < count; k++) {
            if (b[k] != val(left, i, k, t)) {
                fail(t, i, "recv", k, b[k], val(left, i, k, t));
            }
        }
        break;
    default: /* nonblocking allreduce, tested then waited */
    {
        int done = 0;
        CHECK_OK(cohort_iallreduce(g, a, b, count, COHORT_INT32, COHORT_SUM, &r));
        CHECK_OK(cohort_test(r, &done));
        CHECK_OK(cohort_wait(r));
        cohort_request_free(r);
        check_sum(t, i, "iallreduce", b, count);
        break;
    }
    }
}

static void *thread_main(void *p)
{
    thread_arg_t *arg = p;

    atomic_fetch_add(&running, 1);
    for (int i = 0; i < arg->calls; i++) {
        one_call(arg, i);
    }
    CHECK_OK(cohort_barrier(arg->g));
    atomic_fetch_sub(&running, 1);
    return NULL;
}

int main(void)
{
    cohort_context_t *ctx = test_init();
    const char *env = getenv("TEST_THREADS");
    int nthreads = env != NULL ? atoi(env) : 2, all[8];
    int calls = test_full() ? 1000 : 150;
    thread_arg_t args[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    cohort_group_t *w = cohort_world(ctx);
    cohort_stats_t stats;
    double t0;

    me = cohort_world_rank(ctx);
    n = cohort_world_size(ctx);
    CHECK(n >= 2 && n <= 4);
    CHECK(nthreads >= 2 && nthreads <= MAX_THREADS);
    for (int i = 0; i < n; i++) {
        all[i] = i;
    }
    for (int t = 0; t < nthreads; t++) {
        char tag[32];
        snprintf(tag, sizeof(tag), "thread%d", t);
        args[t].t = t;
        args[t].calls = calls;
        CHECK_OK(cohort_group_create(ctx, tag, all, n, &args[t].g));
        args[t].a = malloc(counts[NCOUNTS - 1] * 4 * sizeof(int32_t));
        args[t].b = malloc(counts[NCOUNTS - 1] * 4 * sizeof(int32_t));
        CHECK(args[t].a != NULL && args[t].b != NULL);
    }
    CHECK_OK(cohort_barrier(w));
    t0 = test_now();
    for (int t = 0; t < nthreads; t++) {
        CHECK(pthread_create(&th[t], NULL, thread_main, &args[t]) == 0);
    }
    /* the counters, read while the threads run (they take the context for the read) */
    while (atomic_load(&running) > 0 || test_now() - t0 < 0.01) {
        CHECK_OK(cohort_stats(ctx, &stats));
        usleep(2000);
    }
    for (int t = 0; t < nthreads; t++) {
        CHECK(pthread_join(th[t], NULL) == 0);
    }
    /* every group still works from the main thread, one after the other */
    CHECK_OK(cohort_barrier(w));
    for (int t = 0; t < nthreads; t++) {
        CHECK_OK(test_one_allreduce(args[t].g));
        CHECK_OK(cohort_group_free(args[t].g));
        free(args[t].a);
        free(args[t].b);
    }
    CHECK_OK(cohort_stats(ctx, &stats));
    CHECK(stats.groups_created >= (uint64_t)nthreads);
    if (me == 0) {
        fprintf(stderr, "threads: %d ranks x %d threads x %d calls in %.2f s\n", n, nthreads,
                calls, test_now() - t0);
    }
    CHECK_OK(cohort_barrier(w));
    test_finish(ctx, "threads");
    return 0;
}
