#include <stdlib.h>
#include <string.h>
#include "coll/coll.h"
#include "coll/coll_reduce.h"
#include "coll/shm_seg.h"
#include "core/am.h"
#include "core/context.h"
#include "core/log.h"
#include "core/endpoint.h"
#include "mem/gpu.h"
#include "reduce/reduce.h"

cohort_status_t cohort_coll_send(cohort_request_t *req, cohort_xfer_t *x, int peer, int step,
                                 const void *buf, size_t len)
{
    cohort_coll_base_t *b = cohort_coll_base(req);

    b->step = step;
    return cohort_xfer_send(req, x, peer, COHORT_MSG_COLL, b->seq, step, b->algo->ident ? 0 : b->fp,
                            buf, len);
}

cohort_status_t cohort_coll_recv(cohort_request_t *req, cohort_xfer_t *x, int peer, int step,
                                 void *buf, size_t len)
{
    cohort_coll_base_t *b = cohort_coll_base(req);

    b->step = step;
    return cohort_xfer_recv(req, x, peer, COHORT_MSG_COLL, b->seq, step, b->algo->ident ? 0 : b->fp,
                            buf, len);
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

/* Same on every member that called the same collective with the same arguments. */
static uint32_t cohort_coll_fingerprint(const cohort_coll_args_t *a)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    uint64_t parts[5] = {(uint64_t)a->coll, (uint64_t)a->dt, (uint64_t)a->op, (uint64_t)a->count,
                         (uint64_t)(int64_t)a->root};

    for (int i = 0; i < 5; i++) {
        h ^= parts[i];
        h *= 0x100000001b3ULL;
        h ^= h >> 29;
    }
    return (uint32_t)(h ^ (h >> 32));
}

static int cohort_coll_has_op(cohort_coll_type_t c)
{
    return c == COHORT_COLL_REDUCE || c == COHORT_COLL_ALLREDUCE || c == COHORT_COLL_REDUCE_SCATTER;
}

static int cohort_coll_has_root(cohort_coll_type_t c)
{
    return c == COHORT_COLL_BCAST || c == COHORT_COLL_REDUCE;
}

static cohort_status_t cohort_coll_validate(const cohort_comm_t *g, cohort_coll_args_t *a)
{
    const char *name = cohort_coll_names[a->coll];
    cohort_status_t status;

    if (a->coll == COHORT_COLL_BARRIER) {
        return COHORT_OK;
    }
    /* COHORT_IN_PLACE stands for "my input is in rbuf": never a buffer to write into. */
    if (a->rbuf == COHORT_IN_PLACE) {
        cohort_error(g->ctx, "cohort_%s: COHORT_IN_PLACE is not a %s", name,
                     a->coll == COHORT_COLL_BCAST ? "buffer (buf)" : "receive buffer (rbuf)");
        return COHORT_ERR_INVALID_ARG;
    }
    a->esize = cohort_dtype_size(a->dt);
    if (a->esize == 0) {
        cohort_error(g->ctx, "cohort_%s: unknown dtype %d", name, (int)a->dt);
        return COHORT_ERR_INVALID_ARG;
    }
    if (cohort_coll_has_op(a->coll)) {
        status = cohort_reduce_check(a->dt, a->op);
        if (status != COHORT_OK) {
            cohort_error(g->ctx, "cohort_%s: op %d (%s) is not valid for dtype %s", name,
                         (int)a->op, cohort_op_name(a->op), cohort_dtype_name(a->dt));
            return status;
        }
    }
    if (cohort_coll_has_root(a->coll) && (a->root < 0 || a->root >= g->size)) {
        cohort_error(g->ctx, "cohort_%s: root %d is out of range for a group of %d", name, a->root,
                     g->size);
        return COHORT_ERR_INVALID_ARG;
    }
    if (a->count > 0) {
        int rbuf_needed = a->coll != COHORT_COLL_REDUCE || a->root == g->rank;
        if (a->sbuf == NULL && a->coll != COHORT_COLL_BCAST) {
            cohort_error(g->ctx, "cohort_%s: sbuf is NULL with count %zu", name, a->count);
            return COHORT_ERR_INVALID_ARG;
        }
        if (a->rbuf == NULL && rbuf_needed) {
            cohort_error(g->ctx, "cohort_%s: %s is NULL with count %zu", name,
                         a->coll == COHORT_COLL_BCAST ? "buf" : "rbuf", a->count);
            return COHORT_ERR_INVALID_ARG;
        }
        if (a->sbuf == COHORT_IN_PLACE && a->coll == COHORT_COLL_REDUCE && a->root != g->rank) {
            cohort_error(g->ctx, "cohort_reduce: COHORT_IN_PLACE is valid at the root only");
            return COHORT_ERR_INVALID_ARG;
        }
    }
    if (a->count > SIZE_MAX / a->esize / (size_t)g->size) {
        cohort_error(g->ctx, "cohort_%s: count %zu overflows", name, a->count);
        return COHORT_ERR_INVALID_ARG;
    }
    return COHORT_OK;
}

