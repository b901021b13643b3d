/* run: singleton */
/* run: 2 */
/* run: 3 */
/* run: 4 */
/*
 * Misuse is a status, round two (issue 23), in the probe's shape: make the call, expect the
 * status, check that the canaries around every buffer it was given are intact. Under ASan and
 * UBSan (make check's sanitizer pass) any read or write of memory the library does not own
 * fails the run.
 *  - stale handles: a freed group, layout and request, a handle whose slot a new object took,
 *    handles after cohort_finalize (a user group, the world group, a layout and its groups, a
 *    request freed twice), a group of a finalized context while another context lives, a new
 *    context never at a finalized one's address, made-up handles;
 *  - COHORT_IN_PLACE as the buffer of send, isend, recv and irecv;
 *  - overlapping input and output of every collective (exact and partial), and the exact alias
 *    that is taken as COHORT_IN_PLACE (allreduce; reduce at the root);
 *  - misaligned buffers in allreduce, reduce and reduce_scatter (results checked);
 *  - nonsense settings: an overflowing COHORT_ALGO_ range and overflowing COHORT_FAULT numbers;
 *  - two threads on one context, each on its own group: the second one's calls come in and
 *    complete while the first waits (issue 39);
 *  - a fork child: every call on the parent's context and handles is refused, finalize too, and
 *    the parent goes on as if nothing happened;
 *  - a blocking send to oneself that waits past COHORT_WATCH_S says it waits on a receive the
 *    same thread must post.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/wait.h>
#include "harness.h"

#define CANARY     64
#define CANARY_VAL 0xa5

/* A buffer with CANARY bytes of a pattern on each side. */
typedef struct {
    unsigned char *raw;
    unsigned char *p;
    size_t len;
} cbuf_t;

static cbuf_t cbuf_make(size_t len, size_t misalign)
{
    cbuf_t b;

    b.raw = malloc(len + 2 * CANARY + misalign);
    CHECK(b.raw != NULL);
    memset(b.raw, CANARY_VAL, len + 2 * CANARY + misalign);
    b.p = b.raw + CANARY + misalign;
    b.len = len;
    memset(b.p, 0, len);
    return b;
}

static void cbuf_check_at(const cbuf_t *b, size_t misalign, int line)
{
    for (size_t i = 0; i < CANARY + misalign; i++) {
        if (b->raw[i] != CANARY_VAL) {
            fprintf(stderr, "rank %d: misuse2.c:%d: canary before the buffer hit at -%zu\n",
                    test_rank, line, CANARY + misalign - i);
            exit(1);
        }
    }
    for (size_t i = 0; i < CANARY; i++) {
        if (b->p[b->len + i] != CANARY_VAL) {
            fprintf(stderr, "rank %d: misuse2.c:%d: canary after the buffer hit at +%zu\n",
                    test_rank, line, i);
            exit(1);
        }
    }
}
#define cbuf_check(b, m) cbuf_check_at((b), (m), __LINE__)

static void cbuf_free(cbuf_t *b)
{
    free(b->raw);
}

static cohort_group_t *self_group(cohort_context_t *ctx, const char *tag)
{
    int me = cohort_world_rank(ctx);
    cohort_group_t *g = NULL;

    CHECK_OK(cohort_group_create(ctx, tag, &me, 1, &g));
    return g;
}

/* Every call that takes a group, on a handle that names none. */
static void group_calls_refused(cohort_group_t *g)
{
    cohort_request_t *r = NULL;
    int v = 1, out = 0;

    const char *text;

    /* Each refusal names the call it came from, blocking or not (a table per collective). */
    test_capture_begin();
    CHECK_STATUS(cohort_barrier(g), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_allreduce(g, &v, &out, 1, COHORT_INT32, COHORT_SUM),
                 COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_iallreduce(g, &v, &out, 1, COHORT_INT32, COHORT_SUM, &r),
                 COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_bcast(g, &v, 1, COHORT_INT32, 0), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_ialltoall(g, &v, &out, 1, COHORT_INT32, &r), COHORT_ERR_INVALID_ARG);
    text = test_capture_end();
    CHECK(strstr(text, "cohort_barrier: group") != NULL);
    CHECK(strstr(text, "cohort_allreduce: group") != NULL);
    CHECK(strstr(text, "cohort_iallreduce: group") != NULL);
    CHECK(strstr(text, "cohort_bcast: group") != NULL);
    CHECK(strstr(text, "cohort_ialltoall: group") != NULL);
    CHECK_STATUS(cohort_send(g, &v, 1, COHORT_INT32, 0, 1), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_irecv(g, &out, 1, COHORT_INT32, 0, 1, &r), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_group_abort(g), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_group_set_stream(g, NULL), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_group_free(g), COHORT_ERR_INVALID_ARG);
    CHECK(cohort_group_rank(g) == -1 && cohort_group_size(g) == -1);
    CHECK(cohort_group_world_rank(g, 0) == -1 && cohort_group_id(g) == 0);
    CHECK(r == NULL && v == 1 && out == 0);
}

