/* run: 2 COHORT_CMA=on COHORT_CMA_CHUNK=64k */
/* run: 2 COHORT_CMA=off */
/* run: 4 COHORT_CMA=on COHORT_CMA_CHUNK=64k */
/* run: 4 COHORT_CMA=off */
/*
 * A freed send is finished with its buffer when cohort_request_free returns, and the free never
 * makes a live peer look dead (issue 39). Rank 0 posts a 64 MiB isend of pattern A to rank 1 on
 * this node (single copy with COHORT_CMA=on, UCX rendezvous with it off) and frees it; right
 * after the free it writes pattern B over the buffer, then unmaps it. Rank 1's receive must end
 * COHORT_ERR_CANCELED (or COHORT_OK with the whole message, when it had it all), and its buffer
 * must never hold a byte of B. Then 100 more calls between the two (barriers, allreduces, sends
 * both ways) must succeed on the same group: not REVOKED, not PEER_FAILED.
 * Two cases each round:
 *   - mid-read: rank 1 has posted its receive and sees the first bytes land, then tells rank 0,
 *     which frees the send while rank 1 is still reading (64 KiB chunks: about a thousand
 *     progress passes for the whole). Either end is allowed (under load rank 1 may finish
 *     first), but no B.
 *   - unmatched: rank 1 posts its receive only after rank 0 said its free returned: the message
 *     waited unexpected there, so the receive must end CANCELED with nothing written.
 * At 4 ranks, ranks 2 and 3 run allreduces on their own group all along: 4 ranks on 2 cores,
 * the load under which a force-closed endpoint used to make rank 1 declare rank 0 dead.
 * Before: the free waited a fixed 1 s for the reader, then returned with the reader still
 * reading (rank 1 held B), and for a rendezvous closed the endpoint by force (rank 1 saw
 * "Connection reset by remote peer"; the group was revoked).
 */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include "harness.h"

#define BIG      (64u << 20)
#define ROUNDS   3
#define AFTER    100
#define PATIENCE 120.0 /* seconds a rank waits for its peer's word before it gives up */
#define PAT_A    0xA1
#define PAT_B    0xB2

