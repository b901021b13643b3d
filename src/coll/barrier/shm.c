/*
 * barrier on one node through the group's shared segment, no message (the shm family,
 * path/shm.c, runs it): every member publishes the call and waits until all have.
 */
#include "coll/path/shm.h"

const cohort_coll_algo_t cohort_barrier_shm = COHORT_SHM_ROW(24, COHORT_COLL_BARRIER);
