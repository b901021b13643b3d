/*
 * reduce_scatter on one node through the group's shared segment, no message (the shm family,
 * path/shm.c, runs it): every member reduces its block of all the members' buffers.
 */
#include "coll/path/shm.h"

const cohort_coll_algo_t cohort_reduce_scatter_shm = COHORT_SHM_ROW(20, COHORT_COLL_REDUCE_SCATTER);
