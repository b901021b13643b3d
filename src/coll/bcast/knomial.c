/*
 * K-nomial tree broadcast (radix 4), any root. Ranks are renumbered relative to the root
 * (vr = rank - root mod n); the parent of vr clears its lowest non-zero base-k digit, and its
 * children add j * k^p (j = 1..k-1) at each digit position p below that one, biggest subtree
 * first. ceil(log_k n) levels.
 *
 * Messages larger than one segment are cut into segments that are forwarded as soon as each
 * arrives, so the levels of the tree work at the same time. Every receive is posted at once so
 * that nothing arrives unexpected (an unexpected eager message costs a copy).
 */
#include "coll/coll.h"
#include "coll/pattern/knomial.h"
#include "core/comm.h"

#define KNOMIAL_RADIX   4
#define KNOMIAL_SEGMENT (1024 * 1024)

typedef enum { KNOMIAL_POST, KNOMIAL_FORWARD, KNOMIAL_WAIT } knomial_phase_t;

typedef struct {
    cohort_coll_base_t base;
    knomial_phase_t phase;
    int parent; /* group rank; -1 at the root */
    int nchildren;
    int nseg;
    int forwarded; /* segments sent on to every child */
    size_t bytes;
    int *children; /* group ranks, [max children], after the xfers */
    /* xfers: nseg receives, then nseg * nchildren sends (segment-major) */
} knomial_state_t;

static int knomial_nseg(size_t bytes)
{
    return bytes == 0 ? 0 : (int)((bytes + KNOMIAL_SEGMENT - 1) / KNOMIAL_SEGMENT);
}

static size_t knomial_state_size(const cohort_coll_args_t *args, int gsize)
{
    int maxc = cohort_knomial_max_children(gsize, KNOMIAL_RADIX);
    int nseg = knomial_nseg(args->count * args->esize);

    /* the xfers first, where they are aligned */
    return sizeof(knomial_state_t) + (size_t)nseg * (size_t)(1 + maxc) * sizeof(cohort_xfer_t) +
           (size_t)maxc * sizeof(int);
}

static cohort_status_t knomial_start(cohort_request_t *req)
{
    knomial_state_t *s = req->state;
    const cohort_comm_t *g = req->comm;
    int n = g->size, root = s->base.args.root;
    int maxc = cohort_knomial_max_children(n, KNOMIAL_RADIX);

    s->bytes = s->base.args.count * s->base.args.esize;
    s->nseg = knomial_nseg(s->bytes);
    s->base.xfers = (cohort_xfer_t *)(s + 1);
    s->children = (int *)(s->base.xfers + s->nseg * (1 + maxc));
    cohort_knomial_tree(n, g->rank, root, KNOMIAL_RADIX, &s->parent, s->children, &s->nchildren);
    /* Farthest subtrees first: they have the most levels still to go. */
    for (int i = 0, j = s->nchildren - 1; i < j; i++, j--) {
        int c = s->children[i];
        s->children[i] = s->children[j];
        s->children[j] = c;
    }
    s->base.nxfers = s->nseg * (1 + s->nchildren);
    s->phase = KNOMIAL_POST;
    return COHORT_OK;
}

static cohort_status_t knomial_progress(cohort_request_t *req)
{
    knomial_state_t *s = req->state;
    cohort_xfer_t *recvs = s->base.xfers, *sends = s->base.xfers + s->nseg;
    char *buf = s->base.args.rbuf;
    cohort_status_t status;

    switch (s->phase) {
    case KNOMIAL_POST:
        for (int i = 0; i < s->nseg && s->parent >= 0; i++) {
            size_t off = (size_t)i * KNOMIAL_SEGMENT;
            size_t len = s->bytes - off < KNOMIAL_SEGMENT ? s->bytes - off : KNOMIAL_SEGMENT;
            status = cohort_coll_recv(req, &recvs[i], s->parent, i, buf + off, len);
            if (status != COHORT_OK) {
                return status;
            }
        }
        s->phase = KNOMIAL_FORWARD;
        /* fall through */
    case KNOMIAL_FORWARD:
        while (s->forwarded < s->nseg) {
            int i = s->forwarded;
            size_t off = (size_t)i * KNOMIAL_SEGMENT;
            size_t len = s->bytes - off < KNOMIAL_SEGMENT ? s->bytes - off : KNOMIAL_SEGMENT;
            if (s->parent >= 0) {
                status = cohort_coll_xfers_status(&recvs[i], 1);
                if (status != COHORT_OK) {
                    return status;
                }
            }
            for (int c = 0; c < s->nchildren; c++) {
                status = cohort_coll_send(req, &sends[i * s->nchildren + c], s->children[c], i,
                                          buf + off, len);
                if (status != COHORT_OK) {
                    return status;
                }
            }
            s->forwarded++;
        }
        s->phase = KNOMIAL_WAIT;
        /* fall through */
    case KNOMIAL_WAIT:
        /* the root posts no receives */
        return s->parent >= 0 ? cohort_coll_xfers_status(s->base.xfers, s->base.nxfers)
                              : cohort_coll_xfers_status(sends, s->nseg * s->nchildren);
    }
    return COHORT_ERR_INVALID_ARG; /* not reached */
}

static int knomial_peers(const cohort_coll_args_t *a, int n, int me, int *out, int max)
{
    int parent, nchildren, children[64];

    if (a->count == 0 || cohort_knomial_max_children(n, KNOMIAL_RADIX) > 64) {
        return 0;
    }
    cohort_knomial_tree(n, me, a->root, KNOMIAL_RADIX, &parent, children, &nchildren);
    for (int i = 0; i < nchildren && i < max; i++) {
        out[i] = children[i];
    }
    return nchildren < max ? nchildren : max;
}

const cohort_coll_algo_t cohort_bcast_knomial = {
    .name = "knomial",
    .description = "radix-4 k-nomial tree, any root; 1 MiB segments forwarded on arrival",
    .coll = COHORT_COLL_BCAST,
    .id = 1,
    .state_size = knomial_state_size,
    .start = knomial_start,
    .progress = knomial_progress,
    .peers = knomial_peers,
    .device_ok = 1,
};
