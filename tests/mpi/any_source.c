/* run: 4 */
/* run: 3 COHORT_CMA=on COHORT_CMA_MIN=1 */
/* run: 2 COHORT_CMA=off */
/*
 * Receives from any source (COHORT_ANY_SOURCE): rank 0 takes one message of a tag from every
 * other rank without naming it, through the posted queue (receives waiting before the senders
 * send) and the unexpected queue (messages queued before the receives), eager and large
 * (rendezvous, or single copy: its reader must know the sender); cohort_request_source() names
 * each sender once, the data is the sender's, a named receive and an any-source one of
 * another tag do not take each other's messages, and a send cannot name COHORT_ANY_SOURCE.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"

#define TAG_POSTED 11
#define TAG_QUEUED 12
#define TAG_NAMED  13

static void fill(uint8_t *buf, size_t n, int src, int tag)
{
    for (size_t i = 0; i < n; i++) {
        buf[i] = (uint8_t)(i * 131 + (size_t)src * 7 + (size_t)tag * 13 + (i >> 12));
    }
}

static int matches(const uint8_t *buf, size_t n, int src, int tag)
{
    for (size_t i = 0; i < n; i++) {
        if (buf[i] != (uint8_t)(i * 131 + (size_t)src * 7 + (size_t)tag * 13 + (i >> 12))) {
            return 0;
        }
    }
    return 1;
}

/* Rank 0: one any-source receive per other rank, posted (posted = 1) before the senders are
 * let go by a barrier, or after it, once their messages wait in the unexpected queue. */
static void receive_all(cohort_group_t *w, size_t n, int tag, int posted)
{
    int size = cohort_group_size(w);
    cohort_request_t **reqs = calloc((size_t)size, sizeof(*reqs));
    uint8_t **bufs = calloc((size_t)size, sizeof(*bufs));
    int *seen = calloc((size_t)size, sizeof(*seen));

    CHECK(reqs != NULL && bufs != NULL && seen != NULL);
    if (!posted) {
        test_patient_barrier(w);
    }
    for (int i = 1; i < size; i++) {
        bufs[i] = malloc(n ? n : 1);
        CHECK(bufs[i] != NULL);
        CHECK_OK(cohort_irecv(w, bufs[i], n, COHORT_UINT8, COHORT_ANY_SOURCE, tag, &reqs[i]));
        if (posted) { /* nothing sent yet: not finished, no source (a queued message may
                       * finish the receive at once) */
            CHECK(cohort_request_source(reqs[i]) == -1);
        }
    }
    if (posted) {
        test_patient_barrier(w);
    }
    for (int i = 1; i < size; i++) {
        int src;

        CHECK_OK(cohort_wait(reqs[i]));
        src = cohort_request_source(reqs[i]);
        CHECK(src >= 1 && src < size);
        CHECK(!seen[src]);
        seen[src] = 1;
        CHECK(matches(bufs[i], n, src, tag));
        cohort_request_free(reqs[i]);
        free(bufs[i]);
    }
    free(seen);
    free(bufs);
    free(reqs);
}

static void send_one(cohort_group_t *w, size_t n, int tag)
{
    uint8_t *buf = malloc(n ? n : 1);

    CHECK(buf != NULL);
    fill(buf, n, cohort_group_rank(w), tag);
    test_patient_barrier(w); /* rank 0's receives are posted by now */
    CHECK_OK(cohort_send(w, buf, n, COHORT_UINT8, 0, tag));
    free(buf);
}

int main(void)
{
    cohort_context_t *ctx = test_init();
    cohort_group_t *w = cohort_world(ctx);
    int me = cohort_group_rank(w), size = cohort_group_size(w);
    const size_t sizes[] = {0, 8, 4096, 1 << 20};
    uint8_t one = 0;
    cohort_request_t *r = NULL;

    CHECK(size >= 2);
    CHECK_STATUS(cohort_send(w, &one, 1, COHORT_UINT8, COHORT_ANY_SOURCE, 1),
                 COHORT_ERR_INVALID_ARG);
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        if (me == 0) {
            receive_all(w, sizes[k], TAG_POSTED, 1);
        } else {
            send_one(w, sizes[k], TAG_POSTED);
        }
        if (me == 0) {
            receive_all(w, sizes[k], TAG_QUEUED, 0);
        } else {
            /* send first, then the barrier rank 0 waits on before it receives */
            uint8_t *buf = malloc(sizes[k] ? sizes[k] : 1);
            cohort_request_t *s = NULL;
            CHECK(buf != NULL);
            fill(buf, sizes[k], me, TAG_QUEUED);
            CHECK_OK(cohort_isend(w, buf, sizes[k], COHORT_UINT8, 0, TAG_QUEUED, &s));
            test_patient_barrier(w);
            CHECK_OK(cohort_wait(s));
            cohort_request_free(s);
            free(buf);
        }
    }
    /* a named receive and an any-source receive of another tag: each takes its own */
    if (me == 0) {
        uint8_t named = 0, any = 0;
        cohort_request_t *ra = NULL;
        CHECK_OK(cohort_irecv(w, &any, 1, COHORT_UINT8, COHORT_ANY_SOURCE, TAG_POSTED, &ra));
        CHECK_OK(cohort_irecv(w, &named, 1, COHORT_UINT8, size - 1, TAG_NAMED, &r));
        test_patient_barrier(w);
        CHECK_OK(cohort_wait(r));
        CHECK_OK(cohort_wait(ra));
        CHECK(named == 100 + size - 1 && cohort_request_source(r) == size - 1);
        CHECK(any == 1 && cohort_request_source(ra) == 1);
        cohort_request_free(r);
        cohort_request_free(ra);
    } else {
        test_patient_barrier(w);
        if (me == size - 1) {
            uint8_t v = (uint8_t)(100 + me);
            CHECK_OK(cohort_send(w, &v, 1, COHORT_UINT8, 0, TAG_NAMED));
        }
        if (me == 1) {
            uint8_t v = 1;
            CHECK_OK(cohort_send(w, &v, 1, COHORT_UINT8, 0, TAG_POSTED));
        }
    }
    test_patient_barrier(w);
    test_finish(ctx, "any_source");
    return 0;
}
