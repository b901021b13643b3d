/* clang-format off */
/* run: 6 */
/* run: 8 */
/* run: 6 COHORT_ALGO_BCAST=knomial COHORT_ALGO_ALLGATHER=bruck COHORT_ALGO_ALLTOALL=bruck */
/* run: 8 --full-only COHORT_ALGO_BCAST=knomial COHORT_ALGO_ALLGATHER=bruck COHORT_ALGO_ALLTOALL=bruck */
/* run: 4 COHORT_CMA=on COHORT_CMA_MIN=1 */
/* run: 4 COHORT_CMA=on COHORT_CMA_MIN=1 COHORT_FAULT=cma:5 COHORT_ALGO_BCAST=knomial COHORT_ALGO_ALLGATHER=ring COHORT_ALGO_ALLTOALL=pairwise */
/* run: 4 COHORT_CMA=off */
/* run: 5 COHORT_ALGO_BCAST=scatter_allgather COHORT_ALGO_ALLGATHER=ring COHORT_ALGO_ALLTOALL=pairwise */
/* run: 8 --full-only COHORT_ALGO_BCAST=scatter_allgather COHORT_ALGO_ALLGATHER=ring COHORT_ALGO_ALLTOALL=pairwise */
/* run: 3 COHORT_CHECK=1 COHORT_PROGRESS=block */
/* run: 6 COHORT_ALGO_ALLTOALL=pairwise COHORT_ALGO_ALLTOALL_PAIRWISE_WINDOW=1 */
/* run: 4 COHORT_ALGO_BCAST=direct COHORT_ALGO_ALLGATHER=direct COHORT_ALGO_ALLTOALL=direct */
/* run: 3 COHORT_ALGO_BCAST=direct COHORT_ALGO_ALLGATHER=direct COHORT_ALGO_ALLTOALL=direct COHORT_ALGO_ALLGATHER_DIRECT_CHUNK=4k */
/* run: 4 COHORT_ALGO_BCAST=cuda_ipc COHORT_ALGO_ALLGATHER=cuda_ipc COHORT_ALGO_ALLTOALL=cuda_ipc */
/* run: singleton */
/* runs: together */
/* clang-format on */
/*
 * Data-movement collectives (bcast, allgather, alltoall): every dtype x counts 0, 1, 7, 1023
 * and one past the rendezvous threshold x group shapes (world, reversed, evens, odds, three
 * scattered ranks, each rank alone, all but the last) x several roots, blocking and
 * nonblocking alternately, in place and not, against data computed locally: each rank's input
 * is a function of (world rank, byte index, call number). Then several requests outstanding on
 * one group waited in reverse order; two overlapping groups posted in different orders on
 * different ranks; and bad input rejected without a crash. Quick mode (TEST_FULL=0): the world
 * makes the whole matrix, every other shape a third of it, the shapes' thirds in turn; the
 * forced algorithms run at 6 and 5 ranks (knomial/bruck, scatter_allgather/ring/pairwise), at 8
 * in full mode only, beside the default 8-rank line.
 */
#include <stdint.h>
#include <string.h>
#include "harness.h"

#define NDTYPES   10
#define GUARD     64
#define BIG_BYTES 300000               /* above UCX's rendezvous threshold for shared memory */
#define SEG_BYTES (5 * 512 * 1024 + 3) /* several of knomial's 1 MiB segments, and a ragged end */

static const cohort_dtype_t dtypes[NDTYPES] = {
    COHORT_INT8,   COHORT_UINT8,   COHORT_INT32,    COHORT_UINT32,  COHORT_INT64,
    COHORT_UINT64, COHORT_FLOAT16, COHORT_BFLOAT16, COHORT_FLOAT32, COHORT_FLOAT64};
static const size_t dsizes[NDTYPES] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};

static uint8_t *sbuf, *rbuf;
/* A fresh one per call, so stale data never passes; members of a group agree on it because
 * each section starts it afresh and they make the same calls in it. */
