/* run: 2 COHORT_CMA=on COHORT_TIMEOUT=30 */
/*
 * A single-copy send is not over, cancelled or freed before its reader said so: the receiver
 * reads the sender's buffer itself, so a sender that got its buffer back while the descriptor
 * was still out would have the receiver read whatever it wrote there next.
 * Rank 0 sends rank 1 1 MiB of pattern A by single copy; rank 1 has not posted its receive, so
 * the descriptor waits there. Rank 0 then gives up on the send (cohort_group_abort and a wait;
 * then, on a second group, cohort_request_free; on a third, cohort_group_free), writes pattern B
 * over its buffer and makes a file. Rank 1, calling cohort (cohort_test) all along, waits for the
 * file, then receives: COHORT_ERR_REVOKED (COHORT_ERR_CANCELED after cohort_request_free, which
 * tells the reader itself and leaves the group usable: issue 39), and nothing of B in its buffer. Before, the send ended
 * at once; rank 0 never called cohort between giving up and the file, so rank 1 had not heard of
 * the revocation, matched the descriptor and read B (the receive succeeded with the reused data).
 * The file is the signal because a message would carry the revocation with it.
 */
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"

#define BYTES    (1u << 20)
#define PATIENCE 60.0 /* seconds rank 1 waits for rank 0's file */

static void make_file(const char *path)
{
    FILE *f = fopen(path, "w");

    CHECK(f != NULL);
    fclose(f);
}

/* Wait for @a path, calling cohort meanwhile (so that this rank answers its peers). */
static void wait_file_progressing(cohort_request_t *poll, const char *path)
{
    double deadline = test_now() + PATIENCE;
    int done = 0;

    while (access(path, F_OK) != 0) {
        CHECK_OK(cohort_test(poll, &done));
        CHECK(test_now() < deadline); /* rank 0 never got its send back */
    }
}

/* A small message each way on @a g: both endpoints wired, the group's first use behind it. */
static void exchange(cohort_group_t *g, int me)
{
    int v = me, got = -1;

    if (me == 0) {
        CHECK_OK(cohort_send(g, &v, 1, COHORT_INT32, 1, 1));
        CHECK_OK(cohort_recv(g, &got, 1, COHORT_INT32, 1, 1));
    } else {
        CHECK_OK(cohort_recv(g, &got, 1, COHORT_INT32, 0, 1));
        CHECK_OK(cohort_send(g, &v, 1, COHORT_INT32, 0, 1));
    }
    CHECK(got == 1 - me);
}

static void one_case(cohort_context_t *ctx, const char *tag, int use_free)
{
    const char *ns = getenv("PMIX_NAMESPACE");
    int me = cohort_world_rank(ctx), both[2] = {0, 1}, token = 0;
    uint8_t *buf = malloc(BYTES);
    cohort_group_t *g, *w = cohort_world(ctx);
    cohort_request_t *r, *poll;
    char path[256];

    CHECK(buf != NULL);
    CHECK_OK(cohort_group_create(ctx, tag, both, 2, &g));
    snprintf(path, sizeof(path), "/tmp/cohort-cma-cancel.%s.%016llx", ns ? ns : "x",
             (unsigned long long)cohort_group_id(g));
    unlink(path);
    exchange(g, me);
    if (me == 0) {
        memset(buf, 0xA1, BYTES);
        CHECK_OK(cohort_isend(g, buf, BYTES, COHORT_UINT8, 1, 5, &r));
        if (use_free == 2) {
            CHECK_OK(cohort_group_free(g)); /* with the send outstanding */
            g = NULL;
            CHECK_STATUS(cohort_wait(r), COHORT_ERR_REVOKED);
            cohort_request_free(r);
        } else if (use_free) {
            cohort_request_free(r);
        } else {
            CHECK_OK(cohort_group_abort(g));
            CHECK_STATUS(cohort_wait(r), COHORT_ERR_REVOKED);
            cohort_request_free(r);
        }
        memset(buf, 0xB2, BYTES); /* the caller's buffer again */
        make_file(path);
        CHECK_OK(cohort_send(w, &token, 1, COHORT_INT32, 1, 99));
    } else {
        memset(buf, 0, BYTES);
        CHECK_OK(cohort_irecv(w, &token, 1, COHORT_INT32, 0, 99, &poll));
        wait_file_progressing(poll, path);
        /* A freed point-to-point send tells its reader itself (issue 39): CANCELED, and the
         * group stays usable; giving up on it through the group revokes the group. */
        CHECK_STATUS(cohort_recv(g, buf, BYTES, COHORT_UINT8, 0, 5),
                     use_free == 1 ? COHORT_ERR_CANCELED : COHORT_ERR_REVOKED);
        for (size_t i = 0; i < BYTES; i++) {
            CHECK(buf[i] != 0xB2);
        }
        CHECK_OK(cohort_wait(poll));
        cohort_request_free(poll);
    }
    if (use_free == 1) {
        exchange(g, me); /* the group still works */
    }
    CHECK_OK(cohort_barrier(w));
    if (me == 0) {
        unlink(path);
    }
    CHECK_OK(cohort_group_free(g)); /* NULL where rank 0 freed it already */
    free(buf);
}

int main(void)
{
    cohort_context_t *ctx = test_init();

    CHECK(cohort_world_size(ctx) == 2);
    one_case(ctx, "cancel-abort", 0);
    one_case(ctx, "cancel-free", 1);
    one_case(ctx, "cancel-group-free", 2);
    test_finish(ctx, "cma_cancel");
    return 0;
}
