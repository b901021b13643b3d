/*
 * Tasks inside an algorithm: how one algorithm runs another's steps as a part of itself. A ring
 * allreduce is a ring reduce-scatter, then a ring allgather on its result; rather than write the
 * two rings again, its row lines up the two tasks, each the same code that the reduce-scatter
 * and allgather rows run alone.
 *
 * A task is a row of its own (cohort_task_row_t: post, progress, finalize) and a state of its own:
 * a region of the call's state that the parent algorithm sets aside, sized by what the task
 * says it needs, where the parent writes the task's parameters (buffers, block cut, segment)
 * before it runs. The parent's row is the one that selection sees; the tasks are never chosen
 * alone.
 *
 * A sequence (cohort_task_seq_t) runs its tasks one after another: a task is posted only once
 * the one before it is done (its results final; transfers it leaves in flight, as a ring task
 * may, are in slots the next one takes over and waits for), so a later task may read what an
 * earlier one wrote. A finer dependency: a task added "alongside" is posted right after the one
 * before it and runs with it, both progressed in turn, the earlier first; it reads the earlier
 * one's progress mark (t->before->mark, how many of its units are final, kept by that task) and
 * waits for what it needs by it. The ring allreduce's allgather so sends the first segment of
 * this rank's block as soon as the reduce-scatter has finished that segment. Each task numbers its messages' steps from 0; on the wire they are shifted
 * past every step of the tasks before it (the task says at post how many it uses), so the
 * messages of two tasks of one call never match each other, and a member that runs ahead into
 * the next task is told apart from a late message of the one before.
 */
#ifndef COHORT_COLL_TASK_H
#define COHORT_COLL_TASK_H

#include "coll/coll.h"

typedef struct cohort_task cohort_task_t;

typedef struct {
    const char *name;
    /* Set the task up from its parameters and set t->nsteps (steps it will use); may post. */
    cohort_status_t (*post)(cohort_request_t *req, cohort_task_t *t);
    /* As far as it goes without waiting: COHORT_OK once every transfer it posted is over,
     * COHORT_INPROGRESS, or an error. */
    cohort_status_t (*progress)(cohort_request_t *req, cohort_task_t *t);
    /* Optional: free what post allocated (scratch). Called once for a posted task, when the
     * request is released and no transfer still points into it. */
    void (*finalize)(cohort_request_t *req, cohort_task_t *t);
} cohort_task_row_t;

struct cohort_task {
    const cohort_task_row_t *row;
    void *state; /* its own region of the call's state, parameters written by the parent */
    int step0;   /* its step 0 on the wire: past every step of the tasks before it */
    int nsteps;  /* the steps it uses, from its post */
    int posted, done;
    int alongside;                /* posted with the task before, not after it */
    const cohort_task_t *before;  /* the task before it in the sequence, NULL for the first */
    size_t mark; /* how far it is, in its own units, for a task alongside it to read */
};

#define COHORT_TASK_SEQ_MAX 4

typedef struct {
    int n, cur;
    cohort_task_t t[COHORT_TASK_SEQ_MAX];
} cohort_task_seq_t;

/* Append a task that runs @a row on @a state once the tasks before it are done. */
void cohort_task_seq_add(cohort_task_seq_t *seq, const cohort_task_row_t *row, void *state);
/* Append a task that runs alongside the one before it (see above): it must wait, by that
 * task's mark, for whatever it reads of that task's results. */
void cohort_task_seq_add_alongside(cohort_task_seq_t *seq, const cohort_task_row_t *row,
                                   void *state);
/* Post the first task (the parent's start: what it allocates fails the start, as the parent's
 * own allocation would); COHORT_OK when there is none. */
cohort_status_t cohort_task_seq_start(cohort_request_t *req, cohort_task_seq_t *seq);
/* Post and progress the tasks in turn: COHORT_OK once the last is done (at once when there is
 * none), COHORT_INPROGRESS, or the first error. */
cohort_status_t cohort_task_seq_progress(cohort_request_t *req, cohort_task_seq_t *seq);
/* Every posted task's finalize (the parent's cleanup). */
void cohort_task_seq_finalize(cohort_request_t *req, cohort_task_seq_t *seq);

/* The state of an algorithm made of tasks begins with this (then its tasks' regions); its row
 * may take these as its progress and cleanup. */
typedef struct {
    cohort_coll_base_t base;
    cohort_task_seq_t seq;
} cohort_task_parent_t;
cohort_status_t cohort_task_parent_progress(cohort_request_t *req);
void cohort_task_parent_cleanup(cohort_request_t *req);

/* A task's message at its own step @a step (cohort_coll_send/recv, shifted to t->step0). */
cohort_status_t cohort_task_send(cohort_request_t *req, const cohort_task_t *t, cohort_xfer_t *x,
                                 int peer, int step, const void *buf, size_t len);
cohort_status_t cohort_task_recv(cohort_request_t *req, const cohort_task_t *t, cohort_xfer_t *x,
                                 int peer, int step, void *buf, size_t len);

#endif
