/*
 * The alltoall rows, one file each in this folder, in ascending id (coll.h): the one list of
 * them, which selection (select.c) asks. A new row is added here and takes the next unused id.
 */
#include "coll/coll.h"

extern const cohort_coll_algo_t cohort_alltoall_bruck;    /* bruck.c */
extern const cohort_coll_algo_t cohort_alltoall_pairwise; /* pairwise.c */
extern const cohort_coll_algo_t cohort_alltoall_direct;   /* direct.c */
extern const cohort_coll_algo_t cohort_alltoall_shm;      /* shm.c */
extern const cohort_coll_algo_t cohort_alltoall_cuda_ipc; /* cuda_ipc.c */

static const cohort_coll_algo_t *const alltoall_rows[] = {
    &cohort_alltoall_bruck, &cohort_alltoall_pairwise, &cohort_alltoall_direct,
    &cohort_alltoall_shm,   &cohort_alltoall_cuda_ipc,
};

const cohort_coll_table_t cohort_alltoall_table = {
    COHORT_COLL_ALLTOALL, (int)(sizeof(alltoall_rows) / sizeof(alltoall_rows[0])), alltoall_rows};
