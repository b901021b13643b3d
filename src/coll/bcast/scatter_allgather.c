/*
 * Broadcast for large messages (van de Geijn): the buffer is cut into n chunks, chunk c
 * belonging to relative rank c (vr = rank - root mod n). A binomial scatter from the root gives
 * each rank the chunks of its subtree, [vr, vr + sub(vr)); a ring allgather then circulates
 * them. Each rank moves about 2 * bytes in total, against bytes * log n for a tree.
 *
 * In the ring, step i sends chunk vr - i to the right neighbour, which skips (on both sides)
 * the chunks that neighbour already holds from the scatter, and empty chunks. A chunk is sent
 * on as soon as it is here, so the ring needs no lockstep.
 */
#include "coll/coll.h"
#include "core/comm.h"

typedef enum { SAG_POST, SAG_SCATTER, SAG_RING, SAG_WAIT } sag_phase_t;

typedef struct {
    cohort_coll_base_t base;
    sag_phase_t phase;
    int vr;
    int nscatter; /* scatter sends posted */
    int ring;     /* ring steps whose send is handled */
    size_t bytes;
    size_t chunk;
    /* xfers: [0] scatter receive, [1 .. 1+log2 n) scatter sends,
     * then n-1 ring receives, then n-1 ring sends */
} sag_state_t;

static int sag_log2(int n)
{
    int l = 0;

    while ((1L << l) < n) {
        l++;
    }
    return l;
}

static size_t sag_state_size(const cohort_coll_args_t *args, int gsize)
{
    int nx = 1 + sag_log2(gsize) + 2 * (gsize - 1);

    return sizeof(sag_state_t) + (size_t)nx * sizeof(cohort_xfer_t);
}

/* Chunks relative rank v holds after the scatter: [v, v + sub). */
static int sag_sub(int v, int n)
{
    int low = v & -v;

    return v == 0 ? n : (low < n - v ? low : n - v);
}

static int sag_has(int v, int c, int n)
{
    return c >= v && c < v + sag_sub(v, n);
}

/* Where chunk c starts (chunks past the end are empty). */
static size_t sag_off(const sag_state_t *s, int c)
{
    size_t off = (size_t)c * s->chunk;

    return off < s->bytes ? off : s->bytes;
}

static cohort_xfer_t *sag_ring_recv(sag_state_t *s, int n, int i)
{
    return &s->base.xfers[1 + sag_log2(n) + i];
}

static cohort_xfer_t *sag_ring_send(sag_state_t *s, int n, int i)
{
    return &s->base.xfers[1 + sag_log2(n) + (n - 1) + i];
}

static cohort_status_t sag_start(cohort_request_t *req)
{
    sag_state_t *s = req->state;
    int n = req->comm->size;

    s->base.xfers = (cohort_xfer_t *)(s + 1);
    s->base.nxfers = 1 + sag_log2(n) + 2 * (n - 1);
    s->bytes = s->base.args.count * s->base.args.esize;
    s->chunk = (s->bytes + (size_t)n - 1) / (size_t)n;
    s->vr = (req->comm->rank - s->base.args.root + n) % n;
    s->phase = SAG_POST;
    return COHORT_OK;
}

static int sag_rank(const sag_state_t *s, int v, int n)
{
    return (v + s->base.args.root) % n;
}

static cohort_status_t sag_progress(cohort_request_t *req)
{
    sag_state_t *s = req->state;
    int n = req->comm->size, vr = s->vr;
    char *buf = s->base.args.rbuf;
    cohort_xfer_t *x = s->base.xfers;
    cohort_status_t status;

    switch (s->phase) {
    case SAG_POST:
        if (s->bytes == 0) {
            return COHORT_OK;
        }
        if (vr != 0) {
            size_t lo = sag_off(s, vr), hi = sag_off(s, vr + sag_sub(vr, n));
            if (hi > lo) {
                status = cohort_coll_recv(req, &x[0], sag_rank(s, vr - (vr & -vr), n), 0, buf + lo,
                                          hi - lo);
                if (status != COHORT_OK) {
                    return status;
                }
            }
        }
        for (int i = 0; i < n - 1; i++) {
            int c = ((vr - i - 1) % n + n) % n;
            size_t lo = sag_off(s, c), hi = sag_off(s, c + 1);
            if (!sag_has(vr, c, n) && hi > lo) {
                status = cohort_coll_recv(req, sag_ring_recv(s, n, i), sag_rank(s, vr - 1 + n, n),
                                          1 + i, buf + lo, hi - lo);
                if (status != COHORT_OK) {
                    return status;
                }
            }
        }
        s->phase = SAG_SCATTER;
        /* fall through */
    case SAG_SCATTER:
        if (x[0].req == req) {
            status = cohort_coll_xfers_status(&x[0], 1);
            if (status != COHORT_OK) {
                return status;
            }
        }
        {
            int top = vr == 0 ? 1 << (sag_log2(n) > 0 ? sag_log2(n) - 1 : 0) : (vr & -vr) / 2;
            for (int m = top; m >= 1 && n > 1; m /= 2) {
                int child = vr + m;
                size_t lo, hi;
                if (child >= n) {
                    continue;
                }
                lo = sag_off(s, child);
                hi = sag_off(s, child + sag_sub(child, n));
                if (hi > lo) {
                    status = cohort_coll_send(req, &x[1 + s->nscatter++], sag_rank(s, child, n), 0,
                                              buf + lo, hi - lo);
                    if (status != COHORT_OK) {
                        return status;
                    }
                }
            }
        }
        s->phase = SAG_RING;
        /* fall through */
    case SAG_RING:
        while (s->ring < n - 1) {
            int i = s->ring, right = (vr + 1) % n;
            int c = ((vr - i) % n + n) % n;
            size_t lo = sag_off(s, c), hi = sag_off(s, c + 1);
            if (!sag_has(right, c, n) && hi > lo) {
                /* Chunk c is here from the scatter, or arrives at ring step i - 1. */
                if (!sag_has(vr, c, n)) {
                    status = cohort_coll_xfers_status(sag_ring_recv(s, n, i - 1), 1);
                    if (status != COHORT_OK) {
                        return status;
                    }
                }
                status = cohort_coll_send(req, sag_ring_send(s, n, i), sag_rank(s, right, n), 1 + i,
                                          buf + lo, hi - lo);
                if (status != COHORT_OK) {
                    return status;
                }
            }
            s->ring++;
        }
        s->phase = SAG_WAIT;
        /* fall through */
    case SAG_WAIT:
        /* Transfers never posted are zeroed, hence "done" is 0: check only posted ones. */
        for (int i = 0; i < s->base.nxfers; i++) {
            if (x[i].req == req) {
                status = cohort_coll_xfers_status(&x[i], 1);
                if (status != COHORT_OK) {
                    return status;
                }
            }
        }
        return COHORT_OK;
    }
    return COHORT_ERR_INVALID_ARG; /* not reached */
}

const cohort_coll_algo_t cohort_bcast_scatter_allgather = {
    .name = "scatter_allgather",
    .description = "binomial scatter of n chunks from the root, then a ring allgather",
    .coll = COHORT_COLL_BCAST,
    .id = 2,
    .state_size = sag_state_size,
    .start = sag_start,
    .progress = sag_progress,
    .device_ok = 1,
};
