/* run: 2 */
/* run: 4 */
/* run: 3 COHORT_PROGRESS=block */
/* run: 2 COHORT_PROGRESS=spin */
/* run: 2 COHORT_CMA=on COHORT_CMA_MIN=1 */
/* run: 2 COHORT_CMA=off */
/* run: 3 COHORT_CMA=on COHORT_CMA_MIN=1 COHORT_FAULT=cma:2 */
/* runs: together */
/*
 * Point-to-point: sizes 0 B .. 64 MiB with content checked (eager and rendezvous), ordering of
 * same-tag messages, tag matching out of posting order, self-sends, and two groups with the
 * same members whose messages never cross.
 */
#include <stdint.h>
#include <string.h>
#include "harness.h"

static void fill(uint8_t *buf, size_t n, int src, int salt)
{
    for (size_t i = 0; i < n; i++) {
        buf[i] = (uint8_t)(i * 131 + (size_t)src * 7 + (size_t)salt * 13 + (i >> 12));
    }
}

static void verify(const uint8_t *buf, size_t n, int src, int salt)
{
    for (size_t i = 0; i < n; i++) {
        if (buf[i] != (uint8_t)(i * 131 + (size_t)src * 7 + (size_t)salt * 13 + (i >> 12))) {
            fprintf(stderr, "rank %d: byte %zu of %zu from %d (salt %d) is wrong\n", test_rank, i,
                    n, src, salt);
            exit(1);
        }
    }
}