static uint8_t *map_big(void)
{
    void *p = mmap(NULL, BIG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    CHECK(p != MAP_FAILED);
    return p;
}

/* Rank 1's receive of a freed send: CANCELED with no byte of B (what arrived before the
 * cancel is A), or OK with all of A. @return the status. */
static cohort_status_t check_received(cohort_status_t st, const uint8_t *buf)
{
    size_t a = 0;

    CHECK(st == COHORT_OK || st == COHORT_ERR_CANCELED);
    for (size_t i = 0; i < BIG; i++) {
        CHECK(buf[i] != PAT_B);
        a += buf[i] == PAT_A;
        CHECK(buf[i] == PAT_A || (st == COHORT_ERR_CANCELED && buf[i] == 0));
    }
    CHECK(st != COHORT_OK || a == BIG);
    return st;
}

/* 100 calls between the pair on @a g: every one must succeed. */
static void after_calls(cohort_group_t *g, int me)
{
    for (int i = 0; i < AFTER; i++) {
        int v = i * 2 + me, got = -1, sum = 0;
        switch (i % 3) {
        case 0:
            CHECK_OK(cohort_barrier(g));
            break;
        case 1:
            CHECK_OK(cohort_allreduce(g, &v, &sum, 1, COHORT_INT32, COHORT_SUM));
            CHECK(sum == i * 4 + 1);
            break;
        default:
            if (me == 0) {
                CHECK_OK(cohort_send(g, &v, 1, COHORT_INT32, 1, 3));
                CHECK_OK(cohort_recv(g, &got, 1, COHORT_INT32, 1, 3));
            } else {
                CHECK_OK(cohort_recv(g, &got, 1, COHORT_INT32, 0, 3));
                CHECK_OK(cohort_send(g, &v, 1, COHORT_INT32, 0, 3));
            }
            CHECK(got == i * 2 + (1 - me));
            break;
        }
    }
}

/* Rank 1 waits on @a r (calling cohort all along) until its first byte is in. */
static void wait_first_byte(cohort_request_t *r, const volatile uint8_t *buf)
{
    double deadline = test_now() + PATIENCE;
    int done = 0;

    while (buf[0] == 0 && !done) {
        CHECK_OK(cohort_test(r, &done));
        CHECK(test_now() < deadline);
    }
}

static void mid_read(cohort_group_t *g, int me, int *canceled)
{
    int word = 0;

    if (me == 0) {
        uint8_t *buf = map_big();
        cohort_request_t *r;
        memset(buf, PAT_A, BIG);
        CHECK_OK(cohort_recv(g, &word, 1, COHORT_INT32, 1, 1)); /* its receive is posted */
        CHECK_OK(cohort_isend(g, buf, BIG, COHORT_UINT8, 1, 7, &r));
        CHECK_OK(cohort_recv(g, &word, 1, COHORT_INT32, 1, 2)); /* it is reading */
        cohort_request_free(r);
        memset(buf, PAT_B, BIG); /* the caller's buffer again */
        CHECK(munmap(buf, BIG) == 0);
    } else {
        uint8_t *buf = map_big(); /* zeroed */
        cohort_request_t *r;
        CHECK_OK(cohort_irecv(g, buf, BIG, COHORT_UINT8, 0, 7, &r));
        CHECK_OK(cohort_send(g, &word, 1, COHORT_INT32, 0, 1));
        wait_first_byte(r, buf);
        CHECK_OK(cohort_send(g, &word, 1, COHORT_INT32, 0, 2));
        *canceled += check_received(cohort_wait(r), buf) == COHORT_ERR_CANCELED;
        cohort_request_free(r);
        CHECK(munmap(buf, BIG) == 0);
    }
}

static void unmatched(cohort_group_t *g, int me)
{
    int word = 0;

    if (me == 0) {
        uint8_t *buf = map_big();
        cohort_request_t *r;
        memset(buf, PAT_A, BIG);
        CHECK_OK(cohort_isend(g, buf, BIG, COHORT_UINT8, 1, 8, &r));
        cohort_request_free(r); /* rank 1 answers from its progress below */
        memset(buf, PAT_B, BIG);
        CHECK(munmap(buf, BIG) == 0);
        CHECK_OK(cohort_send(g, &word, 1, COHORT_INT32, 1, 9));
    } else {
        uint8_t *buf = map_big();
        double deadline = test_now() + PATIENCE;
        cohort_request_t *note;
        int done = 0;
        CHECK_OK(cohort_irecv(g, &word, 1, COHORT_INT32, 0, 9, &note));
        while (!done) {
            CHECK_OK(cohort_test(note, &done));
            CHECK(test_now() < deadline); /* rank 0's free never returned */
        }
        cohort_request_free(note);
        CHECK_STATUS(check_received(cohort_recv(g, buf, BIG, COHORT_UINT8, 0, 8), buf),
                     COHORT_ERR_CANCELED);
        CHECK(munmap(buf, BIG) == 0);
    }
}

/* Ranks 2 and up: allreduces on their own group until rank 0 says the pair is done (the
 * allreduce itself spreads the word, so that all of them stop after the same one). */
static void load(cohort_context_t *ctx, cohort_group_t *w, int n)
{
    int others[64], k = 0, stop = 0, done = 0, any = 0;
    cohort_group_t *g;
    cohort_request_t *r;

    for (int i = 2; i < n && k < 64; i++) {
        others[k++] = i;
    }
    CHECK_OK(cohort_group_create(ctx, "load", others, k, &g));
    CHECK_OK(cohort_irecv(w, &stop, 1, COHORT_INT32, 0, 77, &r));
    while (!any) {
        CHECK_OK(cohort_test(r, &done));
        CHECK_OK(cohort_allreduce(g, &done, &any, 1, COHORT_INT32, COHORT_MAX));
    }
    CHECK_OK(cohort_wait(r));
    cohort_request_free(r);
    CHECK_OK(cohort_group_free(g));
}

int main(void)
{
    cohort_context_t *ctx = test_init();
    cohort_group_t *w = cohort_world(ctx), *g = NULL;
    int me = cohort_world_rank(ctx), n = cohort_world_size(ctx), pair[2] = {0, 1};
    int canceled = 0, stop = 1;

    CHECK(n >= 2);
    if (me >= 2) {
        load(ctx, w, n);
    } else {
        CHECK_OK(cohort_group_create(ctx, "pair", pair, 2, &g));
        after_calls(g, me); /* wired, first use behind it */
        for (int round = 0; round < ROUNDS; round++) {
            mid_read(g, me, &canceled);
            after_calls(g, me);
            unmatched(g, me);
            after_calls(g, me);
        }
        if (me == 1) {
            printf("free_send: %d of %d mid-read receives ended CANCELED, the others OK\n",
                   canceled, ROUNDS);
        }
        if (me == 0) {
            for (int i = 2; i < n; i++) {
                CHECK_OK(cohort_send(w, &stop, 1, COHORT_INT32, i, 77));
            }
        }
        CHECK_OK(cohort_group_free(g));
    }
    CHECK_OK(cohort_barrier(w));
    test_finish(ctx, "free_send");
    return 0;
}