static void request_calls_refused(cohort_request_t *r)
{
    int done = 7;

    CHECK_STATUS(cohort_wait(r), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_test(r, &done), COHORT_ERR_INVALID_ARG);
    CHECK(done == 7);
    CHECK(cohort_request_source(r) == -1);
    cohort_request_free(r); /* logged, nothing else */
}

static void stale_handles(cohort_context_t *ctx)
{
    cohort_group_t *g = self_group(ctx, "stale"), *g2 = NULL;
    cohort_layout_t *layout = NULL;
    cohort_request_t *r = NULL, *r2 = NULL;
    char junk[256];
    int v = 3, got = 0, i;

    /* a freed group */
    CHECK_OK(cohort_group_free(g));
    group_calls_refused(g);
    /* a freed request, and one whose slot a new request took: the new one works, the old
     * one stays refused */
    CHECK_OK(cohort_ibarrier(cohort_world(ctx), &r));
    CHECK_OK(cohort_wait(r));
    cohort_request_free(r);
    request_calls_refused(r);
    g = self_group(ctx, "reuse");
    for (i = 0; i < 20000; i++) {
        CHECK_OK(cohort_isend(g, &v, 1, COHORT_INT32, 0, 9, &r2));
        if (((uintptr_t)r2 & 0xffffffffu) == ((uintptr_t)r & 0xffffffffu)) {
            break;
        }
        CHECK_OK(cohort_recv(g, &got, 1, COHORT_INT32, 0, 9));
        CHECK_OK(cohort_wait(r2));
        cohort_request_free(r2);
    }
    CHECK(i < 20000); /* the table reuses a slot after at most a block of fresh ones */
    CHECK(r2 != r);
    request_calls_refused(r);
    CHECK_OK(cohort_recv(g, &got, 1, COHORT_INT32, 0, 9));
    CHECK_OK(cohort_wait(r2));
    CHECK(got == 3);
    cohort_request_free(r2);
    CHECK_OK(cohort_group_free(g));
    /* the same for groups: a slot reused by a new group leaves the old handle refused */
    for (i = 0; i < 20000; i++) {
        CHECK_OK(cohort_group_create(ctx, "reuse", &(int){cohort_world_rank(ctx)}, 1, &g2));
        if (((uintptr_t)g2 & 0xffffffffu) == ((uintptr_t)g & 0xffffffffu)) {
            break;
        }
        CHECK_OK(cohort_group_free(g2));
    }
    CHECK(i < 20000 && g2 != g);
    group_calls_refused(g);
    CHECK(cohort_group_size(g2) == 1);
    CHECK_OK(cohort_group_free(g2));
    /* a freed layout */
    CHECK_OK(cohort_layout_create(ctx, "tp=1", &layout));
    CHECK(cohort_layout_group(layout, "tp") != NULL);
    CHECK_OK(cohort_layout_free(layout));
    CHECK(cohort_layout_group(layout, "tp") == NULL);
    CHECK_STATUS(cohort_layout_free(layout), COHORT_ERR_INVALID_ARG);
    /* handles nobody made: an address on the stack, small numbers, a request passed as a group
     * and a group as a request */
    memset(junk, 0x5a, sizeof(junk));
    group_calls_refused((cohort_group_t *)junk);
    group_calls_refused((cohort_group_t *)(uintptr_t)0x1234);
    request_calls_refused((cohort_request_t *)junk);
    CHECK_OK(cohort_ibarrier(cohort_world(ctx), &r));
    group_calls_refused((cohort_group_t *)r);
    request_calls_refused((cohort_request_t *)cohort_world(ctx));
    CHECK(cohort_layout_group((cohort_layout_t *)r, "tp") == NULL);
    CHECK_OK(cohort_wait(r));
    cohort_request_free(r);
}