static unsigned salt;
static unsigned ncalls;
static const char *shape = "world"; /* the group under test, for messages */

static uint8_t val(int world_rank, size_t j, unsigned s)
{
    uint32_t x =
        (uint32_t)j * 0x9E3779B1u ^ (uint32_t)(world_rank + 1) * 0x85EBCA77u ^ s * 0xC2B2AE3Du;
    x ^= x >> 15;
    x *= 0x2C1B3C6Du;
    x ^= x >> 12;
    return (uint8_t)(x ^ (x >> 8));
}

static void fill(uint8_t *buf, size_t off, size_t n, int world_rank, unsigned s)
{
    for (size_t j = 0; j < n; j++) {
        buf[j] = val(world_rank, off + j, s);
    }
}

static void expect(const uint8_t *buf, size_t off, size_t n, int world_rank, unsigned s,
                   const char *what, size_t count, int dt)
{
    for (size_t j = 0; j < n; j++) {
        if (buf[j] != val(world_rank, off + j, s)) {
            fprintf(stderr,
                    "rank %d: %s on %s (count %zu, dtype %d, call %u): byte %zu of the data from "
                    "world rank %d is %u, expected %u\n",
                    test_rank, what, shape, count, dt, ncalls, off + j, world_rank, buf[j],
                    val(world_rank, off + j, s));
            exit(1);
        }
    }
}

static void guard_set(uint8_t *p)
{
    memset(p, 0xa5, GUARD);
}

static void guard_check(const uint8_t *p, const char *what)
{
    for (int i = 0; i < GUARD; i++) {
        if (p[i] != 0xa5) {
            fprintf(stderr, "rank %d: %s wrote past the end of its buffer\n", test_rank, what);
            exit(1);
        }
    }
}

/* Blocking, or the nonblocking twin and a wait (*req is read after the call that sets it). */
static void finish(cohort_status_t st, cohort_request_t **req)
{
    CHECK_OK(st);
    if (*req != NULL) {
        CHECK_OK(cohort_wait(*req));
        cohort_request_free(*req);
    }
}

static void run_bcast(cohort_group_t *g, size_t count, int d, int root, int nb)
{
    size_t bytes = count * dsizes[d];
    int rw = cohort_group_world_rank(g, root);
    cohort_request_t *req = NULL;
    unsigned s = ++salt;

    if (cohort_group_rank(g) == root) {
        fill(rbuf, 0, bytes, rw, s);
    } else {
        memset(rbuf, 0xee, bytes);
    }
    guard_set(rbuf + bytes);
    finish(nb ? cohort_ibcast(g, rbuf, count, dtypes[d], root, &req)
              : cohort_bcast(g, rbuf, count, dtypes[d], root),
           &req);
    ncalls++;
    expect(rbuf, 0, bytes, rw, s, "bcast", count, d);
    guard_check(rbuf + bytes, "bcast");
}

static void run_allgather(cohort_group_t *g, size_t count, int d, int in_place, int nb)
{
    int n = cohort_group_size(g), me = cohort_group_rank(g);
    int mw = cohort_group_world_rank(g, me);
    size_t blk = count * dsizes[d];
    cohort_request_t *req = NULL;
    unsigned s = ++salt;

    memset(rbuf, 0xee, (size_t)n * blk);
    guard_set(rbuf + (size_t)n * blk);
    if (in_place) {
        fill(rbuf + (size_t)me * blk, 0, blk, mw, s);
    } else {
        fill(sbuf, 0, blk, mw, s);
        guard_set(sbuf + blk);
    }
    {
        const void *src = in_place ? COHORT_IN_PLACE : sbuf;
        finish(nb ? cohort_iallgather(g, src, rbuf, count, dtypes[d], &req)
                  : cohort_allgather(g, src, rbuf, count, dtypes[d]),
               &req);
    }
    ncalls++;
    for (int i = 0; i < n; i++) {
        expect(rbuf + (size_t)i * blk, 0, blk, cohort_group_world_rank(g, i), s,
               in_place ? "allgather in place" : "allgather", count, d);
    }
    guard_check(rbuf + (size_t)n * blk, "allgather");
    if (!in_place) {
        expect(sbuf, 0, blk, mw, s, "allgather's send buffer", count, d);
        guard_check(sbuf + blk, "allgather (send buffer)");
    }
}

