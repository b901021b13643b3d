/* run: 2 COHORT_TIMEOUT=30 */
/* run: 4 COHORT_TIMEOUT=30 */
/*
 * Nonblocking collectives of different sizes in flight together on one group, some members
 * late, 200 rounds (issue 20, "the collective pipeline as a schedule"). Each round makes a new
 * group of every rank (no message), posts two to five calls on it in a random order of kinds
 * and sizes (the same on every rank: one seed), with one member, a different one each round,
 * sleeping before it posts and between posts, then waits for them in a random order and checks
 * every result. A group's first collective carries the agreement on the settings, so it starts
 * after its later, small calls (shared segment) on the members that are on time, and possibly
 * first on the late one, whose agreement messages are all there when it posts. Calls on the
 * group's shared segment used to be numbered when they started: the members then paired
 * different calls (one member's data read as another's, or two members each making the
 * segment), and results were wrong or the calls hung; they are numbered at post now. A hang
 * is a TIMEOUT (COHORT_TIMEOUT=30), not a stuck test. INTERLEAVE_ROUNDS: rounds (200).
 */
#include <string.h>
#include <time.h>
#include "harness.h"

#define MAX_CALLS 5
#define BIG       (16 * 1024) /* int32 per member: single copy (direct) */
#define SMALL     16          /* int32 per member: the shared segment */

typedef enum {
    K_ALLREDUCE_SMALL,
    K_ALLREDUCE_BIG,
    K_ALLGATHER_SMALL,
    K_BCAST_SMALL,
    K_BARRIER,
    K_N
} kind_t;

typedef struct {
    kind_t kind;
    size_t count;
    int32_t *in, *out;
    cohort_request_t *req;
} call_t;

static uint32_t next(uint32_t *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

static void nap_us(unsigned us)
{
    struct timespec t = {0, (long)us * 1000};

    nanosleep(&t, NULL);
}

static int32_t value(int round, int call, int rank, size_t j)
{
    return (int32_t)(round * 1000 + call * 100 + rank * 10 + (int)(j % 7));
}

static void post(cohort_group_t *g, call_t *c, int round, int i, int me, int n)
{
    size_t in_n = c->count, out_n = c->kind == K_ALLGATHER_SMALL ? c->count * (size_t)n : c->count;

    c->in = malloc(sizeof(int32_t) * (in_n ? in_n : 1));
    c->out = malloc(sizeof(int32_t) * (out_n ? out_n : 1));
    CHECK(c->in != NULL && c->out != NULL);
    for (size_t j = 0; j < in_n; j++) {
        c->in[j] = value(round, i, me, j);
    }
    for (size_t j = 0; j < out_n; j++) {
        c->out[j] = -1;
    }
    switch (c->kind) {
    case K_ALLREDUCE_SMALL:
    case K_ALLREDUCE_BIG:
        CHECK_OK(cohort_iallreduce(g, c->in, c->out, c->count, COHORT_INT32, COHORT_SUM, &c->req));
        break;
    case K_ALLGATHER_SMALL:
        CHECK_OK(cohort_iallgather(g, c->in, c->out, c->count, COHORT_INT32, &c->req));
        break;
    case K_BCAST_SMALL: /* root: the round's late member */
        if (me == round % n) {
            memcpy(c->out, c->in, sizeof(int32_t) * c->count);
        }
        CHECK_OK(cohort_ibcast(g, c->out, c->count, COHORT_INT32, round % n, &c->req));
        break;
    default:
        CHECK_OK(cohort_ibarrier(g, &c->req));
        break;
    }
}

static void check(const call_t *c, int round, int i, int n)
{
    for (size_t j = 0; j < c->count; j++) {
        int32_t want = 0;
        switch (c->kind) {
        case K_ALLREDUCE_SMALL:
        case K_ALLREDUCE_BIG:
            for (int k = 0; k < n; k++) {
                want += value(round, i, k, j);
            }
            break;
        case K_BCAST_SMALL:
            want = value(round, i, round % n, j);
            break;
        default:
            break;
        }
        if (c->kind == K_ALLGATHER_SMALL) {
            for (int k = 0; k < n; k++) {
                if (c->out[(size_t)k * c->count + j] != value(round, i, k, j)) {
                    fprintf(stderr,
                            "rank %d: round %d call %d (allgather): element %zu of %d is %d, "
                            "not %d\n",
                            test_rank, round, i, j, k, c->out[(size_t)k * c->count + j],
                            value(round, i, k, j));
                    CHECK(0);
                }
            }
        } else if (c->out[j] != want) {
            fprintf(stderr, "rank %d: round %d call %d (kind %d): element %zu is %d, not %d\n",
                    test_rank, round, i, (int)c->kind, j, c->out[j], want);
            CHECK(0);
        }
    }
}

int main(void)
{
    cohort_context_t *ctx = test_init();
    int n = cohort_world_size(ctx), me = cohort_world_rank(ctx);
    const char *rounds_s = getenv("INTERLEAVE_ROUNDS");
    int rounds = rounds_s != NULL ? atoi(rounds_s) : 200;
    int *all = malloc(sizeof(int) * (size_t)n);
    uint32_t seed = 12345, naps = 777u + (uint32_t)me; /* naps: this rank's own */

    CHECK(all != NULL);
    for (int k = 0; k < n; k++) {
        all[k] = k;
    }
    for (int r = 0; r < rounds; r++) {
        call_t calls[MAX_CALLS];
        int order[MAX_CALLS];
        int ncalls = 2 + (int)(next(&seed) % (MAX_CALLS - 1)), late = me == r % n;
        cohort_group_t *g;

        CHECK_OK(cohort_group_create(ctx, "interleave", all, n, &g));
        memset(calls, 0, sizeof(calls));
        for (int i = 0; i < ncalls; i++) {
            calls[i].kind = (kind_t)(next(&seed) % K_N);
            calls[i].count = calls[i].kind == K_ALLREDUCE_BIG ? BIG
                             : calls[i].kind == K_BARRIER     ? 0
                                                              : SMALL;
            order[i] = i;
        }
        for (int i = ncalls - 1; i > 0; i--) { /* the order of the waits */
            int j = (int)(next(&seed) % (uint32_t)(i + 1)), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        if (late) {
            nap_us(500 + next(&naps) % 2000);
        }
        for (int i = 0; i < ncalls; i++) {
            post(g, &calls[i], r, i, me, n);
            if (late && next(&naps) % 2) {
                nap_us(next(&naps) % 500);
            }
        }
        for (int i = 0; i < ncalls; i++) {
            call_t *c = &calls[order[i]];
            cohort_status_t st = cohort_wait(c->req);
            if (st != COHORT_OK) {
                fprintf(stderr, "rank %d: round %d call %d (kind %d): %s\n", me, r, order[i],
                        (int)c->kind, cohort_strerror(st));
            }
            CHECK_OK(st);
            check(c, r, order[i], n);
            cohort_request_free(c->req);
            free(c->in);
            free(c->out);
        }
        CHECK_OK(cohort_group_free(g));
    }
    free(all);
    test_finish(ctx, "interleave");
    return 0;
}
