/*
 * Pairwise alltoall for large blocks: at step k (1 <= k < n) each rank sends its block for
 * rank me + k and receives the block from rank me - k, straight between the user's buffers.
 * A window of steps is in flight at once, enough to keep the links busy without every rank
 * hammering every peer together. In place, the input is first copied to scratch.
 */
#include <stdlib.h>
#include <string.h>
#include "coll/coll.h"
#include "mem/scratch.h"
#include "core/comm.h"

/* No phase enum: the whole state is a sliding window, (done, posted], which a switch would
 * only obscure. */
typedef struct {
    cohort_coll_base_t base;
    int posted; /* steps 1..posted are posted */
    int done;   /* steps 1..done are complete */
    size_t blk;
    const char *src;
    char *scratch; /* the input, in place */
    /* xfers: step k's receive at 2(k-1), its send at 2(k-1)+1 */
} a2a_pw_state_t;

static size_t a2a_pw_state_size(const cohort_coll_args_t *args, int gsize)
{
    return sizeof(a2a_pw_state_t) + 2 * (size_t)(gsize - 1) * sizeof(cohort_xfer_t);
}

static cohort_status_t a2a_pw_start(cohort_request_t *req)
{
    a2a_pw_state_t *s = req->state;
    const cohort_comm_t *g = req->comm;
    const cohort_coll_args_t *a = &s->base.args;
    size_t my = (size_t)g->rank * a->count * a->esize;

    s->blk = a->count * a->esize;
    s->base.xfers = (cohort_xfer_t *)(s + 1);
    s->base.nxfers = 2 * (g->size - 1);
    if (s->blk == 0) {
        return COHORT_OK;
    }
    if (a->sbuf == COHORT_IN_PLACE) {
        if (g->size > 1) {
            s->scratch = cohort_coll_mem_scratch(req, (size_t)g->size * s->blk);
            if (s->scratch == NULL) {
                return COHORT_ERR_NO_MEMORY;
            }
            cohort_coll_mem_copy(req, s->scratch, a->rbuf, (size_t)g->size * s->blk);
        }
        s->src = s->scratch;
    } else {
        s->src = a->sbuf;
        cohort_coll_mem_copy(req, (char *)a->rbuf + my, s->src + my, s->blk);
    }
    return COHORT_OK;
}

static cohort_status_t a2a_pw_progress(cohort_request_t *req)
{
    a2a_pw_state_t *s = req->state;
    const cohort_comm_t *g = req->comm;
    int n = g->size, me = g->rank;
    char *rbuf = s->base.args.rbuf;
    cohort_xfer_t *x = s->base.xfers;
    cohort_status_t status;

    if (s->blk == 0) {
        return COHORT_OK;
    }
    for (;;) {
        while (s->done < n - 1) {
            status = cohort_coll_xfers_status(&x[2 * s->done], 2);
            if (status == COHORT_INPROGRESS) {
                break;
            }
            if (status != COHORT_OK) {
                return status;
            }
            s->done++;
        }
        if (s->done == n - 1) {
            return COHORT_OK;
        }
        if (s->posted == n - 1 || s->posted - s->done >= (int)cohort_coll_knob(req, 0)) {
            return COHORT_INPROGRESS;
        }
        while (s->posted < n - 1 && s->posted - s->done < (int)cohort_coll_knob(req, 0)) {
            int k = s->posted + 1, to = (me + k) % n, from = (me - k + n) % n;
            status = cohort_coll_recv(req, &x[2 * (k - 1)], from, k, rbuf + (size_t)from * s->blk,
                                      s->blk);
            if (status != COHORT_OK) {
                return status;
            }
            status = cohort_coll_send(req, &x[2 * (k - 1) + 1], to, k, s->src + (size_t)to * s->blk,
                                      s->blk);
            if (status != COHORT_OK) {
                return status;
            }
            s->posted++;
        }
    }
}

static void a2a_pw_cleanup(cohort_request_t *req)
{
    a2a_pw_state_t *s = req->state;

    cohort_coll_mem_release(req, s->scratch);
    s->scratch = NULL;
}

const cohort_coll_algo_t cohort_alltoall_pairwise = {
    .name = "pairwise",
    .description = "n-1 steps, send to rank+k and receive from rank-k, 4 steps in flight",
    .coll = COHORT_COLL_ALLTOALL,
    .id = 6,
    .state_size = a2a_pw_state_size,
    .start = a2a_pw_start,
    .progress = a2a_pw_progress,
    .cleanup = a2a_pw_cleanup,
    .nknobs = 1,
    .knobs = {{"window", "COHORT_ALGO_ALLTOALL_PAIRWISE_WINDOW", 4, 1, 1024, 0,
               "exchange steps in flight; 4 matched Bruck at 8 B up to 8 ranks here"}},
    .device_ok = 1,
};
