/* The collectives' names (coll_type.h), for configuration and messages: every layer of the
 * collectives uses them, so they sit at the bottom, apart from selection. */
#include "coll/coll_type.h"

const char *const cohort_coll_env_names[COHORT_COLL_LAST] = {
    "BARRIER", "BCAST", "REDUCE", "ALLREDUCE", "ALLGATHER", "REDUCE_SCATTER", "ALLTOALL"};
const char *const cohort_coll_names[COHORT_COLL_LAST] = {
    "barrier", "bcast", "reduce", "allreduce", "allgather", "reduce_scatter", "alltoall"};
