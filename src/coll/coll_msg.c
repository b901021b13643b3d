/*
 * What every message-based algorithm is made of: a transfer named by the collective's number
 * and the algorithm's step, a flat round, the transfers' joint status, the peers a ring or a
 * distance pattern sends to (wired ahead, cohort_coll_announce).
 */
#include "coll/coll.h"
#include "coll/coll_reduce.h"
#include "core/am.h"

cohort_status_t cohort_coll_send(cohort_request_t *req, cohort_xfer_t *x, int peer, int step,
                                 const void *buf, size_t len)
{
    cohort_coll_base_t *b = cohort_coll_base(req);

    b->step = step;
    return cohort_xfer_send(req, x, peer, COHORT_MSG_COLL, b->seq, step,
                            b->algo->ident ? 0 : b->fingerprint, buf, len);
}

cohort_status_t cohort_coll_recv(cohort_request_t *req, cohort_xfer_t *x, int peer, int step,
                                 void *buf, size_t len)
{
    cohort_coll_base_t *b = cohort_coll_base(req);

    b->step = step;
    return cohort_xfer_recv(req, x, peer, COHORT_MSG_COLL, b->seq, step,
                            b->algo->ident ? 0 : b->fingerprint, buf, len);
}

cohort_status_t cohort_coll_flat_round(cohort_request_t *req, cohort_xfer_t *x, int *posted,
                                       int step, int root, void *rx, size_t rx_each, const void *tx,
                                       size_t tx_len)
{
    int n = req->comm->size, me = req->comm->rank;
    cohort_status_t status = COHORT_OK;

    for (int k = 0; k < n && !*posted && status == COHORT_OK; k++) {
        if (k == me) {
            continue;
        }
        if (root < 0 || k == root) {
            status =
                cohort_coll_recv(req, &x[k], k, step, (char *)rx + (size_t)k * rx_each, rx_each);
        }
        if ((root < 0 || me == root) && status == COHORT_OK) {
            status = cohort_coll_send(req, &x[n + k], k, step, tx, tx_len);
        }
    }
    if (status != COHORT_OK) {
        return status;
    }
    *posted = 1;
    status = cohort_coll_xfers_wait(x, 2 * n);
    if (status == COHORT_OK) {
        *posted = 0;
    }
    return status;
}

cohort_status_t cohort_coll_xfers_status(const cohort_xfer_t *xs, int n)
{
    for (int i = 0; i < n; i++) {
        if (!xs[i].done) {
            return COHORT_INPROGRESS;
        }
    }
    for (int i = 0; i < n; i++) {
        if (xs[i].status != COHORT_OK) {
            return xs[i].status;
        }
    }
    return COHORT_OK;
}

int cohort_coll_peers_ring(const cohort_coll_args_t *a, int n, int me, int *out, int max)
{
    if (a->count == 0 || n < 2 || max < 1) {
        return 0;
    }
    out[0] = (me + 1) % n;
    return 1;
}

int cohort_coll_peers_dist(int n, int me, int sign, int *out, int max)
{
    int k = 0;

    for (int d = 1; d < n && k < max; d *= 2) {
        out[k++] = ((me + sign * d) % n + n) % n;
    }
    return k;
}
