/*
 * bcast on one node by single copy (the direct family, path/direct.c, runs it). The root writes the
 * first of n shares into every member while each of them reads the rest of the root's buffer.
 */
#include "coll/path/direct.h"

const cohort_coll_algo_t cohort_bcast_direct = COHORT_DIRECT_ROW(
    17, COHORT_COLL_BCAST, "the root writes a share into every member, which read the rest",
    cohort_direct_coll_decline_writer, COHORT_DIRECT_WRITES);
