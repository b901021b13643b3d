/* run: 2 */
/* run: 4 */
/* run: 8 */
/*
 * Members that disagree on a collective's count or root, without COHORT_CHECK, on each path:
 * direct (single copy into and out of the others' buffers), shm (the group's segment) and
 * messages (COHORT_CMA=off, every message-based algorithm forced in turn, rendezvous and eager
 * sizes). Nobody may write past a member's buffers (a canary before and after each is intact on
 * every rank), nobody reports success, and every member gets the same error:
 * COHORT_ERR_MISMATCH on direct and shm, which then leave the group usable (a matching call on
 * it succeeds, with the right result). On the message path a member that receives an odd
 * message fails and revokes the group with MISMATCH, telling the others; a member whose part
 * was only to send may have returned before, and learns it from its next call on the group
 * (messages_outcome). Not run there: a reduce whose members disagree on the root (no message
 * can show it; COHORT_CHECK=1 does).
 *
 * One mpirun runs every configuration: a context per path, with the statuses and canaries
 * compared through a second context of default settings that no mismatch touches.
 * COUNT_MISMATCH_PATHS names the paths to run (default: all but "cuda_ipc": device buffers,
 * under tests/gpu/fake_mismatch.sh's fake runtime or on a GPU; "messages" runs every
 * messages_* path).
 */
#include <stdint.h>
#include <string.h>
#include "../../tools/bench/cudart.h"
#include "harness.h"

#define CANARY 4096 /* bytes before and after every buffer */

typedef enum {
    C_ALLREDUCE,
    C_ALLGATHER,
    C_REDUCE_SCATTER,
    C_BCAST,
    C_REDUCE,
    C_ALLTOALL,
    C_N
} coll_t;

static const char *const coll_names[C_N] = {"allreduce", "allgather", "reduce_scatter",
                                            "bcast",     "reduce",    "alltoall"};
static const char *const coll_env[C_N] = {"ALLREDUCE", "ALLGATHER", "REDUCE_SCATTER",
                                          "BCAST",     "REDUCE",    "ALLTOALL"};

typedef struct {
    const char *name;
    const char *algo; /* forced for every collective that has it; NULL: the defaults */
    int cma_off;
    size_t count; /* elements (float) of the smaller side */
    int reusable; /* the group goes on after a mismatch */
    int device;   /* device buffers, through CUDA IPC (COHORT_CUDA_IPC=on) */
    /* The message path: each collective's algorithm (NULL: the default), so that every
     * message-based algorithm is run. */
    const char *algos[C_N];
} path_t;

static const path_t paths[] = {
    {"direct", "direct", 0, 64 * 1024, 1, 0, {NULL}},
    {"shm", "shm", 0, 512, 1, 0, {NULL}},
    /* 256 KiB messages (rendezvous), then 1 KiB ones (eager) */
    {"messages_a",
     NULL,
     1,
     64 * 1024,
     0,
     0,
     {"recursive_doubling", "ring", "ring", "knomial", "knomial", "pairwise"}},
    {"messages_b",
     NULL,
     1,
     256,
     0,
     0,
     {"ring", "bruck", "recursive_halving", "scatter_allgather", "knomial", "bruck"}},
    {"messages_c", NULL, 1, 64 * 1024, 0, 0, {"rabenseifner", NULL, NULL, NULL, NULL, NULL}},
    {"cuda_ipc", NULL, 0, 16 * 1024, 1, 1, {NULL}},
};

static bench_cudart_t cuda; /* loaded for the cuda_ipc path only */

typedef struct {
    unsigned char *base; /* host: the buffer and its canaries, or their copy from the device */
    unsigned char *dev;  /* the same on the device, or NULL */
    size_t bytes;
} guarded_t;

/* The buffer the call gets: host, or the device copy of what was prepared on the host. */
static void *guarded_arm(guarded_t *g, int device)
{
    size_t total = g->bytes + 2 * CANARY;

    g->dev = NULL;
    if (!device) {
        return g->base + CANARY;
    }
    CHECK(cuda.malloc_device((void **)&g->dev, total) == 0);
    CHECK(cuda.memcpy_any(g->dev, g->base, total, BENCH_CUDA_MEMCPY_DEFAULT) == 0);
    return g->dev + CANARY;
}

/* After the call: the device's bytes back into the host copy. */
static void guarded_disarm(guarded_t *g)
{
    if (g->dev != NULL) {
        CHECK(cuda.memcpy_any(g->base, g->dev, g->bytes + 2 * CANARY, BENCH_CUDA_MEMCPY_DEFAULT) ==
              0);
        CHECK(cuda.free_device(g->dev) == 0);
        g->dev = NULL;
    }
}

