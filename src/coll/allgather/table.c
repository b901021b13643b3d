/*
 * The allgather rows, one file each in this folder, in ascending id (coll.h): the one list of
 * them, which selection (select.c) asks. A new row is added here and takes the next unused id.
 */
#include "coll/coll.h"

extern const cohort_coll_algo_t cohort_allgather_bruck;    /* bruck.c */
extern const cohort_coll_algo_t cohort_allgather_ring;     /* ring.c */
extern const cohort_coll_algo_t cohort_allgather_direct;   /* direct.c */
extern const cohort_coll_algo_t cohort_allgather_shm;      /* shm.c */
extern const cohort_coll_algo_t cohort_allgather_cuda_ipc; /* cuda_ipc.c */

static const cohort_coll_algo_t *const allgather_rows[] = {
    &cohort_allgather_bruck, &cohort_allgather_ring,     &cohort_allgather_direct,
    &cohort_allgather_shm,   &cohort_allgather_cuda_ipc,
};

const cohort_coll_table_t cohort_allgather_table = {
    COHORT_COLL_ALLGATHER, (int)(sizeof(allgather_rows) / sizeof(allgather_rows[0])),
    allgather_rows};
