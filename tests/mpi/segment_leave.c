/* run: 3 COHORT_WATCH_S=0.2 */
/* run: 3 COHORT_WATCH_S=0.2 UCX_TLS=tcp,self */
/*
 * A peer that finished and exited is not a failure, also to a member that reached it only
 * through the group's shared segment. On one node the world's small allreduces run on its
 * segment, with no message and no endpoint; a member whose wait there lasts COHORT_WATCH_S
 * wires the members it waits for, just to see a death. Then:
 *  - round 1: every member together (the segment is made);
 *  - round 2: rank 0 comes late, so ranks 1 and 2 wire it from their watch (checked: the
 *    path under test must really be taken; repeated, later each time, until it was);
 *  - round 3: rank 1 posts its allreduce and sleeps without progress, while ranks 0 and 2
 *    finish it; rank 0 finalizes and exits. Rank 1 then waits: the call has all its words, and
 *    must succeed, not fail with PEER_FAILED or REVOKED;
 *  - ranks 1 and 2 keep calling on a group without rank 0 until rank 0's process is gone and
 *    three keepalive rounds more (COHORT_KEEPALIVE_S): rank 0 must not be among
 *    cohort_failed_ranks.
 * Rank 0 never wired ranks 1 and 2 (nothing of theirs came to it by message), so its
 * finalize has no goodbye for them: before issue 39's leave mark in the segment, their
 * endpoint to it failed once it exited (over shared memory UCX's keepalive finds its pid gone,
 * over tcp the connection closes) and they declared it failed, revoking the world.
 * tests/mpi/peer_death is the other half: a rank killed in its calls is still declared failed.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "harness.h"

/* Whether process @a pid is gone (or only a zombie left for its launcher to reap). */
static int test_pid_gone(int32_t pid)
{
    char path[64], state = '?';
    FILE *f;

    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
        return 1;
    }
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (f == NULL) {
        return 1;
    }
    /* "pid (comm) S ...": the state follows the last ')'. */
    {
        char line[512];
        char *p = fgets(line, sizeof(line), f) != NULL ? strrchr(line, ')') : NULL;
        if (p != NULL && p[1] == ' ') {
            state = p[2];
        }
    }
    fclose(f);
    return state == 'Z' || state == 'X';
}

int main(void)
{
    cohort_context_t *ctx = test_init();
    cohort_group_t *w = cohort_world(ctx), *pair = NULL;
    int me = cohort_world_rank(ctx), n = cohort_world_size(ctx), pair_ranks[2] = {1, 2};
    int32_t pid = (int32_t)getpid(), pids[3];
    int v, sum, wired[8], nwired, failed[8];
    cohort_request_t *r;
    const char *ka = getenv("COHORT_KEEPALIVE_S");
    double keepalive = ka != NULL && atof(ka) > 0 ? atof(ka) : 1.0, gone_at = 0;

    CHECK(n == 3);
    /* Round 1: everybody; the segment is made, and every pid is known here. */
    CHECK_OK(cohort_allgather(w, &pid, pids, 1, COHORT_INT32));
    CHECK(pids[me] == pid);

    /* Round 2: rank 0 late, the others' segment watch wires it. Repeated, rank 0 later each
     * time, until both did (under load a rank may reach the call late itself). */
    for (int late = 1, all = 0; all != 2; late++) {
        int have = 0;
        CHECK(late <= 5);
        if (me == 0) {
            nanosleep(&(struct timespec){late, 0}, NULL);
        }
        v = me + 1;
        CHECK_OK(cohort_allreduce(w, &v, &sum, 1, COHORT_INT32, COHORT_SUM));
        CHECK(sum == 6);
        nwired = me != 0 ? cohort_wired_peers(ctx, wired, 8) : 0;
        for (int i = 0; i < nwired && i < 8; i++) {
            have |= wired[i] == 0;
        }
        CHECK_OK(cohort_allreduce(w, &have, &all, 1, COHORT_INT32, COHORT_SUM));
        if (all != 2) {
            printf("rank %d: the segment watch did not wire rank 0 yet (rank 0 %d s late)\n", me,
                   late);
        }
    }

    /* Round 3: rank 1 slow inside the call; rank 0 finishes it and leaves. */
    v = 10 * (me + 1);
    CHECK_OK(cohort_iallreduce(w, &v, &sum, 1, COHORT_INT32, COHORT_SUM, &r));
    if (me == 0) {
        CHECK_OK(cohort_wait(r));
        CHECK(sum == 60);
        cohort_request_free(r);
        test_finish(ctx, "segment_leave");
        return 0;
    }
    if (me == 1) {
        /* No progress here while rank 0 finishes the call and exits (the post published this
         * rank's words). Bounded: should the post not have got that far, rank 0 waits for
         * them, and this rank goes on after 20 s (saying so) rather than hang. */
        double t0 = test_now();
        while (!test_pid_gone(pids[0]) && test_now() - t0 < 20) {
            nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
        }
        if (test_pid_gone(pids[0])) {
            gone_at = test_now();
        } else {
            printf("rank 1: rank 0 still there after 20 s without progress here\n");
        }
    }
    CHECK_OK(cohort_wait(r));
    CHECK(sum == 60);
    cohort_request_free(r);

    /* Ranks 1 and 2 go on without rank 0 until it is gone and 3 keepalive rounds more: a
     * false death shows within two. */
    CHECK_OK(cohort_group_create(ctx, "pair", pair_ranks, 2, &pair));
    for (int i = 0;; i++) {
        int done_here, done_all = 0;
        CHECK_OK(cohort_allreduce(pair, &i, &sum, 1, COHORT_INT32, COHORT_SUM));
        CHECK(sum == 2 * i);
        if (gone_at == 0 && test_pid_gone(pids[0])) {
            gone_at = test_now();
        }
        done_here = gone_at > 0 && test_now() - gone_at > 3 * keepalive;
        CHECK_OK(cohort_allreduce(pair, &done_here, &done_all, 1, COHORT_INT32, COHORT_SUM));
        if (done_all == 2) {
            break;
        }
    }
    if (cohort_failed_ranks(ctx, failed, 8) != 0) {
        fprintf(stderr, "rank %d: world rank %d, which finalized and exited, was declared failed\n",
                me, failed[0]);
        exit(1);
    }
    CHECK_OK(cohort_group_free(pair));
    CHECK_OK(cohort_finalize(ctx));
    printf("rank %d: rank passed\n", me);
    return 0;
}
