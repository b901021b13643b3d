/*
 * bcast on one node through the group's shared segment, no message (the shm family,
 * path/shm.c, runs it): the root writes its buffer into the segment, the others copy it out.
 */
#include "coll/path/shm.h"

const cohort_coll_algo_t cohort_bcast_shm = COHORT_SHM_ROW(23, COHORT_COLL_BCAST);
