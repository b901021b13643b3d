/*
 * Bruck alltoall: ceil(log2 n) rounds for any n, for small blocks. Each rank first rotates its
 * input so that slot i holds the block for rank me + i. In round k (dist = 2^k) it packs the
 * slots whose index has bit k set, sends them to rank me + dist, and unpacks what rank
 * me - dist sent into the same slots. After the last round slot i holds the block from rank
 * me - i, and one local pass puts the blocks in rank order. Each round has its own pack and
 * receive areas, so every receive is posted up front and a round's send never waits for the
 * previous one to drain. Works in place: the input is copied out before rbuf is written.
 */
#include <stdlib.h>
#include <string.h>
#include "coll/coll.h"
#include "mem/scratch.h"
#include "core/comm.h"

typedef enum { A2A_BRUCK_POST, A2A_BRUCK_SEND, A2A_BRUCK_WAIT } a2a_bruck_phase_t;

typedef struct {
    cohort_coll_base_t base;
    a2a_bruck_phase_t phase;
    int rounds;
    int sent;     /* rounds whose send is posted */
    int unpacked; /* rounds whose receive is unpacked into tmp */
    size_t blk;
    char *tmp;     /* n slots */
    char *scratch; /* tmp, then each round's pack area and receive area */
    size_t *area;  /* [rounds]: offset of round k's pack area in scratch (receive area follows) */
    /* then: area[rounds], xfers: rounds receives, then rounds sends */
} a2a_bruck_state_t;

static int a2a_bruck_rounds(int n)
{
    int r = 0;

    while ((1L << r) < n) {
        r++;
    }
    return r;
}

/* Slots with bit @a dist set. */
static size_t a2a_bruck_nslots(int n, int dist)
{
    size_t c = 0;

    for (int i = 0; i < n; i++) {
        c += (i & dist) != 0;
    }
    return c;
}

static size_t a2a_bruck_state_size(const cohort_coll_args_t *args, int gsize)
{
    size_t r = (size_t)a2a_bruck_rounds(gsize);

    return sizeof(a2a_bruck_state_t) + r * sizeof(size_t) + 2 * r * sizeof(cohort_xfer_t);
}

