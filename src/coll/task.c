/*
 * A sequence of tasks inside one algorithm (task.h): each posted once the one before it is done,
 * its steps on the wire placed after theirs.
 */
#include "coll/task.h"

void cohort_task_seq_add(cohort_task_seq_t *seq, const cohort_task_row_t *row, void *state)
{
    cohort_task_t *t = &seq->t[seq->n];

    *t = (cohort_task_t){.row = row, .state = state};
    t->before = seq->n > 0 ? &seq->t[seq->n - 1] : NULL;
    seq->n++;
}

void cohort_task_seq_add_alongside(cohort_task_seq_t *seq, const cohort_task_row_t *row,
                                   void *state)
{
    cohort_task_seq_add(seq, row, state);
    seq->t[seq->n - 1].alongside = 1;
}

cohort_status_t cohort_task_seq_start(cohort_request_t *req, cohort_task_seq_t *seq)
{
    if (seq->n == 0) {
        return COHORT_OK;
    }
    seq->t[0].posted = 1;
    return seq->t[0].row->post(req, &seq->t[0]);
}

/* One pass over the tasks from the first not done: each posted one progressed in turn, the
 * next posted when it may start (the one before done, or it runs alongside). */
static cohort_status_t seq_pass(cohort_request_t *req, cohort_task_seq_t *seq)
{
    cohort_status_t status;

    for (int k = seq->cur; k < seq->n; k++) {
        cohort_task_t *t = &seq->t[k];

        if (!t->posted) {
            if (k > seq->cur && !t->alongside) {
                break; /* the one before is not done yet */
            }
            if (t->before != NULL) {
                /* Its steps come after the task before's, on every member alike. */
                t->step0 = t->before->step0 + t->before->nsteps;
            }
            t->posted = 1;
            status = t->row->post(req, t);
            if (status != COHORT_OK) {
                return status;
            }
        }
        if (!t->done) {
            status = t->row->progress(req, t);
            if (status == COHORT_OK) {
                t->done = 1;
            } else if (status != COHORT_INPROGRESS) {
                return status;
            }
        }
    }
    return COHORT_OK;
}

cohort_status_t cohort_task_seq_progress(cohort_request_t *req, cohort_task_seq_t *seq)
{
    cohort_status_t status;

    while (seq->cur < seq->n) {
        status = seq_pass(req, seq);
        if (status != COHORT_OK) {
            return status;
        }
        if (!seq->t[seq->cur].done) {
            return COHORT_INPROGRESS;
        }
        while (seq->cur < seq->n && seq->t[seq->cur].done) {
            seq->cur++;
        }
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