static cohort_status_t cohort_coll_ops_progress(cohort_request_t *req)
{
    cohort_coll_base_t *b = cohort_coll_base(req);
    cohort_status_t status = cohort_coll_schedule_progress(req);

    /* A collective that fails has spent its number on this rank and maybe not on the others:
     * they are out of step, and the group says so from now on. A mismatch, or an error the
     * members agreed on, is reported alike on every member, which stay in step. */
    if (status != COHORT_OK && status != COHORT_INPROGRESS && status != COHORT_ERR_MISMATCH &&
        !b->agreed && req->comm != NULL) {
        cohort_comm_revoke(req->comm, status, "a collective failed");
    }
    return status;
}

static void cohort_coll_ops_release(cohort_request_t *req)
{
    cohort_coll_base_t *b = cohort_coll_base(req);
    const cohort_coll_algo_t *algo = b->algo;

    if (b->stream_mark != 0) {
        /* cancelled before the stream got there, which it may never do */
        cohort_gpu_mark_drop(req->ctx, b->stream_mark);
        b->stream_mark = 0;
    }
    if (algo != NULL && algo->cleanup != NULL) {
        algo->cleanup(req);
    }
    cohort_coll_stage_release(req);
}

/* Append the members this request's unfinished transfers of one direction wait on. */
static size_t cohort_coll_describe_peers(const cohort_request_t *req, int sends, char *buf,
                                         size_t len, size_t used)
{
    const cohort_coll_base_t *b = (const cohort_coll_base_t *)req->state;
    const cohort_comm_t *g = req->comm;
    int n = 0;

    for (int i = 0; i < b->nxfers && used < len; i++) {
        const cohort_xfer_t *x = &b->xfers[i];
        if (x->req != req || x->done || x->is_send != sends) {
            continue;
        }
        used += (size_t)snprintf(
            buf + used, len - used, "%s%s group rank %d (world %d)", n == 0 ? "; " : ",",
            n == 0 ? (sends ? "sends not finished to" : "not yet heard from") : "", x->peer,
            g ? cohort_comm_world_rank(g, x->peer) : -1);
        n++;
    }
    return used;
}

static void cohort_coll_ops_describe(const cohort_request_t *req, char *buf, size_t len)
{
    const cohort_coll_base_t *b = (const cohort_coll_base_t *)req->state;
    const cohort_comm_t *g = req->comm;
    size_t used;

    /* steps below 0 are the agreement's (COHORT_CHECK, the CUDA IPC vote): no data yet */
    used = (size_t)snprintf(
        buf, len, "%s (%s%s%s, collective #%u) on group '%s' 0x%016llx, step %d",
        cohort_coll_names[b->args.coll], b->algo->name, b->vote_algo != NULL ? " or " : "",
        b->vote_algo != NULL ? b->vote_algo->name : "", b->seq, g ? g->label : "?",
        (unsigned long long)(g ? g->id : 0), b->step);
    if (cohort_coll_schedule_now(b) != NULL && used < len) {
        used += (size_t)snprintf(buf + used, len - used, "; %s", cohort_coll_schedule_now(b));
    }
    /* The receives first: the members not heard from are the ones to look at. */
    used = cohort_coll_describe_peers(req, 0, buf, len, used);
    used = cohort_coll_describe_peers(req, 1, buf, len, used);
    if (b->algo->describe != NULL && used < len) {
        b->algo->describe(req, buf, len, used);
    }
}