static void in_place_p2p(cohort_group_t *w)
{
    cohort_request_t *r = NULL;
    const void *ip = COHORT_IN_PLACE;

    CHECK_STATUS(cohort_send(w, ip, 4, COHORT_INT32, 0, 1), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_recv(w, (void *)ip, 4, COHORT_INT32, 0, 1), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_isend(w, ip, 4, COHORT_INT32, 0, 1, &r), COHORT_ERR_INVALID_ARG);
    CHECK(r == NULL);
    CHECK_STATUS(cohort_irecv(w, (void *)ip, 4, COHORT_INT32, 0, 1, &r), COHORT_ERR_INVALID_ARG);
    CHECK(r == NULL);
    CHECK_STATUS(cohort_irecv(w, (void *)ip, 4, COHORT_INT32, COHORT_ANY_SOURCE, 1, &r),
                 COHORT_ERR_INVALID_ARG);
    CHECK(r == NULL);
}

/* Every collective with input and output overlapping, by offset @a shift (0: the same
 * address) into one buffer that holds both. */
static void overlap_at(cohort_group_t *w, size_t shift)
{
    int n = cohort_group_size(w), me = cohort_group_rank(w);
    size_t count = 8, whole = count * (size_t)n * 4; /* bytes of the largest side */
    cbuf_t b = cbuf_make(2 * whole, 0);
    unsigned char *s = b.p, *r = b.p + shift * 4;
    cohort_request_t *req = NULL;

    memset(b.p, 0x11, b.len);
    CHECK_STATUS(cohort_allgather(w, s, r, count, COHORT_INT32), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_iallgather(w, s, r, count, COHORT_INT32, &req), COHORT_ERR_INVALID_ARG);
    CHECK(req == NULL);
    CHECK_STATUS(cohort_alltoall(w, s, r, count, COHORT_INT32), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_reduce_scatter(w, s, r, count, COHORT_INT32, COHORT_SUM),
                 COHORT_ERR_INVALID_ARG);
    if (shift != 0) {
        CHECK_STATUS(cohort_allreduce(w, s, r, count, COHORT_INT32, COHORT_SUM),
                     COHORT_ERR_INVALID_ARG);
        /* at the root only: elsewhere rbuf is not used */
        CHECK_STATUS(cohort_reduce(w, s, r, count, COHORT_INT32, COHORT_SUM, me),
                     COHORT_ERR_INVALID_ARG);
        if (n == 1) {
            CHECK_STATUS(cohort_ireduce(w, s, r, count, COHORT_INT32, COHORT_SUM, 0, &req),
                         COHORT_ERR_INVALID_ARG);
        }
    }
    for (size_t i = 0; i < b.len; i++) {
        CHECK(b.p[i] == 0x11); /* nothing was written */
    }
    cbuf_check(&b, 0);
    cbuf_free(&b);
}

static void overlap(cohort_group_t *w)
{
    int n = cohort_group_size(w);
    cbuf_t b = cbuf_make(8 * sizeof(int32_t), 0);
    int32_t *v = (int32_t *)b.p;

    overlap_at(w, 0);
    overlap_at(w, 1);
    overlap_at(w, 5);
    /* the exact alias of allreduce is its in-place form */
    for (int i = 0; i < 8; i++) {
        v[i] = i + 1;
    }
    CHECK_OK(cohort_allreduce(w, v, v, 8, COHORT_INT32, COHORT_SUM));
    for (int i = 0; i < 8; i++) {
        CHECK(v[i] == (i + 1) * n);
    }
    cbuf_check(&b, 0);
    cbuf_free(&b);
    /* still in step: nothing was posted */
    CHECK_OK(test_one_allreduce(w));
}

