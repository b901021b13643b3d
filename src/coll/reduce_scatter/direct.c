/*
 * reduce_scatter on one node by single copy (the direct family, path/direct.c, runs it). Each
 * member combines its own block straight from every member's input, a chunk at a time; it only
 * reads, so it needs no segment.
 */
#include "coll/path/direct.h"

const cohort_coll_algo_t cohort_reduce_scatter_direct = COHORT_DIRECT_ROW(
    14, COHORT_COLL_REDUCE_SCATTER, "each rank combines its block straight from every input",
    cohort_direct_coll_decline, COHORT_NODE_DIRECT,
    COHORT_DIRECT_CHUNK_KNOB("COHORT_ALGO_REDUCE_SCATTER_DIRECT_CHUNK"));
