/*
 * The shm family: small same-node collectives through the group's shared segment, with no
 * message (path/shm.c runs them all). Each collective's row is a file in that collective's
 * folder (allreduce/shm.c, ...) that fills in COHORT_SHM_ROW.
 */
#ifndef COHORT_COLL_PATH_SHM_H
#define COHORT_COLL_PATH_SHM_H

#include "coll/coll.h"

/* Fewer than 2 members, more than the segment holds, or a contribution larger than a slot's
 * buffer: the other rules choose. */
int cohort_shm_coll_decline(const cohort_coll_args_t *args, int gsize);
size_t cohort_shm_coll_state_size(const cohort_coll_args_t *args, int n);
cohort_status_t cohort_shm_coll_start(cohort_request_t *req);
cohort_status_t cohort_shm_coll_progress(cohort_request_t *req);
size_t cohort_shm_coll_describe(const cohort_request_t *req, char *buf, size_t len, size_t used);
void cohort_shm_coll_abandon(cohort_request_t *req, cohort_status_t status);

/* An shm row: its id and collective; every one is the same otherwise. */
#define COHORT_SHM_ROW(id_, coll_)                                                                 \
    {                                                                                              \
        .name = "shm", .description = "same node, small: through one shared segment, no message",  \
        .coll = coll_, .id = id_, .state_size = cohort_shm_coll_state_size,                        \
        .start = cohort_shm_coll_start, .progress = cohort_shm_coll_progress,                      \
        .decline = cohort_shm_coll_decline, .node = COHORT_NODE_SHM,                               \
        .describe = cohort_shm_coll_describe, .abandon = cohort_shm_coll_abandon, .ident = 1,      \
        .segment = 1,                                                                              \
    }

#endif
