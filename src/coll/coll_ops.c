/*
 * A collective as a request of the engine: its progress (the schedule), what a cancel tells the
 * other members, what it frees, and how a timeout describes where it is.
 */
#include <stdio.h>
#include "coll/coll.h"
#include "coll/shm_seg.h"
#include "core/comm.h"
#include "mem/gpu.h"

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
    /* A deferred call that ends with its group failed: the segment set up beside it is never
     * used, and its name goes now. */
    if (b->seg_defer && req->comm != NULL && req->comm->error != COHORT_OK) {
        cohort_shm_early_drop(req->comm);
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
        if (x->req != req || x->done || x->is_send != sends || (!sends && b->rx_standby)) {
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

const cohort_request_ops_t cohort_coll_ops = {
    .name = "collective",
    .progress = cohort_coll_ops_progress,
    .cancel = cohort_coll_ops_cancel,
    .release = cohort_coll_ops_release,
    .describe = cohort_coll_ops_describe,
};

