/*
 * A sequence of tasks inside one algorithm (task.h): each posted once the one before it is done,
 * its steps on the wire placed after theirs.
 */
#include "coll/task.h"

void cohort_task_seq_add(cohort_task_seq_t *seq, const cohort_task_row_t *row, void *state)
{
    cohort_task_t *t = &seq->t[seq->n++];

    t->row = row;
    t->state = state;
    t->step0 = 0;
    t->nsteps = 0;
    t->posted = 0;
}

cohort_status_t cohort_task_seq_start(cohort_request_t *req, cohort_task_seq_t *seq)
{
    if (seq->n == 0) {
        return COHORT_OK;
    }
    seq->t[0].posted = 1;
    return seq->t[0].row->post(req, &seq->t[0]);
}

cohort_status_t cohort_task_seq_progress(cohort_request_t *req, cohort_task_seq_t *seq)
{
    cohort_status_t status;

    while (seq->cur < seq->n) {
        cohort_task_t *t = &seq->t[seq->cur];
        if (!t->posted) {
            if (seq->cur > 0) {
                /* The task before is done: its steps are behind this one's on every member. */
                t->step0 = seq->t[seq->cur - 1].step0 + seq->t[seq->cur - 1].nsteps;
            }
            t->posted = 1;
            status = t->row->post(req, t);
            if (status != COHORT_OK) {
                return status;
            }
        }
        status = t->row->progress(req, t);
        if (status != COHORT_OK) {
            return status;
        }
        seq->cur++;
    }
    return COHORT_OK;
}

void cohort_task_seq_finalize(cohort_request_t *req, cohort_task_seq_t *seq)
{
    for (int i = 0; i < seq->n; i++) {
        if (seq->t[i].posted && seq->t[i].row->finalize != NULL) {
            seq->t[i].row->finalize(req, &seq->t[i]);
        }
    }
}

cohort_status_t cohort_task_parent_progress(cohort_request_t *req)
{
    return cohort_task_seq_progress(req, &((cohort_task_parent_t *)req->state)->seq);
}

void cohort_task_parent_cleanup(cohort_request_t *req)
{
    cohort_task_seq_finalize(req, &((cohort_task_parent_t *)req->state)->seq);
}

cohort_status_t cohort_task_send(cohort_request_t *req, const cohort_task_t *t, cohort_xfer_t *x,
                                 int peer, int step, const void *buf, size_t len)
{
    return cohort_coll_send(req, x, peer, t->step0 + step, buf, len);
}

cohort_status_t cohort_task_recv(cohort_request_t *req, const cohort_task_t *t, cohort_xfer_t *x,
                                 int peer, int step, void *buf, size_t len)
{
    return cohort_coll_recv(req, x, peer, t->step0 + step, buf, len);
}