/* A collective cancelled half way leaves the other members waiting on steps this rank will
 * never take, and their messages arriving for nothing: the group is out of step. */
static void cohort_coll_ops_cancel(cohort_request_t *req, cohort_status_t status)
{
    const cohort_coll_base_t *b = cohort_coll_base(req);

    /* An error every member agreed on leaves them in step: nothing to abandon or revoke. */
    if (req->comm == NULL || status == COHORT_ERR_MISMATCH || b->agreed) {
        return;
    }
    if (b->algo != NULL && b->algo->abandon != NULL) {
        b->algo->abandon(req, status);
    }
    cohort_comm_revoke(req->comm, status, "a collective was cancelled");
}

static const cohort_request_ops_t cohort_coll_ops = {
    .name = "collective",
    .progress = cohort_coll_ops_progress,
    .cancel = cohort_coll_ops_cancel,
    .release = cohort_coll_ops_release,
    .describe = cohort_coll_ops_describe,
};

int cohort_coll_node_local(cohort_comm_t *g)
{
    cohort_context_t *ctx = g->ctx;

    if (g->node_local == 0) {
        g->node_local = 1;
        for (int k = 0; k < g->size && g->node_local > 0; k++) {
            cohort_peer_t *peer = cohort_peer_get(ctx, cohort_comm_world_rank(g, k));
            if (peer == NULL || (peer->rank != ctx->rank && !cohort_peer_same_node(peer))) {
                g->node_local = -1;
            }
        }
    }
    if (g->node_local < 0 || g->node_off || !ctx->cma_direct) {
        return 0;
    }
    return COHORT_NODE_DIRECT | (ctx->cfg.check || !ctx->fd_share ? 0 : COHORT_NODE_SHM);
}

/* Start wiring every peer the algorithm will send to, so the lookups overlap. */
static void cohort_coll_announce(cohort_comm_t *g, const cohort_coll_args_t *a,
                                 const cohort_coll_algo_t *algo)
{
    int peers[64];
    int n;

    if (algo->peers == NULL || g->state != COHORT_COMM_READY) {
        return;
    }
    n = algo->peers(a, g->size, g->rank, peers, 64);
    for (int i = 0; i < n && i < 64; i++) {
        cohort_peer_t *peer = cohort_peer_get(g->ctx, cohort_comm_world_rank(g, peers[i]));
        if (peer != NULL) {
            cohort_peer_want(peer);
        }
    }
}

/* A local failure once the call was valid (no request, staging out of memory, a CUDA error, the
 * caller's stream not marked): the other members post this call and wait for this rank, and
 * this rank's next call would take their number for another. The number is spent and the
 * group revoked, the others told (REVOKED there and for later calls here); @return @a status,
 * this call's own. */
static cohort_status_t cohort_coll_post_failed(cohort_comm_t *g, cohort_status_t status)
{
    g->coll_seq++;
    cohort_comm_revoke(g, COHORT_ERR_REVOKED, "a collective failed at post on this rank");
    return status;
}