static cohort_status_t a2a_bruck_start(cohort_request_t *req)
{
    a2a_bruck_state_t *s = req->state;
    const cohort_comm_t *g = req->comm;
    const cohort_coll_args_t *a = &s->base.args;
    int n = g->size, me = g->rank;
    const char *in;
    size_t total;

    s->blk = a->count * a->esize;
    s->rounds = a2a_bruck_rounds(n);
    s->area = (size_t *)(s + 1);
    s->base.xfers = (cohort_xfer_t *)(s->area + s->rounds);
    s->base.nxfers = 2 * s->rounds;
    s->phase = A2A_BRUCK_POST;
    if (s->blk == 0) {
        return COHORT_OK;
    }
    total = (size_t)n * s->blk;
    for (int k = 0; k < s->rounds; k++) {
        s->area[k] = total;
        total += 2 * a2a_bruck_nslots(n, 1 << k) * s->blk;
    }
    s->scratch = cohort_coll_mem_scratch(req, total);
    if (s->scratch == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    s->tmp = s->scratch;
    in = a->sbuf == COHORT_IN_PLACE ? a->rbuf : a->sbuf;
    cohort_coll_mem_copy(req, s->tmp, in + (size_t)me * s->blk, (size_t)(n - me) * s->blk);
    cohort_coll_mem_copy(req, s->tmp + (size_t)(n - me) * s->blk, in, (size_t)me * s->blk);
    return COHORT_OK;
}

/* Move round k's slots between tmp and its pack (to_pack) or receive area. */
static void a2a_bruck_copy(cohort_request_t *req, int n, int k, int to_pack)
{
    a2a_bruck_state_t *s = req->state;
    int dist = 1 << k;
    size_t nslots = a2a_bruck_nslots(n, dist);
    char *area = s->scratch + s->area[k] + (to_pack ? 0 : nslots * s->blk);

    for (int i = 0; i < n; i++) {
        if (i & dist) {
            char *slot = s->tmp + (size_t)i * s->blk;
            if (to_pack) {
                cohort_coll_mem_copy(req, area, slot, s->blk);
            } else {
                cohort_coll_mem_copy(req, slot, area, s->blk);
            }
            area += s->blk;
        }
    }
}

/* Unpack every round received so far that the next step depends on. */
static cohort_status_t a2a_bruck_unpack_until(cohort_request_t *req, int n, int upto)
{
    a2a_bruck_state_t *s = req->state;
    cohort_xfer_t *recvs = s->base.xfers;
    cohort_status_t status;

    while (s->unpacked < upto) {
        status = cohort_coll_xfers_status(&recvs[s->unpacked], 1);
        if (status != COHORT_OK) {
            return status;
        }
        a2a_bruck_copy(req, n, s->unpacked, 0);
        s->unpacked++;
    }
    return COHORT_OK;
}

static cohort_status_t a2a_bruck_progress(cohort_request_t *req)
{
    a2a_bruck_state_t *s = req->state;
    const cohort_comm_t *g = req->comm;
    int n = g->size, me = g->rank;
    cohort_xfer_t *recvs = s->base.xfers, *sends = s->base.xfers + s->rounds;
    char *rbuf = s->base.args.rbuf;
    cohort_status_t status;

    if (s->blk == 0) {
        return COHORT_OK;
    }
    switch (s->phase) {
    case A2A_BRUCK_POST:
        for (int k = 0; k < s->rounds; k++) {
            size_t len = a2a_bruck_nslots(n, 1 << k) * s->blk;
            status = cohort_coll_recv(req, &recvs[k], (me - (1 << k) + n) % n, k,
                                      s->scratch + s->area[k] + len, len);
            if (status != COHORT_OK) {
                return status;
            }
        }
        s->phase = A2A_BRUCK_SEND;
        /* fall through */
    case A2A_BRUCK_SEND:
        while (s->sent < s->rounds) {
            int k = s->sent;
            status = a2a_bruck_unpack_until(req, n, k);
            if (status != COHORT_OK) {
                return status;
            }
            a2a_bruck_copy(req, n, k, 1);
            status =
                cohort_coll_send(req, &sends[k], (me + (1 << k)) % n, k, s->scratch + s->area[k],
                                 a2a_bruck_nslots(n, 1 << k) * s->blk);
            if (status != COHORT_OK) {
                return status;
            }
            s->sent++;
        }
        s->phase = A2A_BRUCK_WAIT;
        /* fall through */
    case A2A_BRUCK_WAIT:
        status = a2a_bruck_unpack_until(req, n, s->rounds);
        if (status != COHORT_OK) {
            return status;
        }
        status = cohort_coll_xfers_status(s->base.xfers, s->base.nxfers);
        if (status != COHORT_OK) {
            return status;
        }
        /* slot i came from rank me - i */
        for (int i = 0; i < n; i++) {
            cohort_coll_mem_copy(req, rbuf + (size_t)((me - i + n) % n) * s->blk,
                                 s->tmp + (size_t)i * s->blk, s->blk);
        }
        return COHORT_OK;
    }
    return COHORT_ERR_INVALID_ARG; /* not reached */
}

static void a2a_bruck_cleanup(cohort_request_t *req)
{
    a2a_bruck_state_t *s = req->state;

    cohort_coll_mem_release(req, s->scratch);
    s->scratch = NULL;
}

static int a2a_bruck_peers(const cohort_coll_args_t *a, int n, int me, int *out, int max)
{
    return a->count == 0 ? 0 : cohort_coll_peers_dist(n, me, 1, out, max);
}

const cohort_coll_algo_t cohort_alltoall_bruck = {
    .name = "bruck",
    .description = "ceil(log2 n) rounds with packing, any n; for small blocks",
    .coll = COHORT_COLL_ALLTOALL,
    .id = 5,
    .state_size = a2a_bruck_state_size,
    .start = a2a_bruck_start,
    .progress = a2a_bruck_progress,
    .cleanup = a2a_bruck_cleanup,
    .peers = a2a_bruck_peers,
    .device_ok = 1,
};
