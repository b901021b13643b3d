/* clang-format off */
/* run: 4 */
/* run: 3 */
/* run: 2 COHORT_CMA=off */
/* run: 4 COHORT_CMA_MIN=1G COHORT_FAULT=cma:1@1 */
/* run: 3 COHORT_CMA_MIN=1G COHORT_FAULT=cma:2@2 COHORT_ALGO_ALLGATHER=direct */
/* run: 3 COHORT_CHECK=1 */
/* run: 4 COHORT_CHECK=1 COHORT_CMA_MIN=1G COHORT_FAULT=cma:1@1 COHORT_ALGO_REDUCE_SCATTER=direct */
/* run: 3 COHORT_TIMEOUT=1 COHORT_FAULT=stall:1@2 */
/* runs: together */
/* clang-format on */
/*
 * Same-node collectives by single copy (src/coll/direct.c), chosen by default where every
 * member shares this node: allreduce, allgather, reduce_scatter and bcast at sizes the default
 * rules give them, in place and not, against data computed locally, with the bytes read and
 * written by single copy counted (cohort_stats) so that a silent fall back to the network
 * algorithms fails. COHORT_CMA=off: no single copy at all, the same results.
 *
 * Descriptors and signals go through the group's shared segment (shm_seg.c), or as messages
 * under COHORT_CHECK=1 (no segment there): there only the reading ones (reduce_scatter,
 * alltoall) run; the ones that write into other members' buffers need the segment's fence.
 *
 * COHORT_FAULT=cma:N@R: world rank R's N-th single-copy read is refused as if by the kernel.
 * That call fails with COHORT_ERR_UNSUPPORTED on every member (none hangs, none succeeds
 * alone); the group then takes the network algorithms (no single-copy read: COHORT_CMA_MIN is
 * above every message) and gets the right results.
 *
 * COHORT_FAULT=stall:1@2 (under COHORT_TIMEOUT=1): world rank 2 stops for 2 s half way through
 * an allgather's writes; the others time out at 1 s, get their buffers back and fill them. Rank
 * 2 goes on, sees that they left and writes nothing into them (it fails too): their buffers
 * still hold what they put there 3 s later.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"

#define AR_COUNT (512u * 1024)      /* floats: 2 MiB, direct from 64 KiB */
#define AG_COUNT (16u * 1024)       /* floats per rank: 64 KiB, direct from 4 KiB */
#define RS_COUNT (32u * 1024)       /* floats per rank: 128 KiB, direct from 16 KiB */
#define BC_BYTES (1u * 1024 * 1024) /* direct from 512 KiB */

static uint64_t copied(cohort_context_t *ctx)
{
    cohort_stats_t st;

    CHECK_OK(cohort_stats(ctx, &st));
    return st.single_copy_bytes;
}

/* Rank r's element i of call c: small integers, exact in any order of summation. */
static float val(int r, size_t i, int c)
{
    return (float)((r * 7 + (int)(i % 1000) + c) % 64);
}

static void allreduce_case(cohort_group_t *w, int n, int me, int c, int in_place, float *s,
                           float *r)
{
    for (size_t i = 0; i < AR_COUNT; i++) {
        (in_place ? r : s)[i] = val(me, i, c);
    }
    CHECK_OK(cohort_allreduce(w, in_place ? COHORT_IN_PLACE : s, r, AR_COUNT, COHORT_FLOAT32,
                              COHORT_SUM));
    for (size_t i = 0; i < AR_COUNT; i++) {
        float want = 0;
        for (int k = 0; k < n; k++) {
            want += val(k, i, c);
        }
        CHECK(r[i] == want);
    }
}

static void moves_case(cohort_group_t *w, int n, int me, int c, float *s, float *r)
{
    char *b = (char *)r;

    /* allgather, in place on odd calls */
    for (size_t i = 0; i < AG_COUNT; i++) {
        (c % 2 ? r + (size_t)me * AG_COUNT : s)[i] = val(me, i, c);
    }
    CHECK_OK(cohort_allgather(w, c % 2 ? COHORT_IN_PLACE : s, r, AG_COUNT, COHORT_FLOAT32));
    for (int k = 0; k < n; k++) {
        for (size_t i = 0; i < AG_COUNT; i++) {
            CHECK(r[(size_t)k * AG_COUNT + i] == val(k, i, c));
        }
    }
    /* reduce_scatter, in place on odd calls */
    for (size_t i = 0; i < (size_t)n * RS_COUNT; i++) {
        (c % 2 ? r : s)[i] = val(me, i, c);
    }
    CHECK_OK(cohort_reduce_scatter(w, c % 2 ? COHORT_IN_PLACE : s, r, RS_COUNT, COHORT_FLOAT32,
                                   COHORT_SUM));
    for (size_t i = 0; i < RS_COUNT; i++) {
        float want = 0;
        for (int k = 0; k < n; k++) {
            want += val(k, (size_t)me * RS_COUNT + i, c);
        }
        CHECK(r[i] == want);
    }
    /* bcast from a root that moves with the call */
    for (size_t i = 0; i < BC_BYTES; i++) {
        b[i] = me == c % n ? (char)(i * 31 + (size_t)c) : 0;
    }
    CHECK_OK(cohort_bcast(w, b, BC_BYTES, COHORT_UINT8, c % n));
    for (size_t i = 0; i < BC_BYTES; i++) {
        CHECK(b[i] == (char)(i * 31 + (size_t)c));
    }
}

