/* run: 2 COHORT_TIMEOUT=1 */
/* run: 3 COHORT_TIMEOUT=1 COHORT_PROGRESS=block */
/*
 * COHORT_TIMEOUT bounds every wait: a receive nobody sends to and a barrier a member never
 * enters both return COHORT_ERR_TIMEOUT (logged with the group, operation, step and peer),
 * the requests can then be freed, and the context keeps working — a message that arrives
 * after its receive was cancelled goes to the next matching receive. The other ranks wait
 * meanwhile on requests they wait on again after each timeout, which must also work.
 */
#include <time.h>
#include "harness.h"

int main(void)
{
    cohort_context_t *ctx = test_init();
    cohort_group_t *w = cohort_world(ctx), *pair = NULL;
    int me = cohort_world_rank(ctx);
    int ranks[2] = {0, 1};
    double t0, waited;

    /* A receive from rank 1 that rank 1 only satisfies after rank 0 gave up. */
    if (me == 0) {
        int v = -1;
        cohort_request_t *r;
        CHECK_OK(cohort_irecv(w, &v, 1, COHORT_INT32, 1, 40, &r));
        t0 = test_now();
        CHECK_STATUS(cohort_wait(r), COHORT_ERR_TIMEOUT);
        waited = test_now() - t0;
        /* Not before COHORT_TIMEOUT (a loaded machine is only ever later), and the wait ends:
         * within a minute, however loaded. */
        CHECK(waited >= 0.9 && waited < 60.0);
        /* The request stays valid after a timeout: test says not done; free cancels it. */
        {
            int done = 1;
            CHECK_OK(cohort_test(r, &done));
            CHECK(done == 0);
        }
        cohort_request_free(r);
        CHECK(v == -1);
    }
    test_patient_barrier(w);
    if (me == 1) {
        int v = 99;
        CHECK_OK(cohort_send(w, &v, 1, COHORT_INT32, 0, 40));
    } else if (me == 0) {
        int v = -1;
        CHECK_OK(cohort_recv(w, &v, 1, COHORT_INT32, 1, 40));
        CHECK(v == 99);
    }

    /* A barrier on {0, 1} that rank 1 never enters. */
    CHECK_STATUS(cohort_group_create(ctx, "pair", ranks, 2, &pair),
                 me < 2 ? COHORT_OK : COHORT_ERR_NOT_MEMBER);
    if (me == 0) {
        t0 = test_now();
        CHECK_STATUS(cohort_barrier(pair), COHORT_ERR_TIMEOUT);
        waited = test_now() - t0;
        CHECK(waited >= 0.9 && waited < 60.0); /* as above */
    }
    if (pair != NULL) {
        CHECK_OK(cohort_group_free(pair));
    }
    test_patient_barrier(w);
    test_finish(ctx, "timeout");
    return 0;
}