static void *guarded_alloc(guarded_t *g, size_t bytes)
{
    g->bytes = bytes;
    g->base = malloc(bytes + 2 * CANARY);
    CHECK(g->base != NULL);
    memset(g->base, 0xa5, CANARY);
    memset(g->base + CANARY, 0, bytes);
    memset(g->base + CANARY + bytes, 0x5a, CANARY);
    return g->base + CANARY;
}

static int guarded_intact(const guarded_t *g)
{
    for (size_t i = 0; i < CANARY; i++) {
        if (g->base[i] != 0xa5 || g->base[CANARY + g->bytes + i] != 0x5a) {
            return 0;
        }
    }
    return 1;
}

/* Bytes of the send and receive buffers for @a count elements on @a n members. */
static void coll_bytes(coll_t c, size_t count, int n, size_t *sb, size_t *rb)
{
    size_t one = count * sizeof(float);

    *sb = c == C_REDUCE_SCATTER || c == C_ALLTOALL ? one * (size_t)n : one;
    *rb = c == C_ALLGATHER || c == C_ALLTOALL ? one * (size_t)n : one;
}

static cohort_status_t coll_call(cohort_group_t *g, coll_t c, const float *s, float *r,
                                 size_t count, int root)
{
    switch (c) {
    case C_ALLREDUCE:
        return cohort_allreduce(g, s, r, count, COHORT_FLOAT32, COHORT_SUM);
    case C_ALLGATHER:
        return cohort_allgather(g, s, r, count, COHORT_FLOAT32);
    case C_REDUCE_SCATTER:
        return cohort_reduce_scatter(g, s, r, count, COHORT_FLOAT32, COHORT_SUM);
    case C_BCAST:
        return cohort_bcast(g, r, count, COHORT_FLOAT32, root);
    case C_REDUCE:
        return cohort_reduce(g, s, r, count, COHORT_FLOAT32, COHORT_SUM, root);
    default:
        return cohort_alltoall(g, s, r, count, COHORT_FLOAT32);
    }
}

/* One call with guarded buffers; *intact: every canary still there after it returned. */
static cohort_status_t guarded_call(cohort_group_t *g, coll_t c, size_t count, int root,
                                    int *intact, int check_result, int device)
{
    int n = cohort_group_size(g), me = cohort_group_rank(g);
    size_t sb, rb;
    guarded_t gs, gr;
    float *s, *r;
    cohort_status_t st;

    coll_bytes(c, count, n, &sb, &rb);
    s = guarded_alloc(&gs, sb);
    r = guarded_alloc(&gr, rb);
    for (size_t i = 0; i < sb / sizeof(float); i++) {
        s[i] = (float)(me + 1);
    }
    if (c == C_BCAST && me == root) {
        for (size_t i = 0; i < count; i++) {
            r[i] = 7.0f;
        }
    }
    st = coll_call(g, c, guarded_arm(&gs, device), guarded_arm(&gr, device), count, root);
    guarded_disarm(&gs);
    guarded_disarm(&gr);
    *intact = guarded_intact(&gs) && guarded_intact(&gr);
    if (st == COHORT_OK && check_result) {
        float sum = (float)(n * (n + 1) / 2);
        for (size_t i = 0; i < rb / sizeof(float); i++) {
            float want = c == C_ALLREDUCE || c == C_REDUCE_SCATTER ? sum
                         : c == C_REDUCE                           ? (me == root ? sum : 0.0f)
                         : c == C_BCAST                            ? 7.0f
                                                                   : (float)(i / count + 1);
            CHECK(r[i] == want);
        }
    }
    free(gs.base);
    free(gr.base);
    return st;
}

static cohort_context_t *path_init(const path_t *p)
{
    cohort_context_t *ctx = NULL;
    char var[64];

    for (int c = 0; c < C_N; c++) {
        snprintf(var, sizeof(var), "COHORT_ALGO_%s", coll_env[c]);
        /* direct has no reduce: that one takes the defaults there */
        if (p->algos[c] != NULL) {
            setenv(var, p->algos[c], 1);
        } else if (p->algo != NULL && !(c == C_REDUCE && strcmp(p->algo, "direct") == 0)) {
            setenv(var, p->algo, 1);
        } else {
            unsetenv(var);
        }
    }
    if (p->device) {
        setenv("COHORT_CUDA_IPC", "on", 1);
    } else {
        unsetenv("COHORT_CUDA_IPC");
    }
    if (p->cma_off) {
        setenv("COHORT_CMA", "off", 1);
    } else {
        unsetenv("COHORT_CMA");
    }
    setenv("COHORT_TIMEOUT", "20", 1); /* a member left waiting fails the run, not the suite */
    CHECK_OK(cohort_init(&ctx));
    return ctx;
}

/* The message path: a member whose part was only to send (a bcast's root, a reduce's leaves)
 * may be done before another member finds the mismatch; the group is revoked for it all the
 * same, and its next call on the group says so. The telling goes on inside progress: every
 * member keeps progressing this context (a barrier on a second group of it, @a side) until
 * every such next call is over. @return what the member learnt: the call's status, else the
 * next one's. */