static void run_alltoall(cohort_group_t *g, size_t count, int d, int in_place, int nb)
{
    int n = cohort_group_size(g), me = cohort_group_rank(g);
    int mw = cohort_group_world_rank(g, me);
    size_t blk = count * dsizes[d], total = (size_t)n * blk;
    uint8_t *in = in_place ? rbuf : sbuf;
    cohort_request_t *req = NULL;
    unsigned s = ++salt;

    fill(in, 0, total, mw, s);
    guard_set(in + total);
    if (!in_place) {
        memset(rbuf, 0xee, total);
        guard_set(rbuf + total);
    }
    {
        const void *src = in_place ? COHORT_IN_PLACE : sbuf;
        finish(nb ? cohort_ialltoall(g, src, rbuf, count, dtypes[d], &req)
                  : cohort_alltoall(g, src, rbuf, count, dtypes[d]),
               &req);
    }
    ncalls++;
    /* block i came from rank i, which sent its block number me */
    for (int i = 0; i < n; i++) {
        expect(rbuf + (size_t)i * blk, (size_t)me * blk, blk, cohort_group_world_rank(g, i), s,
               in_place ? "alltoall in place" : "alltoall", count, d);
    }
    guard_check(rbuf + total, "alltoall");
    if (!in_place) {
        expect(sbuf, 0, total, mw, s, "alltoall's send buffer", count, d);
        guard_check(sbuf + total, "alltoall (send buffer)");
    }
}

/* Whether the call numbered @a k of a matrix runs: all of them where @a slot is -1 (the world,
 * and every shape in full mode), else one in three, each shape its own third, so that the
 * shapes together still make every call of the matrix (quick mode, tests/mpi/launch.sh). */
static int takes(int slot, int k)
{
    return slot < 0 || k % 3 == slot;
}

/* Every collective, dtype, count and a few roots on one group. */
static void run_matrix(cohort_group_t *g, int big_all_dtypes, int slot)
{
    int n = cohort_group_size(g);
    int roots[3] = {0, n - 1, n / 2};
    int nb = 0, k = 0;

    for (int d = 0; d < NDTYPES; d++) {
        size_t counts[5] = {0, 1, 7, 1023, (BIG_BYTES + dsizes[d] - 1) / dsizes[d]};
        /* The big count for every dtype on some groups, for one per element size elsewhere. */
        int ncounts = big_all_dtypes || d == 1 || d == 6 || d == 8 || d == 9 ? 5 : 4;
        for (int c = 0; c < ncounts; c++) {
            for (int r = 0; r < 3; r++) {
                if ((r == 1 && roots[1] == roots[0]) ||
                    (r == 2 && (roots[2] == roots[0] || roots[2] == roots[1]))) {
                    continue;
                }
                if (takes(slot, k++)) {
                    run_bcast(g, counts[c], d, roots[r], nb++ & 1);
                }
            }
            for (int in_place = 0; in_place < 2; in_place++) {
                if (takes(slot, k++)) {
                    run_allgather(g, counts[c], d, in_place, nb++ & 1);
                }
            }
            for (int in_place = 0; in_place < 2; in_place++) {
                if (takes(slot, k++)) {
                    run_alltoall(g, counts[c], d, in_place, nb++ & 1);
                }
            }
        }
    }
}