/* Float buffers at odd addresses: allreduce (SUM, AVG, MAX), reduce, reduce_scatter. */
static void misaligned(cohort_group_t *w)
{
    int n = cohort_group_size(w), me = cohort_group_rank(w);
    size_t count = 37;
    size_t m = 1;
    cbuf_t s = cbuf_make(count * (size_t)n * sizeof(double), m);
    cbuf_t r = cbuf_make(count * (size_t)n * sizeof(double), 3);
    float f;
    double d;

    for (size_t i = 0; i < count * (size_t)n; i++) {
        f = (float)(i + (size_t)me);
        memcpy(s.p + i * 4, &f, 4);
    }
    CHECK_OK(cohort_allreduce(w, s.p, r.p, count, COHORT_FLOAT32, COHORT_SUM));
    for (size_t i = 0; i < count; i++) {
        memcpy(&f, r.p + i * 4, 4);
        CHECK(f == (float)((double)i * n + (double)n * (n - 1) / 2));
    }
    CHECK_OK(cohort_allreduce(w, s.p, r.p, count, COHORT_FLOAT32, COHORT_MAX));
    for (size_t i = 0; i < count; i++) {
        memcpy(&f, r.p + i * 4, 4);
        CHECK(f == (float)(i + (size_t)n - 1));
    }
    CHECK_OK(cohort_allreduce(w, COHORT_IN_PLACE, s.p, count, COHORT_FLOAT32, COHORT_AVG));
    for (size_t i = 0; i < count; i++) {
        memcpy(&f, s.p + i * 4, 4);
        CHECK(f == (float)(((double)i * n + (double)n * (n - 1) / 2) / n));
    }
    for (size_t i = 0; i < count * (size_t)n; i++) {
        d = (double)(i * 2 + (size_t)me);
        memcpy(s.p + i * 8, &d, 8);
    }
    CHECK_OK(cohort_reduce(w, s.p, r.p, count, COHORT_FLOAT64, COHORT_SUM, 0));
    if (me == 0) {
        for (size_t i = 0; i < count; i++) {
            memcpy(&d, r.p + i * 8, 8);
            CHECK(d == (double)i * 2 * n + (double)n * (n - 1) / 2);
        }
    }
    CHECK_OK(cohort_reduce_scatter(w, s.p, r.p, count, COHORT_FLOAT64, COHORT_SUM));
    for (size_t i = 0; i < count; i++) {
        size_t at = (size_t)me * count + i;
        memcpy(&d, r.p + i * 8, 8);
        CHECK(d == (double)at * 2 * n + (double)n * (n - 1) / 2);
    }
    cbuf_check(&s, m);
    cbuf_check(&r, 3);
    cbuf_free(&s);
    cbuf_free(&r);
}

/* cohort_init refuses a setting; its log line names it. */
static void refused_setting(const char *name, const char *value, const char *says)
{
    cohort_context_t *bad = NULL;
    const char *text;
    cohort_status_t st;

    setenv(name, value, 1);
    test_capture_begin();
    st = cohort_init(&bad);
    text = test_capture_end();
    unsetenv(name);
    CHECK_STATUS(st, COHORT_ERR_INVALID_ARG);
    CHECK(bad == NULL);
    CHECK(strstr(text, name) != NULL && strstr(text, says) != NULL);
}

static void settings(void)
{
    refused_setting("COHORT_ALGO_ALLREDUCE", "0-99999999999999999999:ring", "bad size range");
    refused_setting("COHORT_ALGO_ALLREDUCE", "0-4k:ring,4k-18446744073709551616:ring",
                    "bad size range");
    refused_setting("COHORT_FAULT", "send:4294967297", "expected <point>:<n>");
    refused_setting("COHORT_FAULT", "send:99999999999999999999", "expected <point>:<n>");
    refused_setting("COHORT_FAULT", "send:1@4294967296", "expected <point>:<n>");
}

/* Two threads, one context: thread A sits in a wait (a receive nobody sends, timing out every
 * quarter second on a context made with COHORT_TIMEOUT=0.25, and waited on again) until told to
 * stop; while it is there, the main thread's calls on another group of the same context come in
 * between A's progress passes and complete (issue 39: before, they were refused). (The timeout
 * only paces A's waits and bounds the join at the end.) */
static atomic_int thread_stop, thread_waits;
static cohort_request_t *thread_req;

