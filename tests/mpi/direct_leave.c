/* run: 2 COHORT_TIMEOUT=1 COHORT_FAULT=write_gap:1@1 COHORT_ALGO_ALLGATHER=direct */
/*
 * A member that leaves a direct call early gets its buffers back only once no other member can
 * write into them. Rank 1's first write into rank 0 is announced and then made 3 s later
 * (COHORT_FAULT=write_gap); rank 0, done with its own writes, times out (COHORT_TIMEOUT=1)
 * waiting for rank 1 to finish and gives the call up. When its allgather returns, rank 0 fills
 * its output with a pattern and watches it for 3 s: not a byte may change. Before, the leave
 * waited at most 1 s for a writer inside a write, and rank 1's chunk landed after the return
 * (1.03 s after it, tests/MUTATIONS.md): the write comes 3 s after its announcement, about 2 s
 * after a return at the 1 s timeout, and rank 1's other chunks right after it, so a 3 s watch
 * sees them (it was 6 s: three seconds of every run spent watching after the last write).
 */
#include <string.h>
#include "harness.h"

#define BLOCK (1u << 20) /* bytes per member: four of direct's 256 KiB chunks */

int main(void)
{
    cohort_context_t *ctx = test_init();
    cohort_group_t *w = cohort_world(ctx);
    int me = cohort_world_rank(ctx), n = cohort_world_size(ctx);
    unsigned char *in = malloc(BLOCK), *out = malloc((size_t)n * BLOCK);
    cohort_status_t st;
    double t0, t;

    CHECK(in != NULL && out != NULL);
    memset(in, 0x10 + me, BLOCK);
    t0 = test_now();
    st = cohort_allgather(w, in, out, BLOCK, COHORT_UINT8);
    t = test_now() - t0;
    if (me == 0) {
        /* It gave up after its timeout, and then waited for the announced write. */
        CHECK(st == COHORT_ERR_TIMEOUT);
        memset(out, 0xee, (size_t)n * BLOCK);
        for (t0 = test_now(); test_now() - t0 < 3.0;) {
            for (size_t i = 0; i < (size_t)n * BLOCK; i += 4096) {
                if (out[i] != 0xee) {
                    fprintf(stderr,
                            "rank 0: byte %zu of the output changed to 0x%02x %.2f s after the "
                            "allgather returned (it returned after %.2f s)\n",
                            i, out[i], test_now() - t0, t);
                    exit(1);
                }
            }
            usleep(1000);
        }
        for (size_t i = 0; i < (size_t)n * BLOCK; i++) {
            CHECK(out[i] == 0xee);
        }
    } else {
        /* rank 0 left: the call fails here too (the group is revoked) */
        CHECK(st != COHORT_OK);
    }
    cohort_finalize(ctx);
    free(in);
    free(out);
    printf("rank %d: direct_leave: passed\n", me);
    return 0;
}
