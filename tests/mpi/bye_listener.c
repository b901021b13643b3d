/* run: 2 COHORT_TIMEOUT=20 */
/* run: 3 UCX_TLS=tcp,self COHORT_TIMEOUT=20 */
/*
 * Finalize says goodbye to peers that only sent to us. Every other rank sends rank 0 a small
 * message; rank 0 receives them, sends nothing, holds no endpoint to anyone, and finalizes.
 * The others then wait on a receive from rank 0: it must end because rank 0 said goodbye
 * (PEER_FAILED, "finalized"), and nobody may count rank 0 as failed. Without the goodbye the
 * receive waits until COHORT_TIMEOUT over shared memory, and over tcp rank 0's connection
 * closing is taken for its death (peers_failed = 1). The peers heard from are remembered on
 * their own entries, not in a bitmap over the world (DESIGN rule 7).
 *
 * Each of the others posts a second receive from rank 0, which it never waits on: both fail
 * when the goodbye comes, but a peer that finalized ended in order, so only the receive a wait
 * takes says so ('it finalized first', once, in the wait's log); the other, freed unwaited,
 * says nothing. Before, every receive failing so logged an error at once, and a program that
 * left one posted printed an error line at its normal exit. A third receive, on a group of
 * {0, this rank} made without rank 0 (creation is local), fails the same way; the group is
 * freed before that receive is waited on: the wait returns its status and says nothing (the
 * request no longer has a group to name).
 */
#include <string.h>
#include "harness.h"

/* How many times @a what is in @a s. */
static int count_of(const char *s, const char *what)
{
    int n = 0;

    for (const char *p = strstr(s, what); p != NULL; p = strstr(p + 1, what)) {
        n++;
    }
    return n;
}

int main(void)
{
    cohort_context_t *ctx = test_init();
    cohort_group_t *w = cohort_world(ctx);
    int me = cohort_world_rank(ctx), n = cohort_world_size(ctx), v = 0, failed[1];
    cohort_stats_t st;
    cohort_request_t *r, *unwaited, *on_freed;
    cohort_group_t *with0;
    int pair[2] = {0, 0}, with0_v = 0;
    cohort_status_t st_wait;
    const char *log;
    int unwaited_v = 0;

    CHECK(n >= 2);
    if (me == 0) {
        for (int src = 1; src < n; src++) {
            CHECK_OK(cohort_recv(w, &v, 1, COHORT_INT32, src, 1));
            CHECK(v == 100 + src);
        }
        /* Only heard from them: the case finalize wires endpoints for. */
        CHECK(cohort_wired_peers(ctx, NULL, 0) == 0);
        CHECK_OK(cohort_finalize(ctx));
        printf("bye_listener: passed\n");
        return 0;
    }
    v = 100 + me;
    CHECK_OK(cohort_send(w, &v, 1, COHORT_INT32, 0, 1));
    CHECK_OK(cohort_irecv(w, &v, 1, COHORT_INT32, 0, 2, &r));
    CHECK_OK(cohort_irecv(w, &unwaited_v, 1, COHORT_INT32, 0, 3, &unwaited));
    pair[1] = me;
    CHECK_OK(cohort_group_create(ctx, "with-0", pair, 2, &with0));
    CHECK_OK(cohort_irecv(with0, &with0_v, 1, COHORT_INT32, 0, 4, &on_freed));
    test_capture_begin();
    st_wait = cohort_wait(r);
    log = test_capture_end();
    CHECK(st_wait == COHORT_ERR_PEER_FAILED);
    if (count_of(log, "finalized first") != 1) {
        fprintf(stderr, "rank %d: the wait's log says 'finalized first' %d times, not once:\n%s",
                me, count_of(log, "finalized first"), log);
        return 1;
    }
    cohort_request_free(r);
    test_capture_begin();
    cohort_request_free(unwaited);
    log = test_capture_end();
    CHECK(strstr(log, "finalized first") == NULL);
    CHECK_OK(cohort_group_free(with0));
    test_capture_begin();
    st_wait = cohort_wait(on_freed);
    log = test_capture_end();
    CHECK(st_wait == COHORT_ERR_PEER_FAILED);
    CHECK(strstr(log, "finalized first") == NULL);
    cohort_request_free(on_freed);
    CHECK_OK(cohort_stats(ctx, &st));
    if (st.peers_failed != 0 || cohort_failed_ranks(ctx, failed, 1) != 0) {
        fprintf(stderr, "rank %d: rank 0's finalize was taken for a failure\n", me);
        return 1;
    }
    CHECK_OK(cohort_finalize(ctx));
    return 0;
}