static void *thread_waiter(void *arg)
{
    cohort_status_t st;

    (void)arg;
    while (!atomic_load(&thread_stop)) {
        st = cohort_wait(thread_req);
        if (st != COHORT_ERR_TIMEOUT) {
            fprintf(stderr, "rank %d: thread A's wait returned %s\n", test_rank,
                    cohort_strerror(st));
            exit(1);
        }
        atomic_fetch_add(&thread_waits, 1);
    }
    return NULL;
}

static cohort_status_t probe_ibarrier(cohort_group_t *g)
{
    cohort_request_t *r = NULL;
    cohort_status_t st = cohort_ibarrier(g, &r);

    if (st == COHORT_OK) {
        st = cohort_wait(r);
        cohort_request_free(r);
    } else {
        CHECK(r == NULL);
    }
    return st;
}

static void two_threads(void)
{
    cohort_context_t *tctx = NULL;
    cohort_group_t *g, *g2;
    cohort_request_t *other = NULL, *send = NULL;
    cohort_stats_t stats;
    pthread_t a;
    int v = 0, w = 42, other_v = 0, done = 1;

    setenv("COHORT_TIMEOUT", "0.25", 1);
    CHECK_OK(cohort_init(&tctx));
    unsetenv("COHORT_TIMEOUT");
    g = self_group(tctx, "thread-a");
    g2 = self_group(tctx, "thread-b");
    CHECK_OK(cohort_irecv(g, &v, 1, COHORT_INT32, 0, 5, &thread_req));
    CHECK_OK(cohort_irecv(g2, &other_v, 1, COHORT_INT32, 0, 6, &other));
    CHECK(pthread_create(&a, NULL, thread_waiter, NULL) == 0);
    /* while A waits: many calls on the other group, each one complete */
    while (atomic_load(&thread_waits) < 2) {
        CHECK_OK(cohort_barrier(g2));
        CHECK_OK(probe_ibarrier(g2));
        CHECK_OK(cohort_test(other, &done));
        CHECK(done == 0);
        CHECK_OK(cohort_stats(tctx, &stats));
    }
    atomic_store(&thread_stop, 1);
    CHECK(pthread_join(a, NULL) == 0);
    /* alone again: the receive thread A waited on completes, the other group still works */
    CHECK_OK(cohort_isend(g, &w, 1, COHORT_INT32, 0, 5, &send));
    CHECK_OK(cohort_wait(thread_req));
    CHECK(v == 42);
    cohort_request_free(thread_req);
    CHECK_OK(cohort_wait(send));
    cohort_request_free(send);
    cohort_request_free(other);
    CHECK_OK(cohort_barrier(g2));
    CHECK_OK(cohort_barrier(g));
    CHECK_OK(cohort_finalize(tctx));
}

/* A fork child: everything of the parent's is refused, finalize too, and touches nothing. */
static void fork_child(cohort_context_t *ctx)
{
    cohort_group_t *w = cohort_world(ctx), *g = self_group(ctx, "fork");
    cohort_layout_t *layout = NULL;
    cohort_request_t *r = NULL, *r2 = NULL;
    int v = 0, done = 0, status = 0;
    pid_t pid;

    CHECK_OK(cohort_layout_create(ctx, "tp=1", &layout));
    CHECK_OK(cohort_irecv(g, &v, 1, COHORT_INT32, 0, 3, &r));
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        group_calls_refused(w);
        group_calls_refused(g);
        CHECK_STATUS(cohort_wait(r), COHORT_ERR_INVALID_ARG);
        CHECK_STATUS(cohort_test(r, &done), COHORT_ERR_INVALID_ARG);
        cohort_request_free(r);
        CHECK(cohort_layout_group(layout, "tp") == NULL);
        CHECK_STATUS(cohort_layout_free(layout), COHORT_ERR_INVALID_ARG);
        CHECK_STATUS(cohort_ibarrier(w, &r2), COHORT_ERR_INVALID_ARG);
        CHECK(cohort_world_rank(ctx) == -1 && cohort_world(ctx) == NULL);
        CHECK_STATUS(cohort_group_create(ctx, "x", &v, 1, &g), COHORT_ERR_INVALID_ARG);
        CHECK_STATUS(cohort_finalize(ctx), COHORT_ERR_INVALID_ARG);
        fflush(stderr);
        _exit(0); /* not exit(): the parent's atexit handlers are not the child's to run */
    }
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    /* the parent goes on: its request, layout and groups as they were */
    CHECK_OK(cohort_test(r, &done));
    CHECK(done == 0);
    v = 9;
    CHECK_OK(cohort_send(g, &v, 1, COHORT_INT32, 0, 3));
    v = 0;
    CHECK_OK(cohort_wait(r));
    cohort_request_free(r);
    CHECK(cohort_layout_group(layout, "tp") != NULL);
    CHECK_OK(cohort_layout_free(layout));
    CHECK_OK(cohort_group_free(g));
    CHECK_OK(cohort_barrier(w));
}

