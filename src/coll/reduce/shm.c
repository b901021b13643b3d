/*
 * reduce on one node through the group's shared segment, no message (the shm family,
 * path/shm.c, runs it): the root reduces all the members' buffers in member order.
 */
#include "coll/path/shm.h"

const cohort_coll_algo_t cohort_reduce_shm = COHORT_SHM_ROW(19, COHORT_COLL_REDUCE);
