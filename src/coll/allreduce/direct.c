/*
 * allreduce on one node by single copy (the direct family, path/direct.c, runs it). Each member
 * combines its block of the vector from every member's input, a chunk at a time, and writes each
 * finished chunk into every other member's output while it is in cache.
 */
#include "coll/path/direct.h"

const cohort_coll_algo_t cohort_allreduce_direct = COHORT_DIRECT_ROW(
    13, COHORT_COLL_ALLREDUCE, "each rank combines its block from every input and writes it to all",
    cohort_direct_coll_decline_writer, COHORT_DIRECT_WRITES,
    COHORT_DIRECT_CHUNK_KNOB("COHORT_ALGO_ALLREDUCE_DIRECT_CHUNK"));