static int one_configuration(void)
{
    cohort_context_t *ctx = test_init();
    cohort_group_t *world = cohort_world(ctx);
    int n = cohort_world_size(ctx), me = cohort_world_rank(ctx);
    int right = (me + 1) % n, left = (me - 1 + n) % n;
    static const size_t sizes[] = {0,     1,      7,       64,      1000,    8192,
                                   65536, 262144, 1 << 20, 4 << 20, 64 << 20};
    size_t max = 64 << 20;
    uint8_t *sbuf = malloc(max), *rbuf = malloc(max);

    CHECK(sbuf != NULL && rbuf != NULL);

    /* Ring exchange of every size, nonblocking, content checked. */
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        cohort_request_t *rr, *sr;
        fill(sbuf, sizes[s], me, (int)s);
        memset(rbuf, 0xee, sizes[s] + (sizes[s] < max));
        CHECK_OK(cohort_irecv(world, rbuf, sizes[s], COHORT_UINT8, left, 5, &rr));
        CHECK_OK(cohort_isend(world, sbuf, sizes[s], COHORT_UINT8, right, 5, &sr));
        CHECK_OK(cohort_wait(rr));
        CHECK_OK(cohort_wait(sr));
        cohort_request_free(rr);
        cohort_request_free(sr);
        verify(rbuf, sizes[s], left, (int)s);
        if (sizes[s] < max) {
            CHECK(rbuf[sizes[s]] == 0xee); /* nothing written past the message */
        }
    }

    /* Forced single copy (and no fault injected): every message of the ring above came from
     * another rank of this node and was read straight out of its buffer; forced off, none. */
    {
        const char *cma = getenv("COHORT_CMA"), *fault = getenv("COHORT_FAULT");
        uint64_t bytes = 0;
        cohort_stats_t st;
        CHECK_OK(cohort_stats(ctx, &st));
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            bytes += sizes[s];
        }
        if (cma != NULL && strcmp(cma, "on") == 0 && fault == NULL && n >= 2) {
            CHECK(st.single_copies >= 10 && st.single_copy_bytes >= bytes);
        }
        if (cma != NULL && strcmp(cma, "off") == 0) {
            CHECK(st.single_copies == 0 && st.single_copy_bytes == 0);
        }
        /* COHORT_FAULT=cma:2: each rank refuses its second single-copy read (the ring's 7-byte
         * message) as if the kernel had, and its sender then sends it every later message as
         * data: the protocol chosen for that peer is chosen again after a refusal (the table's
         * cache, cohort_proto_repick), so only the 1-byte message before it was read here. */
        if (cma != NULL && strcmp(cma, "on") == 0 && fault != NULL && strcmp(fault, "cma:2") == 0 &&
            n >= 2) {
            CHECK(st.single_copy_bytes == 1);
        }
    }

    /* Same tag: messages arrive in sending order, even when receives are posted late. */
    if (me == 0) {
        for (int i = 0; i < 50; i++) {
            int v = i;
            CHECK_OK(cohort_send(world, &v, 1, COHORT_INT32, right, 9));
        }
    } else if (me == 1) {
        for (int i = 0; i < 50; i++) {
            int v = -1;
            CHECK_OK(cohort_recv(world, &v, 1, COHORT_INT32, 0, 9));
            CHECK(v == i);
        }
    }

    /* Tags: receives posted in the opposite order to the sends still match by tag; a large
     * and a small message in between keep their order. */
    if (n >= 2 && me < 2) {
        int peer = 1 - me;
        uint64_t a = 0, b = 0, va = 0xaaaa + (uint64_t)me, vb = 0xbbbb + (uint64_t)me;
        cohort_request_t *r[4];
        size_t big = 2 << 20;
        fill(sbuf, big, me, 77);
        CHECK_OK(cohort_irecv(world, &b, 1, COHORT_UINT64, peer, 2, &r[0]));
        CHECK_OK(cohort_irecv(world, rbuf, big, COHORT_UINT8, peer, 3, &r[1]));
        CHECK_OK(cohort_irecv(world, &a, 1, COHORT_UINT64, peer, 1, &r[2]));
        CHECK_OK(cohort_send(world, &va, 1, COHORT_UINT64, peer, 1));
        CHECK_OK(cohort_isend(world, sbuf, big, COHORT_UINT8, peer, 3, &r[3]));
        CHECK_OK(cohort_send(world, &vb, 1, COHORT_UINT64, peer, 2));
        for (int i = 0; i < 4; i++) {
            CHECK_OK(cohort_wait(r[i]));
            cohort_request_free(r[i]);
        }
        CHECK(a == 0xaaaa + (uint64_t)peer);
        CHECK(b == 0xbbbb + (uint64_t)peer);
        verify(rbuf, big, peer, 77);
    }

    /* A send to self. */
    {
        int v = 42 + me, got = 0;
        cohort_request_t *rr;
        CHECK_OK(cohort_irecv(world, &got, 1, COHORT_INT32, me, 11, &rr));
        CHECK_OK(cohort_send(world, &v, 1, COHORT_INT32, me, 11));
        CHECK_OK(cohort_wait(rr));
        cohort_request_free(rr);
        CHECK(got == 42 + me);
    }

    /* Two groups with identical (tag, members): distinct ids, and messages never cross even
     * with the same peer and tag. The sends to g2 go first, the receives on g1 are posted
     * first. */
    {
        int *all = malloc((size_t)n * sizeof(int));
        cohort_group_t *g1, *g2;
        int x1 = -1, x2 = -1, v1 = 1000 + me, v2 = 2000 + me;
        cohort_request_t *r1, *r2;
        for (int i = 0; i < n; i++) {
            all[i] = i;
        }
        CHECK_OK(cohort_group_create(ctx, "twin", all, n, &g1));
        CHECK_OK(cohort_group_create(ctx, "twin", all, n, &g2));
        CHECK(cohort_group_id(g1) != cohort_group_id(g2));
        CHECK_OK(cohort_irecv(g1, &x1, 1, COHORT_INT32, left, 0, &r1));
        CHECK_OK(cohort_irecv(g2, &x2, 1, COHORT_INT32, left, 0, &r2));
        CHECK_OK(cohort_send(g2, &v2, 1, COHORT_INT32, right, 0));
        CHECK_OK(cohort_send(g1, &v1, 1, COHORT_INT32, right, 0));
        CHECK_OK(cohort_wait(r1));
        CHECK_OK(cohort_wait(r2));
        cohort_request_free(r1);
        cohort_request_free(r2);
        CHECK(x1 == 1000 + left);
        CHECK(x2 == 2000 + left);
        CHECK_OK(cohort_group_free(g1));
        CHECK_OK(cohort_group_free(g2));
        free(all);
    }

    /* A message bigger than the receive is an error, not an overflow. */
    if (n >= 2 && me < 2) {
        int peer = 1 - me;
        int small = 0, two[2] = {1, 2};
        cohort_request_t *rr;
        CHECK_OK(cohort_irecv(world, &small, 1, COHORT_INT32, peer, 21, &rr));
        CHECK_OK(cohort_send(world, two, 2, COHORT_INT32, peer, 21));
        CHECK_STATUS(cohort_wait(rr), COHORT_ERR_MISMATCH);
        cohort_request_free(rr);
    }

    CHECK_OK(cohort_barrier(world));
    free(sbuf);
    free(rbuf);
    test_finish(ctx, "p2p");
    return 0;
}

int main(void)
{
    return test_configs(one_configuration);
}
