/*
 * alltoall on one node through the group's shared segment, no message (the shm family,
 * path/shm.c, runs it): every member copies its block of every member's buffer.
 */
#include "coll/path/shm.h"

const cohort_coll_algo_t cohort_alltoall_shm = COHORT_SHM_ROW(22, COHORT_COLL_ALLTOALL);