/* After finalize: a user group, the world, a layout and its group, a request the user still
 * holds (freed twice), a group of a finalized context while another lives, and a new context
 * that is not at the old one's address. */
static void after_finalize(cohort_context_t *ctx)
{
    cohort_group_t *w = cohort_world(ctx), *g = self_group(ctx, "late"), *tp, *g2;
    cohort_layout_t *layout = NULL;
    cohort_request_t *r = NULL;
    cohort_context_t *other = NULL, *third = NULL;
    int v = 0;

    CHECK_OK(cohort_layout_create(ctx, "tp=1", &layout));
    tp = cohort_layout_group(layout, "tp");
    CHECK(tp != NULL);
    CHECK_OK(cohort_irecv(g, &v, 1, COHORT_INT32, 0, 4, &r));
    CHECK_OK(cohort_init(&other));
    g2 = self_group(other, "other");
    CHECK_OK(cohort_barrier(w));
    CHECK_OK(cohort_finalize(ctx));
    group_calls_refused(w);
    group_calls_refused(g);
    group_calls_refused(tp);
    CHECK(cohort_layout_group(layout, "tp") == NULL);
    CHECK_STATUS(cohort_layout_free(layout), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_wait(r), COHORT_ERR_REVOKED); /* detached, as cohort.h says */
    cohort_request_free(r);
    request_calls_refused(r); /* the second free included */
    CHECK_STATUS(cohort_finalize(ctx), COHORT_ERR_INVALID_ARG);
    CHECK(cohort_world_rank(ctx) == -1);
    /* the other context is untouched */
    CHECK_OK(cohort_barrier(g2));
    CHECK_OK(cohort_finalize(other));
    group_calls_refused(g2);
    CHECK_OK(cohort_init(&third));
    CHECK(third != other && third != ctx);
    CHECK(cohort_world_rank(other) == -1 && cohort_world_rank(third) == test_rank);
    CHECK_OK(cohort_finalize(third));
}

/* A blocking send to oneself larger than an eager message waits for a receive only this
 * thread can post: the log says so once COHORT_WATCH_S has passed; COHORT_TIMEOUT ends it. The
 * timeout counts from the watch's end (src/api/p2p.c), so the message comes first whatever
 * the two: 0.2 s each (they were 1 s and 3 s: four seconds of every run spent waiting). */
static void self_send(void)
{
    cohort_context_t *sctx = NULL;
    cohort_group_t *g;
    cbuf_t b = cbuf_make(8u << 20, 0);
    const char *text;
    cohort_status_t st;

    setenv("COHORT_TIMEOUT", "0.2", 1);
    setenv("COHORT_WATCH_S", "0.2", 1);
    CHECK_OK(cohort_init(&sctx));
    unsetenv("COHORT_TIMEOUT");
    unsetenv("COHORT_WATCH_S");
    g = self_group(sctx, "self-send");
    test_capture_begin();
    st = cohort_send(g, b.p, b.len, COHORT_UINT8, 0, 1);
    text = test_capture_end();
    CHECK_STATUS(st, COHORT_ERR_TIMEOUT);
    CHECK(strstr(text, "a receive this same thread must post") != NULL);
    cbuf_check(&b, 0);
    CHECK_OK(cohort_finalize(sctx));
    cbuf_free(&b);
}

int main(void)
{
    cohort_context_t *ctx = test_init();
    cohort_group_t *w = cohort_world(ctx);
    int n = cohort_world_size(ctx);

    stale_handles(ctx);
    in_place_p2p(w);
    overlap(w);
    misaligned(w);
    settings();
    fork_child(ctx);
    two_threads();
    self_send();
    after_finalize(ctx);
    if (test_rank == 0) {
        printf("misuse2: passed (%d ranks)\n", n);
    }
    return 0;
}