static cohort_status_t messages_outcome(cohort_group_t *g, cohort_group_t *side, cohort_status_t st)
{
    if (st == COHORT_OK) {
        st = cohort_barrier(g);
    }
    CHECK_OK(cohort_barrier(side));
    return st;
}

/* A group of every rank of @a ctx, tagged @a tag. */
static cohort_group_t *group_all(cohort_context_t *ctx, const char *tag)
{
    int n = cohort_world_size(ctx), *ranks = malloc(sizeof(int) * (size_t)n);
    cohort_group_t *g = NULL;

    CHECK(ranks != NULL);
    for (int k = 0; k < n; k++) {
        ranks[k] = k;
    }
    CHECK_OK(cohort_group_create(ctx, tag, ranks, n, &g));
    free(ranks);
    return g;
}

int main(void)
{
    cohort_context_t *ctl = test_init(), *ctx;
    cohort_group_t *cw = cohort_world(ctl), *g, *side;
    int n = cohort_world_size(ctl), me = cohort_world_rank(ctl);
    int *all = malloc(2 * sizeof(int) * (size_t)n);
    const char *which = getenv("COUNT_MISMATCH_PATHS");

    CHECK(all != NULL);
    for (size_t p = 0; p < sizeof(paths) / sizeof(paths[0]); p++) {
        const path_t *path = &paths[p];
        if (which == NULL
                ? path->device
                : strstr(path->name, which) != path->name && strstr(which, path->name) == NULL) {
            continue;
        }
        if (path->device) {
            char why[128];
            CHECK(bench_cudart_load(&cuda, why, sizeof(why)) == 0);
        }
        ctx = path_init(path);
        side = path->reusable ? NULL : group_all(ctx, "side");
        for (int c = 0; c < C_N; c++) {
            if (c == C_REDUCE && path->algo != NULL && strcmp(path->algo, "direct") == 0) {
                continue; /* no direct reduce: the shm and message paths have it */
            }
            /* 0: rank 0 passes N, the others 2N; 1: the reverse; 2: the root differs */
            for (int v = 0; v < (c == C_BCAST || c == C_REDUCE ? 3 : 2); v++) {
                size_t count = path->count;
                int root = 0, intact, mine[2], saw_mismatch = 0;
                cohort_status_t st;
                if (v == 2 && c == C_REDUCE && !path->reusable) {
                    /* Not on the message path: the members that each take themselves for the
                     * root wait for children that send to another (at 2 ranks nobody sends
                     * at all), so no message can show the difference; COHORT_CHECK=1's
                     * agreement does. */
                    continue;
                }
                if (v < 2 && (me == 0) == (v == 1)) {
                    count *= 2;
                }
                if (v == 2 && me != 0) {
                    root = 1;
                }
                /* The message path revokes the group: each case on a group of its own. */
                g = path->reusable ? cohort_world(ctx) : group_all(ctx, "case");
                st = guarded_call(g, (coll_t)c, count, root, &intact, 0, path->device);
                if (!path->reusable) {
                    st = messages_outcome(g, side, st);
                }
                mine[0] = (int)st;
                mine[1] = intact;
                CHECK_OK(cohort_allgather(cw, mine, all, 2, COHORT_INT32));
                for (int k = 0; k < n; k++) {
                    cohort_status_t sk = (cohort_status_t)all[2 * k];
                    if (!all[2 * k + 1] || sk == COHORT_OK ||
                        (path->reusable ? sk != COHORT_ERR_MISMATCH
                                        : sk != COHORT_ERR_MISMATCH && sk != COHORT_ERR_REVOKED)) {
                        fprintf(stderr,
                                "rank %d: %s %s case %d: rank %d returned %d (%s), canaries %s\n",
                                me, path->name, coll_names[c], v, k, (int)sk, cohort_strerror(sk),
                                all[2 * k + 1] ? "intact" : "OVERWRITTEN");
                        exit(1);
                    }
                    saw_mismatch |= sk == COHORT_ERR_MISMATCH;
                }
                CHECK(saw_mismatch);
                if (!path->reusable) {
                    CHECK_OK(cohort_group_free(g)); /* revoked */
                    continue;
                }
                /* The same group goes on: a matching call succeeds with the right result. */
                CHECK_OK(guarded_call(cohort_world(ctx), (coll_t)c, path->count, 0, &intact, 1,
                                      path->device));
                CHECK(intact);
            }
        }
        if (side != NULL) {
            CHECK_OK(cohort_group_free(side));
        }
        CHECK_OK(cohort_finalize(ctx));
        CHECK_OK(cohort_barrier(cw));
    }
    free(all);
    CHECK_OK(cohort_finalize(ctl));
    printf("rank %d: count_mismatch: passed\n", me);
    return 0;
}
