/*
 * barrier on one node through the group's shared segment, no message (the shm family,
 * path/shm.c, runs it): every member publishes the call and waits until all have; nothing is
 * written or computed.
 */
#include "coll/path/shm.h"

/* Nothing to write or compute: publishing the call and seeing every member's is the barrier. */
static const cohort_shm_row_t barrier_shm = {0};

const cohort_coll_algo_t cohort_barrier_shm = COHORT_SHM_ROW(24, COHORT_COLL_BARRIER, &barrier_shm);