/* Several requests outstanding on one group, waited in reverse order. */
static void outstanding(cohort_context_t *ctx)
{
    cohort_group_t *w = cohort_world(ctx);
    int n = cohort_world_size(ctx), me = cohort_world_rank(ctx);
    size_t big = BIG_BYTES, small = 1023;
    uint8_t *b1 = malloc(big), *b2 = malloc(small), *ag_s = malloc(small),
            *ag_r = malloc((size_t)n * small), *a2a_s = malloc((size_t)n * big),
            *a2a_r = malloc((size_t)n * big), *ag_ip = malloc((size_t)n * big);
    unsigned s = ++salt;
    cohort_request_t *req[6];

    CHECK(b1 && b2 && ag_s && ag_r && a2a_s && a2a_r && ag_ip);
    if (me == 0) {
        fill(b1, 0, big, 0, s);
    }
    if (me == n - 1) {
        fill(b2, 0, small, n - 1, s + 1);
    }
    fill(ag_s, 0, small, me, s + 2);
    fill(a2a_s, 0, (size_t)n * big, me, s + 3);
    fill(ag_ip + (size_t)me * big, 0, big, me, s + 4);
    salt += 5;
    CHECK_OK(cohort_ibcast(w, b1, big, COHORT_UINT8, 0, &req[0]));
    CHECK_OK(cohort_iallgather(w, ag_s, ag_r, small, COHORT_UINT8, &req[1]));
    CHECK_OK(cohort_ialltoall(w, a2a_s, a2a_r, big / 4, COHORT_FLOAT32, &req[2]));
    CHECK_OK(cohort_ibcast(w, b2, small, COHORT_INT8, n - 1, &req[3]));
    CHECK_OK(cohort_iallgather(w, COHORT_IN_PLACE, ag_ip, big / 8, COHORT_FLOAT64, &req[4]));
    CHECK_OK(cohort_ibarrier(w, &req[5]));
    for (int i = 5; i >= 0; i--) {
        CHECK_OK(cohort_wait(req[i]));
        cohort_request_free(req[i]);
    }
    expect(b1, 0, big, 0, s, "outstanding ibcast", big, 1);
    expect(b2, 0, small, n - 1, s + 1, "outstanding ibcast", small, 0);
    for (int i = 0; i < n; i++) {
        expect(ag_r + (size_t)i * small, 0, small, i, s + 2, "outstanding iallgather", small, 1);
        expect(a2a_r + (size_t)i * big, (size_t)me * big, big, i, s + 3, "outstanding ialltoall",
               big / 4, 8);
        expect(ag_ip + (size_t)i * big, 0, big, i, s + 4, "outstanding iallgather in place",
               big / 8, 9);
    }
    free(b1);
    free(b2);
    free(ag_s);
    free(ag_r);
    free(a2a_s);
    free(a2a_r);
    free(ag_ip);
}

/* Groups A (world) and B (evens) are independent: half of B's members post B's ibcast before
 * A's iallgather, the other half after, and everyone else posts only A's. */
static void independence(cohort_context_t *ctx, size_t bytes)
{
    cohort_group_t *a = cohort_world(ctx), *b = NULL;
    int n = cohort_world_size(ctx), me = cohort_world_rank(ctx);
    int *evens = malloc((size_t)n * sizeof(int)), ne = 0;
    uint8_t *bb = malloc(bytes), *as = malloc(bytes), *ar = malloc((size_t)n * bytes);
    cohort_request_t *rb = NULL, *ra = NULL;
    unsigned s = ++salt;
    int broot_world;

    CHECK(evens && bb && as && ar);
    salt++;
    for (int i = 0; i < n; i += 2) {
        evens[ne++] = i;
    }
    broot_world = evens[ne - 1];
    cohort_status_t st = cohort_group_create(ctx, "indep-evens", evens, ne, &b);
    CHECK(st == (me % 2 == 0 ? COHORT_OK : COHORT_ERR_NOT_MEMBER));
    if (me == broot_world) {
        fill(bb, 0, bytes, broot_world, s);
    }
    fill(as, 0, bytes, me, s + 1);
    if (b != NULL && (me / 2) % 2 == 0) {
        CHECK_OK(cohort_ibcast(b, bb, bytes, COHORT_UINT8, ne - 1, &rb));
        CHECK_OK(cohort_iallgather(a, as, ar, bytes, COHORT_UINT8, &ra));
    } else {
        CHECK_OK(cohort_iallgather(a, as, ar, bytes, COHORT_UINT8, &ra));
        if (b != NULL) {
            CHECK_OK(cohort_ibcast(b, bb, bytes, COHORT_UINT8, ne - 1, &rb));
        }
    }
    if (rb != NULL) {
        CHECK_OK(cohort_wait(rb));
        cohort_request_free(rb);
        expect(bb, 0, bytes, broot_world, s, "independent ibcast", bytes, 1);
    }
    CHECK_OK(cohort_wait(ra));
    cohort_request_free(ra);
    for (int i = 0; i < n; i++) {
        expect(ar + (size_t)i * bytes, 0, bytes, i, s + 1, "independent iallgather", bytes, 1);
    }
    CHECK_OK(cohort_group_free(b));
    free(evens);
    free(bb);
    free(as);
    free(ar);
}

