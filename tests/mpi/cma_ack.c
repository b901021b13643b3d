/* run: 2 COHORT_CMA=on COHORT_CMA_MIN=1 COHORT_ALGO_BCAST=knomial */
/* run: 3 COHORT_CMA=on COHORT_CMA_MIN=1 COHORT_ALGO_BCAST=knomial */
/* run: 3 COHORT_ALGO_BCAST=knomial */
/*
 * A single-copy receiver that stops calling cohort once its receive is done must not leave the
 * sender waiting: the sender's send ends with the receiver's ACK, and the receiver (which never
 * sent to the sender, so holds no endpoint to it) has to wire one for that ACK. Rank 0 sends
 * 1 MiB (and a bcast of 4 MiB from rank 0: every other rank receives without sending back) to
 * ranks that then leave cohort alone and wait for a file rank 0 makes only when its send and
 * its bcast have completed. Before the fix the receive finished while its ACK still waited for
 * the sender's address: rank 0 waited forever, the receivers timed out on the file. The bcast
 * is the tree's (COHORT_ALGO_BCAST=knomial): the same-node ones would wire every member to every
 * other first, and hide the case.
 */
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"

#define ACK_BYTES    (1u << 20)
#define ACK_BCAST    (4u << 20)
#define ACK_PATIENCE 60.0 /* seconds each side waits before calling it a deadlock */

/* Wait for @a path to exist, without calling cohort. */
static void wait_file(const char *path)
{
    double deadline = test_now() + ACK_PATIENCE;

    while (access(path, F_OK) != 0) {
        CHECK(test_now() < deadline); /* the sender never finished: it waits on us */
        usleep(10000);
    }
}

/* Complete @a req by cohort_test alone, bounded. */
static void finish_bounded(cohort_request_t *req)
{
    double deadline = test_now() + ACK_PATIENCE;
    int done = 0;

    while (!done) {
        CHECK_OK(cohort_test(req, &done));
        CHECK(done || test_now() < deadline); /* a receiver that left cohort holds it up */
    }
    cohort_request_free(req);
}

int main(void)
{
    cohort_context_t *ctx = test_init();
    cohort_group_t *world = cohort_world(ctx);
    int n = cohort_world_size(ctx), me = cohort_world_rank(ctx);
    uint8_t *buf = malloc(ACK_BCAST);
    char path[128];

    CHECK(buf != NULL && n >= 2);
    /* The file is named by the world's id, alike on every rank without a message: a message
     * from the others to rank 0 first would wire the way back and hide the case. */
    snprintf(path, sizeof(path), "/tmp/cohort-cma-ack.%016llx",
             (unsigned long long)cohort_group_id(world));
    if (me == 0) {
        cohort_request_t *sr, *br;
        for (size_t i = 0; i < ACK_BCAST; i++) {
            buf[i] = (uint8_t)(i * 7 + 3);
        }
        CHECK_OK(cohort_isend(world, buf, ACK_BYTES, COHORT_UINT8, 1, 1, &sr));
        finish_bounded(sr);
        CHECK_OK(cohort_ibcast(world, buf, ACK_BCAST, COHORT_UINT8, 0, &br));
        finish_bounded(br);
        FILE *f = fopen(path, "w");
        CHECK(f != NULL);
        fclose(f);
    } else {
        if (me == 1) {
            CHECK_OK(cohort_recv(world, buf, ACK_BYTES, COHORT_UINT8, 0, 1));
            for (size_t i = 0; i < ACK_BYTES; i++) {
                CHECK(buf[i] == (uint8_t)(i * 7 + 3));
            }
        }
        memset(buf, 0, ACK_BCAST);
        CHECK_OK(cohort_bcast(world, buf, ACK_BCAST, COHORT_UINT8, 0));
        for (size_t i = 0; i < ACK_BCAST; i++) {
            CHECK(buf[i] == (uint8_t)(i * 7 + 3));
        }
        wait_file(path);
    }
    /* Everyone past the file before rank 0 removes it. */
    CHECK_OK(cohort_barrier(world));
    if (me == 0) {
        unlink(path);
    }
    free(buf);
    test_finish(ctx, "cma_ack");
    return 0;
}
