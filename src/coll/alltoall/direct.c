/*
 * alltoall on one node by single copy (the direct family, path/direct.c, runs it). Each member
 * reads its block of every member's input straight into its receive buffer; it only reads, so it
 * needs no segment.
 */
#include "coll/path/direct.h"

const cohort_coll_algo_t cohort_alltoall_direct = COHORT_DIRECT_ROW(
    16, COHORT_COLL_ALLTOALL, "each rank reads its block of every input into place",
    cohort_direct_coll_decline, COHORT_NODE_DIRECT);