static void bad_input(cohort_context_t *ctx)
{
    cohort_group_t *w = cohort_world(ctx), *g = NULL;
    int n = cohort_world_size(ctx), me = cohort_world_rank(ctx);
    cohort_request_t *req = NULL;
    const cohort_dtype_t bad = (cohort_dtype_t)99;

    CHECK_STATUS(cohort_bcast(w, NULL, 5, COHORT_UINT8, 0), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_ibcast(w, NULL, 5, COHORT_UINT8, 0, &req), COHORT_ERR_INVALID_ARG);
    CHECK(req == NULL);
    CHECK_STATUS(cohort_allgather(w, NULL, rbuf, 5, COHORT_UINT8), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_allgather(w, sbuf, NULL, 5, COHORT_UINT8), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_allgather(w, COHORT_IN_PLACE, NULL, 5, COHORT_UINT8),
                 COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_alltoall(w, NULL, rbuf, 5, COHORT_UINT8), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_alltoall(w, sbuf, NULL, 5, COHORT_UINT8), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_ialltoall(w, sbuf, NULL, 5, COHORT_UINT8, &req), COHORT_ERR_INVALID_ARG);
    CHECK(req == NULL);
    CHECK_STATUS(cohort_bcast(w, rbuf, 5, bad, 0), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_allgather(w, sbuf, rbuf, 5, bad), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_alltoall(w, sbuf, rbuf, 5, bad), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_iallgather(w, sbuf, rbuf, 5, bad, &req), COHORT_ERR_INVALID_ARG);
    CHECK(req == NULL);
    CHECK_STATUS(cohort_bcast(w, rbuf, 5, COHORT_UINT8, -1), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_bcast(w, rbuf, 5, COHORT_UINT8, n), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_bcast(NULL, rbuf, 5, COHORT_UINT8, 0), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_ibcast(w, rbuf, 5, COHORT_UINT8, 0, NULL), COHORT_ERR_INVALID_ARG);

    /* A freed group handle is rejected, not dereferenced. */
    CHECK_OK(cohort_group_create(ctx, "doomed", &me, 1, &g));
    CHECK_OK(cohort_group_free(g));
    CHECK_STATUS(cohort_bcast(g, rbuf, 5, COHORT_UINT8, 0), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_allgather(g, sbuf, rbuf, 5, COHORT_UINT8), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_ialltoall(g, sbuf, rbuf, 5, COHORT_UINT8, &req), COHORT_ERR_INVALID_ARG);
    CHECK(req == NULL);

    /* count 0 needs no buffer */
    CHECK_OK(cohort_bcast(w, NULL, 0, COHORT_FLOAT32, n - 1));
    CHECK_OK(cohort_allgather(w, NULL, NULL, 0, COHORT_FLOAT32));
    CHECK_OK(cohort_alltoall(w, NULL, NULL, 0, COHORT_FLOAT32));
    CHECK_OK(cohort_allgather(w, COHORT_IN_PLACE, NULL, 0, COHORT_FLOAT32));

    /* Rejected calls leave the group usable: members still agree on what comes next. */
    run_bcast(w, 7, 3, n - 1, 0);
    run_alltoall(w, 7, 3, 0, 1);
}

