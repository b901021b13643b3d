/* clang-format off */
/* run: 3 --enable-recovery --expect-passed=2 COHORT_FAULT=write_gap:1 COHORT_ALGO_ALLGATHER=direct */
/* clang-format on */
/*
 * Two members whose writes into a member that died fail at the same time both leave the call,
 * and neither waits on the other. Every rank's first write of a direct allgather is announced,
 * then made 3 s later (COHORT_FAULT=write_gap); world rank 2 dies 1 s in (SIGALRM), inside its
 * own gap. Ranks 0 and 1 then write into it: process_vm_writev fails (ESRCH), which fails the
 * peer there and then, revokes the group and so cancels the call, whose leave waits for every
 * member still inside a write announced for it. Before the fix each survivor's own write was
 * still announced while it left (the failure is applied from inside the write), so each waited
 * for the other until mpirun's bound: tests/mpi/peer_death's rndv case hung so in CI under the
 * sanitizers. Mutation: drop the cohort_shm_write_end at the start of direct_leave (direct.c)
 * and this run hangs. Both survivors must get an error (PEER_FAILED), a working group without
 * the dead rank, and finalize; waited for: the allgather's return, up to a minute.
 */
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"

#define BLOCK (1u << 20)

int main(void)
{
    cohort_context_t *ctx = test_init();
    cohort_group_t *w = cohort_world(ctx), *pair;
    int me = cohort_world_rank(ctx), n = cohort_world_size(ctx), two[2] = {0, 1}, v, sum = 0;
    unsigned char *in = malloc(BLOCK), *out = malloc((size_t)n * BLOCK);
    cohort_status_t st;
    double t0, t;

    CHECK(n == 3);
    CHECK(in != NULL && out != NULL);
    memset(in, 0x10 + me, BLOCK);
    CHECK_OK(cohort_barrier(w));
    if (me == 2) {
        signal(SIGALRM, SIG_DFL); /* ends the process, inside its first announced write */
        alarm(1);
    }
    t0 = test_now();
    st = cohort_allgather(w, in, out, BLOCK, COHORT_UINT8);
    t = test_now() - t0;
    CHECK(me != 2);
    printf("rank %d: allgather returned %s after %.1f s\n", me, cohort_strerror(st), t);
    /* waited for: the allgather's return after the death, up to a minute */
    CHECK(t < 60.0);
    CHECK(st == COHORT_ERR_PEER_FAILED);
    CHECK_OK(cohort_group_create(ctx, "pair", two, 2, &pair));
    v = me + 1;
    CHECK_OK(cohort_allreduce(pair, &v, &sum, 1, COHORT_INT32, COHORT_SUM));
    CHECK(sum == 3);
    CHECK_OK(cohort_group_free(pair));
    CHECK_OK(cohort_finalize(ctx));
    free(in);
    free(out);
    printf("rank %d: rank passed\n", me);
    return 0;
}
