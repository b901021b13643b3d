/* run: 2 */
/* run: 4 */
/*
 * A must-match setting that differs on one rank (issue 20, "one error rule"): the last rank
 * runs with COHORT_CMA=off, COHORT_ALGO_ALLREDUCE=ring, COHORT_CHECK=1, COHORT_CUDA_IPC=off,
 * COHORT_CUDA_IPC_MIN=4096, COHORT_CUDA=off or COHORT_SHM_DEFER=1 (its first small call on
 * messages while the others set the segment up in theirs), the others with the defaults. The
 * group's first collective (world and a created group alike) is COHORT_ERR_MISMATCH on every
 * member, with a log line naming the setting; no member's output is written; every later collective
 * on that group is MISMATCH too, since it would take different paths again. Before, each member
 * took its own path: COHORT_CMA=off against single copy, or a COHORT_CHECK round only one rank
 * joins, left the others waiting (a TIMEOUT under the 20 s COHORT_TIMEOUT set here, a hang
 * without it). Then the same setting on every rank: the same calls succeed with the right
 * sum (no difference seen where there is none).
 *
 * Each case has its own context (settings are read at cohort_init); a second context of
 * default settings (ctl) lines the ranks up between cases and compares their statuses.
 */
#include <string.h>
#include "harness.h"

typedef struct {
    const char *name, *value;
    size_t count; /* floats per member: on the path the setting changes */
} case_t;

static const case_t cases[] = {
    {"COHORT_CMA", "off", 1 << 16},
    {"COHORT_ALGO_ALLREDUCE", "ring", 1 << 10},
    {"COHORT_CHECK", "1", 256},
    {"COHORT_CUDA_IPC", "off", 1 << 18},
    {"COHORT_CUDA_IPC_MIN", "4096", 1 << 18},
    {"COHORT_CUDA", "off", 1 << 18},
    {"COHORT_SHM_DEFER", "1", 16},
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* Within the COHORT_TIMEOUT of the case's context: a member left waiting is a TIMEOUT. */
static cohort_status_t sum_call(cohort_group_t *g, const float *in, float *out, size_t n)
{
    return cohort_allreduce(g, in, out, n, COHORT_FLOAT32, COHORT_SUM);
}

/* Every member of ctl's world has @a st: the statuses' lowest and highest agree. */
static void all_same(cohort_context_t *ctl, cohort_status_t st, const char *what)
{
    int v[2] = {(int)st, -(int)st}, r[2];

    CHECK_OK(cohort_allreduce(cohort_world(ctl), v, r, 2, COHORT_INT32, COHORT_MIN));
    if (r[0] != -r[1]) {
        fprintf(stderr, "rank %d: %s: members got different statuses (%s here)\n", test_rank, what,
                cohort_strerror(st));
    }
    CHECK(r[0] == -r[1]);
}

static void one_case(cohort_context_t *ctl, const case_t *c, int everyone)
{
    int n = cohort_world_size(ctl), me = cohort_world_rank(ctl), odd = me == n - 1 || everyone;
    float *in = malloc(c->count * sizeof(float)), *out = malloc(c->count * sizeof(float));
    int *all = malloc(sizeof(int) * (size_t)n);
    cohort_context_t *ctx = NULL;
    cohort_group_t *groups[2];
    cohort_status_t st;
    const char *log;

    CHECK(in != NULL && out != NULL && all != NULL);
    for (int k = 0; k < n; k++) {
        all[k] = k;
    }
    setenv("COHORT_TIMEOUT", "20", 1);
    if (odd) {
        setenv(c->name, c->value, 1);
    }
    CHECK_OK(cohort_init(&ctx));
    unsetenv(c->name);
    unsetenv("COHORT_TIMEOUT");
    groups[0] = cohort_world(ctx);
    CHECK_OK(cohort_group_create(ctx, "settings", all, n, &groups[1]));
    for (int i = 0; i < 2; i++) {
        for (size_t j = 0; j < c->count; j++) {
            in[j] = (float)(me + 1);
            out[j] = -1.0f;
        }
        test_capture_begin();
        st = sum_call(groups[i], in, out, c->count);
        log = test_capture_end();
        if (everyone) {
            CHECK_OK(st);
            for (size_t j = 0; j < c->count; j++) {
                CHECK(out[j] == (float)(n * (n + 1) / 2));
            }
            all_same(ctl, st, c->name);
            continue;
        }
        if (st != COHORT_ERR_MISMATCH) {
            fprintf(stderr, "rank %d: %s=%s on rank %d: %s, not MISMATCH (group %d)\n", me,
                    c->name, c->value, n - 1, cohort_strerror(st), i);
        }
        CHECK_STATUS(st, COHORT_ERR_MISMATCH);
        CHECK(strstr(log, strncmp(c->name, "COHORT_ALGO_", 12) == 0 ? "COHORT_ALGO_*" : c->name) !=
              NULL);
        for (size_t j = 0; j < c->count; j++) {
            CHECK(out[j] == -1.0f); /* nothing moved before the agreement */
        }
        all_same(ctl, st, c->name);
        /* Every later call on the group: it would take different paths again. */
        CHECK_STATUS(sum_call(groups[i], in, out, c->count), COHORT_ERR_MISMATCH);
        CHECK_STATUS(cohort_barrier(groups[i]), COHORT_ERR_MISMATCH);
    }
    CHECK_OK(cohort_group_free(groups[1]));
    /* Each member's context is done before any makes the next. */
    CHECK_OK(cohort_barrier(cohort_world(ctl)));
    CHECK_OK(cohort_finalize(ctx));
    CHECK_OK(cohort_barrier(cohort_world(ctl)));
    free(in);
    free(out);
    free(all);
}

int main(void)
{
    cohort_context_t *ctl = test_init();

    for (size_t i = 0; i < NCASES; i++) {
        if (test_rank == 0) {
            printf("== %s=%s on the last rank, then on every rank\n", cases[i].name,
                   cases[i].value);
            fflush(stdout);
        }
        one_case(ctl, &cases[i], 0);
        one_case(ctl, &cases[i], 1);
    }
    test_finish(ctl, "settings_mismatch");
    return 0;
}
