/* run: 2 COHORT_CMA=on COHORT_CMA_CHUNK=1M COHORT_TIMEOUT=60 */
/*
 * A large single copy is read in chunks from progress, not whole inside one call (DESIGN,
 * Protocols 5): the receiver's cohort_test calls each copy at most one chunk of
 * COHORT_CMA_CHUNK.
 *
 * Rank 0 sends rank 1 64 MiB by single copy, twice: once with rank 1's receive posted first
 * (the descriptor matched inside UCX's callback), once with the descriptor there first (matched
 * at post). Rank 1 loops cohort_test; the data must be right and cohort_stats must count at
 * least 64 MiB / 1 MiB single copies for it (one per chunk; a read of the whole message in the
 * match counts one). The longest single cohort_test (and the post) is printed, not asserted.
 *
 * Then a receive freed mid-read: rank 1 frees its request once some chunks are in and the
 * rest are not; rank 0's send must finish (the reader answers), nothing more is read after the
 * free (the count stays put over a barrier), the freed buffer is not written after the free,
 * and a second message on the same pair arrives intact.
 */
#include <stdint.h>
#include <string.h>
#include "harness.h"

#define BYTES ((size_t)64 << 20)

static size_t chunk = (size_t)1 << 20; /* COHORT_CMA_CHUNK (the run line's; 1M by default) */

static void chunk_from_env(void)
{
    const char *v = getenv("COHORT_CMA_CHUNK");
    char *end;

    if (v != NULL) {
        chunk = (size_t)strtoull(v, &end, 10);
        chunk <<= *end == 'K' || *end == 'k'   ? 10
                  : *end == 'M' || *end == 'm' ? 20
                  : *end == 'G' || *end == 'g' ? 30
                                               : 0;
        CHECK(chunk > 0);
    }
}

static uint64_t copies(cohort_context_t *ctx)
{
    cohort_stats_t st;

    CHECK_OK(cohort_stats(ctx, &st));
    return st.single_copies;
}

static void fill(uint8_t *buf, size_t n, unsigned seed)
{
    memset(buf, (int)(seed * 7), n);
    for (size_t i = 0; i < n; i += 4096) {
        buf[i] = (uint8_t)(seed + i / 4096);
    }
    buf[n - 1] = (uint8_t)(seed ^ 0x5a);
}

static int same(const uint8_t *buf, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i += 4096) {
        if (buf[i] != (uint8_t)(seed + i / 4096)) {
            return 0;
        }
    }
    return buf[n - 1] == (uint8_t)(seed ^ 0x5a);
}

/* Rank 1: wait for @a r with cohort_test; @return the longest call in seconds. */
static double test_loop(cohort_request_t *r)
{
    double longest = 0, deadline = test_now() + 60;
    int done = 0;

    while (!done) {
        double t0 = test_now(), t;
        CHECK_OK(cohort_test(r, &done));
        t = test_now() - t0;
        longest = t > longest ? t : longest;
        CHECK(test_now() < deadline); /* the message never arrived whole */
    }
    return longest;
}

static void one_message(cohort_context_t *ctx, cohort_group_t *g, uint8_t *buf, int recv_first,
                        unsigned seed)
{
    int me = cohort_world_rank(ctx), flag = 0;
    cohort_request_t *r;

    if (me == 0) {
        fill(buf, BYTES, seed);
        if (recv_first) {
            CHECK_OK(cohort_recv(g, &flag, 1, COHORT_INT32, 1, 7)); /* its receive is posted */
        }
        CHECK_OK(cohort_isend(g, buf, BYTES, COHORT_UINT8, 1, 1, &r));
        if (!recv_first) {
            CHECK_OK(cohort_send(g, &flag, 1, COHORT_INT32, 1, 8)); /* after the descriptor */
        }
        CHECK_OK(cohort_wait(r));
        cohort_request_free(r);
    } else {
        uint64_t before = copies(ctx);
        double post, longest, start;
        memset(buf, 0, BYTES);
        if (!recv_first) {
            CHECK_OK(cohort_recv(g, &flag, 1, COHORT_INT32, 0, 8));
        }
        start = test_now();
        CHECK_OK(cohort_irecv(g, buf, BYTES, COHORT_UINT8, 0, 1, &r));
        post = test_now() - start;
        if (recv_first) {
            CHECK_OK(cohort_send(g, &flag, 1, COHORT_INT32, 0, 7));
        }
        longest = test_loop(r);
        start = test_now() - start;
        CHECK_OK(cohort_wait(r));
        cohort_request_free(r);
        CHECK(same(buf, BYTES, seed));
        /* descriptor first: post to done is the read alone (and the last test's ACK) */
        printf("cma_chunks: 64 MiB, %s: longest cohort_test %.3f ms, irecv %.3f ms, post to "
               "done %.3f ms (%.2f GB/s), %llu single copies\n",
               recv_first ? "receive posted first" : "descriptor first", longest * 1e3, post * 1e3,
               start * 1e3, BYTES / start / 1e9, (unsigned long long)(copies(ctx) - before));
        CHECK(copies(ctx) - before >= BYTES / chunk); /* read in chunks, not whole */
    }
}

