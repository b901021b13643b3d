/*
 * The reduce_scatter rows, one file each in this folder, in ascending id (coll.h): the one list of
 * them, which selection (select.c) asks. A new row is added here and takes the next unused id.
 */
#include "coll/coll.h"

extern const cohort_coll_algo_t cohort_reduce_scatter_ring;              /* ring.c */
extern const cohort_coll_algo_t cohort_reduce_scatter_recursive_halving; /* recursive_halving.c */
extern const cohort_coll_algo_t cohort_reduce_scatter_direct;            /* direct.c */
extern const cohort_coll_algo_t cohort_reduce_scatter_shm;               /* shm.c */
extern const cohort_coll_algo_t cohort_reduce_scatter_cuda_ipc;          /* cuda_ipc.c */

static const cohort_coll_algo_t *const reduce_scatter_rows[] = {
    &cohort_reduce_scatter_ring,     &cohort_reduce_scatter_recursive_halving,
    &cohort_reduce_scatter_direct,   &cohort_reduce_scatter_shm,
    &cohort_reduce_scatter_cuda_ipc,
};

const cohort_coll_table_t cohort_reduce_scatter_table = {
    COHORT_COLL_REDUCE_SCATTER, (int)(sizeof(reduce_scatter_rows) / sizeof(reduce_scatter_rows[0])),
    reduce_scatter_rows};
