/* run: 2 */
/* run: singleton */
/*
 * Bad input gets the documented status and a log line, never a crash or a hang: bad settings
 * at init, bad group arguments, bad point-to-point arguments, freed and foreign handles.
 */
#include <stdint.h>
#include <string.h>
#include "harness.h"

static void init_must_fail(const char *var, const char *value, cohort_status_t expected)
{
    cohort_context_t *ctx = (cohort_context_t *)(uintptr_t)0x1;

    setenv(var, value, 1);
    CHECK_STATUS(cohort_init(&ctx), expected);
    CHECK(ctx == (cohort_context_t *)(uintptr_t)0x1); /* outputs are set only on success */
    unsetenv(var);
}

int main(void)
{
    cohort_context_t *ctx;
    cohort_group_t *g = (cohort_group_t *)(uintptr_t)0x1, *w, *freed;
    int n, me, ranks[4], v = 0;
    cohort_request_t *req = NULL;
    int done;

    /* Settings: every bad value is refused at init, naming the variable (see the log). */
    init_must_fail("COHORT_PROGRESS", "busy", COHORT_ERR_INVALID_ARG);
    init_must_fail("COHORT_TIMEOUT", "soon", COHORT_ERR_INVALID_ARG);
    init_must_fail("COHORT_PMIX_PLUGIN", "pmi2", COHORT_ERR_INVALID_ARG);
    init_must_fail("COHORT_ALGO_BARRIER", "nope", COHORT_ERR_INVALID_ARG);
    init_must_fail("COHORT_ALGO_FOO", "ring", COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_init(NULL), COHORT_ERR_INVALID_ARG);

    ctx = test_init();
    w = cohort_world(ctx);
    n = cohort_world_size(ctx);
    me = cohort_world_rank(ctx);

    /* Group creation. */
    ranks[0] = me;
    CHECK_STATUS(cohort_group_create(NULL, "t", ranks, 1, &g), COHORT_ERR_INVALID_ARG);
    CHECK(g == NULL);
    CHECK_STATUS(cohort_group_create(ctx, NULL, ranks, 1, &g), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_group_create(ctx, "t", NULL, 1, &g), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_group_create(ctx, "t", ranks, 0, &g), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_group_create(ctx, "t", ranks, -3, &g), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_group_create(ctx, "t", ranks, 1, NULL), COHORT_ERR_INVALID_ARG);
    ranks[0] = me;
    ranks[1] = me;
    CHECK_STATUS(cohort_group_create(ctx, "t", ranks, 2, &g), COHORT_ERR_INVALID_ARG);
    CHECK(g == NULL);
    ranks[1] = n;
    CHECK_STATUS(cohort_group_create(ctx, "t", ranks, 2, &g), COHORT_ERR_INVALID_ARG);
    ranks[1] = -1;
    CHECK_STATUS(cohort_group_create(ctx, "t", ranks, 2, &g), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_group_create(ctx, "t", ranks, n + 1, &g), COHORT_ERR_INVALID_ARG);
    if (n > 1) {
        ranks[0] = (me + 1) % n;
        g = (cohort_group_t *)(uintptr_t)0x1;
        CHECK_STATUS(cohort_group_create(ctx, "t", ranks, 1, &g), COHORT_ERR_NOT_MEMBER);
        CHECK(g == NULL);
    }

    /* Handles: NULL, the world (owned by the context), freed, foreign. */
    CHECK_OK(cohort_group_free(NULL));
    CHECK_STATUS(cohort_group_free(w), COHORT_ERR_INVALID_ARG);
    ranks[0] = me;
    CHECK_OK(cohort_group_create(ctx, "gone", ranks, 1, &freed));
    CHECK_OK(cohort_group_free(freed));
    CHECK_STATUS(cohort_group_free(freed), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_send(freed, &v, 1, COHORT_INT32, 0, 0), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_barrier(freed), COHORT_ERR_INVALID_ARG);
    {
        char junk[256];
        memset(junk, 0, sizeof(junk));
        CHECK_STATUS(cohort_barrier((cohort_group_t *)junk), COHORT_ERR_INVALID_ARG);
    }
    CHECK_STATUS(cohort_barrier(NULL), COHORT_ERR_INVALID_ARG);
    CHECK(cohort_group_size(NULL) == -1 && cohort_group_rank(NULL) == -1);
    CHECK(cohort_group_world_rank(w, n) == -1 && cohort_group_world_rank(w, -1) == -1);
    CHECK(cohort_world_rank(NULL) == -1 && cohort_world(NULL) == NULL);

    /* Point-to-point arguments. */
    CHECK_STATUS(cohort_send(w, NULL, 1, COHORT_INT32, 0, 0), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_recv(w, NULL, 1, COHORT_INT32, 0, 0), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_send(w, &v, 1, (cohort_dtype_t)99, 0, 0), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_send(w, &v, 1, COHORT_INT32, n, 0), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_send(w, &v, 1, COHORT_INT32, -1, 0), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_send(w, &v, 1, COHORT_INT32, 0, -5), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_isend(w, &v, 1, COHORT_INT32, 0, 0, NULL), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_send(w, &v, SIZE_MAX / 2, COHORT_INT32, 0, 0), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_test(NULL, &done), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_wait(NULL), COHORT_ERR_INVALID_ARG);
    cohort_request_free(NULL);
    CHECK(cohort_wired_peers(NULL, ranks, 4) == 0);
    CHECK_STATUS(cohort_stats(NULL, NULL), COHORT_ERR_INVALID_ARG);

    /* count 0 with a NULL buffer is legal. */
    CHECK_OK(cohort_irecv(w, NULL, 0, COHORT_INT32, me, 1, &req));
    CHECK_OK(cohort_send(w, NULL, 0, COHORT_INT32, me, 1));
    CHECK_OK(cohort_wait(req));
    cohort_request_free(req);

    /* A receive freed before it matched is cancelled: the message goes to the next one. */
    {
        int a = 0, b = 0, x = 31;
        cohort_request_t *r1, *r2;
        CHECK_OK(cohort_irecv(w, &a, 1, COHORT_INT32, me, 2, &r1));
        CHECK_OK(cohort_test(r1, &done));
        CHECK(done == 0);
        cohort_request_free(r1);
        CHECK_OK(cohort_irecv(w, &b, 1, COHORT_INT32, me, 2, &r2));
        CHECK_OK(cohort_send(w, &x, 1, COHORT_INT32, me, 2));
        CHECK_OK(cohort_wait(r2));
        cohort_request_free(r2);
        CHECK(a == 0 && b == 31);
    }

    /* Abort: pending and later operations on the group are revoked; others are unaffected. */
    {
        cohort_group_t *solo;
        cohort_request_t *r;
        int y = 0;
        ranks[0] = me;
        CHECK_OK(cohort_group_create(ctx, "abort", ranks, 1, &solo));
        CHECK_OK(cohort_irecv(solo, &y, 1, COHORT_INT32, 0, 0, &r));
        CHECK_OK(cohort_group_abort(solo));
        CHECK_STATUS(cohort_wait(r), COHORT_ERR_REVOKED);
        cohort_request_free(r);
        CHECK_STATUS(cohort_send(solo, &y, 1, COHORT_INT32, 0, 0), COHORT_ERR_REVOKED);
        CHECK_STATUS(cohort_barrier(solo), COHORT_ERR_REVOKED);
        CHECK_OK(cohort_group_free(solo));
    }

    /* Layouts. */
    {
        cohort_layout_t *l = NULL;
        CHECK_STATUS(cohort_layout_create(ctx, "tp=0", &l), COHORT_ERR_INVALID_ARG);
        CHECK_STATUS(cohort_layout_create(ctx, "tp=2,foo=1", &l), COHORT_ERR_INVALID_ARG);
        CHECK_STATUS(cohort_layout_create(ctx, "tp=", &l), COHORT_ERR_INVALID_ARG);
        CHECK_STATUS(cohort_layout_create(ctx, "tp=3", &l),
                     n % 3 ? COHORT_ERR_INVALID_ARG : COHORT_OK);
        CHECK_OK(cohort_layout_free(l));
        l = NULL;
        CHECK_STATUS(cohort_layout_create(NULL, "tp=1", &l), COHORT_ERR_INVALID_ARG);
        CHECK_STATUS(cohort_layout_create(ctx, "tp=1", NULL), COHORT_ERR_INVALID_ARG);
        CHECK_OK(cohort_layout_create(ctx, "tp=1", &l));
        CHECK(cohort_layout_group(l, "nope") == NULL);
        CHECK(cohort_layout_group(l, "tp") != NULL);
        CHECK(cohort_layout_group(NULL, "tp") == NULL);
        CHECK_STATUS(cohort_group_free(cohort_layout_group(l, "tp")), COHORT_ERR_INVALID_ARG);
        CHECK_OK(cohort_layout_free(l));
        CHECK_OK(cohort_layout_free(NULL));
    }

    CHECK(strcmp(cohort_strerror(COHORT_ERR_REVOKED), "group revoked") == 0);
    CHECK(strcmp(cohort_strerror((cohort_status_t)-999), "unknown status") == 0);
    CHECK_OK(cohort_barrier(w));
    test_finish(ctx, "bad_input");
    CHECK_OK(cohort_finalize(NULL));
    return 0;
}
