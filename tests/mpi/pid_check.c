/* run: 2 COHORT_FAULT=pid:1@1 COHORT_ALGO_ALLREDUCE=direct */
/* run: 4 COHORT_FAULT=pid:1@2 COHORT_ALGO_REDUCE_SCATTER=direct COHORT_CHECK=1 */
/* run: 2 PID_CASE=p2p COHORT_CMA=on COHORT_FAULT=pid:1@0 */
/* run: 2 PID_CASE=p2p_known COHORT_CMA=on COHORT_FAULT=pid:2@0 */
/*
 * A same-node descriptor's pid is checked against what its rank published through PMIx (its
 * card, core/address_card.h) before any byte moves. One member's first direct allreduce names its
 * parent process instead of itself (COHORT_FAULT=pid): every member must return
 * COHORT_ERR_MISMATCH, nothing written past any output (a canary after each), and the group's
 * next allreduce must be right. Only the members that read the false descriptor can see it is
 * false, so the others' copies between truthful members still happen: the output of a
 * MISMATCH is undefined, as MPI's is for an error, but no byte goes to or comes from a process
 * that is not the member. Through the group's
 * shared segment at 2 ranks; as messages (COHORT_CHECK=1) at 4, where the direct algorithms
 * that write into others need the segment, so a reduce_scatter (a reader) runs there. Without the
 * check the others copy to and from another process at the faulted rank's addresses, and the call
 * does not end in MISMATCH on every member.
 *
 * PID_CASE=p2p: the same for a point-to-point single copy (CMA). Rank 0's 1 MiB send offers a
 * descriptor naming its parent; rank 1's receive must return COHORT_ERR_MISMATCH with its
 * buffer untouched (nothing read) and the canary after it intact, rank 0's send must end (its
 * status is not checked: it is answered so as not to hang), and a send each way afterwards must
 * arrive whole (nobody revoked). In p2p rank 1 has never heard from rank 0, so the receive waits
 * from progress for rank 0's card; in p2p_known a send each way comes first (rank 0's first
 * offer, which the fault spares), so the card is there and the descriptor is refused where it
 * is matched. Without the check (cohort_sc_pid_ok in single_copy.c answering 1) rank 1 reads
 * the parent's memory at rank 0's address: process_vm_readv fails ('Bad address', the receive
 * returns COHORT_ERR_UCX) or reads another process's bytes, and the receive is not MISMATCH.
 */
#include <stdint.h>
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

#define P2P_BYTES  (1u << 20) /* from COHORT_CMA_MIN up: single copy; one COHORT_CMA_CHUNK */
#define P2P_CANARY 64

/* A send of P2P_BYTES each way between ranks 0 and 1, checked: single copy works both ways. */
static void p2p_exchange(cohort_group_t *w, int me, uint8_t *buf, uint8_t round)
{
    for (int from = 0; from < 2; from++) {
        if (me == from) {
            for (size_t i = 0; i < P2P_BYTES; i++) {
                buf[i] = (uint8_t)(i * 7 + round + from);
            }
            CHECK_OK(cohort_send(w, buf, P2P_BYTES, COHORT_UINT8, 1 - me, 3));
            continue;
        }
        memset(buf, 0, P2P_BYTES);
        CHECK_OK(cohort_recv(w, buf, P2P_BYTES, COHORT_UINT8, 1 - me, 3));
        for (size_t i = 0; i < P2P_BYTES; i++) {
            if (buf[i] != (uint8_t)(i * 7 + round + from)) {
                fprintf(stderr, "rank %d: byte %zu from rank %d is %u (exchange %u)\n", me, i, from,
                        buf[i], round);
                exit(1);
            }
        }
    }
}

static void p2p_case(cohort_context_t *ctx, int known)
{
    cohort_group_t *w = cohort_world(ctx);
    int me = cohort_world_rank(ctx);
    uint8_t *buf = malloc(P2P_BYTES + P2P_CANARY);
    cohort_request_t *r;

    CHECK(buf != NULL && cohort_world_size(ctx) == 2);
    if (known) {
        p2p_exchange(w, me, buf, 1); /* rank 1 has rank 0's card from here on */
    }
    if (me == 0) {
        cohort_status_t st;
        memset(buf, 0xa5, P2P_BYTES);
        CHECK_OK(cohort_isend(w, buf, P2P_BYTES, COHORT_UINT8, 1, 2, &r));
        st = cohort_wait(r); /* answered, whatever it says: not a hang */
        printf("rank 0: the falsely described send ended: %s\n", cohort_strerror(st));
        cohort_request_free(r);
    } else {
        memset(buf, 0x5a, P2P_BYTES + P2P_CANARY);
        CHECK_STATUS(cohort_recv(w, buf, P2P_BYTES, COHORT_UINT8, 0, 2), COHORT_ERR_MISMATCH);
        for (size_t i = 0; i < P2P_BYTES + P2P_CANARY; i++) {
            if (buf[i] != 0x5a) {
                fprintf(stderr, "rank 1: byte %zu of the refused receive (%u bytes) written: %u\n",
                        i, P2P_BYTES, buf[i]);
                exit(1);
            }
        }
    }
    p2p_exchange(w, me, buf, 2);
    free(buf);
}

int main(void)
{
    cohort_context_t *ctx = test_init();
    const char *pcase = getenv("PID_CASE");

    if (pcase != NULL) {
        CHECK(strcmp(pcase, "p2p") == 0 || strcmp(pcase, "p2p_known") == 0);
        p2p_case(ctx, strcmp(pcase, "p2p_known") == 0);
        test_finish(ctx, "pid_check");
        return 0;
    }
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
    for (size_t i = 0; i < (getenv("COHORT_ALGO_REDUCE_SCATTER") ? COUNT / (size_t)n : COUNT);
         i++) {
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
