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
 *
 * INTERLEAVE_DEVICE=1 (tests/gpu/fake_interleave.sh, the fake CUDA runtime): every buffer is
 * device memory, so calls from COHORT_CUDA_IPC_MIN vote on CUDA IPC in their agreement while the
 * small ones are staged, and a vote's call runs off the shared segment; INTERLEAVE_STREAM=1
 * adds a group stream: each input is written by an asynchronous copy on it, the stream not
 * synchronized, and every call waits for its copy (the fake makes a stream's copies only when
 * asked, so a call that read its input early sees zeros).
 */
#include <string.h>
#include <time.h>
#include "harness.h"
#include "../../tools/bench/cudart.h"

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
    int32_t *in, *out;   /* host: the values, then the result */
    void *d_in, *d_out;  /* INTERLEAVE_DEVICE: what the call is given */
    cohort_request_t *req;
} call_t;

static bench_cudart_t cu;
static int on_device;
static void *stream; /* INTERLEAVE_STREAM: every round's group's */

static void *dev_copy_of(const int32_t *h, size_t n)
{
    void *d = NULL;

    CHECK(cu.malloc_device(&d, sizeof(int32_t) * (n ? n : 1)) == 0);
    if (n > 0 && stream != NULL) {
        CHECK(cu.memcpy_async(d, h, sizeof(int32_t) * n, BENCH_CUDA_MEMCPY_DEFAULT, stream) == 0);
    } else if (n > 0) {
        CHECK(cu.memcpy_any(d, h, sizeof(int32_t) * n, BENCH_CUDA_MEMCPY_DEFAULT) == 0);
    }
    return d;
}

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
    if (c->kind == K_BCAST_SMALL && me == round % n) { /* root: the round's late member */
        memcpy(c->out, c->in, sizeof(int32_t) * c->count);
    }
    c->d_in = on_device ? dev_copy_of(c->in, in_n) : c->in;
    c->d_out = on_device ? dev_copy_of(c->out, out_n) : c->out;
    switch (c->kind) {
    case K_ALLREDUCE_SMALL:
    case K_ALLREDUCE_BIG:
        CHECK_OK(cohort_iallreduce(g, c->d_in, c->d_out, c->count, COHORT_INT32, COHORT_SUM,
                                   &c->req));
        break;
    case K_ALLGATHER_SMALL:
        CHECK_OK(cohort_iallgather(g, c->d_in, c->d_out, c->count, COHORT_INT32, &c->req));
        break;
    case K_BCAST_SMALL:
        CHECK_OK(cohort_ibcast(g, c->d_out, c->count, COHORT_INT32, round % n, &c->req));
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
    const char *dev_s = getenv("INTERLEAVE_DEVICE"), *stream_s = getenv("INTERLEAVE_STREAM");

    CHECK(all != NULL);
    on_device = dev_s != NULL && strcmp(dev_s, "1") == 0;
    if (on_device) {
        char why[256];
        if (bench_cudart_load(&cu, why, sizeof(why)) != 0) {
            /* asked for explicitly (the fake runtime's script): no device is a failure */
            fprintf(stderr, "rank %d: INTERLEAVE_DEVICE=1 but %s\n", me, why);
            exit(1);
        }
        if (stream_s != NULL && strcmp(stream_s, "1") == 0) {
            CHECK(cu.stream_create(&stream) == 0);
        }
    }
    for (int k = 0; k < n; k++) {
        all[k] = k;
    }
    for (int r = 0; r < rounds; r++) {
        call_t calls[MAX_CALLS];
        int order[MAX_CALLS];
        int ncalls = 2 + (int)(next(&seed) % (MAX_CALLS - 1)), late = me == r % n;
        cohort_group_t *g;

        CHECK_OK(cohort_group_create(ctx, "interleave", all, n, &g));
        if (stream != NULL) {
            CHECK_OK(cohort_group_set_stream(g, stream));
        }
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
            if (on_device) {
                size_t out_n = c->kind == K_ALLGATHER_SMALL ? c->count * (size_t)n : c->count;
                if (out_n > 0) {
                    CHECK(cu.memcpy_any(c->out, c->d_out, sizeof(int32_t) * out_n,
                                        BENCH_CUDA_MEMCPY_DEFAULT) == 0);
                }
                CHECK(cu.free_device(c->d_in) == 0 && cu.free_device(c->d_out) == 0);
            }
            check(c, r, order[i], n);
            cohort_request_free(c->req);
            free(c->in);
            free(c->out);
        }
        CHECK_OK(cohort_group_free(g));
    }
    free(all);
    if (on_device) {
        /* What the mode is for: the big calls voted and ran through CUDA IPC, the small ones
         * were staged (and ran on the segment where there is one). */
        cohort_stats_t stats;
        CHECK_OK(cohort_stats(ctx, &stats));
        printf("rank %d: %llu calls voted, %llu through CUDA IPC, %llu staged whole\n", me,
               (unsigned long long)stats.cuda_ipc_votes, (unsigned long long)stats.cuda_ipc_calls,
               (unsigned long long)stats.cuda_staged_calls);
        CHECK(stats.cuda_ipc_votes > 0 && stats.cuda_ipc_calls > 0 && stats.cuda_staged_calls > 0);
    }
    if (stream != NULL) {
        CHECK(cu.stream_destroy(stream) == 0);
    }
    test_finish(ctx, "interleave");
    return 0;
}
