/* run: 2 COHORT_FAULT=pid:1@1 COHORT_ALGO_ALLREDUCE=direct */
/* run: 4 COHORT_FAULT=pid:1@2 COHORT_ALGO_REDUCE_SCATTER=direct COHORT_CHECK=1 */
/*
 * A same-node descriptor's pid is checked against what its rank published through PMIx (its
 * card, core/card.h) before any byte moves. One member's first direct allreduce names its
 * parent process instead of itself (COHORT_FAULT=pid): every member must return
 * COHORT_ERR_MISMATCH, nothing written past any output (a canary after each), and the group's
 * next allreduce must be right. Only the members that read the false descriptor can see it is
 * false, so the others' copies between truthful members still happen: the output of a
 * MISMATCH is undefined, as MPI's is for an error, but no byte goes to or comes from a process
 * that is not the member. Through the group's
 * shared segment at 2 ranks; as messages (COHORT_CHECK=1) at 4, where the direct algorithms
 * that write into others need the segment, so a reduce_scatter (a reader) runs there. Without the check the others
 * copy to and from another process at the faulted rank's addresses, and the call does not
 * end in MISMATCH on every member.
 */
#include "harness.h"

#define COUNT (1u << 18) /* floats: 1 MiB, four of direct's chunks */

/* The collective the run forces to direct: allreduce, or reduce_scatter (each rank's block of
 * COUNT / n floats). */
static cohort_status_t pid_coll(cohort_group_t *w, const float *in, float *out, int n)
{
    return getenv("COHORT_ALGO_REDUCE_SCATTER") != NULL
               ? cohort_reduce_scatter(w, in, out, COUNT / (size_t)n, COHORT_FLOAT32, COHORT_SUM)
               : cohort_allreduce(w, in, out, COUNT, COHORT_FLOAT32, COHORT_SUM);
}

int main(void)
{
    cohort_context_t *ctx = test_init();
    cohort_group_t *w = cohort_world(ctx);
    int me = cohort_world_rank(ctx), n = cohort_world_size(ctx);
    float *in = malloc(COUNT * sizeof(float)), *out = malloc((COUNT + 16) * sizeof(float));

    CHECK(in != NULL && out != NULL);
    for (size_t i = 0; i < COUNT; i++) {
        in[i] = (float)(me + 1);
    }
    for (size_t i = 0; i < COUNT + 16; i++) {
        out[i] = -7.0f;
    }
    CHECK_STATUS(pid_coll(w, in, out, n), COHORT_ERR_MISMATCH);
    for (size_t i = COUNT; i < COUNT + 16; i++) {
        if (out[i] != -7.0f) {
            fprintf(stderr, "rank %d: float %zu past the output's %u was written: %g\n", me, i,
                    COUNT, out[i]);
            exit(1);
        }
    }
    /* The group is still usable, and the faulted rank's next descriptor is its own. */
    CHECK_OK(pid_coll(w, in, out, n));
    for (size_t i = 0; i < (getenv("COHORT_ALGO_REDUCE_SCATTER") ? COUNT / (size_t)n : COUNT); i++) {
        if (out[i] != (float)(n * (n + 1) / 2)) {
            fprintf(stderr, "rank %d: float %zu is %g after the second allreduce\n", me, i, out[i]);
            exit(1);
        }
    }
    CHECK(out[COUNT] == -7.0f);
    /* and the reduce_scatter left the rest of the buffer as it was */
    CHECK(getenv("COHORT_ALGO_REDUCE_SCATTER") == NULL || out[COUNT - 1] == -7.0f);
    free(in);
    free(out);
    test_finish(ctx, "pid_check");
    return 0;
}
