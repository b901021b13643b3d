/*
 * allgather on one node by single copy (the direct family, path/direct.c, runs it). Each member
 * writes its block into every member's output, a chunk at a time: read once, written n times.
 */
#include "coll/path/direct.h"

const cohort_coll_algo_t cohort_allgather_direct =
    COHORT_DIRECT_ROW(15, COHORT_COLL_ALLGATHER, "each rank writes its block into every output",
                      cohort_direct_coll_decline_writer, COHORT_DIRECT_WRITES,
                      COHORT_DIRECT_CHUNK_KNOB("COHORT_ALGO_ALLGATHER_DIRECT_CHUNK"));
