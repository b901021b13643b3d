/*
 * Posting a collective: its arguments checked, its algorithm chosen, its numbers taken (the
 * collective's and the shared segment's) and its schedule made, in that order, so that a call
 * that fails before its number spends none and one that fails after revokes the group.
 */
#include <stdlib.h>
#include <string.h>
#include "coll/coll.h"
#include "coll/shm_seg.h"
#include "core/am.h"
#include "core/context.h"
#include "core/endpoint.h"
#include "core/log.h"
#include "mem/gpu.h"

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
 * this rank's next call would take their number for another. The number is used up and the
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
    const cohort_coll_algo_t *algo, *ipc, *fallback;
    cohort_coll_args_t a = *args;
    cohort_request_t *req;
    cohort_coll_base_t *b;
    cohort_status_t status;
    size_t size;
    int vote, agree, seg, settle, stage_late, defer = 0;

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
    /* COHORT_SHM_DEFER: one of the group's first calls on the segment runs on messages while
     * the segment is set up beside it. Whether it does is counted alike on every member (the
     * same calls take the segment everywhere), so no member waits in the segment for a call
     * another runs on messages. */
    if (seg && g->ctx->cfg.shm_defer > 0) {
        fallback = cohort_coll_pick_messages(g, &a);
        if (fallback != NULL && cohort_shm_defer(g)) {
            algo = fallback;
            seg = 0;
            defer = 1;
        }
    }
    /* Under COHORT_CHECK, or with a vote, the agreement's state follows the algorithm's (the
     * larger of the two a vote chooses between), aligned. */
    size = algo->state_size(&a, g->size);
    if (vote && ipc->state_size(&a, g->size) > size) {
        size = ipc->state_size(&a, g->size);
    }
    /* Only while the segment is not set up: once it is, no call on it is refused. */
    fallback = seg && cohort_shm_group_state(g) != COHORT_SEGMENT_READY
                   ? cohort_coll_pick_messages(g, &a)
                   : NULL;
    if (fallback != NULL && fallback->state_size(&a, g->size) > size) {
        size = fallback->state_size(&a, g->size);
    }
    size = (size + 63) & ~(size_t)63;
    /* The group's first collective agrees on the settings (check.c), whatever they are: in the
     * segment's setup when it runs there (no message unless a member took another path). */
    settle = seg && cohort_coll_carries_settings(g->coll_seq);
    agree = g->ctx->cfg.check || vote || cohort_coll_carries_settings(g->coll_seq);
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
    g->last_algo = algo->name;
    /* Every member numbers its collectives on a group alike, so (seq, step) names one
     * message exactly; the number is used up even by a collective that fails to start, which
     * therefore revokes the group. */
    b->seq = g->coll_seq++;
    b->seg_call = seg ? cohort_shm_call_number(g) : 0;
    b->fingerprint = cohort_coll_fingerprint(&a);
    cohort_am_coll_posted(g, b->seq, b->fingerprint);
    /* A call on the segment sends nothing once it is there, nor to set it up: its peers are
     * not wired (direct's pids are fetched without an endpoint, cohort_coll_pids_know). */
    if (!seg) {
        cohort_coll_announce(g, &a, algo);
    }
    if ((seg && b->seg_call == 1) || defer) {
        cohort_shm_prefetch(g);
        cohort_shm_prefetch_due(g->ctx);
    }
    b->seg_defer = defer;
    b->settle = settle;
    b->fallback = fallback;
    b->algo_bytes = size;
    cohort_coll_schedule(b, b->stream_mark != 0, stage_late, agree && !settle, vote,
                         g->state != COHORT_COMM_READY);
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

cohort_status_t cohort_coll_fall_back(cohort_request_t *req)
{
    cohort_coll_base_t *b = cohort_coll_base(req);
    const cohort_coll_algo_t *algo = b->fallback;
    cohort_status_t status;

    /* The segment's transfers (its setup's "no" messages) live in the state the fallback is
     * about to take: every one must be over. They are when every member has answered. */
    for (int i = 0; i < b->nxfers; i++) {
        if (b->xfers[i].req == req && !b->xfers[i].done) {
            cohort_error(req->ctx,
                         "%s on group '%s': cannot run it on messages, a transfer of "
                         "its segment's setup is still in flight",
                         cohort_coll_names[b->args.coll], req->comm->label);
            return COHORT_ERR_UNSUPPORTED;
        }
    }
    if (b->algo->cleanup != NULL) {
        b->algo->cleanup(req);
    }
    cohort_debug(req->ctx,
                 "%s on group '%s' (collective #%u): its shared segment is not there; "
                 "it runs on messages (%s)",
                 cohort_coll_names[b->args.coll], req->comm->label, b->seq, algo->name);
    memset((char *)req->state + sizeof(*b), 0, b->algo_bytes - sizeof(*b));
    b->algo = algo;
    b->fallback = NULL;
    b->seg_refused = 0;
    b->agreed = 0;
    b->xfers = NULL;
    b->nxfers = 0;
    b->step = 0;
    req->comm->last_algo = algo->name;
    cohort_coll_announce(req->comm, &b->args, algo);
    status = algo->start(req);
    return status != COHORT_OK ? status : algo->progress(req);
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
