/* run: 2 COHORT_FAULT=group_create:3@1 */
/* run: 2 COHORT_FAULT=send:1@1 */
/* run: 2 COHORT_FAULT=msg_keep:1@0 */
/*
 * Error paths keep members in step (COHORT_FAULT makes one allocation fail on one rank):
 * - group_create: rank 1's third group creation (the world is its first) fails; the instance
 * counter did not advance, so when it retries it derives the id rank 0 has, and the group works.
 * - send: rank 1's first point-to-point send fails before its number is spent; the next send
 *   is the one rank 0 receives, not held forever behind a number that never comes.
 * - msg_keep: rank 0 cannot keep the first message it has to queue; the group that lost it is
 *   revoked (a clear status) instead of waiting forever for a message that is gone.
 */
#include <string.h>
#include "harness.h"

int main(void)
{
    cohort_context_t *ctx = test_init();
    cohort_group_t *w = cohort_world(ctx), *a = NULL, *b = NULL;
    const char *fault = getenv("COHORT_FAULT");
    int me = cohort_world_rank(ctx), pair[2] = {0, 1};
    uint64_t id, other;

    CHECK(fault != NULL);
    if (strncmp(fault, "group_create", 12) == 0) {
        CHECK_OK(cohort_group_create(ctx, "a", pair, 2, &a));
        if (me == 1) {
            CHECK_STATUS(cohort_group_create(ctx, "b", pair, 2, &b), COHORT_ERR_NO_MEMORY);
            CHECK(b == NULL);
        }
        CHECK_OK(cohort_group_create(ctx, "b", pair, 2, &b));
        id = cohort_group_id(b);
        CHECK_OK(cohort_send(w, &id, 1, COHORT_UINT64, 1 - me, 1));
        CHECK_OK(cohort_recv(w, &other, 1, COHORT_UINT64, 1 - me, 1));
        CHECK(id == other);
        CHECK_OK(cohort_allreduce(b, COHORT_IN_PLACE, &id, 1, COHORT_UINT64, COHORT_MAX));
        CHECK(id == other);
        CHECK_OK(cohort_group_free(a));
        CHECK_OK(cohort_group_free(b));
    } else if (strncmp(fault, "send", 4) == 0) {
        int v = 1;
        CHECK_OK(cohort_group_create(ctx, "a", pair, 2, &a));
        if (me == 1) {
            CHECK_STATUS(cohort_send(a, &v, 1, COHORT_INT32, 0, 5), COHORT_ERR_NO_MEMORY);
            v = 2;
            CHECK_OK(cohort_send(a, &v, 1, COHORT_INT32, 0, 5));
        } else {
            CHECK_OK(cohort_recv(a, &v, 1, COHORT_INT32, 1, 5));
            CHECK(v == 2);
        }
        CHECK_OK(cohort_barrier(a));
        CHECK_OK(cohort_group_free(a));
    } else {
        int v = 3, token = 0;
        cohort_request_t *r = NULL;
        cohort_status_t st;

        if (me == 0) {
            /* Posted before rank 1 sends anything, so this one is matched, not queued. */
            CHECK_OK(cohort_irecv(w, &token, 1, COHORT_INT32, 1, 7, &r));
        }
        CHECK_OK(cohort_group_create(ctx, "a", pair, 2, &a));
        if (me == 1) {
            /* Rank 0 cannot have posted a receive on "a": this message is queued there (or
             * kept as an orphan), and that first keep fails. */
            CHECK_OK(cohort_send(a, &v, 1, COHORT_INT32, 0, 6));
            token = 1;
            CHECK_OK(cohort_send(w, &token, 1, COHORT_INT32, 0, 7));
        } else {
            CHECK_OK(cohort_wait(r));
            cohort_request_free(r);
            CHECK(token == 1);
            st = cohort_recv(a, &v, 1, COHORT_INT32, 1, 6);
            CHECK(st == COHORT_ERR_NO_MEMORY || st == COHORT_ERR_REVOKED);
        }
        CHECK_OK(cohort_group_free(a));
    }
    CHECK_OK(cohort_barrier(w));
    test_finish(ctx, "faults");
    return 0;
}