cohort_status_t cohort_coll_post(cohort_comm_t *g, const cohort_coll_args_t *args,
                                 cohort_request_t **req_p)
{
    const cohort_coll_algo_t *algo, *ipc;
    cohort_coll_args_t a = *args;
    cohort_request_t *req;
    cohort_coll_base_t *b;
    cohort_status_t status;
    size_t size;
    int vote, agree, seg, stage_late;

    if (req_p == NULL) {
        cohort_error(g->ctx, "cohort_i%s: req is NULL", cohort_coll_names[a.coll]);
        return COHORT_ERR_INVALID_ARG;
    }
    status = cohort_coll_validate(g, &a);
    if (status != COHORT_OK) {
        return status;
    }
    status = cohort_comm_use(g);
    if (status != COHORT_OK) {
        return status;
    }
    algo = cohort_coll_pick(g, &a, &ipc);
    vote = ipc != NULL;
    if (algo == NULL) {
        cohort_error(g->ctx, "cohort_%s: no algorithm available", cohort_coll_names[a.coll]);
        return COHORT_ERR_UNSUPPORTED;
    }
    /* A call that votes runs off the segment (cohort_coll_pick). */
    seg = algo->segment && !vote && (cohort_coll_node_local(g) & COHORT_NODE_SHM) &&
          g->size <= COHORT_SHM_MAX_N;
    if (seg && cohort_shm_group_make(g) != COHORT_OK) {
        return cohort_coll_post_failed(g, COHORT_ERR_NO_MEMORY);
    }
    /* Under COHORT_CHECK, or with a vote, the agreement's state follows the algorithm's (the
     * larger of the two a vote chooses between), aligned. */
    size = algo->state_size(&a, g->size);
    if (vote && ipc->state_size(&a, g->size) > size) {
        size = ipc->state_size(&a, g->size);
    }
    size = (size + 63) & ~(size_t)63;
    /* The group's first collective agrees on the settings (check.c), whatever they are. */
    agree = g->ctx->cfg.check || vote || g->coll_seq == 0;
    req = cohort_request_alloc(g, &cohort_coll_ops, size + (agree ? cohort_coll_check_size() : 0));
    if (req == NULL) {
        return cohort_coll_post_failed(g, COHORT_ERR_NO_MEMORY);
    }
    b = cohort_coll_base(req);
    if (agree) {
        b->check = (cohort_coll_check_t *)((char *)req->state + size);
    }
    b->args = a;
    if (vote) {
        b->vote_algo = ipc;
        g->ctx->stat_ipc_votes++;
    }
    status = cohort_fault(g->ctx, COHORT_FAULT_POST) ? COHORT_ERR_NO_MEMORY : COHORT_OK;
    if (status == COHORT_OK && g->stream != NULL && cohort_gpu_get(g->ctx) != NULL) {
        status = cohort_gpu_stream_mark(g->ctx, g->stream, &b->stream_mark);
    }
    stage_late = b->stream_mark != 0 && !algo->device && !vote;
    if (status == COHORT_OK && !algo->device && !vote && !stage_late) {
        status = cohort_coll_stage_in(req, algo);
    }
    if (status != COHORT_OK) {
        cohort_request_release(req);
        return cohort_coll_post_failed(g, status);
    }
    b->algo = algo;
    /* Every member numbers its collectives on a group alike, so (seq, step) names one
     * message exactly; the number is spent even by a collective that fails to start, which
     * therefore revokes the group. */
    b->seq = g->coll_seq++;
    b->seg_call = seg ? cohort_shm_call_number(g) : 0;
    b->fp = cohort_coll_fingerprint(&a);
    cohort_am_coll_posted(g, b->seq, b->fp);
    cohort_coll_announce(g, &a, algo);
    cohort_coll_schedule(b, b->stream_mark != 0, stage_late, agree, vote);
    status = cohort_coll_schedule_post(req);
    if (status != COHORT_OK) {
        cohort_request_cancel(req, status);
        cohort_comm_revoke(g, status, "a collective failed to start");
        cohort_request_release(req);
        return status;
    }
    cohort_request_progress(req);
    *req_p = req;
    return COHORT_OK;
}

cohort_status_t cohort_coll_run(cohort_comm_t *g, const cohort_coll_args_t *args)
{
    cohort_request_t *req = NULL;
    cohort_status_t status = cohort_coll_post(g, args, &req);

    if (status != COHORT_OK) {
        return status;
    }
    status = cohort_request_wait_internal(req);
    cohort_request_free_internal(req);
    return status;
}
