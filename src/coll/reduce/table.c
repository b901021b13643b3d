/*
 * The reduce rows, one file each in this folder, in ascending id (coll.h): the one list of
 * them, which selection (select.c) asks. A new row is added here and takes the next unused id.
 */
#include "coll/coll.h"

extern const cohort_coll_algo_t cohort_reduce_knomial;  /* knomial.c */
extern const cohort_coll_algo_t cohort_reduce_shm;      /* shm.c */
extern const cohort_coll_algo_t cohort_reduce_cuda_ipc; /* cuda_ipc.c */

static const cohort_coll_algo_t *const reduce_rows[] = {
    &cohort_reduce_knomial,
    &cohort_reduce_shm,
    &cohort_reduce_cuda_ipc,
};

const cohort_coll_table_t cohort_reduce_table = {
    COHORT_COLL_REDUCE, (int)(sizeof(reduce_rows) / sizeof(reduce_rows[0])), reduce_rows};
