/*
 * allreduce on one node through the group's shared segment, no message (the shm family,
 * path/shm.c, runs it): every member reduces all the members' buffers in member order.
 */
#include "coll/path/shm.h"

const cohort_coll_algo_t cohort_allreduce_shm = COHORT_SHM_ROW(18, COHORT_COLL_ALLREDUCE);