/* Rank 1 frees its receive with part of the message read; then a second message. */
static void freed_mid_read(cohort_context_t *ctx, cohort_group_t *g, uint8_t *buf, uint8_t *buf2)
{
    int me = cohort_world_rank(ctx), flag = 0, done = 0;
    cohort_request_t *r;

    if (me == 0) {
        fill(buf, BYTES, 3);
        CHECK_OK(cohort_recv(g, &flag, 1, COHORT_INT32, 1, 7));
        CHECK_OK(cohort_isend(g, buf, BYTES, COHORT_UINT8, 1, 1, &r));
        CHECK_OK(cohort_wait(r)); /* the reader answered: the send is over */
        cohort_request_free(r);
        CHECK_OK(cohort_barrier(cohort_world(ctx)));
        fill(buf, BYTES, 4);
        CHECK_OK(cohort_send(g, buf, BYTES, COHORT_UINT8, 1, 2));
    } else {
        uint64_t before = copies(ctx), at_free;
        double deadline = test_now() + 60;
        memset(buf, 0, BYTES);
        CHECK_OK(cohort_irecv(g, buf, BYTES, COHORT_UINT8, 0, 1, &r));
        CHECK_OK(cohort_send(g, &flag, 1, COHORT_INT32, 0, 7));
        while (copies(ctx) == before) {
            CHECK_OK(cohort_test(r, &done));
            CHECK(!done);                 /* the whole message in one call: not read in chunks */
            CHECK(test_now() < deadline); /* no chunk read for a minute */
        }
        cohort_request_free(r);
        at_free = copies(ctx);
        printf("cma_chunks: receive freed after %llu of %zu chunks\n",
               (unsigned long long)(at_free - before), BYTES / chunk);
        CHECK(at_free - before < (BYTES + chunk - 1) / chunk);
        memset(buf, 0xee, BYTES); /* the caller's again: nothing may land in it now */
        CHECK_OK(cohort_barrier(cohort_world(ctx)));
        CHECK(copies(ctx) == at_free); /* nothing more read for the freed receive */
        memset(buf2, 0, BYTES);
        CHECK_OK(cohort_recv(g, buf2, BYTES, COHORT_UINT8, 0, 2));
        CHECK(same(buf2, BYTES, 4));
        for (size_t i = 0; i < BYTES; i += 512) {
            CHECK(buf[i] == 0xee);
        }
    }
}

int main(void)
{
    cohort_context_t *ctx = test_init();
    int both[2] = {0, 1};
    uint8_t *buf = malloc(BYTES), *buf2 = malloc(BYTES);
    cohort_group_t *g;

    CHECK(cohort_world_size(ctx) == 2 && buf != NULL && buf2 != NULL);
    setvbuf(stdout, NULL, _IOLBF, 0);
    chunk_from_env();
    CHECK_OK(cohort_group_create(ctx, "cma-chunks", both, 2, &g));
    CHECK_OK(cohort_barrier(g)); /* wired both ways, its first use behind it */
    one_message(ctx, g, buf, 1, 1);
    one_message(ctx, g, buf, 0, 2);
    freed_mid_read(ctx, g, buf, buf2);
    CHECK_OK(test_one_allreduce(g)); /* the pair still works */
    CHECK_OK(cohort_group_free(g));
    free(buf);
    free(buf2);
    test_finish(ctx, "cma_chunks");
    return 0;
}
