/*
 * The shm family: small same-node collectives through the group's shared segment, with no
 * message (path/shm.c runs them all). Each collective's row is a file in that collective's
 * folder (allreduce/shm.c, ...) that fills in COHORT_SHM_ROW.
 */
#ifndef COHORT_COLL_PATH_SHM_H
#define COHORT_COLL_PATH_SHM_H

#include "coll/coll.h"
#include "coll/shm_seg.h"

/* What an shm row does that the others do not: its file (<collective>/shm.c) fills one in. */
typedef struct {
    /* Bytes this member writes into its slot's buffer (SIZE_MAX when they overflow); NULL:
     * it writes nothing and runs whatever the count (barrier). */
    size_t (*in_bytes)(const cohort_coll_args_t *a, int n);
    /* Optional: where they are (NULL: none); by default the call's input, cohort_coll_input. */
    const void *(*input)(cohort_request_t *req);
    /* Optional: the result, out of every member's published buffer (cohort_shm_buf), once
     * all have published this call and it is the same call on every member. */
    void (*compute)(cohort_request_t *req, const cohort_shm_call_t *call);
} cohort_shm_row_t;

/* in_bytes for a row whose members write one block (count x dtype size), or one block per
 * member (alltoall, reduce_scatter). */
size_t cohort_shm_coll_one(const cohort_coll_args_t *a, int n);
size_t cohort_shm_coll_all(const cohort_coll_args_t *a, int n);
/* rbuf = every member's count elements at byte @a off of its buffer, reduced in member order
 * (so every member that computes it gets the same bits), AVG's division included. */
void cohort_shm_coll_reduce(cohort_request_t *req, const cohort_shm_call_t *call, size_t off);

/* Fewer than 2 members, more than the segment holds, a contribution larger than a slot's
 * buffer, or nothing to move: the other rules choose. */
int cohort_shm_coll_decline(const cohort_coll_algo_t *algo, const cohort_coll_args_t *args,
                            int gsize);
size_t cohort_shm_coll_state_size(const cohort_coll_args_t *args, int n);
cohort_status_t cohort_shm_coll_start(cohort_request_t *req);
cohort_status_t cohort_shm_coll_progress(cohort_request_t *req);
size_t cohort_shm_coll_describe(const cohort_request_t *req, char *buf, size_t len, size_t used);
void cohort_shm_coll_abandon(cohort_request_t *req, cohort_status_t status);

/* An shm row: its id, collective and cohort_shm_row_t; every one is the same otherwise. */
#define COHORT_SHM_ROW(id_, coll_, row_)                                                           \
    {                                                                                              \
        .name = "shm", .description = "same node, small: through one shared segment, no message",  \
        .coll = coll_, .id = id_, .state_size = cohort_shm_coll_state_size,                        \
        .start = cohort_shm_coll_start, .progress = cohort_shm_coll_progress,                      \
        .decline = cohort_shm_coll_decline, .node = COHORT_NODE_SHM,                               \
        .describe = cohort_shm_coll_describe, .abandon = cohort_shm_coll_abandon, .ident = 1,      \
        .segment = 1, .family = row_,                                                              \
    }

#endif