/* Ranks 0 and 1 time out while rank 2 is stopped before its writes, and fill their buffers. */
static void left_case(cohort_group_t *w, int me, float *s, float *r)
{
    size_t total = 3 * AG_COUNT;

    for (size_t i = 0; i < AG_COUNT; i++) {
        s[i] = val(me, i, 0);
    }
    if (me == 2) {
        CHECK(cohort_allgather(w, s, r, AG_COUNT, COHORT_FLOAT32) != COHORT_OK);
        return;
    }
    CHECK_STATUS(cohort_allgather(w, s, r, AG_COUNT, COHORT_FLOAT32), COHORT_ERR_TIMEOUT);
    for (size_t i = 0; i < total; i++) {
        r[i] = -1;
    }
    sleep(3); /* rank 2 wakes up at 2 s and goes on */
    for (size_t i = 0; i < total; i++) {
        CHECK(r[i] == -1);
    }
}

static int one_configuration(void)
{
    cohort_context_t *ctx = test_init();
    cohort_group_t *w = cohort_world(ctx);
    int n = cohort_world_size(ctx), me = cohort_world_rank(ctx);
    const char *cma = getenv("COHORT_CMA"), *fault = getenv("COHORT_FAULT");
    const char *check = getenv("COHORT_CHECK");
    int msgs = check != NULL && strcmp(check, "1") == 0;
    size_t big = (size_t)n * RS_COUNT * 4, ar = AR_COUNT * 4, ag = (size_t)n * AG_COUNT * 4;
    float *s, *r;
    uint64_t before;

    big = big > ar ? big : ar;
    big = big > ag ? big : ag;
    big = big > BC_BYTES ? big : BC_BYTES;
    s = malloc(big);
    r = malloc(big);
    CHECK(s != NULL && r != NULL);
    if (fault != NULL && strncmp(fault, "stall", 5) == 0) {
        left_case(w, me, s, r);
        free(s);
        free(r);
        test_finish(ctx, "direct");
        return 0;
    }
    if (fault != NULL) {
        /* The refused call: allgather or reduce_scatter on the forced runs, else allreduce. */
        int ag = getenv("COHORT_ALGO_ALLGATHER") != NULL;
        int rs = getenv("COHORT_ALGO_REDUCE_SCATTER") != NULL;
        for (size_t i = 0; i < AR_COUNT; i++) {
            s[i] = val(me, i, 0);
        }
        CHECK_STATUS(
            ag   ? cohort_allgather(w, s, r, AR_COUNT / (size_t)n, COHORT_FLOAT32)
            : rs ? cohort_reduce_scatter(w, s, r, AR_COUNT / (size_t)n, COHORT_FLOAT32, COHORT_SUM)
                 : cohort_allreduce(w, s, r, AR_COUNT, COHORT_FLOAT32, COHORT_SUM),
            COHORT_ERR_UNSUPPORTED);
        before = copied(ctx);
        allreduce_case(w, n, me, 1, 0, s, r);
        moves_case(w, n, me, 1, s, r);
        CHECK(copied(ctx) == before); /* the group no longer reads directly */
        free(s);
        free(r);
        test_finish(ctx, "direct");
        return 0;
    }
    for (int c = 0; c < 4; c++) {
        /* bcast: the root writes its first n-th into each member, which read the rest */
        size_t bcast_read = me == c % n ? (size_t)(n - 1) * (BC_BYTES / (size_t)n)
                                        : BC_BYTES - BC_BYTES / (size_t)n - 1;
        before = copied(ctx);
        allreduce_case(w, n, me, c, c % 2, s, r);
        if (cma != NULL && strcmp(cma, "off") == 0) {
            CHECK(copied(ctx) == before);
        } else if (!msgs) {
            /* its block read from n - 1 inputs, then written into n - 1 outputs: 2 (n - 1) / n */
            CHECK(copied(ctx) - before >= (size_t)(n - 1) * (AR_COUNT / (size_t)n) * 4 * 2 - 64);
        }
        before = copied(ctx);
        moves_case(w, n, me, c, s, r);
        if (cma != NULL && strcmp(cma, "off") == 0) {
            CHECK(copied(ctx) == before);
        } else if (msgs) {
            CHECK(copied(ctx) - before >= (size_t)(n - 1) * RS_COUNT * 4);
        } else {
            CHECK(copied(ctx) - before >= (size_t)(n - 1) * (AG_COUNT + RS_COUNT) * 4 + bcast_read);
        }
    }
    free(s);
    free(r);
    test_finish(ctx, "direct");
    return 0;
}

int main(void)
{
    return test_configs(one_configuration);
}
