/* The collectives, named once for configuration (COHORT_ALGO_<NAME>) and algorithm tables. */
#ifndef COHORT_COLL_TYPE_H
#define COHORT_COLL_TYPE_H

typedef enum {
    COHORT_COLL_BARRIER,
    COHORT_COLL_BCAST,
    COHORT_COLL_REDUCE,
    COHORT_COLL_ALLREDUCE,
    COHORT_COLL_ALLGATHER,
    COHORT_COLL_REDUCE_SCATTER,
    COHORT_COLL_ALLTOALL,
    COHORT_COLL_LAST
} cohort_coll_type_t;

/* Upper-case names as used in COHORT_ALGO_<NAME>; index by cohort_coll_type_t. */
extern const char *const cohort_coll_env_names[COHORT_COLL_LAST];
/* Lower-case names for messages: "allreduce". */
extern const char *const cohort_coll_names[COHORT_COLL_LAST];

#endif
