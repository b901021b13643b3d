/*
 * A collective as a short schedule of tasks (UCC's ucc_schedule_t is the model): wait for the
 * group's stream, stage the buffers in late, the members' agreement (COHORT_CHECK, the CUDA IPC
 * vote, a group's first-call settings), the staging copies found finished, the algorithm, the
 * group's first-use step over (the exchange plugin's), stage out.
 * cohort_coll_post picks the tasks a call needs and takes every number the call uses (the group's
 * sequence, the shared segment's call) before any task runs, so a task that waits never changes how
 * the members pair their calls. Each task is posted once, then progressed until it is done; the
 * next one is posted only then. The request's progress runs the schedule; nothing else knows its
 * order.
 */
#include "coll/coll.h"
#include "coll/shm_seg.h"
#include "mem/gpu.h"

static cohort_status_t task_none(cohort_request_t *req)
{
    (void)req;
    return COHORT_OK;
}

/* The caller's stream has got to where it was at post: polled until then (an event, which no
 * completion announces). */
static cohort_status_t stream_progress(cohort_request_t *req)
{
    return cohort_gpu_ticket_poll(req, &cohort_coll_base(req)->stream_mark);
}

/* Device buffers staged once they may be read: after the stream, or after a vote that chose
 * the algorithm taking host buffers (CUDA IPC takes them as they are). */
static cohort_status_t stage_in_post(cohort_request_t *req)
{
    const cohort_coll_algo_t *algo = cohort_coll_base(req)->algo;

    return algo->device ? COHORT_OK : cohort_coll_stage_in(req, algo);
}

static cohort_status_t agree_post(cohort_request_t *req)
{
    return cohort_coll_check_start(req, cohort_coll_base(req)->check);
}

/* A vote's answer (the same on every member) names the algorithm. */
static cohort_status_t agree_progress(cohort_request_t *req)
{
    cohort_coll_base_t *b = cohort_coll_base(req);
    cohort_status_t status = cohort_coll_check_progress(req, b->check);

    if (status == COHORT_OK && b->check->settings) {
        cohort_shm_agreed(req->comm); /* a deferred call may set the segment up now */
    }
    if (status == COHORT_OK && b->vote_algo != NULL) {
        if (b->check->acc.lo[COHORT_CHECK_DEVICE] > 0) {
            b->algo = b->vote_algo;
            req->comm->last_algo = b->algo->name;
        }
        b->vote_algo = NULL;
    }
    return status;
}

static cohort_status_t algo_post(cohort_request_t *req)
{
    return cohort_coll_base(req)->algo->start(req);
}

/* A call whose segment could not be set up (every member alike) runs on messages instead. */
static cohort_status_t algo_progress(cohort_request_t *req)
{
    cohort_coll_base_t *b = cohort_coll_base(req);
    cohort_status_t status;

    if (b->seg_defer) {
        cohort_shm_early(req->comm); /* the segment's setup, beside this call's messages */
    }
    status = b->algo->progress(req);

    if (status == COHORT_ERR_UNSUPPORTED && b->seg_refused && b->fallback != NULL) {
        status = cohort_coll_fall_back(req);
    }
    return status;
}

/* The group's first-use step (the exchange plugin's; PMIx_Group_construct under
 * COHORT_PMIX_PLUGIN=group) is over here before the call ends. A message waits for it anyway
 * (sends are held until then); a call on the shared segment sends nothing, so without this it
 * could end, and the group be freed, first: that member would abandon the step while the
 * others completed it, and then wait for it in their release (PMIx_Group_destruct) until the
 * timeout. Polled: nothing announces the step's end to the request. */
static cohort_status_t prepared_progress(cohort_request_t *req)
{
    const cohort_comm_t *g = req->comm;

    if (g->state == COHORT_COMM_READY) {
        return g->error;
    }
    cohort_request_poll(req);
    return COHORT_INPROGRESS;
}

static const cohort_coll_task_t cohort_task_stream = {
    "not started: waiting for the work on its CUDA stream (cohort_group_set_stream)", task_none,
    stream_progress};
static const cohort_coll_task_t cohort_task_stage_in = {"at staging its device buffers in",
                                                        stage_in_post, cohort_coll_stage_in_test};
/* Staged at post: its copies polled before the algorithm starts. */
static const cohort_coll_task_t cohort_task_stage_wait = {"at staging its device buffers in",
                                                          task_none, cohort_coll_stage_in_test};
static const cohort_coll_task_t cohort_task_agree = {"at the members' agreement", agree_post,
                                                     agree_progress};
static const cohort_coll_task_t cohort_task_algo = {"at the algorithm", algo_post, algo_progress};
static const cohort_coll_task_t cohort_task_prepared = {
    "at the group's first-use step (the exchange plugin's, e.g. PMIx_Group_construct)", task_none,
    prepared_progress};
static const cohort_coll_task_t cohort_task_stage_out = {"at staging its result out", task_none,
                                                         cohort_coll_stage_out};

void cohort_coll_schedule(cohort_coll_base_t *b, int stream, int stage_late, int agree, int vote,
                          int prepare)
{
    int n = 0;

    if (stream) {
        b->tasks[n++] = &cohort_task_stream;
    }
    if (stage_late) {
        b->tasks[n++] = &cohort_task_stage_in;
    }
    if (agree) {
        b->tasks[n++] = &cohort_task_agree;
    }
    if (vote) {
        b->tasks[n++] = &cohort_task_stage_in;
    }
    if (b->stage.in != 0) {
        b->tasks[n++] = &cohort_task_stage_wait; /* its copies overlap the agreement */
    }
    b->tasks[n++] = &cohort_task_algo;
    if (prepare) {
        b->tasks[n++] = &cohort_task_prepared;
    }
    b->tasks[n++] = &cohort_task_stage_out;
    b->ntasks = n;
    b->task = 0;
    b->task_posted = 0;
}

cohort_status_t cohort_coll_schedule_post(cohort_request_t *req)
{
    cohort_coll_base_t *b = cohort_coll_base(req);

    b->task_posted = 1;
    return b->tasks[0]->post(req);
}

cohort_status_t cohort_coll_schedule_progress(cohort_request_t *req)
{
    cohort_coll_base_t *b = cohort_coll_base(req);
    cohort_status_t status;

    while (b->task < b->ntasks) {
        const cohort_coll_task_t *t = b->tasks[b->task];
        if (!b->task_posted) {
            b->task_posted = 1;
            status = t->post(req);
            if (status != COHORT_OK) {
                return status;
            }
        }
        status = t->progress(req);
        if (b->mem_status != COHORT_OK && (status == COHORT_OK || status == COHORT_INPROGRESS)) {
            return b->mem_status; /* a copy or reduction on the device failed (logged) */
        }
        if (status != COHORT_OK) {
            return status;
        }
        b->task++;
        b->task_posted = 0;
    }
    return COHORT_OK;
}

const char *cohort_coll_schedule_now(const cohort_coll_base_t *b)
{
    if (b->task >= b->ntasks || b->tasks[b->task] == &cohort_task_algo) {
        return NULL; /* the algorithm's own describe says more */
    }
    return b->tasks[b->task]->name;
}
