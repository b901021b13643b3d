/*
 * allgather on one node through the group's shared segment, no message (the shm family,
 * path/shm.c, runs it): every member copies every member's block out of the segment.
 */
#include "coll/path/shm.h"

const cohort_coll_algo_t cohort_allgather_shm = COHORT_SHM_ROW(21, COHORT_COLL_ALLGATHER);