static int one_configuration(void)
{
    cohort_context_t *ctx = test_init();
    int n = cohort_world_size(ctx), me = cohort_world_rank(ctx);
    size_t max =
        ((size_t)n * (BIG_BYTES + 8) > SEG_BYTES ? (size_t)n * (BIG_BYTES + 8) : SEG_BYTES) + GUARD;
    struct {
        const char *tag;
        int big_all_dtypes;
        int nranks;
        int members[64];
    } shapes[8];
    int nshapes = 0;

    CHECK(n <= 64);
    ncalls = 0; /* a configuration before this one in the process counted its own */
    shape = "world";
    sbuf = malloc(max);
    rbuf = malloc(max);
    CHECK(sbuf != NULL && rbuf != NULL);

    /* Every rank lists every shape in the same order, and creates those it is in. */
    shapes[nshapes].tag = "reversed";
    shapes[nshapes].nranks = n;
    for (int i = 0; i < n; i++) {
        shapes[nshapes].members[i] = n - 1 - i;
    }
    nshapes++;
    shapes[nshapes].tag = "evens";
    shapes[nshapes].nranks = 0;
    for (int i = 0; i < n; i += 2) {
        shapes[nshapes].members[shapes[nshapes].nranks++] = i;
    }
    nshapes++;
    if (n >= 2) {
        shapes[nshapes].tag = "odds";
        shapes[nshapes].nranks = 0;
        for (int i = 1; i < n; i += 2) {
            shapes[nshapes].members[shapes[nshapes].nranks++] = i;
        }
        nshapes++;
    }
    if (n >= 4) {
        shapes[nshapes].tag = "scattered";
        shapes[nshapes].nranks = 3;
        shapes[nshapes].members[0] = n - 1;
        shapes[nshapes].members[1] = 1;
        shapes[nshapes].members[2] = n / 2;
        nshapes++;
    }
    shapes[nshapes].tag = "self";
    shapes[nshapes].nranks = 1;
    shapes[nshapes].members[0] = me;
    nshapes++;
    if (n >= 3) {
        shapes[nshapes].tag = "all-but-last";
        shapes[nshapes].nranks = n - 1;
        for (int i = 0; i < n - 1; i++) {
            shapes[nshapes].members[i] = i;
        }
        nshapes++;
    }
    for (int i = 0; i < nshapes; i++) {
        shapes[i].big_all_dtypes = 0;
    }

    run_matrix(cohort_world(ctx), 1, -1);
    for (int i = 0; i < nshapes; i++) {
        cohort_group_t *g = NULL;
        cohort_status_t st =
            cohort_group_create(ctx, shapes[i].tag, shapes[i].members, shapes[i].nranks, &g);
        if (st == COHORT_ERR_NOT_MEMBER) {
            CHECK(g == NULL);
            continue;
        }
        CHECK_OK(st);
        shape = shapes[i].tag;
        salt = 100000u * (unsigned)(i + 1);
        run_matrix(g, shapes[i].big_all_dtypes, test_full() ? -1 : i % 3);
        CHECK_OK(cohort_group_free(g));
    }

    shape = "world";
    salt = 500000;
    /* broadcasts cut into segments */
    run_bcast(cohort_world(ctx), SEG_BYTES, 1, n - 1, 0);
    run_bcast(cohort_world(ctx), SEG_BYTES / 8, 9, 0, 1);
    run_bcast(cohort_world(ctx), SEG_BYTES / 2, 6, n / 2, 1);
    salt = 1000000;
    outstanding(ctx);
    salt = 2000000;
    independence(ctx, 100);
    salt = 3000000;
    independence(ctx, BIG_BYTES);
    salt = 4000000;
    bad_input(ctx);

    CHECK_OK(cohort_barrier(cohort_world(ctx)));
    free(sbuf);
    free(rbuf);
    test_finish(ctx, "coll_move");
    return 0;
}

int main(void)
{
    return test_configs(one_configuration);
}
